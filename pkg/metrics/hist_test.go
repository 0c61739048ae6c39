package metrics

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

func TestHistMatchesExactStatistics(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := NewHist()
	var xs []float64
	for range 50000 {
		// Log-normal latencies from ~1 ms to ~1 s.
		d := time.Duration(math.Exp(r.NormFloat64()*1.2+math.Log(30)) * float64(time.Millisecond))
		h.Record(d)
		xs = append(xs, float64(d/time.Microsecond)/1e3)
	}
	sort.Float64s(xs)
	mean, std := stat.PopMeanStdDev(xs, nil) // population, as Dist's
	d := h.Dist()
	if math.Abs(d.Mean-mean) > 1e-3*mean || math.Abs(d.Std-std) > 1e-3*std {
		t.Errorf("mean %.4f std %.4f, exact %.4f %.4f", d.Mean, d.Std, mean, std)
	}
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99, 0.999} {
		exact := xs[int(math.Ceil(q*float64(len(xs))))-1]
		got := h.Quantile(q)
		// 3 significant digits: within 0.1 %, plus the 1 µs unit.
		if math.Abs(got-exact) > exact*1e-3+1e-3 {
			t.Errorf("q%.3f = %.4f ms, exact %.4f ms", q, got, exact)
		}
	}
	if math.Abs(d.Max-xs[len(xs)-1]) > 1e-3 {
		t.Errorf("max %.4f, exact %.4f", d.Max, xs[len(xs)-1])
	}
}

func TestHistMergeEqualsOneHistogram(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	all, a, b := NewHist(), NewHist(), NewHist()
	for i := range 10000 {
		d := time.Duration(r.ExpFloat64() * float64(20*time.Millisecond))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	da, dall := a.Dist(), all.Dist()
	if da.Count != dall.Count || da.Median != dall.Median || da.P99 != dall.P99 || da.Max != dall.Max {
		t.Errorf("merged %+v, whole %+v", da, dall)
	}
	if math.Abs(da.Mean-dall.Mean) > 1e-9 || math.Abs(da.Std-dall.Std) > 1e-9 {
		t.Errorf("merged moments (%v, %v), whole (%v, %v)", da.Mean, da.Std, dall.Mean, dall.Std)
	}
}

func TestHistEdges(t *testing.T) {
	h := NewHist()
	if d := h.Dist(); d != (Dist{}) {
		t.Errorf("empty histogram %+v", d)
	}
	h.Record(-time.Second)
	h.Record(48 * time.Hour)
	if h.Count() != 2 || h.Clamped() != 1 || h.Quantile(0) != 0 {
		t.Errorf("count %d clamped %d min %v", h.Count(), h.Clamped(), h.Quantile(0))
	}
}
