package bound

import (
	"cmp"
	"context"
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/bound/internal/metadata"
	"github.com/gym-telemetry/otelcol-gym/internal/clock"
	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Bounder bounds the metrics of a pipeline to the Gym schema: the engine of the gymattrs
// processor, which the gym_console receiver runs as well. One batch is processed at a time (the
// state is shared by every batch); a batch goes through three passes:
//
//  1. every data point of a schema metric is bounded (attributes), mapped to its series
//     (admitted or overflow), and either kept as the carrier of its series in this batch,
//     merged into the carrier, kept alone, or dropped;
//  2. each carrier takes the merged value of its series;
//  3. merged and dropped points are removed, then metrics, scopes and resources left empty.
//
// With genai_conventions, the GenAI metrics are then derived from the model calls (genai.go).
type Bounder struct {
	tel         *metadata.TelemetryBuilder // telemetry.go
	logger      *zap.Logger
	clock       clock.Clock // idle series expire in its elapsed time, which a step of the host's clock does not move
	dropUnknown bool
	genAI       bool // genai_conventions: derive the GenAI metrics after the passes (genai.go)
	reasonSets  [numDropReasons]metric.MeasurementOption
	unk         unknowns     // metrics the schema's exact rule does not take (unknown.go)
	res         resourceRule // the resource rule's scratch (resource.go)

	stateTotal *stateTotal // state_entries over the Bounders of one MeterProvider (state_total.go)

	mu  sync.Mutex
	st  *state
	bd  *attrBounder
	gen uint64
	b   batch
	ids instances // instance_per_process (instance.go)
}

// New returns a Bounder for cfg, which has passed Validate (New reads it and keeps no
// reference; it fails only on rules that cannot be built), reporting its counts to the
// instruments it builds from set (telemetry.go) and logging to set's logger (none if nil).
func New(cfg *Config, set component.TelemetrySettings) (*Bounder, error) {
	reg, err := normalize.NewRegistry(cfg.FailureKinds, cfg.HealthChecks, cfg.IgnoredHealthChecks)
	if err != nil {
		return nil, err
	}
	tel, err := metadata.NewTelemetryBuilder(set)
	if err != nil {
		return nil, err
	}
	logger := set.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	p := &Bounder{
		tel:         tel,
		logger:      logger,
		clock:       clock.System(),
		dropUnknown: cfg.UnknownMetrics == UnknownMetricsDrop,
		genAI:       cfg.GenAIConventions,
		st:          newState(cfg.CardinalityLimit, cfg.SeriesIdleTimeout),
		bd:          newAttrBounder(reg),
		unk:         newUnknowns(cfg),
		ids:         instances{on: cfg.InstancePerProcess},
	}
	p.unk.bounds.init()
	p.joinStateTotal(set.MeterProvider)
	p.b.entries = map[entryKey]*entry{}
	for r := dropReason(1); r < numDropReasons; r++ {
		p.reasonSets[r] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", r.String())))
	}
	p.zero(context.Background())
	return p, nil
}

// counts are the self-telemetry of one batch.
type counts struct {
	removed, normalised, merged, overflowed, mismatched, unmerged int64
	resCut, resRemoved, resMerged                                 int64 // resource.go
	dropped                                                       [numDropReasons]int64
}

// batch is the scratch state of one batch, reused.
type batch struct {
	entries  map[entryKey]*entry
	list     []*entry
	pool     []*entry
	keep     []bool          // pass 1's verdict on every point of the metrics it collected, in order
	verdicts []metricVerdict // pass 1's verdict on every metric, in order
	removed  bool            // a point or a metric was removed
	kvs      []keyValue
	resKey   []byte
	c        counts
}

type keyValue struct {
	k string
	v pcommon.Value
}

// entryKey identifies a series' point in a batch: cumulative (and gauge) points of a series
// merge into one, delta points into another.
type entryKey struct {
	s     *series
	delta bool
}

// entry is a series' point in this batch: its carrier (the first point of the series in the
// batch, which stays and takes the merged value) and what merges into it.
type entry struct {
	s                  *series
	gauge, hist, delta bool
	n                  int // points merged into it, the carrier included

	num  pmetric.NumberDataPoint
	hdp  pmetric.HistogramDataPoint
	cum  bool
	seen bool // a point was added

	// gauges: the newest point
	newest        pmetric.NumberDataPoint
	newestCarrier bool

	// delta sums and histograms
	total
}

// total is a sum or histogram being merged: a batch's delta points (entry) or a cumulative
// series across batches (cumState).
type total struct {
	start, ts pcommon.Timestamp

	// sums
	isDouble bool
	i        int64
	f        float64

	// histograms
	count    uint64
	sum      float64
	noSum    bool // a point without a sum fed it
	min, max float64
	hasMM    bool // min and max are set
	noMM     bool // a point without min/max and with observations fed it
	buckets  []uint64
}

func (b *batch) reset() {
	for _, e := range b.list {
		bk := e.buckets[:0]
		*e = entry{total: total{buckets: bk}}
		b.pool = append(b.pool, e)
	}
	b.list = b.list[:0]
	clear(b.entries)
	b.keep = b.keep[:0]
	b.verdicts = b.verdicts[:0]
	b.removed = false
	b.c = counts{}
}

func (b *batch) entry(s *series, delta bool) (*entry, bool) {
	k := entryKey{s, delta}
	if e, ok := b.entries[k]; ok {
		return e, false
	}
	var e *entry
	if n := len(b.pool); n > 0 {
		e, b.pool = b.pool[n-1], b.pool[:n-1]
	} else {
		e = &entry{}
	}
	e.s, e.delta = s, delta
	b.entries[k] = e
	b.list = append(b.list, e)
	return e, true
}

// metricCtx is what pass 1 knows of the metric whose points it bounds.
type metricCtx struct {
	id        schema.InstrumentID
	is        *instState
	scope     uint64
	delta     bool
	gauge     bool
	monotonic bool
}

// Process bounds md in place and returns it. Batches from several goroutines are processed
// one at a time.
func (p *Bounder) Process(ctx context.Context, md pmetric.Metrics) (pmetric.Metrics, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := int64(p.clock.Elapsed())
	p.gen++
	p.st.sweep(now)
	b := &p.b
	b.reset()

	// Pass 1.
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		cur := cursor{rm: rms.At(i)}
		cur.raw = p.boundResource(cur.rm.Resource()) // before anything reads the resource
		if p.ids.perProcess(cur.rm.Resource()) {     // before the resource's key: its attributes are final
			b.c.resCut++
		}
		sms := cur.rm.ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			cur.sm, cur.scope = sms.At(j), 0
			ms := cur.sm.Metrics()
			if p.dropUnknown {
				ms.RemoveIf(p.dropIfUnknown)
			}
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				id, ok := processed(m)
				if !ok {
					p.other(&cur, m, now)
					continue
				}
				b.verdicts = append(b.verdicts, metricCollected)
				if in := schema.Get(id); m.Unit() != in.Unit {
					m.SetUnit(in.Unit) // a unit Gym's own code states: exported as the schema's
				}
				p.boundsDiffer(id, m)
				p.collect(&metricCtx{id: id, is: p.resourceOf(&cur, now).inst(id), scope: p.scopeOf(&cur)}, m, now)
			}
		}
	}

	// Pass 2.
	for _, e := range b.list {
		p.finish(e)
	}

	// Pass 3.
	if b.removed {
		p.removeMerged(md)
	}
	if p.genAI {
		deriveGenAI(md)
	}

	p.record(ctx)
	return md, nil
}

