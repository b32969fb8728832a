package main

// The comparison of two runs, benchmark by benchmark: the change in mean reward with its 95%
// interval, by task (paired by task when both runs are run files that give every reward's task,
// else each run's mean clustered by task, by rollout only when the tasks are unknown), its
// p-value adjusted over the benchmarks, the verdict, the detectable effect, and the causes
// (docs/gymrun.md, "compare").

import "math"

// CompareSchema names the compare JSON document's format.
const CompareSchema = "gymrun.compare/v1"

// Verdicts, causes and tests.
const (
	verdictRegression  = "regression"
	verdictImprovement = "improvement"
	verdictNoChange    = "no_change"

	causeModel          = "model"
	causeInfrastructure = "infrastructure"
	causeDenominator    = "denominator"

	testPaired    = "paired"    // by task
	testClustered = "clustered" // unpaired, each run's mean clustered by task
	testWelch     = "welch"     // unpaired, a run's tasks unknown: by rollout
	testNone      = "none"      // no interval; reason says why

	reasonOneTask   = "one_task"
	reasonFewReward = "too_few_rewards"
	reasonNotFinite = "not_finite"

	correctionHolm = "holm"
	correctionNone = "none"
)

// Shares of the attempts (infrastructure) and of the scored rows (denominator) that the causes
// test, in the order reports list them.
const shareFailed = "failed"

var (
	attemptShares     = append([]string{shareFailed}, failureGroups...)
	denominatorShares = []string{"masked", "nan", "missing", "infinite"}
)

// CompareReport is the compare JSON document.
type CompareReport struct {
	Schema  string `json:"schema"`
	Verdict string `json:"verdict"`
	// Correction and Level: how the verdicts hold the family-wise error over the Family
	// benchmarks that have a p-value.
	Correction string                  `json:"correction"`
	Level      float64                 `json:"level"`
	Family     int                     `json:"family"`
	A          string                  `json:"a"`
	B          string                  `json:"b"`
	Benchmarks map[string]CompareBench `json:"benchmarks"`
}

// CompareBench is one benchmark's comparison.
type CompareBench struct {
	OnlyIn  string           `json:"only_in,omitempty"` // "a" or "b": the other run has no such benchmark
	A       *SideStats       `json:"a"`
	B       *SideStats       `json:"b"`
	Delta   *float64         `json:"delta"` // B − A
	CI95    *[2]float64      `json:"ci95"`  // raw: not widened for the family
	Test    string           `json:"test"`
	Reason  string           `json:"reason,omitempty"` // why the test is none
	DF      *float64         `json:"df"`               // degrees of freedom of the t quantile
	Pairs   int64            `json:"pairs"`            // tasks of both runs (paired)
	PValue  *float64         `json:"p_value"`
	PAdj    *float64         `json:"p_adjusted"` // over the family, by the correction
	MDE80   *float64         `json:"mde80"`      // the change found 4 times in 5 at the family's level
	Verdict string           `json:"verdict"`    // from p_adjusted
	Causes  []string         `json:"causes"`
	Shares  map[string]Share `json:"shares"`
}

// SideStats is what the comparison used of one run's benchmark.
type SideStats struct {
	Attempts      int64            `json:"attempts"`
	Scored        int64            `json:"scored"`
	Failed        int64            `json:"failed"`
	FailedByGroup map[string]int64 `json:"failed_by_group"`
	Masked        int64            `json:"masked"`
	N             int64            `json:"n"`
	Tasks         int64            `json:"tasks"`
	Mean          *float64         `json:"mean"`
	SD            *float64         `json:"sd"`
	NaN           int64            `json:"nan"`
	Missing       int64            `json:"missing"`
	Infinite      int64            `json:"infinite"`
	Histogram     *Histogram       `json:"histogram"`
}

// Share is one share of a benchmark's rows in A and B (Of: attempts or scored) and the pooled
// two-proportion z of its change; Moved: |z| > 1.96.
type Share struct {
	Of    string  `json:"of"`
	A     float64 `json:"a"`
	B     float64 `json:"b"`
	Z     float64 `json:"z"`
	Moved bool    `json:"moved"`
}

