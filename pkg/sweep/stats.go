package sweep

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ShareTest is Wald's sequential probability ratio test on a share of
// successes (the requests that met the SLO) against a threshold m: it
// weighs H1, the share is m + delta (the step passes), against H0, the
// share is m − delta (it fails), with error rates alpha (a failing step
// passed) and beta (a passing step failed) — both Alpha here. A share
// within delta of m is the test's indifference zone: it may run to the
// step's maximum length there.
//
// Wald's test takes the requests as independent. Under a bursty schedule
// they are not: a burst makes many requests in a row miss the SLO
// together. The index of dispersion of a renewal process's counts is the
// squared CV of its gaps, so a request of a schedule of CV c carries about
// 1/c² of a Poisson request's evidence; weight scales each request's
// log-likelihood ratio by it (1: Poisson).
type ShareTest struct {
	good, bad float64 // the log-likelihood ratio of a success, a failure (weighted)
	upper     float64 // log((1−β)/α): accept H1 (pass)
	lower     float64 // log(β/(1−α)): accept H0 (fail)
	llr       float64
	N, Good   int
}

// NewShareTest returns the test of threshold m with indifference delta
// and error rates alpha, each request weighing weight (Evidence).
func NewShareTest(m, delta, alpha, weight float64) *ShareTest {
	p1 := math.Min(m+delta, 1-1e-3)
	p0 := math.Max(m-delta, 1e-3)
	if p0 >= p1 { // m at an end: keep the hypotheses apart
		p0, p1 = math.Max(p1-2*delta, 1e-3), math.Min(p0+2*delta, 1-1e-3)
	}
	return &ShareTest{
		good: weight * math.Log(p1/p0), bad: weight * math.Log((1-p1)/(1-p0)),
		upper: math.Log((1 - alpha) / alpha), lower: math.Log(alpha / (1 - alpha)),
	}
}

// Add counts one request.
func (t *ShareTest) Add(good bool) {
	t.N++
	if good {
		t.Good++
		t.llr += t.good
	} else {
		t.llr += t.bad
	}
}

// Decision is +1 once the share is settled above the threshold, −1 below
// it, 0 while undecided.
func (t *ShareTest) Decision() int {
	switch {
	case t.llr >= t.upper:
		return 1
	case t.llr <= t.lower:
		return -1
	}
	return 0
}

// Share is the observed share (0 with no request).
func (t *ShareTest) Share() float64 {
	if t.N == 0 {
		return 0
	}
	return float64(t.Good) / float64(t.N)
}

// Evidence is the weight of a request of a schedule whose gaps have
// coefficient of variation cv (ShareTest): 1/cv², and 1 for a schedule
// no burstier than Poisson (cv ≤ 1, or unknown: 0).
func Evidence(cv float64) float64 {
	if !(cv > 1) || math.IsInf(cv, 0) {
		return 1
	}
	return 1 / (cv * cv)
}

// Slope is a least-squares slope with its two-sided confidence interval.
type Slope struct {
	Slope float64 `json:"slope"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// N is the number of points (bins) it was fitted on.
	N int `json:"n"`
}

// SlopeCI fits y = a + b·x by least squares and returns b with its
// confidence interval at level conf (Student's t on n − 2 degrees of
// freedom). ok is false with fewer than 3 points or no spread in x.
func SlopeCI(x, y []float64, conf float64) (Slope, bool) {
	n := len(x)
	if n < 3 || len(y) != n {
		return Slope{}, false
	}
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range x {
		dx := x[i] - mx
		sxx += dx * dx
		sxy += dx * (y[i] - my)
	}
	if !(sxx > 0) {
		return Slope{}, false
	}
	b := sxy / sxx
	var sse float64
	for i := range x {
		r := y[i] - (my + b*(x[i]-mx))
		sse += r * r
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 2)}.Quantile(1 - (1-conf)/2)
	return Slope{Slope: b, Lo: b - t*se, Hi: b + t*se, N: n}, true
}
