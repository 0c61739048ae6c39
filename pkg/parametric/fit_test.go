package parametric

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/datasets"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// traceTimes loads FineServe's Dense_30to100B replay trace (a gzipped copy
// under testdata) through pkg/replay, as fineserve-gen fit does.
func traceTimes(t *testing.T) []time.Duration {
	t.Helper()
	tr, err := replay.Load("../replay/testdata/fineserve_Dense_30to100B.csv.gz", replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	times := make([]time.Duration, tr.Len())
	for i := range times {
		times[i] = tr.At(i)
	}
	return times
}

// TestFitReproducesTrace: fit the Dense_30to100B trace, generate one pass
// from the fit, and compare every full window's count with the trace's:
// with m = shape·scale = T/N_trace, z = (N_gen − N_trace)/√(N_trace·CV²)
// must be within ±2.5 in at least 95 % of windows, for both methods.
func TestFitReproducesTrace(t *testing.T) {
	times := traceTimes(t)
	if len(times) != 21116 {
		t.Fatalf("%d timestamps, want FineServe's 21,116", len(times))
	}
	for _, method := range []FitMethod{MethodMoments, MethodMLE} {
		t.Run(method.String(), func(t *testing.T) {
			fit, err := FitTimes(times, FitOptions{Method: method})
			if err != nil {
				t.Fatal(err)
			}
			if len(fit.Windows) != 96 { // 28,797 s of trace
				t.Fatalf("%d windows", len(fit.Windows))
			}
			// The written files read back as the same parameters.
			var csvBuf, nbBuf bytes.Buffer
			if err := WriteGammaCSV(&csvBuf, fit.Table(false)); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(csvBuf.String(), "gamma_shape,gamma_scale\n") {
				t.Fatalf("header %q", strings.SplitN(csvBuf.String(), "\n", 2)[0])
			}
			tb, err := ReadGammaCSV(&csvBuf, "fit.csv", Columns{})
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteNBJSON(&nbBuf, fit.NBFile); err != nil {
				t.Fatal(err)
			}
			checkNBKeys(t, nbBuf.Bytes())

			plan, err := NewPlan(PlanConfig{Table: tb, Window: 300 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			counts := make([]int, len(fit.Windows))
			for a := range Schedule(Config{Plan: plan, Seed: 11, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}) {
				counts[int(a.At/(300*time.Second))]++
			}
			within, n := 0, 0
			var gen, trace int
			for i, w := range fit.Windows[:len(fit.Windows)-1] { // the last is partial
				z := float64(counts[i]-w.Requests) / math.Sqrt(float64(w.Requests)/w.Shape)
				n++
				if math.Abs(z) <= zBound {
					within++
				}
				gen += counts[i]
				trace += w.Requests
			}
			t.Logf("%s: %d/%d full windows |z| ≤ %.1f; %d requests generated vs %d in the trace; NB mean %.4f mu %.3g",
				method, within, n, zBound, gen, trace, fit.NBFile.Mean, fit.NB.Mu)
			if float64(within)/float64(n) < zShareMin {
				t.Errorf("only %d of %d windows within the z bound", within, n)
			}
			if d := math.Abs(float64(gen)/float64(trace) - 1); d > 0.02 {
				t.Errorf("total %d vs %d in the trace", gen, trace)
			}
			var sum strings.Builder
			if err := fit.WriteSummary(&sum, "Dense_30to100B.csv"); err != nil {
				t.Fatal(err)
			}
			if lines := strings.Count(sum.String(), "\n"); lines < 96 || !strings.Contains(sum.String(), "req/s") {
				t.Errorf("summary of %d lines:\n%s", lines, sum.String())
			}
		})
	}
}

// checkNBKeys: the written NB JSON has exactly the bundled file's keys.
func checkNBKeys(t *testing.T, written []byte) {
	t.Helper()
	bundled, _, _ := datasets.NB("Dense_lt10B")
	keys := func(b []byte) []string {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		var k []string
		for key := range m {
			k = append(k, key)
		}
		slices.Sort(k)
		return k
	}
	if a, b := keys(written), keys(bundled); !slices.Equal(a, b) {
		t.Errorf("NB JSON keys %v, FineServe's %v", a, b)
	}
	if _, err := ReadNBJSON(bytes.NewReader(written), "fit.json"); err != nil {
		t.Errorf("written NB JSON does not read back: %v", err)
	}
}

// TestFitRecoversParameters: fitting a generated schedule gives back the
// windows' rates and shapes, and the NB model of its bursts.
func TestFitRecoversParameters(t *testing.T) {
	nb := NB{Mu: 2.6285496273363496, Alpha: 0.03696279493927793}
	for _, withNB := range []bool{false, true} {
		tb := &Table{Name: "known", Rows: []Row{{Shape: 0.3, ScaleMS: 60}, {Shape: 0.6, ScaleMS: 40}, {Shape: 1.5, ScaleMS: 20}, {Shape: 0.45, ScaleMS: 100}}}
		if withNB {
			// Bursts overlap (and merge) when event gaps fall under 1 ms,
			// which small shapes make common: 24 % of the gaps of the
			// first row stretched by E[K]. These rows keep that under 2 %.
			tb.Rows = []Row{{Shape: 1, ScaleMS: 50}, {Shape: 0.8, ScaleMS: 80}, {Shape: 1.5, ScaleMS: 30}, {Shape: 0.6, ScaleMS: 150}}
		}
		plan, err := NewPlan(PlanConfig{Table: tb, Window: 600 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c := Config{Plan: plan, Seed: 21, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}
		if withNB {
			c.NB = &nb
		}
		var times []time.Duration
		for a := range Schedule(c) {
			times = append(times, a.At)
		}
		for _, method := range []FitMethod{MethodMoments, MethodMLE} {
			fit, err := FitTimes(times, FitOptions{Window: 600 * time.Second, Method: method, GammaOnBursts: withNB})
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range fit.Windows {
				want := tb.Rows[i]
				rate := 1e3 / want.MeanGapMS()
				// The rate within 4 standard errors of a renewal count; the
				// shape within 15 % (a few thousand events a window; the
				// events are merged bursts, so only roughly Gamma with NB).
				se := math.Sqrt(600*rate/want.Shape/c.BurstMean()) * c.BurstMean() / 600
				tol := 0.15
				if withNB {
					tol = 0.3
				}
				if math.Abs(w.Rate-rate) > 4*se || math.Abs(w.Shape/want.Shape-1) > tol {
					t.Errorf("NB %v %s window %d: rate %.3f (want %.3f ± %.3f), shape %.3f (want %.3f)",
						withNB, method, i, w.Rate, rate, 4*se, w.Shape, want.Shape)
				}
			}
			if withNB && math.Abs(fit.NB.Mean()/nb.Mean()-1) > 0.05 {
				t.Errorf("%s: burst mean %.3f, generated with E[K] %.3f", method, fit.NB.Mean(), nb.Mean())
			}
		}
	}
	// The NB fit alone, on exact ZT-NB draws.
	s := newBurstSampler(nb, arrival.Rand(5, arrival.StreamBursts))
	hist := map[int]int64{}
	var sum float64
	const n = 300_000
	for range n {
		k := s.draw()
		hist[k]++
		sum += float64(k)
	}
	got, file := FitNB(hist)
	t.Logf("ZT-NB fit: mu %.4f alpha %.4f (true %.4f, %.4f), KS %.4f p %.3f", got.Mu, got.Alpha, nb.Mu, nb.Alpha, file.KSStat, file.KSPValue)
	if math.Abs(got.Mean()-sum/n) > 1e-6*sum/n {
		t.Errorf("fitted E[K] %.6f, sample mean %.6f: the MLE matches the mean", got.Mean(), sum/n)
	}
	if math.Abs(got.Mu/nb.Mu-1) > 0.03 || math.Abs(got.Alpha-nb.Alpha) > 0.02 || file.KSPValue < 0.01 {
		t.Errorf("fit %+v, KS p %.3g; want ≈ %+v", got, file.KSPValue, nb)
	}
}

func TestFitEdgeCases(t *testing.T) {
	s := time.Second
	if _, err := FitTimes([]time.Duration{s}, FitOptions{}); err == nil {
		t.Error("one request fitted")
	}
	if _, err := FitTimes([]time.Duration{2 * s, s}, FitOptions{}); err == nil {
		t.Error("unsorted times fitted")
	}
	// A quiet hour in the middle, a constant-rate window, bursts of zero gaps.
	var times []time.Duration
	for i := range 300 {
		times = append(times, time.Duration(i)*s) // window 0: one a second
	}
	for i := range 100 {
		at := 3600*s + time.Duration(i)*3*s
		times = append(times, at, at, at) // window 12: triples
	}
	fit, err := FitTimes(times, FitOptions{Method: MethodMLE})
	if err != nil {
		t.Fatal(err)
	}
	w0, w5, w12 := fit.Windows[0], fit.Windows[5], fit.Windows[12]
	if w0.Shape != MaxShape || math.Abs(w0.Rate-1) > 1e-9 {
		t.Errorf("constant window: shape %g rate %g", w0.Shape, w0.Rate)
	}
	if w5.Requests != 0 || w5.Note == "" || math.Abs(w5.Rate-1.0/300) > 1e-12 {
		t.Errorf("empty window: %+v", w5)
	}
	if math.Abs(w12.Rate-1) > 0.02 || w12.Events != 300 {
		t.Errorf("burst window: %+v", w12)
	}
	if fit.NB == nil || fit.NBFile.Mean <= 1 {
		t.Errorf("bursts of 3 not seen: %+v", fit.NBFile)
	}
	// On bursts, window 12 has 100 events 3 s apart.
	fit, err = FitTimes(times, FitOptions{Method: MethodMLE, GammaOnBursts: true})
	if err != nil || fit.Windows[12].Events != 100 || fit.Windows[12].Shape != MaxShape {
		t.Errorf("on bursts: %+v, %v", fit.Windows[12], err)
	}
	// Zero gaps between requests reach the MLE and are left out.
	fit, err = FitTimes(times, FitOptions{Method: MethodMLE, BurstBin: -1})
	if err != nil || fit.NB != nil || fit.ZeroGaps != 200 {
		t.Errorf("ungrouped: NB %v, %d zero gaps, %v", fit.NB, fit.ZeroGaps, err)
	}
	if tb := fit.Table(true); !tb.Bounds || tb.Rows[0].StartMS != 0 || tb.Rows[0].EndMS != 300000 {
		t.Errorf("bounded table: %+v", tb.Rows[0])
	}
	if m, err := ParseFitMethod("MLE"); err != nil || m != MethodMLE {
		t.Errorf("ParseFitMethod: %v %v", m, err)
	}
}
