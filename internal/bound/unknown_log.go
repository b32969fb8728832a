package bound

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/ratelog"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// What the Bounder says of the instruments the schema's exact rule does not take, and of the
// schema histograms sent with other bucket bounds: counted per instrument name, and logged
// once per name.

// maxCountedNames bounds the instrument names of otelcol_processor_gymattrs_unknown_points
// (the first ones seen); later names are counted under otherName. A variable for tests.
var maxCountedNames = 1000

const otherName = "_other"

// instrumentKey is the attribute naming the instrument on the per-instrument self-metrics.
const instrumentKey = "instrument"

// docsFix is where the user reads how to fix what a line reports.
const (
	docsUnknown = "docs/processor.md#unknown-metrics"
	docsBuckets = "docs/gym.md#histogram-buckets"
)

// action is what is done with a metric the schema's exact rule does not take.
type action uint8

const (
	actionPassed action = iota
	actionBounded
	actionDropped
	actionRefused
)

// nameTable counts points per instrument name (the first maxCountedNames, then otherName),
// and remembers which names were logged. Bounded: maxCountedNames entries of at most
// schema.DefaultStringMaxBytes each.
type nameTable struct {
	idx     map[string]int32
	entries []nameEntry // [0] is otherName
	touched []int32     // entries counted in this batch
	logs    ratelog.Limiter
}

type nameEntry struct {
	set    metric.MeasurementOption
	n      int64 // points in this batch
	logged bool
}

func instrumentSet(name string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(instrumentKey, name)))
}

// index returns the entry of name, creating it while there is room.
func (t *nameTable) index(name string) int32 {
	name = name[:len(normalize.FreeString(bytesOf(name)))]
	if i, ok := t.idx[name]; ok {
		return i
	}
	if t.idx == nil {
		t.idx = map[string]int32{}
		t.entries = append(t.entries, nameEntry{set: instrumentSet(otherName)})
		t.logs = ratelog.Limiter{Burst: 10, Every: 10 * time.Second}
	}
	if len(t.idx) >= maxCountedNames {
		return 0
	}
	name = strings.Clone(name) // not the batch's memory
	i := int32(len(t.entries))
	t.idx[name] = i
	t.entries = append(t.entries, nameEntry{set: instrumentSet(name)})
	return i
}

// seenOther counts the points of a metric the schema's exact rule does not take under its
// name, and logs the name the first time (within the log budget: a name not logged for lack of
// budget is logged when next seen).
func (p *Bounder) seenOther(m pmetric.Metric, known bool, a action) {
	n := pointCount(m)
	if n == 0 {
		return
	}
	t := &p.unk.names
	i := t.index(m.Name())
	e := &t.entries[i]
	if e.n == 0 {
		t.touched = append(t.touched, i)
	}
	e.n += int64(n)
	if !e.logged {
		e.logged = p.logOther(m, known, a, i == 0)
	}
}

func (p *Bounder) logOther(m pmetric.Metric, known bool, a action, other bool) bool {
	t := &p.unk.names
	ok, held := t.logs.Take(time.Now())
	if !ok {
		return false
	}
	log := p.logger
	if other {
		log.Warn(fmt.Sprintf("gymattrs: more than %d instrument names outside the schema: the points of later names are counted under %s=%q and not logged by name", maxCountedNames, instrumentKey, otherName),
			zap.String("instrument", m.Name()), zap.String("docs", docsUnknown), zap.Int64("not_logged_since_last", held))
		return true
	}
	fields := []zap.Field{
		zap.String("instrument", m.Name()), zap.String("kind", kindOf(m)), zap.String("unit", m.Unit()),
		zap.String("action", p.actionText(a)), zap.String("docs", docsUnknown), zap.Int64("not_logged_since_last", held),
	}
	if id, isSchema := schema.Lookup(m.Name()); known && isSchema {
		in := schema.Get(id)
		log.Warn("gymattrs: a schema instrument arrived with a kind, unit or temporality the schema does not take",
			append(fields, zap.String("schema_kind", in.Kind.String()), zap.String("schema_unit", in.Unit))...)
		return true
	}
	log.Info("gymattrs: an instrument outside the schema", fields...)
	return true
}

