package harness

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"

	"github.com/gym-telemetry/otelcol-gym/internal/normalize"
	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// OTLPShape is the shape of a generated Gym SDK load: Resources processes, each exporting
// every schema instrument Exports times (cumulative, values growing).
type OTLPShape struct {
	Resources int
	Exports   int
	// Workers is how many SDK series share one declared attribute set, told apart only by
	// an undeclared attribute (nemo.gym.worker.index): the series a bounding processor merges.
	Workers int
	// Combos caps the declared attribute sets per instrument (per attribute, before the cap).
	Combos int
	Seed   uint64
}

// OTLPLoad is the generated load: Bodies[export][resource] is one OTLP/HTTP protobuf
// ExportMetricsServiceRequest of one resource (one process's export).
type OTLPLoad struct {
	Bodies [][][]byte
	Points int64 // data points in all bodies
	Bytes  int64
	// SeriesPerResource are the SDK series of one resource (every export has them all);
	// DeclaredSeries are the series left once undeclared attributes are dropped and the
	// values normalised (what gymattrs merges them into, per resource).
	SeriesPerResource, DeclaredSeries int
	Instruments                       int
	// PointsPerKind counts data points by instrument kind (all bodies).
	PointsPerKind map[string]int64
}

// Undeclared attributes every SDK point carries: none is declared by any instrument, so a
// bounding processor drops them all.
const (
	WorkerAttr = "nemo.gym.worker.index" // int: tells the Workers series of one set apart
	JobTagAttr = "nemo.gym.job.tag"      // a free string the SDK's resource-wide views add
	// ReasonAttr: free text on failed completions (the exception message).
	ReasonAttr = "failure_reason"
)

// LongString is an over-long value sent for a free string attribute (a dispatch name of
// 300 bytes): capped to its attribute's MaxBytes.
var LongString = "dispatch-" + strings.Repeat("x", 291)

// otlpSeries is one SDK series: the declared attributes as sent (values and whether each
// is present) and its bounded form's key.
type otlpSeries struct {
	attrs []kv
	key   string
}

type kv struct {
	k string
	v any // string, int64, bool
}

// attrValues are values an SDK sends for attribute a on instrument ia: valid ones, and ones
// the attribute's rule normalises (a fallback, an over-long string, a value of another type),
// never ones it rejects (so every point survives on both collectors and both count the same
// points). nil marks "left out" for an optional attribute.
func attrValues(ia schema.InstrumentAttr) []any {
	a := schema.Attr(ia.ID)
	vals := a.Values
	if ia.Values != nil {
		vals = ia.Values
	}
	var out []any
	switch a.Rule {
	case schema.RuleEnum, schema.RuleRewardRange, schema.RulePhase:
		for _, v := range vals[:min(len(vals), 2)] {
			out = append(out, v)
		}
	case schema.RuleFallbackEnum:
		out = append(out, vals[0], "Custom Thing") // the second becomes the fallback
	case schema.RuleFailureKind:
		// registered, namespaced (kept), free text (becomes the fallback)
		out = append(out, schema.FailureKinds[2], "myenv:bad_answer", "Read timed out after 30s")
	case schema.RuleIdentifier:
		out = append(out, "sandbox_error", "Not An Identifier!") // the second: the fallback
	case schema.RuleHealthCheck:
		out = append(out, schema.HealthChecks[0], "my_custom_check")
	case schema.RuleRoute:
		out = append(out, "/run", "/verify?id=7") // a query string: unmatched
	case schema.RuleString:
		if ia.ID == schema.AttrNemoGymRolloutDispatchName {
			out = append(out, "math", "code", LongString)
		} else {
			out = append(out, "policy_model", "math_with_judge")
		}
	case schema.RuleStatusCode:
		out = append(out, int64(200), int64(500))
	case schema.RuleIntEnum:
		out = append(out, a.IntValues[0], a.IntValues[1])
	case schema.RuleIntRange:
		out = append(out, max(a.Min, min(int64(4242), a.Max))) // a pid, or within a narrower range (a GPU index)
	case schema.RuleBool:
		out = append(out, true, false)
	default:
		panic(fmt.Sprintf("harness: no generated values for rule %d (%s)", a.Rule, a.Key))
	}
	if ia.Optional {
		out = append(out, nil)
	}
	return out
}

