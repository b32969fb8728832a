// Package live is the engine of the live page (the gymlive exporter): it keeps, in bounded
// memory, the current value of every series of the instruments the page shows, grouped by run
// (nemo.run.id) and server, and a short history of a few charts per run; it serves them as a
// versioned JSON API and a page whose assets are embedded. The numbers are the points the
// metrics pipeline exported, as the prometheus exporter beside it holds them. See docs/live.md.
package live

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Resource attributes that name a run and a series' resource. A series is the instrument, its
// data-point attributes and these resource attributes: the identity the prometheus exporter of
// the default configuration gives it (job, instance and its resource_constant_labels), so that
// two resources it merges into one series are one here too.
const (
	KeyRun         = "nemo.run.id"
	keyServiceName = "service.name"
	keyServiceNS   = "service.namespace"
	keyInstance    = "service.instance.id"
	keyHost        = "host.name"
	keyServerName  = "nemo.gym.server.name"
	keyServerType  = "nemo.gym.server.type"
	maxKeyAttrs    = 32 // data-point attributes sorted for a series' key; more are not keyed
)

// NoRun is the id of the run of the resources that carry no nemo.run.id.
const NoRun = "-"

// PriceMetric is the price series of a token (USD per million, by gen_ai.response.model and
// gen_ai.token.type). The page shows its cost panel only when such series arrive.
const PriceMetric = "gym.token.price_per_million"

// Limits bound what the store keeps (docs/live.md, "Bounds"); the gymlive exporter squashes
// them into its configuration.
type Limits struct {
	// MaxRuns: runs kept; a new run beyond them drops the least recently updated.
	MaxRuns int `mapstructure:"max_runs"`
	// MaxServers: servers (resources that name a service) kept per run.
	MaxServers int `mapstructure:"max_servers"`
	// MaxSeries: series kept per run.
	MaxSeries int `mapstructure:"max_series"`
	// MaxChartSeries: series per chart; the rest fold into "other".
	MaxChartSeries int `mapstructure:"max_chart_series"`
	// Resolution: one chart point per Resolution.
	Resolution time.Duration `mapstructure:"resolution"`
	// Horizon: how far back the charts go.
	Horizon time.Duration `mapstructure:"horizon"`
	// SeriesExpiration: a series not updated for this long is forgotten, as the prometheus
	// exporter forgets it after its metric_expiration (5m by default: keep them equal).
	SeriesExpiration time.Duration `mapstructure:"series_expiration"`
}

// MaxChartPoints bounds Horizon/Resolution, the points of every chart series.
const MaxChartPoints = 8640

// Check names the key of a bad limit (its owner's Validate calls it).
func (l Limits) Check() error {
	var errs []error
	for _, c := range []struct {
		key string
		v   int
	}{{"max_runs", l.MaxRuns}, {"max_servers", l.MaxServers}, {"max_series", l.MaxSeries}, {"max_chart_series", l.MaxChartSeries}} {
		if c.v < 1 {
			errs = append(errs, fmt.Errorf("%s must be at least 1, got %d", c.key, c.v))
		}
	}
	if l.Resolution < time.Second {
		errs = append(errs, fmt.Errorf("resolution must be at least 1s, got %s", l.Resolution))
	} else if l.Horizon < l.Resolution || l.Horizon/l.Resolution > MaxChartPoints {
		errs = append(errs, fmt.Errorf("horizon must be between resolution and %d times it, got %s", MaxChartPoints, l.Horizon))
	}
	if l.SeriesExpiration <= 0 {
		errs = append(errs, fmt.Errorf("series_expiration must be positive, got %s", l.SeriesExpiration))
	}
	return errors.Join(errs...)
}

// DefaultLimits are the limits of the default configuration.
func DefaultLimits() Limits {
	return Limits{
		MaxRuns: 16, MaxServers: 64, MaxSeries: 4096, MaxChartSeries: 6,
		Resolution: 10 * time.Second, Horizon: 6 * time.Hour, SeriesExpiration: 5 * time.Minute,
	}
}

// Dropped counts what the limits kept out since start.
type Dropped struct {
	Runs    uint64 `json:"runs"`
	Servers uint64 `json:"servers"`
	Series  uint64 `json:"series"`
	Prices  uint64 `json:"prices"` // price points of a model and token type beyond the 256 kept
	// Points rejected as not finite (NaN, ±Inf) or out of range (finite.go): their series keep
	// their last good value.
	NonFinite  uint64 `json:"non_finite"`
	OutOfRange uint64 `json:"out_of_range"`
}

// Store holds the runs. Consume takes its lock for the copy of one batch; readers take it to
// build a view. Nothing under the lock waits on a client.
type Store struct {
	mu      sync.Mutex
	lim     Limits
	clk     clock.Clock
	runs    map[string]*run
	dropped Dropped
	batch   Rejected // the points of the batch being consumed that were rejected
	exports uint64
	last    time.Time
	prices  map[priceKey]float64
	key     []byte      // the series key being built (reused)
	attrs   []attrEntry // the data-point attributes being sorted (reused)
}