func (p *Bounder) actionText(a action) string {
	switch a {
	case actionPassed:
		return "passed on unbounded (unknown_metrics: pass)"
	case actionDropped:
		return "dropped and counted (unknown_metrics: drop)"
	case actionRefused:
		return fmt.Sprintf("dropped and counted (reason instrument_limit): its resource already has %d instruments bounded by the generic rules", maxUnknownInstruments)
	}
	return fmt.Sprintf("bounded by the generic rules: string values capped at %d bytes, at most %d series per resource, later attribute sets folded into %s=true",
		schema.DefaultStringMaxBytes, p.st.limit, schema.OverflowAttribute)
}

// kindOf describes a metric's kind as sent, for a log line.
func kindOf(m pmetric.Metric) string {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		mono := "non-monotonic"
		if m.Sum().IsMonotonic() {
			mono = "monotonic"
		}
		return fmt.Sprintf("%s %s Sum", m.Sum().AggregationTemporality(), mono)
	case pmetric.MetricTypeHistogram:
		return fmt.Sprintf("%s Histogram", m.Histogram().AggregationTemporality())
	case pmetric.MetricTypeExponentialHistogram:
		return fmt.Sprintf("%s ExponentialHistogram", m.ExponentialHistogram().AggregationTemporality())
	}
	return m.Type().String()
}

// boundsDiffer counts, per schema histogram, the points whose explicit bounds are not the
// schema's (an SDK without a View exports its default buckets), and logs each instrument once.
type boundsDiffer struct {
	n      [schema.NumInstruments]int64 // points in this batch
	logged [schema.NumInstruments]bool
	sets   [schema.NumInstruments]metric.MeasurementOption
}

func (d *boundsDiffer) init() {
	for id := range schema.NumInstruments {
		if in := schema.Get(id); in.Kind == schema.KindHistogram && in.Bounds != nil {
			d.sets[id] = instrumentSet(in.Name)
		}
	}
}

// boundsDiffer checks the bounds of the points of schema metric m (instrument id). Such points
// are kept as they come: the collector cannot re-bucket what it did not observe.
func (p *Bounder) boundsDiffer(id schema.InstrumentID, m pmetric.Metric) {
	d := &p.unk.bounds
	if m.Type() != pmetric.MetricTypeHistogram || d.sets[id] == nil {
		return
	}
	want := schema.Get(id).Bounds
	dps := m.Histogram().DataPoints()
	first := -1
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		if dp.Flags().NoRecordedValue() || equalBounds(want, dp.ExplicitBounds()) {
			continue
		}
		if first < 0 {
			first = i
		}
		d.n[id]++
	}
	if first < 0 || d.logged[id] {
		return
	}
	d.logged[id] = true
	p.logger.Warn("gymattrs: a schema histogram arrived with other bucket bounds than the schema's: kept as sent (a collector cannot re-bucket), its quantiles are only as good as its buckets; set the schema's buckets with a View on the SDK's MeterProvider",
		zap.String("instrument", m.Name()), zap.Float64s("bounds", dps.At(first).ExplicitBounds().AsRaw()),
		zap.Float64s("schema_bounds", want), zap.String("docs", docsBuckets))
}

// zeroOther makes the bounds_differ series of every schema histogram exist at 0.
func (p *Bounder) zeroOther(ctx context.Context) {
	for id := range schema.NumInstruments {
		if set := p.unk.bounds.sets[id]; set != nil {
			p.tel.ProcessorGymattrsHistogramBoundsDiffer.Add(ctx, 0, set)
		}
	}
}

// recordOther adds the batch's per-instrument counts to the telemetry.
func (p *Bounder) recordOther(ctx context.Context) {
	t := &p.unk.names
	for _, i := range t.touched {
		e := &t.entries[i]
		p.tel.ProcessorGymattrsUnknownPoints.Add(ctx, e.n, e.set)
		e.n = 0
	}
	t.touched = t.touched[:0]
	d := &p.unk.bounds
	for id := range schema.NumInstruments {
		if n := d.n[id]; n > 0 {
			p.tel.ProcessorGymattrsHistogramBoundsDiffer.Add(ctx, n, d.sets[id])
			d.n[id] = 0
		}
	}
}