func sideStats(b BenchReport) *SideStats {
	return &SideStats{
		Attempts: b.Attempts, Scored: b.Scored, Failed: b.Failed, FailedByGroup: b.FailedByGroup, Masked: b.Masked,
		N: b.Reward.N, Tasks: b.Reward.Tasks, Mean: b.Reward.Mean, SD: b.Reward.SD, NaN: b.Reward.NaN, Missing: b.Reward.Missing,
		Infinite: b.Reward.Infinite, Histogram: b.Reward.Histogram,
	}
}

// compareOpts: the family-wise correction and its level.
type compareOpts struct {
	correction string
	level      float64
}

// compareSides compares every benchmark of either side, then judges those with a p-value as one
// family: a verdict when the adjusted p-value is below the level. The overall verdict is
// regression when one regresses, else improvement when one improves, else no_change.
func compareSides(a, b *side, o compareOpts) CompareReport {
	r := CompareReport{Schema: CompareSchema, Verdict: verdictNoChange, Correction: o.correction, Level: o.level,
		A: a.path, B: b.path, Benchmarks: map[string]CompareBench{}}
	names := map[string]bool{}
	for n := range a.benches {
		names[n] = true
	}
	for n := range b.benches {
		names[n] = true
	}
	var tested []string
	var ests []est
	var ps []float64
	for _, name := range sortedNames(names) {
		c, e := compareBench(a, b, name)
		r.Benchmarks[name] = c
		if c.PValue != nil {
			tested, ests, ps = append(tested, name), append(ests, e), append(ps, *c.PValue)
		}
	}
	r.Family = len(tested)
	adj, mdeLevel := ps, o.level
	if o.correction == correctionHolm && len(ps) > 0 {
		// Holm's first step is Bonferroni's: a change in one benchmark of m, the others
		// unchanged, is found at level/m.
		adj, mdeLevel = holm(ps), o.level/float64(len(ps))
	}
	for i, name := range tested {
		c := r.Benchmarks[name]
		c.PAdj = &adj[i]
		if e := ests[i]; e.se > 0 {
			if m := e.mde80(mdeLevel); finite(m) {
				c.MDE80 = &m
			}
		}
		if adj[i] < o.level {
			c.Verdict = verdictImprovement
			if *c.Delta < 0 {
				c.Verdict = verdictRegression
			}
			c.Causes = append([]string{causeModel}, c.Causes...)
		}
		r.Benchmarks[name] = c
		if c.Verdict == verdictRegression || c.Verdict == verdictImprovement && r.Verdict == verdictNoChange {
			r.Verdict = c.Verdict
		}
	}
	return r
}

// compareBench compares one benchmark: the change, its raw interval and p-value (the estimate
// behind them too), and the causes other than the model, which the family's verdict decides.
func compareBench(a, b *side, name string) (CompareBench, est) {
	ba, inA := a.benches[name]
	bb, inB := b.benches[name]
	c := CompareBench{Test: testNone, Verdict: verdictNoChange, Causes: []string{}, Shares: map[string]Share{}}
	if !inA || !inB {
		c.OnlyIn = "a"
		c.A = sideStats(ba)
		if inB {
			c.OnlyIn, c.A, c.B = "b", nil, sideStats(bb)
		}
		return c, est{}
	}
	c.A, c.B = sideStats(ba), sideStats(bb)

	var e est
	ok := false
	if a.rewardOverflow(name) || b.rewardOverflow(name) {
		c.Reason = reasonNotFinite // a side's statistics are unknown: nothing to test
	} else {
		e, ok = c.estimate(a.runs[name], b.runs[name], ba, bb)
	}
	if ok {
		ci, p := e.ci95(), e.pValue()
		if ba.PassRate != nil && bb.PassRate != nil {
			// Pass/fail on both sides: the change is within [-1, 1] whatever the t quantile says.
			ci = [2]float64{max(ci[0], -1), min(ci[1], 1)}
		}
		if finite(e.mean, e.se, ci[0], ci[1], p) {
			c.Delta, c.CI95, c.PValue = &e.mean, &ci, &p
			if finite(e.df) {
				c.DF = &e.df
			}
		} else {
			c.Test, c.Pairs, c.Reason = testNone, 0, reasonNotFinite
		}
	}

	infra, denom := false, ba.Reward.N != bb.Reward.N
	for _, s := range attemptShares {
		xa, xb := ba.Failed, bb.Failed
		if s != shareFailed {
			xa, xb = ba.FailedByGroup[s], bb.FailedByGroup[s]
		}
		infra = c.share(s, "attempts", xa, ba.Attempts, xb, bb.Attempts) || infra
	}
	for _, s := range denominatorShares {
		xa, xb := scoredShare(ba, s), scoredShare(bb, s)
		denom = c.share(s, "scored", xa, ba.Scored, xb, bb.Scored) || denom
	}
	if infra {
		c.Causes = append(c.Causes, causeInfrastructure)
	}
	if denom {
		c.Causes = append(c.Causes, causeDenominator)
	}
	return c, e
}

