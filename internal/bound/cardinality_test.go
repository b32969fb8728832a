package bound

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"
)

// sc is a scored completion of dispatch d.
func sc(d string) attrs { return attrs{outcome: "scored", dispatch: d} }

func scKey(d string) string { return attrString(map[string]any{outcome: "scored", dispatch: d}) }

func limit(n int) func(*Config) { return func(cfg *Config) { cfg.CardinalityLimit = n } }

// With cardinality_limit 3, the first two series keep their own stream and every later one
// folds into the overflow series. For cumulative sums the overflow point is the sum of the
// latest values of every folded stream, across batches: never the sum of what one batch
// happened to carry.
func TestOverflowCumulativeSums(t *testing.T) {
	tp := newTestProcessor(t, limit(3))
	res := gymResource("a")

	out := tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 60, i: 1},
		pt{a: sc("b"), start: 1, t: 60, i: 2},
		pt{a: sc("c"), start: 1, t: 60, i: 10},
		pt{a: sc("d"), start: 1, t: 60, i: 20},
		pt{a: sc("e"), start: 1, t: 60, i: 30},
	).md)
	got := byAttrs(points(out, completed))
	require.Len(t, got, 3)
	assert.EqualValues(t, 1, got[scKey("a")].Int)
	assert.EqualValues(t, 2, got[scKey("b")].Int)
	assert.EqualValues(t, 60, got[overflowKey].Int)
	assert.EqualValues(t, 3, tp.counter(t, "points_overflowed"))

	// Next export: c grew, d is not re-sent (it keeps 20), e grew, f is new (folds). a and b
	// stay admitted even though the instrument is full.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("f"), start: 1, t: 120, i: 5},
		pt{a: sc("a"), start: 1, t: 120, i: 4},
		pt{a: sc("c"), start: 1, t: 120, i: 11},
		pt{a: sc("e"), start: 1, t: 120, i: 33},
	).md)
	got = byAttrs(points(out, completed))
	require.Len(t, got, 2)
	assert.EqualValues(t, 4, got[scKey("a")].Int)
	ov := got[overflowKey]
	assert.EqualValues(t, 11+20+33+5, ov.Int)
	assert.Equal(t, ts(1), ov.Start)
	assert.Equal(t, ts(120), ov.Time)

	// Only b is re-sent: the overflow series is not in this batch at all.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("b"), start: 1, t: 180, i: 3}).md)
	got = byAttrs(points(out, completed))
	require.Len(t, got, 1)
	assert.EqualValues(t, 3, got[scKey("b")].Int)

	// Then the folded ones again, one of them restarted: its earlier total stays counted.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("c"), start: 200, t: 240, i: 1},
		pt{a: sc("d"), start: 1, t: 240, i: 21},
	).md)
	assert.EqualValues(t, (11+1)+21+33+5, byAttrs(points(out, completed))[overflowKey].Int)
}

// For delta temporality the overflow point adds this batch's folded deltas.
func TestOverflowDeltaSums(t *testing.T) {
	tp := newTestProcessor(t, limit(2))
	res := gymResource("a")
	out := tp.run(t, newBatch().resource(res).sum(completed, "1", true, delta,
		pt{a: sc("a"), start: 60, t: 120, i: 1},
		pt{a: sc("b"), start: 60, t: 120, i: 2},
		pt{a: sc("c"), start: 50, t: 120, i: 3},
	).md)
	got := byAttrs(points(out, completed))
	assert.EqualValues(t, 1, got[scKey("a")].Int)
	assert.EqualValues(t, 5, got[overflowKey].Int)
	assert.Equal(t, ts(50), got[overflowKey].Start)

	out = tp.run(t, newBatch().resource(res).sum(completed, "1", true, delta,
		pt{a: sc("b"), start: 120, t: 180, i: 7},
	).md)
	got = byAttrs(points(out, completed))
	assert.EqualValues(t, 7, got[overflowKey].Int, "b stays folded; deltas carry no state")
}

