package main

// The statistics of summary and compare: running moments, intervals of a mean and of a change
// in means (by rollout or clustered by task), p-values and Holm's adjustment, the detectable
// effect, and the two-proportion test, each in one place.

import (
	"cmp"
	"math"
	"slices"
)

// z95 is the two-sided 95% quantile of the normal distribution as the summary's ci95 and the
// two-proportion test use it.
const z95 = 1.96

// moments are a sample's count, mean and sum of squared deviations (Welford's running update:
// one pass, no cancellation).
type moments struct {
	n        int64
	mean, m2 float64
}

func (m *moments) add(x float64) {
	m.n++
	d := x - m.mean
	m.mean += d / float64(m.n)
	m.m2 += d * (x - m.mean)
}

// sd is the sample standard deviation (n - 1 in the denominator); false below two values.
func (m moments) sd() (float64, bool) {
	if m.n < 2 {
		return 0, false
	}
	return math.Sqrt(m.m2 / float64(m.n-1)), true
}

// interval is center ± q standard errors.
func interval(center, se, q float64) [2]float64 {
	return [2]float64{center - q*se, center + q*se}
}

// meanInterval is the 95% interval of a sample's mean: Wilson's score interval when every
// value is 0 or 1 (a pass rate: it stays within [0, 1], where mean ± t·s/√n of a small or
// lopsided sample does not), else Student's t at n - 1 degrees of freedom (a few dozen
// rewards are common, where the normal quantile would make it too narrow). The sample has at
// least two values and sd is its standard deviation.
func meanInterval(m moments, sd float64, binary bool) [2]float64 {
	n := float64(m.n)
	if !binary {
		return interval(m.mean, sd/math.Sqrt(n), t975(n-1))
	}
	return wilsonEff(m.mean, n)
}

// est is an estimate (a mean, or a change in means) with its standard error and the degrees of
// freedom of its t quantile.
type est struct {
	mean, se, df float64
}

// welch is the estimate of b − a from two independent estimates: the standard error of the two
// variances apart, the degrees of freedom by Welch–Satterthwaite (each side's own: n − 1 of
// rollouts, or tasks − 1 when clustered by task).
func welch(a, b est) est {
	va, vb := a.se*a.se, b.se*b.se
	e := est{mean: b.mean - a.mean, se: math.Sqrt(va + vb), df: math.Inf(1)}
	if va+vb > 0 {
		e.df = (va + vb) * (va + vb) / (va*va/a.df + vb*vb/b.df)
	}
	return e
}

// paired is the estimate of the mean of paired differences d (n − 1 degrees of freedom); it
// needs two pairs.
func paired(d moments) (est, bool) {
	sd, ok := d.sd()
	if !ok {
		return est{}, false
	}
	return est{mean: d.mean, se: sd / math.Sqrt(float64(d.n)), df: float64(d.n - 1)}, true
}

// pValue is the two-sided p-value of e against 0; a standard error of 0 (every task moved
// alike) leaves no doubt either way.
func (e est) pValue() float64 {
	switch {
	case e.se == 0 && e.mean == 0:
		return 1
	case e.se == 0:
		return 0
	}
	return tTail(math.Abs(e.mean/e.se), e.df)
}

// ci95 is the estimate's 95% interval, Student's t.
func (e est) ci95() [2]float64 { return interval(e.mean, e.se, t975(e.df)) }

// mde80 is the smallest true change that a two-sided test at level finds 4 times in 5 with this
// standard error: (t at level + t at 0.4, two-sided, i.e. one-sided 80%) standard errors.
func (e est) mde80(level float64) float64 {
	return (tInv(level, e.df) + tInv(0.4, e.df)) * e.se
}

// taskSum is one task's finite rewards: their count and sum.
type taskSum struct {
	n   int64
	sum float64
}

// clustered is the mean of the rewards of the tasks (in a fixed order: the same bytes every
// run) with its standard error clustered by task (the sandwich estimator with its small-sample
// factor T/(T − 1), tasks − 1 degrees of freedom): rollouts of one task are not independent, so
// the task is the unit. With as many rollouts per task, it is the standard error of the task
// means. It needs two tasks.
func clustered(tasks []taskSum) (est, bool) {
	t := len(tasks)
	if t < 2 {
		return est{}, false
	}
	var n int64
	var sum float64
	for _, ts := range tasks {
		n, sum = n+ts.n, sum+ts.sum
	}
	mean := sum / float64(n)
	var ss float64
	for _, ts := range tasks {
		r := ts.sum - float64(ts.n)*mean
		ss += r * r
	}
	se := math.Sqrt(float64(t)/float64(t-1)*ss) / float64(n)
	return est{mean: mean, se: se, df: float64(t - 1)}, true
}

// wilsonEff is Wilson's score interval of a pass rate p at n effective rewards.
func wilsonEff(p, n float64) [2]float64 {
	z2 := z95 * z95
	center := (p + z2/(2*n)) / (1 + z2/n)
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / (1 + z2/n)
	return [2]float64{center - half, center + half}
}

// holm is Holm's step-down adjustment of the p-values (same order): the family-wise error over
// all of them stays at the level, whatever their dependence.
func holm(p []float64) []float64 {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(i, j int) int { return cmp.Compare(p[i], p[j]) })
	out := make([]float64, len(p))
	run := 0.0
	for k, i := range idx {
		run = max(run, min(1, float64(len(p)-k)*p[i]))
		out[i] = run
	}
	return out
}

// propZ is the pooled two-proportion z statistic of xb/nb against xa/na: 0 when a side has no
// trials or the pooled share is 0 or 1 (nothing varies).
func propZ(xa, na, xb, nb int64) float64 {
	if na == 0 || nb == 0 {
		return 0
	}
	p := float64(xa+xb) / float64(na+nb)
	se := math.Sqrt(p * (1 - p) * (1/float64(na) + 1/float64(nb)))
	if !(se > 0) { // NaN too: shares outside [0, 1] give no z
		return 0
	}
	return (float64(xb)/float64(nb) - float64(xa)/float64(na)) / se
}

// t975 is Student's t 97.5% quantile at df degrees of freedom (df > 0, not necessarily an
// integer).
func t975(df float64) float64 { return tInv(0.05, df) }

// tTail is the two-sided tail of Student's t at df degrees of freedom beyond ±t:
// I_{df/(df+t²)}(df/2, 1/2); the normal's at infinite df.
func tTail(t, df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return math.Erfc(t / math.Sqrt2)
	}
	return betaInc(df/2, 0.5, df/(df+t*t))
}

// tInv is the t whose two-sided tail at df degrees of freedom is q (0 < q < 1), by bisection.
func tInv(q, df float64) float64 {
	lo, hi := 0.0, 1.0
	for tTail(hi, df) > q && hi < 1e12 {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tTail(mid, df) > q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// betaInc is the regularized incomplete beta function I_x(a, b), by its continued fraction
// (modified Lentz), on the side where it converges fast.
func betaInc(a, b, x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	c, d := 1.0, 1/clamp(1-(a+b)*x/(a+1))
	h := d
	for m := 1.0; m <= 500; m++ {
		aa := m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		h *= d * c
		aa = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		d = 1 / clamp(1+aa*d)
		c = clamp(1 + aa/c)
		h *= d * c
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return h
}
