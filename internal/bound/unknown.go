package bound

import (
	"encoding/binary"
	"hash/maphash"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// Metrics the schema's exact rule does not take: a name outside the schema (unknown), or a
// schema name whose kind, unit or temporality is not the schema's (mismatched). With
// unknown_metrics: bound (the default) both are bounded by the generic rules
// (unknown_attrs.go) and go through the same series state, overflow and merges as the schema's
// instruments; with drop, unknown metrics are dropped and mismatched ones bounded; with pass,
// both go on untouched. See docs/processor.md, "Unknown metrics".

// maxUnknownInstruments bounds the instruments bounded by the generic rules per resource (an
// instrument: a name with its kind and unit). A sender creating endless names gets this many;
// the points of any other are dropped and counted (instrument_limit). NeMo Gym and the
// OpenTelemetry instrumentations it runs create a few dozen. A variable so that tests can
// lower it.
var maxUnknownInstruments = 256

// maxInstKeyBytes: a longer name and unit are keyed by their hash, so that the state holds
// no unbounded name.
const maxInstKeyBytes = 256

// metricVerdict is pass 1's verdict on one metric, which pass 3 reads in the same order.
type metricVerdict uint8

const (
	metricUntouched metricVerdict = iota // passed on as it came
	metricCollected                      // its points are in batch.keep
	metricRemoved                        // removed whole (counted)
)

// unknowns is what a Bounder keeps for the metrics the schema's exact rule does not take.
type unknowns struct {
	generic bool // unknown_metrics is bound or drop: mismatched (and, with bound, unknown) metrics are bounded
	key     []byte
	names   nameTable
	bounds  boundsDiffer
}

func newUnknowns(cfg *Config) unknowns {
	return unknowns{generic: cfg.UnknownMetrics != UnknownMetricsPass}
}

// other runs pass 1 on a metric that processed does not take.
func (p *Bounder) other(c *cursor, m pmetric.Metric, now int64) {
	b := &p.b
	n := pointCount(m)
	_, known := schema.Lookup(m.Name())
	if known {
		b.c.mismatched += int64(n)
	}
	if n == 0 || !p.unk.generic {
		b.verdicts = append(b.verdicts, metricUntouched)
		p.seenOther(m, known, actionPassed)
		return
	}
	is := p.st.unknownInst(p.resourceOf(c, now), p.unk.instKey(p.bd.seed, m))
	if is == nil {
		b.c.dropped[dropInstrumentLimit] += int64(n)
		b.removed = true
		b.verdicts = append(b.verdicts, metricRemoved)
		p.seenOther(m, known, actionRefused)
		return
	}
	p.seenOther(m, known, actionBounded)
	b.verdicts = append(b.verdicts, metricCollected)
	mc := metricCtx{id: genericID, is: is, scope: p.scopeOf(c)}
	if mergeable(m) {
		p.collect(&mc, m, now)
		return
	}
	p.collectApart(&mc, m, now)
}

// mergeable reports whether the points of a metric merge as the schema's do: gauges, and sums
// and explicit-bucket histograms of a known temporality.
func mergeable(m pmetric.Metric) bool {
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		return true
	case pmetric.MetricTypeSum:
		return knownTemporality(m.Sum().AggregationTemporality())
	case pmetric.MetricTypeHistogram:
		return knownTemporality(m.Histogram().AggregationTemporality())
	}
	return false
}

// collectApart runs pass 1 on the points of a metric that cannot merge (exponential
// histograms, summaries, sums and histograms of unspecified temporality): each is bounded and
// kept apart in its admitted series. There is no overflow series to fold it into exactly: a
// point past the limit is dropped and counted (unmergeable_overflow).
func (p *Bounder) collectApart(mc *metricCtx, m pmetric.Metric, now int64) {
	switch m.Type() {
	case pmetric.MetricTypeSum:
		keepApart(p, mc, m.Sum().DataPoints(), now)
	case pmetric.MetricTypeHistogram:
		keepApart(p, mc, m.Histogram().DataPoints(), now)
	case pmetric.MetricTypeExponentialHistogram:
		keepApart(p, mc, m.ExponentialHistogram().DataPoints(), now)
	case pmetric.MetricTypeSummary:
		dps := m.Summary().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			p.b.keep = append(p.b.keep, p.apart(mc, dps.At(i).Attributes(), noExemplars, now))
		}
	}
}

// exemplarPoint is a data point of any kind but a summary's: it carries exemplars.
type exemplarPoint interface {
	Attributes() pcommon.Map
	Exemplars() pmetric.ExemplarSlice
}

// pointSlice is a metric's slice of data points.
type pointSlice[P exemplarPoint] interface {
	Len() int
	At(i int) P
}

// keepApart runs collectApart on each point of dps.
func keepApart[P exemplarPoint, S pointSlice[P]](p *Bounder, mc *metricCtx, dps S, now int64) {
	for i := 0; i < dps.Len(); i++ {
		dp := dps.At(i)
		p.b.keep = append(p.b.keep, p.apart(mc, dp.Attributes(), dp.Exemplars(), now))
	}
}

// noExemplars stands for the exemplars of a summary point, which has none.
var noExemplars = pmetric.NewExemplarSlice()

func (p *Bounder) apart(mc *metricCtx, attrs pcommon.Map, ex pmetric.ExemplarSlice, now int64) bool {
	b, bd := &p.b, p.bd
	bd.bound(genericID, attrs, false) // the generic rules keep every point
	b.c.removed += int64(bd.removed)
	b.c.normalised += int64(bd.normalised)
	var s *series
	if bd.sdkOverflow {
		// An SDK's own overflow series: kept, as the instrument's overflow series.
		s = p.st.overflowOf(mc.is, now)
	} else {
		var ovf bool
		if s, ovf = p.st.lookup(mc.is, bd.key, now); ovf {
			b.c.dropped[dropUnmergeable]++
			b.removed = true
			return false
		}
	}
	p.setAttrs(s, attrs, ex)
	return true
}

// instKey is the identity of an instrument bounded by the generic rules: its name, kind (a
// monotonic sum apart) and unit. One name sent with two kinds or units is two instruments, so
// that a gauge never merges into a sum, nor seconds into milliseconds.
func (u *unknowns) instKey(seed maphash.Seed, m pmetric.Metric) []byte {
	k := append(u.key[:0], byte(m.Type()))
	if m.Type() == pmetric.MetricTypeSum && m.Sum().IsMonotonic() {
		k[0] |= 0x80
	}
	if len(m.Name())+len(m.Unit()) > maxInstKeyBytes {
		k = append(k, 0xff)
		k = binary.LittleEndian.AppendUint64(k, maphash.String(seed, m.Name()))
		k = binary.LittleEndian.AppendUint64(k, maphash.String(seed, m.Unit()))
	} else {
		k = binary.AppendUvarint(k, uint64(len(m.Name())))
		k = append(k, m.Name()...)
		k = append(k, m.Unit()...)
	}
	u.key = k
	return k
}

// unknownInst returns the state of an instrument bounded by the generic rules in resource r,
// creating it while r has fewer than maxUnknownInstruments; nil past them.
func (st *state) unknownInst(r *resourceState, key []byte) *instState {
	if is, ok := r.unknown[string(key)]; ok {
		return is
	}
	if len(r.unknown) >= maxUnknownInstruments {
		return nil
	}
	if r.unknown == nil {
		r.unknown = map[string]*instState{}
	}
	is := &instState{series: map[string]*series{}}
	r.unknown[string(key)] = is
	return is
}