func (p *Bounder) dropIfUnknown(m pmetric.Metric) bool {
	if _, ok := schema.Lookup(m.Name()); ok {
		return false
	}
	p.b.c.dropped[dropUnknownMetric] += int64(pointCount(m))
	p.b.removed = true
	p.seenOther(m, false, actionDropped)
	return true
}

// processed reports whether m is a schema metric with a kind and a unit the schema accepts for
// it (and a temporality, for sums and histograms): the metrics whose points are bounded.
func processed(m pmetric.Metric) (schema.InstrumentID, bool) {
	id, ok := schema.Lookup(m.Name())
	if !ok {
		return 0, false
	}
	in := schema.Get(id)
	if !in.AcceptsUnit(m.Unit()) {
		return 0, false
	}
	// The kind as sent: an instrument may accept more than its own (the "now" values of a
	// concurrency limit come as a Gauge or a non-monotonic Sum), and its points keep it.
	switch m.Type() {
	case pmetric.MetricTypeSum:
		kind := schema.KindUpDown
		if m.Sum().IsMonotonic() {
			kind = schema.KindCounter
		}
		return id, in.Accepts(kind) && knownTemporality(m.Sum().AggregationTemporality())
	case pmetric.MetricTypeGauge:
		return id, in.Accepts(schema.KindGauge)
	case pmetric.MetricTypeHistogram:
		return id, in.Kind == schema.KindHistogram &&
			knownTemporality(m.Histogram().AggregationTemporality())
	}
	return 0, false
}

