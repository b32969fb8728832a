package bound

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/pdatatest/pmetrictest"
)

// fc is a failed completion of dispatch "math" with a free-text reason: every reason is a
// stream of its own as sent, and all of them bound to one series.
func fc(reason string) attrs {
	return attrs{outcome: "failed", dispatch: "math", fKind: "transport_timeout", "failure_reason": reason}
}

var fcSeries = attrString(map[string]any{outcome: "failed", dispatch: "math", fKind: "transport_timeout"})

func only(t *testing.T, md pmetric.Metrics, name string) outPoint {
	t.Helper()
	pts := points(md, name)
	require.Len(t, pts, 1, "one point of %s", name)
	return pts[0]
}

func TestMergeCumulativeSums(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("a")

	// Two streams bound to one series: their values add, the start is the earliest, the time
	// the latest.
	out := tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: fc("timeout after 30s"), start: 5, t: 60, i: 3},
		pt{a: fc("timeout after 31s"), start: 2, t: 61, i: 4},
	).md)
	p := only(t, out, completed)
	assert.Equal(t, fcSeries, attrString(p.Attrs))
	assert.EqualValues(t, 7, p.Int)
	assert.Equal(t, ts(2), p.Start)
	assert.Equal(t, ts(61), p.Time)

	// Next export: the first stream went on, the second is not in this batch. A cumulative
	// stream that is not re-sent keeps its last value: 5 + 4, never 5 alone (the series
	// would go down, a reset for the backend). The start stays.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: fc("timeout after 30s"), start: 5, t: 120, i: 5},
	).md)
	p = only(t, out, completed)
	assert.EqualValues(t, 9, p.Int)
	assert.Equal(t, ts(2), p.Start)
	assert.Equal(t, ts(120), p.Time)

	// A third stream joins later: its total adds.
	out = tp.run(t, newBatch().resource(res).counter(completed, "1",
		pt{a: fc("timeout after 30s"), start: 5, t: 180, i: 6},
		pt{a: fc("timeout after 31s"), start: 2, t: 180, i: 4},
		pt{a: fc("timeout after 99s"), start: 150, t: 180, i: 1},
	).md)
	p = only(t, out, completed)
	assert.EqualValues(t, 11, p.Int)
	assert.Equal(t, ts(2), p.Start)
	assert.EqualValues(t, 1+2, tp.counter(t, "points_merged"))
}

// Two points of the same stream in one batch (two exports batched together, in any order)
// are two readings of one total: the newest wins, they never add.
func TestMergeCumulativeSameStreamTwice(t *testing.T) {
	for _, order := range []string{"in order", "out of order"} {
		t.Run(order, func(t *testing.T) {
			tp := newTestProcessor(t, nil)
			older := pt{a: fc("x"), start: 1, t: 60, i: 10}
			newer := pt{a: fc("x"), start: 1, t: 120, i: 15}
			pts := []pt{older, newer}
			if order == "out of order" {
				pts = []pt{newer, older}
			}
			out := tp.run(t, newBatch().resource(gymResource("a")).counter(completed, "1", pts...).md)
			p := only(t, out, completed)
			assert.EqualValues(t, 15, p.Int)
			assert.Equal(t, ts(120), p.Time)

			// A late (retried) point of an earlier time changes nothing.
			out = tp.run(t, newBatch().resource(gymResource("a")).counter(completed, "1", older).md)
			p = only(t, out, completed)
			assert.EqualValues(t, 15, p.Int)
			assert.Equal(t, ts(120), p.Time)
		})
	}
}

func TestMergeCounterRestart(t *testing.T) {
	t.Run("the only stream restarts: so does the series", func(t *testing.T) {
		tp := newTestProcessor(t, nil)
		res := gymResource("a")
		tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: fc("x"), start: 1, t: 60, i: 10}).md)
		out := tp.run(t, newBatch().resource(res).counter(completed, "1", pt{a: fc("x"), start: 100, t: 120, i: 2}).md)
		p := only(t, out, completed)
		assert.EqualValues(t, 2, p.Int)
		assert.Equal(t, ts(100), p.Start, "the stream's new start")
	})
	t.Run("one of several streams restarts: its earlier total stays counted", func(t *testing.T) {
		tp := newTestProcessor(t, nil)
		res := gymResource("a")
		tp.run(t, newBatch().resource(res).counter(completed, "1",
			pt{a: fc("x"), start: 1, t: 60, i: 10}, pt{a: fc("y"), start: 1, t: 60, i: 4}).md)
		// x restarts (a later start), y goes on.
		out := tp.run(t, newBatch().resource(res).counter(completed, "1",
			pt{a: fc("x"), start: 100, t: 120, i: 2}, pt{a: fc("y"), start: 1, t: 120, i: 5}).md)
		p := only(t, out, completed)
		assert.EqualValues(t, 10+2+5, p.Int)
		assert.Equal(t, ts(1), p.Start, "the series does not restart")
		// x restarts without a new start time (its total went down).
		out = tp.run(t, newBatch().resource(res).counter(completed, "1",
			pt{a: fc("x"), start: 100, t: 180, i: 1}, pt{a: fc("y"), start: 1, t: 180, i: 5}).md)
		p = only(t, out, completed)
		assert.EqualValues(t, 10+2+1+5, p.Int)
	})
}