// The overflow series of a gauge holds the newest value written to any folded series.
func TestOverflowGauges(t *testing.T) {
	tp := newTestProcessor(t, limit(2))
	loop := func(l string) attrs { return attrs{"nemo.gym.event_loop": l} }
	out := tp.run(t, newBatch().resource(gymResource("a")).gauge("gym.event_loop.tasks", "{task}",
		pt{a: loop("main"), t: 60, i: 1},
		pt{a: loop("w1"), t: 61, i: 7},
		pt{a: loop("w2"), t: 59, i: 9},
	).md)
	got := byAttrs(points(out, "gym.event_loop.tasks"))
	require.Len(t, got, 2)
	assert.EqualValues(t, 7, got[overflowKey].Int)
	assert.Equal(t, ts(61), got[overflowKey].Time)
}

// Cumulative histograms fold like sums: bucket-wise sums of the folded streams' latest
// histograms.
func TestOverflowCumulativeHistograms(t *testing.T) {
	tp := newTestProcessor(t, limit(2))
	name := "gym.sandbox.startup_duration_ms"
	prov := func(p string, t int, count uint64, sum float64, buckets ...uint64) pt {
		h := sbHist("", 1, t, count, sum, 100, 100, buckets...)
		h.a = attrs{"nemo.gym.sandbox.provider": p}
		return h
	}
	res := gymResource("a")
	tp.run(t, newBatch().resource(res).histogram(name, "ms", cumulative,
		prov("docker", 60, 1, 100, 1),
		prov("modal", 60, 2, 200, 2),
		prov("e2b", 60, 3, 300, 3),
	).md)
	out := tp.run(t, newBatch().resource(res).histogram(name, "ms", cumulative,
		prov("modal", 120, 4, 400, 4),
	).md)
	ov := byAttrs(points(out, name))[overflowKey]
	assert.EqualValues(t, 7, ov.Count)
	assert.InDelta(t, 700, ov.Sum, 1e-9)
	assert.EqualValues(t, 7, ov.Buckets[0])
}

// A series admitted once stays admitted, a series folded once stays folded, even when a slot
// frees up: no series moves between its own stream and the overflow.
func TestOverflowIsSticky(t *testing.T) {
	tp, res := threeSlotProcessor(t)
	tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 60, i: 1},
		pt{a: sc("b"), start: 1, t: 60, i: 1},
		pt{a: sc("c"), start: 1, t: 60, i: 1},
	).md)
	// 8 minutes on, a and c are re-sent, b is not; 4 more minutes: b is forgotten (idle
	// for 12m), its slot is free. c was folded and is still live: it stays folded. d is new
	// and takes the free slot.
	tp.clock.Advance(8 * time.Minute)
	tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 540, i: 2},
		pt{a: sc("c"), start: 1, t: 540, i: 2},
	).md)
	tp.clock.Advance(4 * time.Minute)
	out := tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("c"), start: 1, t: 780, i: 3},
		pt{a: sc("d"), start: 1, t: 780, i: 4},
		pt{a: sc("a"), start: 1, t: 780, i: 3},
	).md)
	got := byAttrs(points(out, completed))
	require.Len(t, got, 3)
	assert.EqualValues(t, 3, got[overflowKey].Int, "c stays folded")
	assert.EqualValues(t, 4, got[scKey("d")].Int, "d took b's slot")
	assert.EqualValues(t, 3, got[scKey("a")].Int)
}

// Every resource has its own limit.
func TestOverflowPerResource(t *testing.T) {
	tp := newTestProcessor(t, limit(2))
	b := newBatch()
	for _, r := range []string{"a", "b"} {
		b.resource(gymResource(r)).counter(completed, "1",
			pt{a: sc("x"), start: 1, t: 60, i: 1}, pt{a: sc("y"), start: 1, t: 60, i: 1})
	}
	out := tp.run(t, b.md)
	for i := 0; i < out.ResourceMetrics().Len(); i++ {
		pts := byAttrs(metricPoints(out.ResourceMetrics().At(i).ScopeMetrics().At(0).Metrics().At(0)))
		assert.Contains(t, pts, scKey("x"))
		assert.Contains(t, pts, overflowKey)
	}
}