type priceKey struct{ model, tokenType string }

type attrEntry struct {
	k string
	v pcommon.Value
}

type run struct {
	id          string
	first, seen time.Time
	servers     []*server
	serverIdx   map[string]int32
	series      map[string]*series
	hist        *history
}

type server struct {
	Service  string `json:"service"`
	Instance string `json:"instance"`
	Name     string `json:"name,omitempty"`
	Type     string `json:"type,omitempty"`
	Host     string `json:"host,omitempty"`
}

type series struct {
	inst    schema.InstrumentID
	server  int32 // index into run.servers, -1 when the resource names no service
	dims    [3]string
	val     float64
	count   uint64
	sum     float64
	bounds  []float64
	buckets []uint64
	seen    time.Time
}

// NewStore returns an empty store; clk nil is the system clock.
func NewStore(lim Limits, clk clock.Clock) *Store {
	if clk == nil {
		clk = clock.System()
	}
	return &Store{lim: lim, clk: clk, runs: map[string]*run{}, prices: map[priceKey]float64{}, attrs: make([]attrEntry, 0, maxKeyAttrs)}
}

// Consume copies the points of md that the page shows, and returns those it rejected (also
// in Status' dropped counts). It never keeps md.
func (s *Store) Consume(md pmetric.Metrics) Rejected {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batch = Rejected{}
	now := s.clk.Now()
	s.exports++
	s.last = now
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		rm := rms.At(i)
		res := rm.Resource().Attributes()
		var r *run
		srv := int32(-1)
		sms := rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				if m.Name() == PriceMetric {
					s.consumePrices(m)
					continue
				}
				id, ok := schema.Lookup(m.Name())
				if !ok || specs[id] == nil {
					continue
				}
				if r == nil {
					if r = s.runOf(cmp.Or(str(res, KeyRun), NoRun), now); r == nil {
						break
					}
					srv = s.serverOf(r, res)
				}
				s.consumeMetric(r, srv, res, id, m, now)
			}
		}
	}
	return s.batch
}

func str(m pcommon.Map, k string) string {
	if v, ok := m.Get(k); ok && v.Type() == pcommon.ValueTypeStr {
		return v.Str()
	}
	return ""
}

// runOf finds or admits the run; a new run beyond MaxRuns drops the least recently updated.
func (s *Store) runOf(id string, now time.Time) *run {
	if r, ok := s.runs[id]; ok {
		r.seen = now
		return r
	}
	if s.lim.MaxRuns < 1 {
		return nil
	}
	if len(s.runs) >= s.lim.MaxRuns {
		var oldest *run
		for _, r := range s.runs {
			if oldest == nil || r.seen.Before(oldest.seen) {
				oldest = r
			}
		}
		delete(s.runs, oldest.id)
		s.dropped.Runs++
	}
	r := &run{id: id, first: now, seen: now, serverIdx: map[string]int32{}, series: map[string]*series{},
		hist: newHistory(s.lim)}
	s.runs[id] = r
	return r
}

// serverOf returns the index of the resource's server in r, -1 for a resource that names no
// service (the flight recorder's, a default resource) or one beyond MaxServers.
func (s *Store) serverOf(r *run, res pcommon.Map) int32 {
	svc, inst := str(res, keyServiceName), str(res, keyInstance)
	if svc == "" && inst == "" {
		return -1
	}
	s.key = append(append(append(s.key[:0], svc...), 0), inst...)
	if i, ok := r.serverIdx[string(s.key)]; ok {
		return i
	}
	if len(r.servers) >= s.lim.MaxServers {
		s.dropped.Servers++
		return -1
	}
	i := int32(len(r.servers))
	r.servers = append(r.servers, &server{Service: svc, Instance: inst, Name: str(res, keyServerName),
		Type: str(res, keyServerType), Host: str(res, keyHost)})
	r.serverIdx[string(s.key)] = i
	return i
}

func (s *Store) consumeMetric(r *run, srv int32, res pcommon.Map, id schema.InstrumentID, m pmetric.Metric, now time.Time) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		delta := m.Sum().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			s.number(r, srv, res, id, dps.At(i), delta, now)
		}
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			s.number(r, srv, res, id, dps.At(i), false, now)
		}
	case pmetric.MetricTypeHistogram:
		delta := m.Histogram().AggregationTemporality() == pmetric.AggregationTemporalityDelta
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if dp.Flags().NoRecordedValue() {
				continue
			}
			if v := checkHistogram(dp); v != valid {
				s.reject(v)
				continue
			}
			if se := s.seriesOf(r, srv, res, id, dp.Attributes(), now); se != nil {
				s.reject(se.histogram(dp, delta))
			}
		}
	}
}