// An up-down counter's series is the sum of its streams' latest values: it may go down.
func TestMergeCumulativeUpDown(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("a")
	sb := func(id string) attrs { return attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.id": id} }
	out := tp.run(t, newBatch().resource(res).sum("gym.sandbox.active", "{sandbox}", false, cumulative,
		pt{a: sb("s1"), start: 1, t: 60, i: 3}, pt{a: sb("s2"), start: 1, t: 60, i: 2}).md)
	assert.EqualValues(t, 5, only(t, out, "gym.sandbox.active").Int)
	out = tp.run(t, newBatch().resource(res).sum("gym.sandbox.active", "{sandbox}", false, cumulative,
		pt{a: sb("s1"), start: 1, t: 120, i: 1}).md)
	assert.EqualValues(t, 3, only(t, out, "gym.sandbox.active").Int, "s1 now 1, s2 still 2")
	// s2 restarts (new start) at 0: replaced, not kept.
	out = tp.run(t, newBatch().resource(res).sum("gym.sandbox.active", "{sandbox}", false, cumulative,
		pt{a: sb("s2"), start: 150, t: 180, i: 0}).md)
	assert.EqualValues(t, 1, only(t, out, "gym.sandbox.active").Int)
}

func TestMergeDeltaSums(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("a")
	out := tp.run(t, newBatch().resource(res).sum(completed, "1", true, delta,
		pt{a: fc("x"), start: 60, t: 120, i: 3},
		pt{a: fc("y"), start: 50, t: 110, i: 4},
		pt{a: fc("x"), start: 120, t: 180, i: 1}, // the same stream, the next interval
	).md)
	p := only(t, out, completed)
	assert.EqualValues(t, 8, p.Int)
	assert.Equal(t, ts(50), p.Start)
	assert.Equal(t, ts(180), p.Time)
	// Deltas carry no state from batch to batch.
	out = tp.run(t, newBatch().resource(res).sum(completed, "1", true, delta,
		pt{a: fc("z"), start: 180, t: 240, i: 2}).md)
	assert.EqualValues(t, 2, only(t, out, completed).Int)
}

// The same series sent delta and cumulative (two SDKs of one resource) gives two points:
// deltas never add to a cumulative total.
func TestMergeDeltaAndCumulativeApart(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(gymResource("a")).
		sum(completed, "1", true, delta, pt{a: fc("x"), start: 60, t: 120, i: 3}).
		sum(completed, "1", true, cumulative, pt{a: fc("y"), start: 1, t: 120, i: 40}).md)
	pts := points(out, completed)
	require.Len(t, pts, 2)
	assert.EqualValues(t, 3, pts[0].Int)
	assert.EqualValues(t, 40, pts[1].Int)
}

func TestMergeGaugesKeepNewest(t *testing.T) {
	tp := newTestProcessor(t, nil)
	loop := func(id string) attrs { return attrs{"nemo.gym.event_loop": "main", "thread.id": id} }
	out := tp.run(t, newBatch().resource(gymResource("a")).gauge("gym.event_loop.tasks", "{task}",
		pt{a: loop("1"), t: 60, i: 10},
		pt{a: loop("2"), t: 90, i: 30}, // newest
		pt{a: loop("3"), t: 70, i: 20},
	).md)
	p := only(t, out, "gym.event_loop.tasks")
	assert.EqualValues(t, 30, p.Int)
	assert.Equal(t, ts(90), p.Time)
	assert.Equal(t, map[string]any{"nemo.gym.event_loop": "main"}, p.Attrs)

	// A tie: the later point of the batch wins.
	out = tp.run(t, newBatch().resource(gymResource("a")).gauge("gym.event_loop.tasks", "{task}",
		pt{a: loop("1"), t: 100, i: 1}, pt{a: loop("2"), t: 100, i: 2}).md)
	assert.EqualValues(t, 2, only(t, out, "gym.event_loop.tasks").Int)
}