// No count is lost: with 3,000 dispatch names and the default limit, the output totals equal
// the input totals, and exactly limit-1 series keep their own stream.
func TestOverflowKeepsTotals(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("a")
	for round := 1; round <= 3; round++ {
		var pts []pt
		var want int64
		for d := range 3000 {
			v := int64(round * (d%7 + 1))
			want += v
			pts = append(pts, pt{a: sc(fmt.Sprintf("dispatch-%04d", d)), start: 1, t: 60 * round, i: v})
		}
		out := tp.run(t, newBatch().resource(res).counter(completed, "1", pts...).md)
		got := points(out, completed)
		require.Len(t, got, 2000)
		var total int64
		for _, p := range got {
			total += p.Int
		}
		assert.Equal(t, want, total, "round %d", round)
		assert.Equal(t, scKey("dispatch-0000"), attrString(got[0].Attrs))
		assert.Equal(t, scKey("dispatch-1998"), attrString(got[1998].Attrs))
		assert.Equal(t, overflowKey, attrString(got[1999].Attrs))
	}
}

// Idle state is forgotten after series_idle_timeout (and at most a quarter of it more).
func TestIdleStateForgotten(t *testing.T) {
	tp := newTestProcessor(t, limit(2))
	res := gymResource("a")
	tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 60, i: 1}, pt{a: sc("b"), start: 1, t: 60, i: 1}).md)
	entries := func() int64 { return tp.counter(t, "state_entries") }
	// a, the overflow series, b's folded key, and the two cumulative streams.
	assert.EqualValues(t, 5, entries())
	tp.clock.Advance(9 * time.Minute)
	tp.run(t, newBatch().md)
	assert.EqualValues(t, 5, entries())
	tp.clock.Advance(4 * time.Minute)
	tp.run(t, newBatch().md)
	assert.EqualValues(t, 0, entries())
	assert.Empty(t, tp.st.resources)

	// b comes back: it is a new series now and takes the free slot.
	out := tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: sc("b"), start: 1, t: 900, i: 2}).md)
	assert.Contains(t, byAttrs(points(out, completed)), scKey("b"))
}

// A point whose metric has another kind or unit than the schema's passes unchanged, counted.
func TestMismatchedKindOrUnitPassUnchanged(t *testing.T) {
	free := attrs{outcome: "scored", dispatch: "math", "failure_reason": "free text"}
	cases := map[string]func(*batchBuilder){
		"unit":              func(b *batchBuilder) { b.counter(completed, "{rollout}", pt{a: free, t: 1, i: 1}) },
		"gauge for counter": func(b *batchBuilder) { b.gauge(completed, "1", pt{a: free, t: 1, i: 1}) },
		"non-monotonic":     func(b *batchBuilder) { b.sum(completed, "1", false, cumulative, pt{a: free, t: 1, i: 1}) },
		"monotonic up-down": func(b *batchBuilder) {
			b.sum("gym.sandbox.active", "{sandbox}", true, cumulative, pt{a: free, t: 1, i: 1})
		},
		"no temporality": func(b *batchBuilder) {
			b.sum(completed, "1", true, pmetric.AggregationTemporalityUnspecified, pt{a: free, t: 1, i: 1})
		},
		"sum for histogram": func(b *batchBuilder) { b.counter("gym.event_loop.lag_ms", "ms", pt{a: free, t: 1, i: 1}) },
		"histogram bytes": func(b *batchBuilder) {
			b.histogram("gym.driver.output_write_bytes", "bytes", cumulative, sbHist("x", 1, 2, 1, 1, 1, 1, 1))
		},
		"exponential": func(b *batchBuilder) { expHistogram(b, "gym.event_loop.lag_ms", free) },
		"gauge as histogram": func(b *batchBuilder) {
			b.histogram("gym.event_loop.tasks", "{task}", cumulative, sbHist("x", 1, 2, 1, 1, 1, 1, 1))
		},
	}
	for name, add := range cases {
		t.Run(name, func(t *testing.T) {
			tp := newTestProcessor(t, nil)
			b := newBatch().resource(gymResource("a"))
			add(b)
			want := pmetric.NewMetrics()
			b.md.CopyTo(want)
			out := tp.run(t, b.md)
			assert.Equal(t, want.DataPointCount(), out.DataPointCount())
			assert.Equal(t, want.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0),
				out.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0))
			assert.EqualValues(t, 1, tp.counter(t, "points_mismatched"))
		})
	}
}

