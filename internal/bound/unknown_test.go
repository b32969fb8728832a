package bound

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// workers is the number of attribute sets an unknown instrument gets in these tests: more than
// the default cardinality limit.
const workers = 2500

// byInstrument returns a per-instrument telemetry counter (unknown_points,
// histogram_bounds_differ) by instrument name.
func (tp *testProcessor) byInstrument(t testing.TB, name string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	m, err := tp.tel.GetMetric("otelcol_processor_gymattrs_" + name)
	if err != nil {
		return out
	}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value(instrumentKey)
		out[v.AsString()] = dp.Value
	}
	return out
}

// observe makes the Bounder log to an observer.
func (tp *testProcessor) observe() *observer.ObservedLogs {
	core, logs := observer.New(zapcore.InfoLevel)
	tp.logger = zap.New(core)
	return logs
}

// workerPoints is one point per worker of an unknown instrument, value f(worker).
func workerPoints(round int, f func(w int) int64) []pt {
	pts := make([]pt, workers)
	for w := range pts {
		pts[w] = pt{a: attrs{"worker.id": fmt.Sprintf("w%05d", w), "pid": w}, start: 1, t: 60 * round, i: f(w)}
	}
	return pts
}

// An unknown instrument with 2,500 attribate sets: cardinality_limit series at most, the
// overflow series one of them, and every total kept, for cumulative and delta sums, over two
// exports (the cumulative overflow is the sum of its folded streams' latest values).
func TestUnknownSumsBoundedToLimit(t *testing.T) {
	for _, temp := range []pmetric.AggregationTemporality{cumulative, delta} {
		t.Run(temp.String(), func(t *testing.T) {
			tp := newTestProcessor(t, nil)
			for round := 1; round <= 2; round++ {
				value := func(w int) int64 { return int64(round * (w%7 + 1)) }
				out := tp.run(t, newBatch().resource(gymResource("a")).
					sum("gym.agent.tool_calls_total", "{call}", true, temp, workerPoints(round, value)...).md)
				got := byAttrs(points(out, "gym.agent.tool_calls_total"))
				require.Len(t, got, schema.DefaultCardinalityLimit, "round %d: series, the overflow one included", round)
				var want, have, folded int64
				for w := range workers {
					want += value(w)
					key := attrString(map[string]any{"worker.id": fmt.Sprintf("w%05d", w), "pid": int64(w)})
					if p, ok := got[key]; ok {
						assert.Equal(t, value(w), p.Int, "round %d: admitted %s passes exactly", round, key)
					} else {
						folded += value(w)
					}
				}
				for _, p := range got {
					have += p.Int
				}
				assert.Equal(t, want, have, "round %d: no count lost", round)
				assert.Equal(t, folded, got[overflowKey].Int, "round %d: the overflow series holds the folded sets", round)
			}
			folded := int64(2 * (workers - schema.DefaultCardinalityLimit + 1))
			assert.Equal(t, folded, tp.counter(t, "points_overflowed"))
			assert.Equal(t, map[string]int64{"gym.agent.tool_calls_total": 2 * workers}, tp.byInstrument(t, "unknown_points"))
			assert.Zero(t, tp.counter(t, "points_mismatched"), "not a schema name")
		})
	}
}