var sandboxBounds = []float64{250, 500, 1000, 2000, 5000, 10000, 30000, 60000, 120000, 300000, 600000, 1800000}

func sbHist(id string, start, t int, count uint64, sum, lo, hi float64, buckets ...uint64) pt {
	b := make([]uint64, len(sandboxBounds)+1)
	copy(b, buckets)
	return pt{a: attrs{"nemo.gym.sandbox.provider": "docker", "sandbox.image": id}, start: start, t: t,
		bounds: sandboxBounds, buckets: b, count: count, sum: sum, min: lo, max: hi}
}

func TestMergeCumulativeHistograms(t *testing.T) {
	tp := newTestProcessor(t, nil)
	res := gymResource("a")
	name := "gym.sandbox.startup_duration_ms"
	out := tp.run(t, newBatch().resource(res).histogram(name, "ms", cumulative,
		sbHist("img1", 5, 60, 3, 900, 100, 600, 1, 1, 1),
		sbHist("img2", 2, 61, 2, 5000, 1500, 3500, 0, 0, 0, 1, 1),
	).md)
	p := only(t, out, name)
	assert.EqualValues(t, 5, p.Count)
	assert.InDelta(t, 5900, p.Sum, 1e-9)
	assert.Equal(t, []uint64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, p.Buckets)
	assert.True(t, p.HasMM)
	assert.InDelta(t, 100, p.Min, 0)
	assert.InDelta(t, 3500, p.Max, 0)
	assert.Equal(t, ts(2), p.Start)
	assert.Equal(t, ts(61), p.Time)
	assert.Equal(t, sandboxBounds, p.Bounds)

	// img1 goes on, img2 is not re-sent: it keeps its last histogram.
	out = tp.run(t, newBatch().resource(res).histogram(name, "ms", cumulative,
		sbHist("img1", 5, 120, 4, 1000, 50, 600, 2, 1, 1),
	).md)
	p = only(t, out, name)
	assert.EqualValues(t, 6, p.Count)
	assert.InDelta(t, 6000, p.Sum, 1e-9)
	assert.Equal(t, []uint64{2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}, p.Buckets)
	assert.InDelta(t, 50, p.Min, 0)
}

func TestMergeDeltaHistograms(t *testing.T) {
	tp := newTestProcessor(t, nil)
	name := "gym.sandbox.startup_duration_ms"
	out := tp.run(t, newBatch().resource(gymResource("a")).histogram(name, "ms", delta,
		sbHist("img1", 60, 120, 1, 300, 300, 300, 0, 1),
		sbHist("img2", 50, 110, 2, 700, 200, 500, 1, 1),
	).md)
	p := only(t, out, name)
	assert.EqualValues(t, 3, p.Count)
	assert.InDelta(t, 1000, p.Sum, 1e-9)
	assert.Equal(t, []uint64{1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, p.Buckets)
	assert.InDelta(t, 200, p.Min, 0)
	assert.InDelta(t, 500, p.Max, 0)
	assert.Equal(t, ts(50), p.Start)
	assert.Equal(t, ts(120), p.Time)

	// A point without min/max: the merged point has none (they would be a guess).
	h := sbHist("img3", 60, 120, 1, 300, 0, 0, 0, 1)
	h.noMM = true
	out = tp.run(t, newBatch().resource(gymResource("a")).histogram(name, "ms", delta,
		sbHist("img1", 60, 120, 1, 300, 300, 300, 0, 1), h).md)
	assert.False(t, only(t, out, name).HasMM)
}

// Histograms of one series with other bucket bounds are never merged silently: both points
// stay, and it is counted.
func TestMergeHistogramBoundsDiffer(t *testing.T) {
	for _, temp := range []pmetric.AggregationTemporality{cumulative, delta} {
		t.Run(temp.String(), func(t *testing.T) {
			tp := newTestProcessor(t, nil)
			name := "gym.sandbox.startup_duration_ms"
			other := sbHist("img2", 1, 60, 1, 10, 10, 10, 1)
			other.bounds = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000} // the SDK's defaults
			other.buckets = make([]uint64, len(other.bounds)+1)
			other.buckets[3] = 1
			out := tp.run(t, newBatch().resource(gymResource("a")).histogram(name, "ms", temp,
				sbHist("img1", 1, 60, 1, 300, 300, 300, 0, 1),
				other,
				sbHist("img3", 1, 60, 1, 400, 400, 400, 0, 1),
			).md)
			pts := points(out, name)
			require.Len(t, pts, 2)
			assert.EqualValues(t, 2, pts[0].Count, "img1 and img3 merged")
			assert.Equal(t, sandboxBounds, pts[0].Bounds)
			assert.EqualValues(t, 1, pts[1].Count)
			assert.Equal(t, other.bounds, pts[1].Bounds)
			assert.Equal(t, pts[0].Attrs, pts[1].Attrs, "the same series, bounded")
			assert.EqualValues(t, 1, tp.counter(t, "points_unmerged"))
			assert.EqualValues(t, 1, tp.counter(t, "points_merged"))
		})
	}
}

