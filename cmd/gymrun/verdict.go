package main

// The comparison of two runs, benchmark by benchmark: the change in mean reward with its 95%
// interval (paired by rollout when both runs are run files that key every reward, else Welch's),
// the verdict, and the causes (docs/gymrun.md, "compare").

import (
	"cmp"
	"math"
	"slices"
)

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

	testPaired = "paired"
	testWelch  = "welch"
	testNone   = "none" // too few rewards for an interval
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
	Schema     string                  `json:"schema"`
	Verdict    string                  `json:"verdict"`
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
	CI95    *[2]float64      `json:"ci95"`
	Test    string           `json:"test"`
	DF      *float64         `json:"df"`    // degrees of freedom of the t quantile
	Pairs   int64            `json:"pairs"` // rollouts of both runs (paired)
	Verdict string           `json:"verdict"`
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
		N: b.Reward.N, Mean: b.Reward.Mean, SD: b.Reward.SD, NaN: b.Reward.NaN, Missing: b.Reward.Missing,
		Infinite: b.Reward.Infinite, Histogram: b.Reward.Histogram,
	}
}

// compareSides compares every benchmark of either side; the overall verdict is regression when
// one regresses, else improvement when one improves, else no_change.
func compareSides(a, b *side) CompareReport {
	r := CompareReport{Schema: CompareSchema, Verdict: verdictNoChange, A: a.path, B: b.path, Benchmarks: map[string]CompareBench{}}
	names := map[string]bool{}
	for n := range a.benches {
		names[n] = true
	}
	for n := range b.benches {
		names[n] = true
	}
	for name := range names {
		c := compareBench(a, b, name)
		r.Benchmarks[name] = c
		if c.Verdict == verdictRegression || c.Verdict == verdictImprovement && r.Verdict == verdictNoChange {
			r.Verdict = c.Verdict
		}
	}
	return r
}

func compareBench(a, b *side, name string) CompareBench {
	ba, inA := a.benches[name]
	bb, inB := b.benches[name]
	c := CompareBench{Test: testNone, Verdict: verdictNoChange, Causes: []string{}, Shares: map[string]Share{}}
	if !inA || !inB {
		c.OnlyIn = "a"
		c.A = sideStats(ba)
		if inB {
			c.OnlyIn, c.A, c.B = "b", nil, sideStats(bb)
		}
		return c
	}
	c.A, c.B = sideStats(ba), sideStats(bb)

	delta, ci, df, ok := 0.0, [2]float64{}, 0.0, false
	if d, n := pairDiffs(a.runs[name], b.runs[name]); n >= 2 {
		delta, ci, df, ok = paired(d)
		c.Test, c.Pairs = testPaired, n
	} else if sa, okA := sampleOf(ba); okA {
		if sb, okB := sampleOf(bb); okB {
			delta, ci, df, ok = welch(sa, sb)
			c.Test = testWelch
		}
	}
	if ok && finite(delta, ci[0], ci[1]) {
		c.Delta, c.CI95 = &delta, &ci
		if finite(df) {
			c.DF = &df
		}
		switch {
		case ci[0] > 0:
			c.Verdict = verdictImprovement
		case ci[1] < 0:
			c.Verdict = verdictRegression
		}
	} else {
		c.Test, c.Pairs = testNone, 0
	}
	if c.Verdict != verdictNoChange {
		c.Causes = append(c.Causes, causeModel)
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
	return c
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

// sampleOf is a benchmark's rewards for Welch's test: two or more, with their sd.
func sampleOf(b BenchReport) (sample, bool) {
	if b.Reward.N < 2 || b.Reward.Mean == nil || b.Reward.SD == nil {
		return sample{}, false
	}
	return sample{n: b.Reward.N, mean: *b.Reward.Mean, sd: *b.Reward.SD}, true
}

// pairDiffs joins the finite rewards of a benchmark of A and B by rollout (task index, rollout
// index) and returns the moments of B − A over the rollouts of both, and their count. No
// pairing (0) when a side was read from a summary, a reward's row lacks an index, or a key
// comes twice on a side (several runs of one benchmark: which is whose is unknown).
func pairDiffs(ra, rb *bench) (moments, int64) {
	var d moments
	if ra == nil || rb == nil || ra.unkeyed > 0 || rb.unkeyed > 0 {
		return d, 0
	}
	ka, kb := sortedKeys(ra.keyed), sortedKeys(rb.keyed)
	if ka == nil || kb == nil {
		return d, 0
	}
	for i, j := 0, 0; i < len(ka) && j < len(kb); {
		switch c := keyCmp(ka[i], kb[j]); {
		case c < 0:
			i++
		case c > 0:
			j++
		default:
			d.add(kb[j].reward - ka[i].reward)
			i, j = i+1, j+1
		}
	}
	return d, d.n
}

func keyCmp(x, y keyedReward) int {
	return cmp.Or(cmp.Compare(x.task, y.task), cmp.Compare(x.rollout, y.rollout))
}

// sortedKeys sorts the keyed rewards by key: nil when a key comes twice.
func sortedKeys(k []keyedReward) []keyedReward {
	slices.SortFunc(k, keyCmp)
	for i := 1; i < len(k); i++ {
		if keyCmp(k[i-1], k[i]) == 0 {
			return nil
		}
	}
	return k
}

func finite(xs ...float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