func knownTemporality(t pmetric.AggregationTemporality) bool {
	return t == pmetric.AggregationTemporalityCumulative || t == pmetric.AggregationTemporalityDelta
}

func pointCount(m pmetric.Metric) int {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return m.Gauge().DataPoints().Len()
	case pmetric.MetricTypeSum:
		return m.Sum().DataPoints().Len()
	case pmetric.MetricTypeHistogram:
		return m.Histogram().DataPoints().Len()
	case pmetric.MetricTypeExponentialHistogram:
		return m.ExponentialHistogram().DataPoints().Len()
	case pmetric.MetricTypeSummary:
		return m.Summary().DataPoints().Len()
	}
	return 0
}

// collect runs pass 1 on the points of one schema metric.
func (p *Bounder) collect(mc *metricCtx, m pmetric.Metric, now int64) {
	b := &p.b
	switch m.Type() {
	case pmetric.MetricTypeSum:
		sum := m.Sum()
		mc.delta = sum.AggregationTemporality() == pmetric.AggregationTemporalityDelta
		mc.monotonic = sum.IsMonotonic()
		dps := sum.DataPoints()
		for i := 0; i < dps.Len(); i++ {
			b.keep = append(b.keep, p.number(mc, dps.At(i), now))
		}
	case pmetric.MetricTypeGauge:
		mc.gauge = true
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			b.keep = append(b.keep, p.number(mc, dps.At(i), now))
		}
	case pmetric.MetricTypeHistogram:
		h := m.Histogram()
		mc.delta = h.AggregationTemporality() == pmetric.AggregationTemporalityDelta
		dps := h.DataPoints()
		for i := 0; i < dps.Len(); i++ {
			b.keep = append(b.keep, p.histogram(mc, dps.At(i), now))
		}
	}
}

// bound bounds a point's attributes and finds its series. ok=false: the point is dropped.
func (p *Bounder) bound(mc *metricCtx, attrs pcommon.Map, flags pmetric.DataPointFlags, cumulative bool, now int64) (s *series, ok bool) {
	b, bd := &p.b, p.bd
	if r := bd.bound(mc.id, attrs, cumulative); r != keepPoint {
		b.c.dropped[r]++
		return nil, false
	}
	b.c.removed += int64(bd.removed)
	b.c.normalised += int64(bd.normalised)
	if cumulative {
		bd.raw = mix64(bd.raw + mc.scope)
	}
	ovf := true
	if bd.sdkOverflow {
		s = p.st.overflowOf(mc.is, now)
	} else {
		s, ovf = p.st.lookup(mc.is, bd.key, now)
	}
	if ovf {
		if flags.NoRecordedValue() {
			// A no-recorded-value marker says nothing of the overflow series.
			b.c.dropped[dropNoRecordedValue]++
			return nil, false
		}
		b.c.overflowed++
	}
	return s, true
}