// Gauges of an unknown instrument: the overflow series keeps the newest folded point.
// Histograms with equal bounds merge bucket-wise into the overflow series, over two exports,
// cumulative (the overflow is the sum of its folded streams' latest histograms) and delta: no
// observation lost.
func TestUnknownGaugesAndHistogramsBoundedToLimit(t *testing.T) {
	gauges := make([]pt, workers)
	for w := range workers {
		gauges[w] = pt{a: attrs{"worker.id": fmt.Sprintf("w%05d", w)}, t: 10 + w, i: int64(w)}
	}
	tp := newTestProcessor(t, limit(100))
	out := tp.run(t, newBatch().resource(gymResource("a")).gauge("gym.worker.queue_size", "{item}", gauges...).md)
	g := byAttrs(points(out, "gym.worker.queue_size"))
	require.Len(t, g, 100)
	assert.EqualValues(t, workers-1, g[overflowKey].Int, "the newest folded gauge")

	bounds := []float64{1, 10, 100}
	for _, temp := range []pmetric.AggregationTemporality{cumulative, delta} {
		t.Run(temp.String(), func(t *testing.T) {
			tp := newTestProcessor(t, limit(100))
			for round := 1; round <= 2; round++ {
				hists := make([]pt, workers)
				for w := range workers {
					k := uint64(round)
					hists[w] = hist(attrs{"worker.id": fmt.Sprintf("w%05d", w)}, 1, 60*round, bounds, float64(w), 0.5, 50, k*uint64(w%3), k, 0, k*uint64(w%2))
				}
				out := tp.run(t, newBatch().resource(gymResource("a")).histogram("gym.tool.latency_s", "s", temp, hists...).md)
				h := byAttrs(points(out, "gym.tool.latency_s"))
				require.Len(t, h, 100, "round %d", round)
				var count, wantCount uint64
				buckets := make([]uint64, 4)
				wantBuckets := make([]uint64, 4)
				for _, p := range h {
					count += p.Count
					for k, c := range p.Buckets {
						buckets[k] += c
					}
				}
				for _, p := range hists {
					wantCount += p.count
					for k, c := range p.buckets {
						wantBuckets[k] += c
					}
				}
				assert.Equal(t, wantCount, count, "round %d: no observation lost", round)
				assert.Equal(t, wantBuckets, buckets, "round %d: bucket-wise", round)
				assert.Equal(t, bounds, h[overflowKey].Bounds)
			}
		})
	}
}

// The generic rules on one point's attributes: strings capped at 256 bytes of whole runes,
// maps, slices and bytes as their capped string form, numbers and bools kept, attributes past
// 128 or with a key past 256 bytes removed; the series key is the bounded set, in any order.
func TestUnknownAttributesCapped(t *testing.T) {
	tp := newTestProcessor(t, nil)
	long := strings.Repeat("é", 300) // 600 bytes
	a := attrs{
		"note":                   long,
		"ok":                     "short",
		"n":                      7,
		"ratio":                  0.5,
		"flag":                   true,
		"blob":                   []byte(strings.Repeat("x", 400)),
		"doc":                    map[string]any{"k": strings.Repeat("v", 400)},
		strings.Repeat("k", 300): "a key past 256 bytes",
	}
	many := attrs{}
	for i := range 200 {
		many[fmt.Sprintf("a%03d", i)] = i
	}
	out := tp.run(t, newBatch().resource(gymResource("a")).
		gauge("gym.lab.metric", "1", pt{a: a, t: 1, i: 1}).
		gauge("gym.lab.wide", "1", pt{a: many, t: 1, i: 1}).md)

	p := points(out, "gym.lab.metric")
	require.Len(t, p, 1)
	got := p[0].Attrs
	note := got["note"].(string)
	assert.True(t, utf8.ValidString(note))
	assert.LessOrEqual(t, len(note), schema.DefaultStringMaxBytes)
	assert.Greater(t, len(note), schema.DefaultStringMaxBytes-4, "cut at a rune boundary, not shorter")
	assert.True(t, strings.HasPrefix(long, note))
	assert.Equal(t, "short", got["ok"])
	assert.EqualValues(t, 7, got["n"])
	assert.Equal(t, 0.5, got["ratio"])
	assert.Equal(t, true, got["flag"])
	assert.Len(t, got["blob"].(string), schema.DefaultStringMaxBytes, "bytes: their base64 form, capped")
	assert.True(t, strings.HasPrefix(got["doc"].(string), `{"k":"vvv`), "a map: its JSON form, capped")
	assert.Len(t, got["doc"].(string), schema.DefaultStringMaxBytes)
	assert.NotContains(t, got, strings.Repeat("k", 300))
	assert.Len(t, got, 7)

	wide := points(out, "gym.lab.wide")
	require.Len(t, wide, 1)
	assert.Len(t, wide[0].Attrs, maxGenericAttrs)
	assert.Contains(t, wide[0].Attrs, "a000")
	assert.NotContains(t, wide[0].Attrs, "a199", "the first 128 in key order stay")
	assert.EqualValues(t, 3, tp.counter(t, "values_normalised"), "note, blob, doc")
	assert.EqualValues(t, 1+200-maxGenericAttrs, tp.counter(t, "attributes_removed"))

	// Two orders of one set, and two long values equal in their first 256 bytes, are one series.
	out = tp.run(t, newBatch().resource(gymResource("a")).
		sum("gym.lab.total", "1", true, delta,
			pt{a: attrs{"x": long + "1", "y": 1}, t: 2, i: 1},
			pt{a: attrs{"y": 1, "x": long + "2"}, t: 2, i: 2}).md)
	tot := points(out, "gym.lab.total")
	require.Len(t, tot, 1)
	assert.EqualValues(t, 3, tot[0].Int)
}

