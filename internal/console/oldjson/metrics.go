package oldjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// The SDK's MetricsData.to_json (opentelemetry-sdk, metrics/_internal/point.py).
type metricsData struct {
	ResourceMetrics *[]resourceMetrics `json:"resource_metrics"`
}

type resourceMetrics struct {
	Resource     *resource      `json:"resource"`
	ScopeMetrics []scopeMetrics `json:"scope_metrics"`
	SchemaURL    string         `json:"schema_url"`
}

type scopeMetrics struct {
	Scope     *scope   `json:"scope"`
	Metrics   []metric `json:"metrics"`
	SchemaURL string   `json:"schema_url"`
}

// scope is the SDK's InstrumentationScope.to_json.
type scope struct {
	Name       string         `json:"name"`
	Version    *string        `json:"version"`
	SchemaURL  *string        `json:"schema_url"`
	Attributes map[string]any `json:"attributes"`
}

type metric struct {
	Name        string      `json:"name"`
	Description string      `json:"description"`
	Unit        string      `json:"unit"`
	Data        *metricData `json:"data"`
}

// metricData is any of Sum, Gauge, Histogram and ExponentialHistogram: a Sum has
// is_monotonic, a Gauge no aggregation_temporality, and the two histograms tell themselves
// apart by their points (explicit_bounds or scale).
type metricData struct {
	DataPoints             []json.RawMessage `json:"data_points"`
	AggregationTemporality *int              `json:"aggregation_temporality"`
	IsMonotonic            *bool             `json:"is_monotonic"`
}

type numberPoint struct {
	Attributes        map[string]any `json:"attributes"`
	StartTimeUnixNano number         `json:"start_time_unix_nano"`
	TimeUnixNano      number         `json:"time_unix_nano"`
	Value             number         `json:"value"`
	Exemplars         []exemplar     `json:"exemplars"`
}

type histogramPoint struct {
	Attributes        map[string]any `json:"attributes"`
	StartTimeUnixNano number         `json:"start_time_unix_nano"`
	TimeUnixNano      number         `json:"time_unix_nano"`
	Count             number         `json:"count"`
	Sum               number         `json:"sum"`
	BucketCounts      []number       `json:"bucket_counts"`
	ExplicitBounds    *[]number      `json:"explicit_bounds"`
	Min               number         `json:"min"`
	Max               number         `json:"max"`
	Exemplars         []exemplar     `json:"exemplars"`
	// exponential histograms
	Scale     *number  `json:"scale"`
	ZeroCount number   `json:"zero_count"`
	Positive  *buckets `json:"positive"`
	Negative  *buckets `json:"negative"`
	Flags     number   `json:"flags"`
}

type buckets struct {
	Offset       number   `json:"offset"`
	BucketCounts []number `json:"bucket_counts"`
}

// exemplar is the SDK's Exemplar dataclass: ids are Python ints, in decimal.
type exemplar struct {
	FilteredAttributes map[string]any `json:"filtered_attributes"`
	Value              number         `json:"value"`
	TimeUnixNano       number         `json:"time_unix_nano"`
	SpanID             *json.Number   `json:"span_id"`
	TraceID            *json.Number   `json:"trace_id"`
}

// DecodeMetrics turns one metrics line into pdata: every resource, scope, metric and point,
// values and temporality as sent.
func DecodeMetrics(line []byte, md pmetric.Metrics) error {
	var d metricsData
	if err := decodeJSON(line, &d); err != nil {
		return err
	}
	if d.ResourceMetrics == nil {
		return errors.New("resource_metrics: missing")
	}
	for i, rm := range *d.ResourceMetrics {
		if err := rm.put(md.ResourceMetrics().AppendEmpty()); err != nil {
			return fmt.Errorf("resource_metrics[%d]: %w", i, err)
		}
	}
	return nil
}

func (rm *resourceMetrics) put(out pmetric.ResourceMetrics) error {
	if rm.Resource == nil {
		return errors.New("resource: missing")
	}
	if err := rm.Resource.put(out.Resource()); err != nil {
		return err
	}
	out.SetSchemaUrl(rm.SchemaURL)
	for i, sm := range rm.ScopeMetrics {
		osm := out.ScopeMetrics().AppendEmpty()
		osm.SetSchemaUrl(sm.SchemaURL)
		if sm.Scope != nil {
			if err := sm.Scope.put(osm.Scope()); err != nil {
				return fmt.Errorf("scope_metrics[%d].scope: %w", i, err)
			}
		}
		for j := range sm.Metrics {
			if err := sm.Metrics[j].put(osm.Metrics().AppendEmpty()); err != nil {
				return fmt.Errorf("scope_metrics[%d].metrics[%d] %q: %w", i, j, sm.Metrics[j].Name, err)
			}
		}
	}
	return nil
}