// setAttrs gives a kept point its series' attributes, and strips its exemplars' filtered
// attributes.
func (p *Bounder) setAttrs(s *series, attrs pcommon.Map, ex pmetric.ExemplarSlice) {
	if s.overflow {
		setOverflow(attrs)
	} else {
		p.bd.write(attrs)
	}
	p.b.c.removed += int64(clearExemplarAttrs(ex))
}

// admit bounds a point's attributes. A point the bounds refuse is removed (keep false); one
// without a recorded value is kept on its own, as it carries no value to merge. Otherwise
// the point goes on to be merged into series s.
func (p *Bounder) admit(mc *metricCtx, attrs pcommon.Map, flags pmetric.DataPointFlags, ex pmetric.ExemplarSlice, cumulative bool, now int64) (s *series, merge, keep bool) {
	s, ok := p.bound(mc, attrs, flags, cumulative, now)
	if !ok {
		p.b.removed = true
		return nil, false, false
	}
	if flags.NoRecordedValue() {
		p.setAttrs(s, attrs, ex)
		return s, false, true
	}
	return s, true, true
}

func (p *Bounder) number(mc *metricCtx, dp pmetric.NumberDataPoint, now int64) bool {
	b := &p.b
	cumulative := !mc.gauge && !mc.delta
	s, merge, keep := p.admit(mc, dp.Attributes(), dp.Flags(), dp.Exemplars(), cumulative, now)
	if !merge {
		return keep
	}
	if cumulative {
		if p.st.applyNumber(mc.is, s, p.bd.raw, dp, mc.monotonic, p.gen, now) == appliedFull {
			b.c.dropped[dropStateFull]++
			b.removed = true
			return false
		}
	}
	e, fresh := b.entry(s, mc.delta)
	if fresh {
		e.num, e.gauge, e.cum = dp, mc.gauge, cumulative
		p.setAttrs(s, dp.Attributes(), dp.Exemplars())
	}
	e.n++
	switch {
	case mc.gauge:
		if fresh || dp.Timestamp() >= e.newest.Timestamp() {
			e.newest, e.newestCarrier = dp, fresh
		}
	case mc.delta:
		e.addNumber(dp)
	}
	if !fresh {
		b.c.merged++
		b.removed = true
	}
	return fresh
}

func (p *Bounder) histogram(mc *metricCtx, dp pmetric.HistogramDataPoint, now int64) bool {
	b := &p.b
	cumulative := !mc.delta
	s, merge, keep := p.admit(mc, dp.Attributes(), dp.Flags(), dp.Exemplars(), cumulative, now)
	if !merge {
		return keep
	}
	if dp.BucketCounts().Len() != dp.ExplicitBounds().Len()+1 {
		// Not mergeable bucket-wise (no bucket counts, or malformed): kept on its own.
		p.setAttrs(s, dp.Attributes(), dp.Exemplars())
		b.c.unmerged++
		return true
	}
	if cumulative {
		switch p.st.applyHistogram(mc.is, s, p.bd.raw, dp, p.gen, now) {
		case appliedFull:
			b.c.dropped[dropStateFull]++
			b.removed = true
			return false
		case appliedBounds:
			p.setAttrs(s, dp.Attributes(), dp.Exemplars())
			b.c.unmerged++
			return true
		}
	}
	e, fresh := b.entry(s, mc.delta)
	if !fresh && mc.delta && !e.hdp.ExplicitBounds().Equal(dp.ExplicitBounds()) {
		p.setAttrs(s, dp.Attributes(), dp.Exemplars())
		b.c.unmerged++
		return true
	}
	if fresh {
		e.hdp, e.hist, e.cum = dp, true, cumulative
		p.setAttrs(s, dp.Attributes(), dp.Exemplars())
	}
	e.n++
	if mc.delta {
		e.addHistogram(dp)
	}
	if !fresh {
		b.c.merged++
		b.removed = true
	}
	return fresh
}