// A schema metric the schema does not take as sent (a counter as a Gauge, a histogram in
// seconds) is bounded by the generic rules, apart from the schema instrument's series.
func TestMismatchedBounded(t *testing.T) {
	tp := newTestProcessor(t, limit(10))
	gauges := make([]pt, 50)
	for i := range gauges {
		gauges[i] = pt{a: attrs{"reason": fmt.Sprintf("r%d", i)}, t: 1, i: 1}
	}
	out := tp.run(t, newBatch().resource(gymResource("a")).
		counter(completed, "1", pt{a: sc("math"), start: 1, t: 1, i: 4}).
		gauge(completed, "1", gauges...).md)
	var asGauge, asSum []outPoint
	for _, rm := range out.ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Type() == pmetric.MetricTypeGauge {
					asGauge = append(asGauge, metricPoints(m)...)
				} else {
					asSum = append(asSum, metricPoints(m)...)
				}
			}
		}
	}
	assert.Len(t, asGauge, 10, "the limit")
	assert.Equal(t, true, byAttrs(asGauge)[overflowKey].Attrs[schema.OverflowAttribute])
	require.Len(t, asSum, 1, "the schema instrument's own series are apart")
	assert.EqualValues(t, 4, asSum[0].Int)
	assert.EqualValues(t, 50, tp.counter(t, "points_mismatched"))
	assert.Equal(t, map[string]int64{completed: 50}, tp.byInstrument(t, "unknown_points"))
}

// Exponential histograms and summaries cannot fold into an overflow series exactly: admitted
// series pass as sent, a point past the limit is dropped and counted.
func TestUnknownUnmergeablePastLimit(t *testing.T) {
	tp := newTestProcessor(t, limit(3))
	b := newBatch().resource(gymResource("a"))
	for i := range 4 {
		expHistogram(b, "gym.lab.exp_ms", attrs{"w": i})
	}
	m := b.sm.Metrics().AppendEmpty()
	m.SetName("gym.lab.summary")
	sum := m.SetEmptySummary()
	for i := range 4 {
		dp := sum.DataPoints().AppendEmpty()
		dp.Attributes().PutInt("w", int64(i))
		dp.SetCount(1)
	}
	out := tp.run(t, b.md)
	assert.Equal(t, 2+2, out.DataPointCount(), "two series of each (the third slot is the overflow's)")
	assert.EqualValues(t, 4, tp.dropped(t, "unmergeable_overflow"))
	assert.Zero(t, tp.counter(t, "points_overflowed"))
}

// A sender creating endless names gets maxUnknownInstruments per resource; the others are
// dropped and counted; another resource has its own; the slots free after the idle timeout.
func TestUnknownInstrumentsBoundedPerResource(t *testing.T) {
	defer func(n int) { maxUnknownInstruments = n }(maxUnknownInstruments)
	maxUnknownInstruments = 3
	tp := newTestProcessor(t, nil)
	batch := func(res string, first int) pmetric.Metrics {
		b := newBatch().resource(gymResource(res))
		for i := first; i < first+5; i++ {
			b.gauge(fmt.Sprintf("gym.lab.m%d", i), "1", pt{a: attrs{"x": "y"}, t: 1, i: 1})
		}
		return b.md
	}
	out := tp.run(t, batch("a", 0))
	assert.Equal(t, 3, out.DataPointCount())
	assert.EqualValues(t, 2, tp.dropped(t, "instrument_limit"))
	out = tp.run(t, batch("b", 0))
	assert.Equal(t, 3, out.DataPointCount(), "another resource")
	// The same name as another kind or unit is another instrument.
	out = tp.run(t, newBatch().resource(gymResource("a")).gauge("gym.lab.m0", "ms", pt{t: 1, i: 1}).md)
	assert.Zero(t, out.DataPointCount())
	assert.EqualValues(t, 5, tp.dropped(t, "instrument_limit"))

	tp.clock.Advance(11 * time.Minute)
	out = tp.run(t, batch("a", 10))
	assert.Equal(t, 3, out.DataPointCount(), "the idle instruments were forgotten")
	assert.Len(t, tp.st.resources, 1, "resource b forgotten")
}