func (s *scope) put(out pcommon.InstrumentationScope) error {
	out.SetName(s.Name)
	if s.Version != nil {
		out.SetVersion(*s.Version)
	}
	return putAttrs(out.Attributes(), s.Attributes)
}

func temporality(t *int) (pmetric.AggregationTemporality, error) {
	switch *t {
	case 0:
		return pmetric.AggregationTemporalityUnspecified, nil
	case 1:
		return pmetric.AggregationTemporalityDelta, nil
	case 2:
		return pmetric.AggregationTemporalityCumulative, nil
	}
	return 0, fmt.Errorf("aggregation_temporality: %d is not 0, 1 or 2", *t)
}

func (m *metric) put(out pmetric.Metric) error {
	if m.Name == "" {
		return errors.New("name: missing")
	}
	if m.Data == nil {
		return errors.New("data: missing")
	}
	out.SetName(m.Name)
	out.SetDescription(m.Description)
	out.SetUnit(m.Unit)
	d := m.Data
	switch {
	case d.IsMonotonic != nil:
		if d.AggregationTemporality == nil {
			return errors.New("data: a sum without aggregation_temporality")
		}
		sum := out.SetEmptySum()
		t, err := temporality(d.AggregationTemporality)
		if err != nil {
			return err
		}
		sum.SetAggregationTemporality(t)
		sum.SetIsMonotonic(*d.IsMonotonic)
		return putNumberPoints(d.DataPoints, sum.DataPoints())
	case d.AggregationTemporality == nil:
		return putNumberPoints(d.DataPoints, out.SetEmptyGauge().DataPoints())
	}
	t, err := temporality(d.AggregationTemporality)
	if err != nil {
		return err
	}
	exp := false
	hps := make([]histogramPoint, len(d.DataPoints))
	for i, raw := range d.DataPoints {
		if err := decodeJSON(raw, &hps[i]); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
		isExp := hps[i].Scale != nil
		if i > 0 && isExp != exp {
			return errors.New("data: explicit and exponential histogram points mixed")
		}
		exp = isExp
	}
	if exp {
		h := out.SetEmptyExponentialHistogram()
		h.SetAggregationTemporality(t)
		for i := range hps {
			if err := hps[i].putExp(h.DataPoints().AppendEmpty()); err != nil {
				return fmt.Errorf("data_points[%d]: %w", i, err)
			}
		}
		return nil
	}
	h := out.SetEmptyHistogram()
	h.SetAggregationTemporality(t)
	for i := range hps {
		if err := hps[i].put(h.DataPoints().AppendEmpty()); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
	}
	return nil
}

func putNumberPoints(raws []json.RawMessage, out pmetric.NumberDataPointSlice) error {
	out.EnsureCapacity(len(raws))
	for i, raw := range raws {
		var p numberPoint
		if err := decodeJSON(raw, &p); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
		if err := p.put(out.AppendEmpty()); err != nil {
			return fmt.Errorf("data_points[%d]: %w", i, err)
		}
	}
	return nil
}

// putTimes sets a point's times. The start time may be null: the SDK writes None for the
// points of a synchronous gauge, which have no start.
func putTimes(start, ts number, setStart, setTS func(pcommon.Timestamp)) error {
	var s uint64
	if start.set {
		var err error
		if s, err = start.uint("start_time_unix_nano"); err != nil {
			return err
		}
	}
	t, err := ts.uint("time_unix_nano")
	if err != nil {
		return err
	}
	setStart(pcommon.Timestamp(s))
	setTS(pcommon.Timestamp(t))
	return nil
}

func (p *numberPoint) put(out pmetric.NumberDataPoint) error {
	if err := putAttrs(out.Attributes(), p.Attributes); err != nil {
		return err
	}
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	switch {
	case !p.Value.set:
		return errors.New("value: missing")
	case p.Value.isInt:
		out.SetIntValue(p.Value.i)
	default:
		out.SetDoubleValue(p.Value.f)
	}
	return putExemplars(p.Exemplars, out.Exemplars())
}

func counts(ns []number, field string, out pcommon.UInt64Slice) error {
	out.EnsureCapacity(len(ns))
	for i, n := range ns {
		c, err := n.uint(fmt.Sprintf("%s[%d]", field, i))
		if err != nil {
			return err
		}
		out.Append(c)
	}
	return nil
}

