// Package experiment holds what turns runs into an experiment's answer
// (docs/EXPERIMENTS.md): confidence intervals over repeated runs, the
// stopping rule of --until-converged, thresholds (--threshold) and the
// regression gate of fineserve-gen compare, all on the summary's JSON keys.
package experiment

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Confidence is the level of the intervals over runs; WideShare the
// half-width, as a share of the mean's magnitude, beyond which an interval
// is marked wide; Alpha the significance level of compare's Welch test.
const (
	Confidence = 0.95
	WideShare  = 0.10
	Alpha      = 0.05
)

// Interval returns the mean of xs and the half-width of its two-sided
// Confidence interval by Student's t with n−1 degrees of freedom
// (half-width t·s/√n, s the sample standard deviation). With fewer than 2
// values the half-width is +Inf.
func Interval(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.Inf(1)
	}
	mean, s := meanStd(xs)
	if n < 2 {
		return mean, math.Inf(1)
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(1 - (1-Confidence)/2)
	return mean, t * s / math.Sqrt(float64(n))
}

// meanStd returns the mean and the sample (n−1) standard deviation.
func meanStd(xs []float64) (mean, std float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// Wide reports whether an interval is wide: half > WideShare·|mean|.
func Wide(mean, half float64) bool { return half > WideShare*math.Abs(mean) }

// Welch returns the two-sided p-value of Welch's t-test that a and b have
// the same mean (unequal variances; Welch–Satterthwaite degrees of
// freedom). ok is false when either has fewer than 2 values. Two samples
// without spread give p 1 when their means are equal and 0 otherwise.
func Welch(a, b []float64) (p float64, ok bool) {
	if len(a) < 2 || len(b) < 2 {
		return math.NaN(), false
	}
	ma, sa := meanStd(a)
	mb, sb := meanStd(b)
	va, vb := sa*sa/float64(len(a)), sb*sb/float64(len(b))
	se := math.Sqrt(va + vb)
	if se == 0 {
		if ma == mb {
			return 1, true
		}
		return 0, true
	}
	t := (ma - mb) / se
	df := (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	d := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}
	return 2 * d.CDF(-math.Abs(t)), true
}