// unknown_points counts by instrument name: the first maxCountedNames names, then _other;
// each name logged once, rate-limited lines logged when next seen.
func TestUnknownPointsCountedAndLogged(t *testing.T) {
	defer func(n int) { maxCountedNames = n }(maxCountedNames)
	maxCountedNames = 2
	tp := newTestProcessor(t, nil)
	logs := tp.observe()
	batch := func() pmetric.Metrics {
		b := newBatch().resource(gymResource("a"))
		for i := range 4 {
			b.gauge(fmt.Sprintf("gym.lab.m%d", i), "1", pt{t: 1, i: 1}, pt{a: attrs{"k": "v"}, t: 1, i: 1})
		}
		return b.md
	}
	tp.run(t, batch())
	tp.run(t, batch())
	assert.Equal(t, map[string]int64{"gym.lab.m0": 4, "gym.lab.m1": 4, otherName: 8}, tp.byInstrument(t, "unknown_points"))
	lines := logs.All()
	require.Len(t, lines, 3, "one line per counted name, one for the names past them")
	assert.Equal(t, "gym.lab.m0", lines[0].ContextMap()["instrument"])
	assert.Equal(t, "Gauge", lines[0].ContextMap()["kind"])
	assert.Contains(t, lines[0].ContextMap()["action"], "bounded by the generic rules")
	assert.Contains(t, lines[2].Message, otherName)

	// The budget: 10 lines per 10 s; a name not logged then is logged when next seen.
	maxCountedNames = 100
	tp2 := newTestProcessor(t, nil)
	logs2 := tp2.observe()
	b := newBatch().resource(gymResource("a"))
	for i := range 15 {
		b.gauge(fmt.Sprintf("gym.lab.n%d", i), "1", pt{t: 1, i: 1})
	}
	md := b.md
	again := pmetric.NewMetrics()
	md.CopyTo(again)
	tp2.run(t, md)
	assert.Equal(t, 10, logs2.Len())
	tp2.names().logs.Every = 0 // the period has passed
	tp2.run(t, again)
	assert.Equal(t, 15, logs2.Len(), "the five held back, each once")
	assert.EqualValues(t, 5, logs2.All()[10].ContextMap()["not_logged_since_last"])
}

func (tp *testProcessor) names() *nameTable { return &tp.unk.names }

// A schema histogram with other bounds than the schema's (an SDK's default buckets) is kept as
// sent, counted per instrument, and logged once with both bounds.
func TestHistogramBoundsDiffer(t *testing.T) {
	tp := newTestProcessor(t, nil)
	logs := tp.observe()
	sdkDefault := []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}
	lens := schema.Get(mustLookup(t, "gym.rollout.duration_ms")).Bounds
	batch := func(round int) pmetric.Metrics {
		return newBatch().resource(gymResource("a")).
			histogram("gym.rollout.duration_ms", "ms", cumulative,
				hist(nil, 1, 60*round, sdkDefault, 30000, 20000, 40000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, uint64(round))).
			histogram("gym.verify.duration_ms", "ms", cumulative,
				hist(nil, 1, 60*round, lens, 300, 300, 300, 0, 0, 1)).md
	}
	out := tp.run(t, batch(1))
	got := points(out, "gym.rollout.duration_ms")
	require.Len(t, got, 1)
	assert.Equal(t, sdkDefault, got[0].Bounds, "kept as sent")
	assert.EqualValues(t, 1, got[0].Count)
	tp.run(t, batch(2))
	differ := tp.byInstrument(t, "histogram_bounds_differ")
	assert.EqualValues(t, 2, differ["gym.rollout.duration_ms"])
	assert.Contains(t, differ, "gym.verify.duration_ms", "every schema histogram's series exists")
	assert.Zero(t, differ["gym.verify.duration_ms"], "its bounds are the schema's")
	require.Equal(t, 1, logs.Len(), "one line per instrument")
	line := logs.All()[0].ContextMap()
	assert.Equal(t, "gym.rollout.duration_ms", line["instrument"])
	assert.Equal(t, fmt.Sprint(sdkDefault), fmt.Sprint(line["bounds"]))
	assert.Equal(t, fmt.Sprint(lens), fmt.Sprint(line["schema_bounds"]))
	assert.Equal(t, docsBuckets, line["docs"])
}