func expHistogram(b *batchBuilder, name string, a attrs) {
	m := b.sm.Metrics().AppendEmpty()
	m.SetName(name)
	m.SetUnit("ms")
	eh := m.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(cumulative)
	dp := eh.DataPoints().AppendEmpty()
	putAttrs(dp.Attributes(), a)
	dp.SetCount(1)
}

func TestUnknownMetrics(t *testing.T) {
	build := func() pmetric.Metrics {
		return newBatch().
			resource(gymResource("a")).
			counter(completed, "1", pt{a: sc("math"), t: 1, i: 1}).
			gauge("system.cpu.utilization", "1", pt{a: attrs{"cpu": "0", "free": "text"}, t: 1, f: 0.5, double: true}).
			resource(gymResource("b-pid4242")). // its id already names its process: kept
			gauge("http.server.request.body.size", "By", pt{a: attrs{"url.full": "/x?y"}, t: 1, i: 3}).md
	}
	t.Run("pass", func(t *testing.T) {
		tp := newTestProcessor(t, func(cfg *Config) { cfg.UnknownMetrics = UnknownMetricsPass })
		in := build()
		want := pmetric.NewMetrics()
		in.CopyTo(want)
		out := tp.run(t, in)
		assert.Equal(t, 3, out.DataPointCount())
		assert.Equal(t, want.ResourceMetrics().At(1), out.ResourceMetrics().At(1), "untouched")
	})
	t.Run("drop", func(t *testing.T) {
		tp := newTestProcessor(t, func(cfg *Config) { cfg.UnknownMetrics = UnknownMetricsDrop })
		out := tp.run(t, build())
		assert.Equal(t, 1, out.DataPointCount())
		assert.Equal(t, 1, out.ResourceMetrics().Len(), "a resource left empty goes")
		assert.Len(t, points(out, completed), 1)
		assert.EqualValues(t, 2, tp.dropped(t, "unknown_metric"))
	})
}

// The host's clock set forward a day, then back an hour: idle series are forgotten after
// series_idle_timeout of elapsed time, not all at once at the step forward, nor never after the
// step back. A series kept across the step keeps its slot (a new one still overflows).
func TestIdleTimeoutAcrossClockSteps(t *testing.T) {
	tp, res := threeSlotProcessor(t)
	tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 60, i: 1},
		pt{a: sc("b"), start: 1, t: 60, i: 1},
	).md)
	tp.clock.Advance(8 * time.Minute)
	tp.clock.Step(24 * time.Hour)
	out := tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("a"), start: 1, t: 540, i: 2},
		pt{a: sc("d"), start: 1, t: 540, i: 1},
	).md)
	got := byAttrs(points(out, completed))
	assert.EqualValues(t, 1, got[overflowKey].Int, "b, idle 8 minutes, still holds its slot after the step: d overflows")
	assert.EqualValues(t, 2, got[scKey("a")].Int)

	tp.clock.Step(-time.Hour)
	tp.clock.Advance(4 * time.Minute) // b idle 12 minutes of elapsed time: forgotten
	out = tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: sc("e"), start: 1, t: 780, i: 5},
	).md)
	got = byAttrs(points(out, completed))
	assert.EqualValues(t, 5, got[scKey("e")].Int, "e took b's slot: b expired after the step back")
}

// threeSlotProcessor bounds completed_total to three series, forgotten after 10 idle minutes,
// for the resource it returns.
func threeSlotProcessor(t *testing.T) (*testProcessor, attrs) {
	tp := newTestProcessor(t, func(cfg *Config) {
		cfg.CardinalityLimit = 3
		cfg.SeriesIdleTimeout = 10 * time.Minute
	})
	return tp, gymResource("a")
}