// Mixed int and double points of one series give a double.
func TestMergeIntAndDouble(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(gymResource("a")).counter(completed, "1",
		pt{a: fc("x"), start: 1, t: 60, i: 3},
		pt{a: fc("y"), start: 1, t: 60, f: 1.5, double: true},
	).md)
	p := only(t, out, completed)
	assert.True(t, p.IsDbl)
	assert.InDelta(t, 4.5, p.Double, 1e-12)
}

// Series of different resources are never merged; equal resource attribute sets are one
// resource, whatever their order or the ResourceMetrics they arrive in; identity is typed.
func TestMergeResourceIdentity(t *testing.T) {
	tp := newTestProcessor(t, nil)
	r1 := gymResource("a")
	r2 := gymResource("b")
	r1str := gymResource("a")
	r1str["process.pid"] = "4242"
	out := tp.run(t, newBatch().
		resource(r1).counter(completed, "1", pt{a: fc("x"), start: 1, t: 60, i: 1}).
		resource(r2).counter(completed, "1", pt{a: fc("x"), start: 1, t: 60, i: 10}).
		resource(r1).counter(completed, "1", pt{a: fc("y"), start: 1, t: 60, i: 2}).
		resource(r1str).counter(completed, "1", pt{a: fc("z"), start: 1, t: 60, i: 100}).md)
	rms := out.ResourceMetrics()
	require.Equal(t, 3, rms.Len(), "the second ResourceMetrics of r1 merged into the first and left empty")
	var got []int64
	for i := 0; i < rms.Len(); i++ {
		got = append(got, metricPoints(rms.At(i).ScopeMetrics().At(0).Metrics().At(0))[0].Int)
	}
	assert.Equal(t, []int64{3, 10, 100}, got)
}

// Two scopes of one resource feed one series (the point lives in the first); as streams they
// are distinct, so equal attributes in two scopes add.
func TestMergeAcrossScopes(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(gymResource("a")).
		counter(completed, "1", pt{a: fc("x"), start: 1, t: 60, i: 1}).
		scope("other.library").
		counter(completed, "1", pt{a: fc("x"), start: 1, t: 60, i: 2}).
		gauge("gym.event_loop.tasks", "{task}", pt{a: attrs{"nemo.gym.event_loop": "main"}, t: 60, i: 7}).md)
	sms := out.ResourceMetrics().At(0).ScopeMetrics()
	require.Equal(t, 2, sms.Len())
	assert.EqualValues(t, 3, only(t, out, completed).Int)
	assert.Equal(t, "nemo_gym.telemetry", sms.At(0).Scope().Name())
	assert.Equal(t, 1, sms.At(1).Metrics().Len(), "the emptied metric goes, the scope stays with its gauge")
}

// A no-recorded-value point (a staleness marker) is kept on its own, bounded, never merged.
func TestMergeNoRecordedValue(t *testing.T) {
	tp := newTestProcessor(t, nil)
	out := tp.run(t, newBatch().resource(gymResource("a")).counter(completed, "1",
		pt{a: fc("x"), start: 1, t: 60, i: 5},
		pt{a: fc("y"), start: 1, t: 60, noValue: true},
	).md)
	pts := points(out, completed)
	require.Len(t, pts, 2)
	assert.EqualValues(t, 5, pts[0].Int)
	assert.Equal(t, fcSeries, attrString(pts[1].Attrs))
}

// Points merged away leave carriers in place; the batch keeps its shape otherwise.
func TestMergeKeepsUntouchedBatchesIntact(t *testing.T) {
	tp := newTestProcessor(t, nil)
	in := newBatch().resource(gymResource("a-pid4242")).
		counter(completed, "1", pt{a: attrs{outcome: "scored", dispatch: "math"}, start: 1, t: 60, i: 5}).
		gauge("system.cpu.utilization", "1", pt{a: attrs{"cpu": "0"}, t: 60, f: 0.5, double: true}).md
	want := pmetric.NewMetrics()
	in.CopyTo(want)
	out := tp.run(t, in)
	require.NoError(t, pmetrictest.CompareMetrics(want, out))
}