// boundedKey is the series key of attrs once bounded by the schema's rules (the generated
// values are only of the kinds attrValues gives).
func boundedKey(id schema.InstrumentID, attrs []kv) string {
	var b strings.Builder
	scored := false
	for _, p := range attrs {
		if p.k == schema.Attr(schema.AttrNemoGymRolloutOutcome).Key && p.v == "scored" {
			scored = true
		}
	}
	for i, ia := range schema.Get(id).Attrs {
		p := attrs[i]
		if p.v == nil || (scored && id == schema.GymRolloutCompletedTotal && ia.Optional) {
			continue
		}
		v := p.v
		if s, ok := v.(string); ok {
			out, _ := (*normalize.Registry)(nil).String(ia.ID, []byte(s)) // nil: Gym's registries
			v = string(out)
		}
		fmt.Fprintf(&b, "%s=%v;", p.k, v)
	}
	return b.String()
}

// instrumentSeries returns up to combos declared attribute sets of instrument id, picked from
// the product of attrValues by a seeded shuffle.
func instrumentSeries(id schema.InstrumentID, combos int, rng *rand.Rand) []otlpSeries {
	in := schema.Get(id)
	all := [][]kv{{}}
	for _, ia := range in.Attrs {
		key := schema.Attr(ia.ID).Key
		var next [][]kv
		for _, prefix := range all {
			for _, v := range attrValues(ia) {
				next = append(next, append(slices.Clone(prefix), kv{key, v}))
			}
		}
		all = next
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	limit := combos * max(1, len(in.Attrs))
	if len(all) > limit {
		all = all[:limit]
	}
	out := make([]otlpSeries, len(all))
	for i, attrs := range all {
		out[i] = otlpSeries{attrs: attrs, key: boundedKey(id, attrs)}
	}
	return out
}

// GenOTLP generates the load once, in memory. Timestamps are relative to now, so that no
// collector sees the points as stale.
func GenOTLP(shape OTLPShape) (*OTLPLoad, error) {
	if shape.Resources < 1 || shape.Exports < 1 || shape.Workers < 1 || shape.Combos < 1 {
		return nil, fmt.Errorf("harness: bad OTLP shape %+v", shape)
	}
	rng := rand.New(rand.NewPCG(shape.Seed, 0x6f746c70))
	series := make([][]otlpSeries, schema.NumInstruments)
	load := &OTLPLoad{Instruments: int(schema.NumInstruments), PointsPerKind: map[string]int64{}}
	for id := range schema.NumInstruments {
		series[id] = instrumentSeries(id, shape.Combos, rng)
		keys := map[string]bool{}
		for _, s := range series[id] {
			keys[s.key] = true
		}
		load.SeriesPerResource += len(series[id]) * shape.Workers
		load.DeclaredSeries += len(keys)
	}
	start := time.Now().Add(-time.Duration(shape.Exports+1) * 10 * time.Second)
	load.Bodies = make([][][]byte, shape.Exports)
	for e := range shape.Exports {
		load.Bodies[e] = make([][]byte, shape.Resources)
		at := start.Add(time.Duration(e+1) * 10 * time.Second)
		for r := range shape.Resources {
			md := exportOf(series, shape, r, e+1, start, at, load.PointsPerKind)
			load.Points += int64(md.DataPointCount())
			body, err := pmetricotlp.NewExportRequestFromMetrics(md).MarshalProto()
			if err != nil {
				return nil, err
			}
			load.Bodies[e][r] = body
			load.Bytes += int64(len(body))
		}
	}
	return load, nil
}

// exportOf is resource r's k-th export (k >= 1): every series, cumulative since start.
func exportOf(series [][]otlpSeries, shape OTLPShape, r, k int, start, at time.Time, perKind map[string]int64) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	ra := rm.Resource().Attributes()
	ra.PutStr("service.name", "nemo-gym")
	ra.PutStr("service.instance.id", fmt.Sprintf("gym-%04d", r))
	ra.PutInt("process.pid", int64(10000+r))
	ra.PutStr("host.name", fmt.Sprintf("node-%02d", r/8))
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("nemo_gym.telemetry")
	sm.Scope().SetVersion("0.4.0")
	st, ts := pcommon.NewTimestampFromTime(start), pcommon.NewTimestampFromTime(at)
	for id := range schema.NumInstruments {
		in := schema.Get(id)
		m := sm.Metrics().AppendEmpty()
		m.SetName(in.Name)
		m.SetUnit(in.Unit)
		m.SetDescription(in.Description)
		var nums pmetric.NumberDataPointSlice
		var hist pmetric.HistogramDataPointSlice
		switch in.Kind {
		case schema.KindCounter, schema.KindUpDown:
			s := m.SetEmptySum()
			s.SetIsMonotonic(in.Kind == schema.KindCounter)
			s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			nums = s.DataPoints()
		case schema.KindGauge:
			nums = m.SetEmptyGauge().DataPoints()
		case schema.KindHistogram:
			h := m.SetEmptyHistogram()
			h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
			hist = h.DataPoints()
		}
		for si, s := range series[id] {
			for w := range shape.Workers {
				var attrs pcommon.Map
				// grow: a per-series rate, so that cumulative values rise at each export
				rate := int64(1 + (si+w+r)%7)
				if in.Kind == schema.KindHistogram {
					dp := hist.AppendEmpty()
					attrs = dp.Attributes()
					dp.SetStartTimestamp(st)
					dp.SetTimestamp(ts)
					fillHistogram(dp, in.Bounds, uint64(rate)*uint64(k), si)
				} else {
					dp := nums.AppendEmpty()
					attrs = dp.Attributes()
					if in.Kind != schema.KindGauge {
						dp.SetStartTimestamp(st)
					}
					dp.SetTimestamp(ts)
					v := rate * int64(k)
					if in.Kind != schema.KindCounter {
						v = rate + int64(k%5) // up-downs and gauges move both ways
					}
					if in.ValueType == schema.ValueDouble {
						dp.SetDoubleValue(float64(v) * 0.25)
					} else {
						dp.SetIntValue(v)
					}
				}
				for _, p := range s.attrs {
					switch v := p.v.(type) {
					case string:
						attrs.PutStr(p.k, v)
					case int64:
						attrs.PutInt(p.k, v)
					case bool:
						attrs.PutBool(p.k, v)
					}
				}
				attrs.PutInt(WorkerAttr, int64(w))
				attrs.PutStr(JobTagAttr, "nightly-eval")
				if id == schema.GymRolloutCompletedTotal {
					attrs.PutStr(ReasonAttr, fmt.Sprintf("read timed out after %ds", 10+si))
				}
				perKind[in.Kind.String()]++
			}
		}
	}
	return md
}