func mustLookup(t *testing.T, name string) schema.InstrumentID {
	t.Helper()
	id, ok := schema.Lookup(name)
	require.True(t, ok, name)
	return id
}

// pass sends everything on untouched (2,500 series of an unknown instrument stay 2,500, a
// mismatched metric keeps its attributes); drop removes unknown metrics and bounds
// mismatched ones.
func TestUnknownPassAndDrop(t *testing.T) {
	build := func() pmetric.Metrics {
		gauges := make([]pt, 50)
		for i := range gauges {
			gauges[i] = pt{a: attrs{"reason": fmt.Sprintf("r%d", i)}, t: 1, i: 1}
		}
		return newBatch().resource(gymResource("a")).
			counter("gym.agent.tool_calls_total", "{call}", workerPoints(1, func(int) int64 { return 1 })...).
			gauge(completed, "1", gauges...).md
	}
	t.Run("pass", func(t *testing.T) {
		tp := newTestProcessor(t, func(cfg *Config) { cfg.CardinalityLimit = 10; cfg.UnknownMetrics = UnknownMetricsPass })
		logs := tp.observe()
		out := tp.run(t, build())
		require.Equal(t, 2, logs.Len())
		assert.Equal(t, "passed on unbounded (unknown_metrics: pass)", logs.All()[0].ContextMap()["action"])
		assert.Equal(t, "counter", logs.All()[1].ContextMap()["schema_kind"], "a mismatched metric's line gives the schema's kind")
		assert.Len(t, points(out, "gym.agent.tool_calls_total"), workers, "unbounded: the user's choice")
		assert.Len(t, points(out, completed), 50)
		assert.Equal(t, map[string]int64{"gym.agent.tool_calls_total": workers, completed: 50}, tp.byInstrument(t, "unknown_points"))
	})
	t.Run("drop", func(t *testing.T) {
		tp := newTestProcessor(t, func(cfg *Config) { cfg.CardinalityLimit = 10; cfg.UnknownMetrics = UnknownMetricsDrop })
		out := tp.run(t, build())
		assert.Empty(t, points(out, "gym.agent.tool_calls_total"))
		assert.Len(t, points(out, completed), 10, "a mismatched metric is bounded")
		assert.EqualValues(t, workers, tp.dropped(t, "unknown_metric"))
		assert.Equal(t, map[string]int64{"gym.agent.tool_calls_total": workers, completed: 50}, tp.byInstrument(t, "unknown_points"))
	})
}

// A metric name past 256 bytes: its state is keyed by a hash (no unbounded name held), and its
// points are counted under its first 256 bytes.
func TestUnknownLongName(t *testing.T) {
	tp := newTestProcessor(t, limit(3))
	name := "gym.lab." + strings.Repeat("n", 1000)
	gauges := make([]pt, 10)
	for i := range gauges {
		gauges[i] = pt{a: attrs{"w": i}, t: 1 + i, i: int64(i)}
	}
	out := tp.run(t, newBatch().resource(gymResource("a")).gauge(name, "1", gauges...).md)
	assert.Len(t, points(out, name), 3, "bounded like any other")
	for _, r := range tp.st.resources {
		for k := range r.unknown {
			assert.Less(t, len(k), maxInstKeyBytes, "the state's key is a hash")
		}
	}
	assert.Equal(t, map[string]int64{name[:schema.DefaultStringMaxBytes]: 10}, tp.byInstrument(t, "unknown_points"))
}
