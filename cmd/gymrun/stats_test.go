package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gym-telemetry/otelcol-gym/internal/schema"
)

// TestT975: Student's t 97.5% quantiles of the published tables, and the normal's in the limit.
func TestT975(t *testing.T) {
	for df, want := range map[float64]float64{1: 12.7062, 2: 4.3027, 5: 2.5706, 10: 2.2281, 30: 2.0423, 100: 1.9840, 1e6: 1.9600} {
		assert.InDelta(t, want, t975(df), 5e-5, "df %v", df)
	}
	assert.Greater(t, t975(7.5), t975(8))
	assert.Less(t, t975(7.5), t975(7))
}

// TestWelch: Welch's interval holds the true difference of two normal samples about 95% of the
// time; with equal sizes and spreads its degrees of freedom are about 2(n - 1).
func TestWelch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	covered, trials := 0, 2000
	for range trials {
		var a, b moments
		for range 8 {
			a.add(rng.NormFloat64())
		}
		for range 12 {
			b.add(0.5 + 2*rng.NormFloat64())
		}
		ci := welch(byRollout(a), byRollout(b)).ci95()
		if ci[0] <= 0.5 && 0.5 <= ci[1] {
			covered++
		}
	}
	assert.InDelta(t, 0.95, float64(covered)/float64(trials), 0.015)
	e := welch(est{0, 1 / math.Sqrt(50), 49}, est{1, 1 / math.Sqrt(50), 49})
	assert.InDelta(t, 98, e.df, 1e-9)
	assert.InDelta(t, 1, e.mean, 1e-12)
	e = welch(est{0.5, 0, 9}, est{0.5, 0, 9})
	assert.Equal(t, est{0, 0, math.Inf(1)}, e, "both sides constant")
	assert.Equal(t, 1.0, e.pValue())
	assert.Equal(t, [2]float64{0, 0}, e.ci95())
	assert.Equal(t, 0.0, est{-0.5, 0, math.Inf(1)}.pValue(), "every task moved alike")
}

// byRollout is a sample's mean with its standard error by rollout.
func byRollout(m moments) est {
	sd, _ := m.sd()
	return est{m.mean, sd / math.Sqrt(float64(m.n)), float64(m.n - 1)}
}

// TestTTail: two-sided tails of the published tables; tInv inverts tTail, beyond the tables'
// quantiles too (a level of 0.05 over 1000 benchmarks at one degree of freedom).
func TestTTail(t *testing.T) {
	assert.InDelta(t, 0.05, tTail(2.2281, 10), 1e-5)
	assert.InDelta(t, 0.01, tTail(3.1693, 10), 1e-5)
	assert.InDelta(t, 0.05, tTail(1.959964, math.Inf(1)), 1e-7)
	for _, c := range []struct{ q, df float64 }{{0.05, 3}, {0.4, 20}, {0.05 / 1000, 1}, {1e-9, 4}, {0.0025, 99}} {
		x := tInv(c.q, c.df)
		assert.InEpsilon(t, c.q, tTail(x, c.df), 1e-9, "%+v", c)
	}
	assert.InDelta(t, 0.8416, tInv(0.4, math.Inf(1)), 1e-4, "the normal's 80% quantile")
}

// TestHolm: Holm's adjustment of a textbook case (step-down, monotone, capped at 1), in the
// p-values' order.
func TestHolm(t *testing.T) {
	got := holm([]float64{0.04, 0.01, 0.03, 0.5})
	want := []float64{0.09, 0.04, 0.09, 0.5} // sorted 0.01·4, 0.03·3, max(0.04·2, 0.09), max(0.5, 0.09)
	assert.InDeltaSlice(t, want, got, 1e-12)
	assert.Equal(t, []float64{1, 1}, holm([]float64{0.9, 0.6}))
	assert.Empty(t, holm(nil))
}

// TestClustered: with as many rollouts per task, the clustered standard error is that of the
// task means; with one rollout per task, that of the rewards (up to n/(n-1)'s definition); a
// task of constant rewards divides by nothing.
func TestClustered(t *testing.T) {
	tasks := []taskSum{{4, 4}, {4, 0}, {4, 2}, {4, 3}}
	e, ok := clustered(tasks)
	require.True(t, ok)
	var means moments
	for _, ts := range tasks {
		means.add(ts.sum / float64(ts.n))
	}
	assert.InDelta(t, means.mean, e.mean, 1e-12)
	assert.InDelta(t, byRollout(means).se, e.se, 1e-12)
	assert.Equal(t, 3.0, e.df)
	_, ok = clustered(tasks[:1])
	assert.False(t, ok, "one task has no spread between tasks")
	e, ok = clustered([]taskSum{{3, 3}, {3, 3}})
	require.True(t, ok)
	assert.Equal(t, est{1, 0, 1}, e)
}

// TestMDE: the detectable effect is found 4 times in 5: a simulated change of the size found at
// the level given, about 80% of the time.
func TestMDE(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, level = 30, 0.01
	e := est{se: 1 / math.Sqrt(n), df: n - 1}
	mde := e.mde80(level)
	found, trials := 0, 4000
	for range trials {
		var d moments
		for range n {
			d.add(mde + rng.NormFloat64())
		}
		if p, _ := paired(d); p.pValue() < level {
			found++
		}
	}
	assert.InDelta(t, 0.8, float64(found)/float64(trials), 0.03)
}