func (p *histogramPoint) put(out pmetric.HistogramDataPoint) error {
	if err := putAttrs(out.Attributes(), p.Attributes); err != nil {
		return err
	}
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	c, err := p.Count.uint("count")
	if err != nil {
		return err
	}
	out.SetCount(c)
	if p.Sum.set {
		out.SetSum(p.Sum.float())
	}
	if err := counts(p.BucketCounts, "bucket_counts", out.BucketCounts()); err != nil {
		return err
	}
	if p.ExplicitBounds == nil {
		return errors.New("explicit_bounds: missing")
	}
	for _, b := range *p.ExplicitBounds {
		out.ExplicitBounds().Append(b.float())
	}
	if n := len(p.BucketCounts); n != 0 && n != len(*p.ExplicitBounds)+1 {
		return fmt.Errorf("bucket_counts: %d counts for %d bounds", n, len(*p.ExplicitBounds))
	}
	// An empty histogram's min and max are the SDK's inf and -inf: no min and max.
	if p.Min.set && c > 0 {
		out.SetMin(p.Min.float())
	}
	if p.Max.set && c > 0 {
		out.SetMax(p.Max.float())
	}
	return putExemplars(p.Exemplars, out.Exemplars())
}

func (p *histogramPoint) putExp(out pmetric.ExponentialHistogramDataPoint) error {
	if err := putAttrs(out.Attributes(), p.Attributes); err != nil {
		return err
	}
	if err := putTimes(p.StartTimeUnixNano, p.TimeUnixNano, out.SetStartTimestamp, out.SetTimestamp); err != nil {
		return err
	}
	c, err := p.Count.uint("count")
	if err != nil {
		return err
	}
	out.SetCount(c)
	if p.Sum.set {
		out.SetSum(p.Sum.float())
	}
	if !p.Scale.isInt || p.Scale.i < -10 || p.Scale.i > 20 {
		return fmt.Errorf("scale: %v is not an integer in -10..20", p.Scale.float())
	}
	out.SetScale(int32(p.Scale.i))
	z, err := p.ZeroCount.uint("zero_count")
	if err != nil {
		return err
	}
	out.SetZeroCount(z)
	f, err := p.Flags.uint("flags")
	if err != nil {
		return err
	}
	if f > math.MaxUint32 {
		return fmt.Errorf("flags: %d is not a 32-bit value", f)
	}
	out.SetFlags(pmetric.DataPointFlags(uint32(f)))
	for _, b := range []struct {
		in   *buckets
		out  pmetric.ExponentialHistogramDataPointBuckets
		name string
	}{{p.Positive, out.Positive(), "positive"}, {p.Negative, out.Negative(), "negative"}} {
		if b.in == nil {
			continue
		}
		if !b.in.Offset.isInt || b.in.Offset.i < -1<<31 || b.in.Offset.i >= 1<<31 {
			return fmt.Errorf("%s.offset: not a 32-bit integer", b.name)
		}
		b.out.SetOffset(int32(b.in.Offset.i))
		if err := counts(b.in.BucketCounts, b.name+".bucket_counts", b.out.BucketCounts()); err != nil {
			return err
		}
	}
	if p.Min.set && c > 0 {
		out.SetMin(p.Min.float())
	}
	if p.Max.set && c > 0 {
		out.SetMax(p.Max.float())
	}
	return putExemplars(p.Exemplars, out.Exemplars())
}

func putExemplars(exs []exemplar, out pmetric.ExemplarSlice) error {
	for i, e := range exs {
		oe := out.AppendEmpty()
		if err := putAttrs(oe.FilteredAttributes(), e.FilteredAttributes); err != nil {
			return fmt.Errorf("exemplars[%d]: %w", i, err)
		}
		t, err := e.TimeUnixNano.uint("time_unix_nano")
		if err != nil {
			return fmt.Errorf("exemplars[%d]: %w", i, err)
		}
		oe.SetTimestamp(pcommon.Timestamp(t))
		switch {
		case !e.Value.set:
			return fmt.Errorf("exemplars[%d]: value: missing", i)
		case e.Value.isInt:
			oe.SetIntValue(e.Value.i)
		default:
			oe.SetDoubleValue(e.Value.f)
		}
		if e.SpanID != nil {
			b, err := bigID(*e.SpanID, 8)
			if err != nil {
				return fmt.Errorf("exemplars[%d].span_id: %w", i, err)
			}
			oe.SetSpanID(pcommon.SpanID(b))
		}
		if e.TraceID != nil {
			b, err := bigID(*e.TraceID, 16)
			if err != nil {
				return fmt.Errorf("exemplars[%d].trace_id: %w", i, err)
			}
			oe.SetTraceID(pcommon.TraceID(b))
		}
	}
	return nil
}