// removeMerged is pass 3: it walks the batch in pass 1's order, removes the metrics and points
// pass 1 did not keep, then the metrics, scopes and resources that are left empty.
func (p *Bounder) removeMerged(md pmetric.Metrics) {
	keep := p.b.keep
	next := 0
	drop := func() bool {
		k := keep[next]
		next++
		return !k
	}
	numDrop := func(pmetric.NumberDataPoint) bool { return drop() }
	histDrop := func(pmetric.HistogramDataPoint) bool { return drop() }
	expDrop := func(pmetric.ExponentialHistogramDataPoint) bool { return drop() }
	sumDrop := func(pmetric.SummaryDataPoint) bool { return drop() }
	verdicts := p.b.verdicts
	md.ResourceMetrics().RemoveIf(func(rm pmetric.ResourceMetrics) bool {
		rm.ScopeMetrics().RemoveIf(func(sm pmetric.ScopeMetrics) bool {
			sm.Metrics().RemoveIf(func(m pmetric.Metric) bool {
				v := verdicts[0]
				verdicts = verdicts[1:]
				switch v {
				case metricUntouched:
					return false
				case metricRemoved:
					return true
				}
				n := pointCount(m)
				if n == 0 {
					return false
				}
				if !slices.Contains(keep[next:next+n], false) {
					next += n
					return false
				}
				switch m.Type() {
				case pmetric.MetricTypeSum:
					m.Sum().DataPoints().RemoveIf(numDrop)
				case pmetric.MetricTypeGauge:
					m.Gauge().DataPoints().RemoveIf(numDrop)
				case pmetric.MetricTypeHistogram:
					m.Histogram().DataPoints().RemoveIf(histDrop)
				case pmetric.MetricTypeExponentialHistogram:
					m.ExponentialHistogram().DataPoints().RemoveIf(expDrop)
				case pmetric.MetricTypeSummary:
					m.Summary().DataPoints().RemoveIf(sumDrop)
				}
				return pointCount(m) == 0
			})
			return sm.Metrics().Len() == 0
		})
		return rm.ScopeMetrics().Len() == 0
	})
}

// appendTyped appends an attribute to a key: its name, its type, then its value; a value that
// is not a number or a bool is written as s, its length first.
func appendTyped(k []byte, name string, t pcommon.ValueType, v pcommon.Value, s string) []byte {
	k = binary.AppendUvarint(k, uint64(len(name)))
	k = append(k, name...)
	k = append(k, byte(t))
	switch t {
	case pcommon.ValueTypeInt:
		return binary.LittleEndian.AppendUint64(k, uint64(v.Int()))
	case pcommon.ValueTypeDouble:
		return binary.LittleEndian.AppendUint64(k, math.Float64bits(v.Double()))
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(k, 1)
		}
		return append(k, 0)
	}
	k = binary.AppendUvarint(k, uint64(len(s)))
	return append(k, s...)
}

// resourceKey encodes a resource's identity: its attribute set, typed, in key order.
func (p *Bounder) resourceKey(attrs pcommon.Map) []byte {
	b := &p.b
	kvs := b.kvs[:0]
	for k, v := range attrs.All() {
		kvs = append(kvs, keyValue{k, v})
	}
	slices.SortFunc(kvs, func(x, y keyValue) int { return cmp.Compare(x.k, y.k) })
	key := b.resKey[:0]
	for _, kv := range kvs {
		s := ""
		switch kv.v.Type() {
		case pcommon.ValueTypeInt, pcommon.ValueTypeDouble, pcommon.ValueTypeBool:
		default:
			s = kv.v.AsString()
		}
		key = appendTyped(key, kv.k, kv.v.Type(), kv.v, s)
	}
	clear(kvs)
	b.kvs, b.resKey = kvs[:0], key
	return key
}

// scopeHash is part of a cumulative stream's identity: two scopes are two streams.
func (p *Bounder) scopeHash(sc pcommon.InstrumentationScope) uint64 {
	return mix64(maphash.String(p.bd.seed, sc.Name())^mix64(maphash.String(p.bd.seed, sc.Version()))) | 1
}
