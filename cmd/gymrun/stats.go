package main

// The statistics of summary and compare: running moments, intervals of a mean and of a change
// in means, and the two-proportion test, each in one place.

import "math"

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
	z2 := z95 * z95
	center := (m.mean + z2/(2*n)) / (1 + z2/n)
	half := z95 * math.Sqrt(m.mean*(1-m.mean)/n+z2/(4*n*n)) / (1 + z2/n)
	return [2]float64{center - half, center + half}
}

// sample is what an interval of a mean needs of one side: its count, mean and sample standard
// deviation.
type sample struct {
	n        int64
	mean, sd float64
}

// welch is the interval of mean(b) - mean(a) by Welch's t: the standard error of the two
// variances apart, Student's t at the Welch–Satterthwaite degrees of freedom. Both sides need
// two values.
func welch(a, b sample) (delta float64, ci [2]float64, df float64, ok bool) {
	if a.n < 2 || b.n < 2 {
		return 0, ci, 0, false
	}
	va, vb := a.sd*a.sd/float64(a.n), b.sd*b.sd/float64(b.n)
	delta = b.mean - a.mean
	se := math.Sqrt(va + vb)
	if se == 0 {
		return delta, [2]float64{delta, delta}, math.Inf(1), true // both sides constant
	}
	df = (va + vb) * (va + vb) / (va*va/float64(a.n-1) + vb*vb/float64(b.n-1))
	return delta, interval(delta, se, t975(df)), df, true
}

// paired is the interval of the mean of paired differences d (Student's t, n - 1 degrees of
// freedom); it needs two pairs.
func paired(d moments) (delta float64, ci [2]float64, df float64, ok bool) {
	sd, ok := d.sd()
	if !ok {
		return 0, ci, 0, false
	}
	df = float64(d.n - 1)
	return d.mean, interval(d.mean, sd/math.Sqrt(float64(d.n)), t975(df)), df, true
}

// propZ is the pooled two-proportion z statistic of xb/nb against xa/na: 0 when a side has no
// trials or the pooled share is 0 or 1 (nothing varies).
func propZ(xa, na, xb, nb int64) float64 {
	if na == 0 || nb == 0 {
		return 0
	}
	p := float64(xa+xb) / float64(na+nb)
	se := math.Sqrt(p * (1 - p) * (1/float64(na) + 1/float64(nb)))
	if se == 0 {
		return 0
	}
	return (float64(xb)/float64(nb) - float64(xa)/float64(na)) / se
}

// t975 is Student's t 97.5% quantile at df degrees of freedom (df > 0, not necessarily an
// integer): the t whose two-sided tail I_{df/(df+t²)}(df/2, 1/2) is 0.05, by bisection.
func t975(df float64) float64 {
	if math.IsInf(df, 1) || df > 1e7 {
		return 1.959963984540054
	}
	lo, hi := 0.0, 1000.0 // t975(df) < 1000 for df >= 0.2
	for range 200 {
		mid := (lo + hi) / 2
		if betaInc(df/2, 0.5, df/(df+mid*mid)) > 0.05 {
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