// share records the share xa/na → xb/nb and tells whether it moved beyond noise.
func (c *CompareBench) share(name, of string, xa, na, xb, nb int64) bool {
	frac := func(x, n int64) float64 {
		if n == 0 {
			return 0
		}
		return float64(x) / float64(n)
	}
	z := propZ(xa, na, xb, nb)
	s := Share{Of: of, A: frac(xa, na), B: frac(xb, nb), Z: z, Moved: math.Abs(z) > z95}
	c.Shares[name] = s
	return s.Moved
}

// scoredShare is the count of the scored rows that the denominator share name leaves out of
// reward.n.
func scoredShare(b BenchReport, name string) int64 {
	switch name {
	case "masked":
		return b.Masked
	case "nan":
		return b.Reward.NaN
	case "missing":
		return b.Reward.Missing
	}
	return b.Reward.Infinite
}

// estimate picks the test and gives its estimate of B − A: paired by task when both runs give
// every reward's task and share two tasks (a task in one run only is left out), else each run's
// own estimate by Welch's: clustered by task when its tasks are known, else by rollout. A run of
// one task has no spread between tasks to judge by: no test, rather than one by rollout.
func (c *CompareBench) estimate(ra, rb *bench, ba, bb BenchReport) (est, bool) {
	if d, n := pairTasks(ra, rb); n >= 2 {
		c.Test, c.Pairs = testPaired, n
		return paired(d)
	}
	ea, byTaskA, why := sideEst(ba)
	if why == "" {
		var eb est
		var byTaskB bool
		if eb, byTaskB, why = sideEst(bb); why == "" {
			c.Test = testWelch
			if byTaskA && byTaskB {
				c.Test = testClustered
			}
			return welch(ea, eb), true
		}
	}
	c.Reason = why
	return est{}, false
}

// sideEst is one run's mean with its standard error: clustered by task when the summary has
// it, else by rollout; a reason when there is none.
func sideEst(b BenchReport) (e est, byTask bool, reason string) {
	w := b.Reward
	switch {
	case w.Tasks == 1:
		return e, false, reasonOneTask
	case w.Tasks >= 2 && w.SEByTask != nil && w.Mean != nil:
		return est{mean: *w.Mean, se: *w.SEByTask, df: float64(w.Tasks - 1)}, true, ""
	case w.N >= 2 && w.Mean != nil && w.SD != nil:
		return est{mean: *w.Mean, se: *w.SD / math.Sqrt(float64(w.N)), df: float64(w.N - 1)}, false, ""
	}
	return e, false, reasonFewReward
}

// pairTasks joins the tasks of a benchmark of A and B by task index and returns the moments of
// B's task mean − A's over the tasks of both, and their count. No pairing (0) when a side was
// read from a summary or a reward's row gives no task index.
func pairTasks(ra, rb *bench) (moments, int64) {
	var d moments
	if ra == nil || rb == nil || ra.untasked > 0 || rb.untasked > 0 {
		return d, 0
	}
	for _, k := range ra.taskKeys() {
		if tb, ok := rb.tasks[k]; ok {
			ta := ra.tasks[k]
			d.add(tb.sum/float64(tb.n) - ta.sum/float64(ta.n))
		}
	}
	return d, d.n
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