// TestPropZ: the pooled two-proportion z of a textbook case, and nothing where nothing varies.
func TestPropZ(t *testing.T) {
	assert.InDelta(t, 1.9803, propZ(10, 100, 20, 100), 1e-4) // p = 0.15: 0.1 / sqrt(0.1275 * 0.02)
	assert.InDelta(t, -1.9803, propZ(20, 100, 10, 100), 1e-4)
	assert.Zero(t, propZ(0, 100, 0, 50))
	assert.Zero(t, propZ(3, 3, 5, 5))
	assert.Zero(t, propZ(1, 0, 5, 5))
}

// TestHistogram: every value counted in a bin whose range holds it (up to rounding at a bin's
// edge), in fixed memory, the bins reported covering the values with less than a bin to spare
// at either end; 0/1 rewards are the first bin and the last.
func TestHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, gen := range []func() float64{
		func() float64 { return rng.Float64() },
		func() float64 { return 3 * rng.NormFloat64() },
		func() float64 { return math.Exp(5 * rng.Float64()) },
		func() float64 { return -math.Exp(5 * rng.Float64()) },
	} {
		var h histogram
		lo, hi := math.Inf(1), math.Inf(-1)
		var vals []float64
		for range 5000 {
			v := gen()
			vals = append(vals, v)
			lo, hi = min(lo, v), max(hi, v)
			h.add(v)
		}
		r := h.report()
		require.LessOrEqual(t, len(r.Counts), histBins)
		w := (r.Hi - r.Lo) / float64(len(r.Counts))
		assert.LessOrEqual(t, r.Lo, lo)
		assert.GreaterOrEqual(t, r.Hi, hi)
		assert.Less(t, lo-r.Lo, w)
		assert.Less(t, r.Hi-hi, w)
		want := make([]int64, len(r.Counts))
		for _, v := range vals {
			want[min(int(math.Floor((v-r.Lo)/w)), len(want)-1)]++
		}
		var n, off int64
		for i, c := range r.Counts {
			n += c
			off += max(c-want[i], want[i]-c)
		}
		assert.Equal(t, int64(5000), n)
		assert.LessOrEqual(t, off, int64(10), "%v, recomputed %v", r.Counts, want)
	}
	var h histogram
	for i := range 10 {
		h.add(float64(i % 2))
	}
	r := h.report()
	assert.Equal(t, []int64{5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5}, r.Counts)
	assert.Equal(t, [2]float64{0, 1}, [2]float64{r.Lo, r.Hi})
	var c histogram
	c.add(0.5)
	c.add(0.5)
	assert.Equal(t, &Histogram{Lo: 0.5, Hi: 0.5, Counts: []int64{2}}, c.report())
	c.add(-0.5)
	assert.Equal(t, &Histogram{Lo: -0.5, Hi: 0.5, Counts: []int64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}}, c.report(), "the values held move to their bin")
	assert.Nil(t, new(histogram).report())
}

// TestFailureGroups: the groups name registered failure kinds only, so a renamed kind fails
// here rather than falling silently into other.
func TestFailureGroups(t *testing.T) {
	registered := map[string]bool{}
	for _, k := range schema.FailureKinds {
		registered[k] = true
	}
	for k, g := range groupOfKind {
		assert.True(t, registered[k], k)
		assert.Contains(t, failureGroups, g)
	}
	assert.Equal(t, groupTimeouts, failureGroup("timeout", absent))
	assert.Equal(t, groupTransport, failureGroup("timeout", "transport_unreachable"), "the kind decides first")
	assert.Equal(t, groupOther, failureGroup("agent_run_error", "lab_proxy:stalled"))
}

// TestMeanInterval: a pass rate's interval is Wilson's, within [0, 1] even at 0 or 1 passes
// of a few; other rewards' is Student's t.
func TestMeanInterval(t *testing.T) {
	sample := func(xs ...float64) moments {
		var m moments
		for _, x := range xs {
			m.add(x)
		}
		return m
	}
	for _, xs := range [][]float64{{1, 1, 1, 1, 1}, {0, 0, 0}, {1, 0, 1, 1, 1}} {
		m := sample(xs...)
		sd, _ := m.sd()
		ci := meanInterval(m, sd, true)
		assert.GreaterOrEqual(t, ci[0], 0.0, "%v", xs)
		assert.LessOrEqual(t, ci[1], 1.0, "%v", xs)
		assert.Less(t, ci[0], ci[1], "%v", xs)
		assert.LessOrEqual(t, ci[0], m.mean, "%v", xs)
		assert.GreaterOrEqual(t, ci[1], m.mean, "%v", xs)
	}
	// 4 of 5: Wilson's interval (the textbook's [0.376, 0.964]).
	m := sample(1, 0, 1, 1, 1)
	sd, _ := m.sd()
	ci := meanInterval(m, sd, true)
	assert.InDelta(t, 0.3755, ci[0], 1e-3)
	assert.InDelta(t, 0.9638, ci[1], 1e-3)
	// Other rewards: mean ± t(0.975, n-1)·s/√n; t(0.975, 4) = 2.776.
	m = sample(0.5, 0.7, 0.9, 0.6, 0.8)
	sd, _ = m.sd()
	ci = meanInterval(m, sd, false)
	assert.InDelta(t, 0.7-2.776*sd/math.Sqrt(5), ci[0], 1e-3)
	assert.InDelta(t, 0.7+2.776*sd/math.Sqrt(5), ci[1], 1e-3)
}