// fillHistogram sets a cumulative explicit-bucket point of count observations over bounds.
func fillHistogram(dp pmetric.HistogramDataPoint, bounds []float64, count uint64, si int) {
	dp.ExplicitBounds().FromRaw(bounds)
	buckets := make([]uint64, len(bounds)+1)
	lo := si % len(buckets)
	hi := (lo + 2) % len(buckets)
	buckets[lo] += count - count/3
	buckets[hi] += count / 3
	dp.BucketCounts().FromRaw(buckets)
	dp.SetCount(count)
	mid := func(i int) float64 {
		if i < len(bounds) {
			return bounds[i]
		}
		return bounds[len(bounds)-1] * 2
	}
	dp.SetSum(float64(count-count/3)*mid(lo) + float64(count/3)*mid(hi))
	dp.SetMin(min(mid(lo), mid(hi)) / 2)
	dp.SetMax(max(mid(lo), mid(hi)))
}

// CompletedUnder is one OTLP request of n series of gym.rollout.completed_total (cumulative,
// one per dispatch name d0000..) under a resource of the given string attributes: the load of
// the tests and benchmarks of long resource values.
func CompletedUnder(resource map[string]string, n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	for k, v := range resource {
		rm.Resource().Attributes().PutStr(k, v)
	}
	m := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m.SetName("gym.rollout.completed_total")
	m.SetUnit("{rollout}")
	s := m.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	now := pcommon.NewTimestampFromTime(time.Now())
	for i := range n {
		dp := s.DataPoints().AppendEmpty()
		dp.Attributes().PutStr("nemo.gym.rollout.outcome", "scored")
		dp.Attributes().PutStr("nemo.gym.rollout.dispatch.name", fmt.Sprintf("d%04d", i))
		dp.SetStartTimestamp(now - 60e9)
		dp.SetTimestamp(now)
		dp.SetIntValue(int64(i + 1))
	}
	return md
}