func (s *Store) number(r *run, srv int32, res pcommon.Map, id schema.InstrumentID, dp pmetric.NumberDataPoint, delta bool, now time.Time) {
	if dp.Flags().NoRecordedValue() {
		return
	}
	v := value(dp)
	if c := check(v); c != valid {
		s.reject(c) // before seriesOf: a rejected point admits no series
		return
	}
	se := s.seriesOf(r, srv, res, id, dp.Attributes(), now)
	if se == nil {
		return
	}
	if delta {
		if c := check(se.val + v); c != valid {
			s.reject(c)
			return
		}
		se.val += v
	} else {
		se.val = v
	}
}

func value(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// histogram applies a point checkHistogram took; a delta that would carry the count or sum
// past MaxValue is rejected.
func (se *series) histogram(dp pmetric.HistogramDataPoint, delta bool) verdict {
	bc := dp.BucketCounts()
	sameShape := len(se.buckets) == bc.Len()
	if delta && sameShape {
		if se.count+dp.Count() > MaxValue {
			return outOfRange
		}
		if c := check(se.sum + dp.Sum()); c != valid {
			return c
		}
		for i := 0; i < bc.Len(); i++ {
			if se.buckets[i]+bc.At(i) > MaxValue {
				return outOfRange
			}
		}
	}
	if !delta || !sameShape {
		se.count, se.sum = 0, 0
		eb := dp.ExplicitBounds()
		se.bounds = se.bounds[:0]
		for i := 0; i < eb.Len(); i++ {
			se.bounds = append(se.bounds, eb.At(i))
		}
		if cap(se.buckets) < bc.Len() {
			se.buckets = make([]uint64, bc.Len())
		}
		se.buckets = se.buckets[:bc.Len()]
		clear(se.buckets)
	}
	se.count += dp.Count()
	se.sum += dp.Sum()
	for i := 0; i < bc.Len(); i++ {
		se.buckets[i] += bc.At(i)
	}
	return valid
}

// seriesOf finds the series of the point, or admits it under MaxSeries.
func (s *Store) seriesOf(r *run, srv int32, res pcommon.Map, id schema.InstrumentID, attrs pcommon.Map, now time.Time) *series {
	k := append(s.key[:0], byte(id), byte(id>>8))
	for _, rk := range [...]string{keyServiceNS, keyServiceName, keyInstance, keyHost, schema.ResourceSourceKey, schema.ResourceFilePathKey} {
		k = append(append(k, str(res, rk)...), 0)
	}
	s.attrs = s.attrs[:0]
	attrs.Range(func(ak string, av pcommon.Value) bool {
		if len(s.attrs) < maxKeyAttrs {
			s.attrs = append(s.attrs, attrEntry{ak, av})
		}
		return true
	})
	slices.SortFunc(s.attrs, func(a, b attrEntry) int { return strings.Compare(a.k, b.k) })
	for _, a := range s.attrs {
		k = append(append(append(k, a.k...), 1), a.v.Str()...)
		if a.v.Type() != pcommon.ValueTypeStr {
			k = append(k, a.v.AsString()...)
		}
		k = append(k, 2)
	}
	s.key = k
	if se, ok := r.series[string(k)]; ok {
		se.seen = now
		return se
	}
	if len(r.series) >= s.lim.MaxSeries {
		s.dropped.Series++
		return nil
	}
	se := &series{inst: id, server: srv, seen: now}
	for i, d := range specs[id].dims {
		if v, ok := attrs.Get(d); ok {
			se.dims[i] = v.AsString()
		}
	}
	r.series[string(k)] = se
	return se
}

// consumePrices keeps the latest price of each model and token type (bounded: at most
// maxPrices pairs); a price that is not finite, negative or past MaxValue is rejected.
func (s *Store) consumePrices(m pmetric.Metric) {
	if m.Type() != pmetric.MetricTypeGauge {
		return
	}
	dps := m.Gauge().DataPoints()
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		v := value(dp)
		if c := check(v); c != valid {
			s.reject(c)
			continue
		} else if v < 0 {
			s.reject(outOfRange)
			continue
		}
		k := priceKey{str(dp.Attributes(), "gen_ai.response.model"), str(dp.Attributes(), "gen_ai.token.type")}
		if _, ok := s.prices[k]; !ok && len(s.prices) >= maxPrices {
			s.dropped.Prices++
			continue
		}
		s.prices[k] = v
	}
}

const maxPrices = 256

// expire forgets the series not updated for SeriesExpiration (as the prometheus exporter
// forgets them after its metric_expiration), and the runs with nothing left to chart.
func (s *Store) expire(now time.Time) {
	for id, r := range s.runs {
		for k, se := range r.series {
			if now.Sub(se.seen) > s.lim.SeriesExpiration {
				delete(r.series, k)
			}
		}
		if len(r.series) == 0 && now.Sub(r.seen) > s.lim.Horizon {
			delete(s.runs, id)
		}
	}
}

// Tick expires series and records one chart point per run (call it every Resolution).
func (s *Store) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	s.expire(now)
	for _, r := range s.runs {
		r.hist.record(now, r.chartValues())
	}
}
