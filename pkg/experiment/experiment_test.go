package experiment

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestIntervalHalfWidthIsStudents: the half-width of {1…5} is
// t(0.975, 4) · s / √5 with the table's t = 2.776445 and s = √2.5.
func TestIntervalHalfWidthIsStudents(t *testing.T) {
	m, h := Interval([]float64{1, 2, 3, 4, 5})
	want := 2.776445 * math.Sqrt(2.5) / math.Sqrt(5)
	if m != 3 || math.Abs(h-want) > 1e-5 {
		t.Errorf("Interval = %v ± %v, want 3 ± %v", m, h, want)
	}
	if _, h := Interval([]float64{7}); !math.IsInf(h, 1) {
		t.Errorf("one value: half-width %v, want +Inf", h)
	}
}

// TestIntervalCoverage: over 4000 seeded samples of 5 normal values, the
// 95 % interval holds the true mean in 95 % ± 1 % of them (3σ of the
// estimate is 1.0 %).
func TestIntervalCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const reps, mu = 4000, 40.0
	in := 0
	for range reps {
		xs := make([]float64, 5)
		for i := range xs {
			xs[i] = mu + 7*r.NormFloat64()
		}
		m, h := Interval(xs)
		if math.Abs(m-mu) <= h {
			in++
		}
	}
	if c := float64(in) / reps; math.Abs(c-Confidence) > 0.01 {
		t.Errorf("coverage %.4f, want %.2f ± 0.01", c, Confidence)
	}
}

// TestWelchAtTheCriticalValue: two samples of 5 with equal variances (2.5)
// whose means differ by t(0.975, 8) · √(2·2.5/5) have Welch's df 8 and p
// 0.05; the same samples give p 1.
func TestWelchAtTheCriticalValue(t *testing.T) {
	a := []float64{0, 1, 2, 3, 4}
	b := make([]float64, len(a))
	for i, x := range a {
		b[i] = x + 2.306004
	}
	p, ok := Welch(a, b)
	if !ok || math.Abs(p-0.05) > 1e-4 {
		t.Errorf("Welch p = %v (ok %v), want 0.05", p, ok)
	}
	if p, _ := Welch(a, a); math.Abs(p-1) > 1e-12 {
		t.Errorf("Welch of a sample with itself: p %v, want 1", p)
	}
	if _, ok := Welch(a, []float64{1}); ok {
		t.Error("Welch with one value on a side: ok, want not tested")
	}
}

// TestWelchFalseAlarms: under equal means, Welch's test at 0.05 rejects in
// 5 % ± 1.5 % of 3000 seeded pairs of samples of unequal spread.
func TestWelchFalseAlarms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const reps = 3000
	rejects := 0
	for range reps {
		a, b := make([]float64, 5), make([]float64, 7)
		for i := range a {
			a[i] = 10 + r.NormFloat64()
		}
		for i := range b {
			b[i] = 10 + 3*r.NormFloat64()
		}
		if p, _ := Welch(a, b); p < Alpha {
			rejects++
		}
	}
	if f := float64(rejects) / reps; math.Abs(f-Alpha) > 0.015 {
		t.Errorf("false alarms %.4f, want %.2f ± 0.015", f, Alpha)
	}
}

func TestParseThreshold(t *testing.T) {
	for _, c := range []struct {
		in, key, op string
		v           float64
		on          string
	}{
		{"p99_ttft_ms<=300", "p99_ttft_ms", "<=", 300, OnMean},
		{"goodput_share>=0.95", "goodput_share", ">=", 0.95, OnMean},
		{" output_throughput > 1e3 ", "output_throughput", ">", 1000, OnMean},
		{"mean_tpot_ms<20@upper", "mean_tpot_ms", "<", 20, OnUpper},
		{"request_throughput>=5@lower", "request_throughput", ">=", 5, OnLower},
	} {
		th, err := ParseThreshold(c.in)
		if err != nil || th.Key != c.key || th.Op != c.op || th.Value != c.v || th.On != c.on {
			t.Errorf("ParseThreshold(%q) = %+v, %v", c.in, th, err)
		}
	}
	for in, want := range map[string]string{
		"p99_ttf_ms<=300":     "did you mean p99_ttft_ms?",
		"p99_ttft_ms=300":     "want KEY<=VALUE",
		"p99_ttft_ms<=fast":   "not a number",
		"p99_ttft_ms<=3@top":  "@upper or @lower",
		"backend<=3":          "not a numeric key",
		"goodput_shar>=0.95":  "did you mean goodput_share?",
		"output_throughput>x": "not a number",
	} {
		if _, err := ParseThreshold(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseThreshold(%q): error %v, want %q", in, err, want)
		}
	}
}

// TestJudgeOnTheBound: a repeated run's threshold is judged on the mean
// by default and on the interval's bound with @upper/@lower.
func TestJudgeOnTheBound(t *testing.T) {
	s := &metrics.Summary{Backend: "vllm", TTFT: metrics.Dist{Count: 1, Mean: 290, P99: 290}}
	s.Repeats = &metrics.RepeatsSummary{Figures: map[string]metrics.RepeatFigure{"p99_ttft_ms": {Mean: 290, HalfWidth: 20, N: 3}}}
	var ts []Threshold
	for _, in := range []string{"p99_ttft_ms<=300", "p99_ttft_ms<=300@upper", "p99_ttft_ms>=280@lower", "mean_ttft_ms<=300", "request_goodput>=1"} {
		th, err := ParseThreshold(in)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, th)
	}
	vs, err := Judge(ts, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, false, true, false}
	for i, v := range vs {
		if v.Pass != want[i] {
			t.Errorf("%s: pass %v, want %v (%s)", v.Threshold.Text, v.Pass, want[i], v.Text())
		}
	}
	if !vs[4].Missing || !strings.Contains(vs[4].Text(), "has no request_goodput") {
		t.Errorf("a figure the run lacks: %q, want it named as missing", vs[4].Text())
	}
	if got := vs[1].Text(); got != "threshold p99_ttft_ms<=300@upper: BREACHED (upper bound of p99_ttft_ms 310)" {
		t.Errorf("verdict line %q", got)
	}
}

func TestConverge(t *testing.T) {
	c, err := ParseConverge("p99_ttft_ms:5%")
	if err != nil || c.Share != 0.05 || c.Key != "p99_ttft_ms" {
		t.Fatalf("ParseConverge = %+v, %v", c, err)
	}
	if c.Done([]float64{100, 100}) {
		t.Error("converged after 2 runs, want at least MinRuns")
	}
	if !c.Done([]float64{100, 101, 100}) {
		t.Error("three close runs: not converged")
	}
	if c.Done([]float64{100, 140, 70, 120}) {
		t.Error("noisy runs: converged")
	}
	for _, in := range []string{"p99_ttft_ms", "p99_ttft_ms:0%", "p99_ttft_ms:abc", "p99_tft_ms:5%"} {
		if _, err := ParseConverge(in); err == nil {
			t.Errorf("ParseConverge(%q): no error", in)
		}
	}
}

// TestRunSeed: run 0 keeps the base seed, the others differ from it and
// from each other, the same base gives the same series, and every seed is
// exact in JSON (below 2^53).
func TestRunSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for i := range 100 {
		s := RunSeed(42, i)
		if seen[s] || s >= 1<<53 || s != RunSeed(42, i) {
			t.Fatalf("run %d: seed %d repeated, too large or not a function of the base", i, s)
		}
		seen[s] = true
	}
	if RunSeed(42, 0) != 42 || RunSeed(43, 1) == RunSeed(42, 1) {
		t.Error("run 0 must keep the base; another base, other seeds")
	}
}

// TestCompareTellsNoiseFromAShift: with repeats on both sides a change
// beyond the gate fails only when Welch's test finds it significant.
func TestCompareTellsNoiseFromAShift(t *testing.T) {
	rep := func(vals ...float64) *metrics.Summary {
		m, h := Interval(vals)
		return &metrics.Summary{Backend: "vllm", TTFT: metrics.Dist{Count: 1, Mean: m, P99: m},
			Repeats: &metrics.RepeatsSummary{Figures: map[string]metrics.RepeatFigure{"p99_ttft_ms": {Mean: m, HalfWidth: h, N: len(vals), Values: vals}}}}
	}
	gate, err := ParseFailOn("p99_ttft_ms:+10%")
	if err != nil {
		t.Fatal(err)
	}
	noisy := func(d []Diff) Diff {
		for _, x := range d {
			if x.Key == "p99_ttft_ms" {
				return x
			}
		}
		t.Fatal("no p99_ttft_ms in the comparison")
		return Diff{}
	}
	// A 15 % higher mean within runs that vary by ±40 %: noise.
	d, _, _ := Compare(rep(100, 60, 140, 90, 110), rep(115, 70, 160, 100, 130), []FailOn{gate})
	if x := noisy(d); x.Regression || !x.Tested || x.Significant {
		t.Errorf("noise flagged: %+v", x)
	}
	// 15 % higher, runs within ±1 %: a regression.
	d, _, _ = Compare(rep(100, 101, 99, 100, 100), rep(115, 116, 114, 115, 115), []FailOn{gate})
	if x := noisy(d); !x.Regression || !x.Significant {
		t.Errorf("a shift not flagged: %+v", x)
	}
	// One run a side: the difference alone.
	one := func(v float64) *metrics.Summary {
		return &metrics.Summary{Backend: "vllm", TTFT: metrics.Dist{Count: 1, Mean: v, P99: v}}
	}
	d, _, _ = Compare(one(100), one(111), []FailOn{gate})
	if x := noisy(d); !x.Regression || x.Tested {
		t.Errorf("one run a side: %+v", x)
	}
	d, _, _ = Compare(one(100), one(109), []FailOn{gate})
	if x := noisy(d); x.Regression {
		t.Errorf("within the gate: %+v", x)
	}
	thr, _ := ParseFailOn("output_throughput:-5%")
	d, _, _ = Compare(&metrics.Summary{Backend: "vllm", OutputThroughput: 100}, &metrics.Summary{Backend: "vllm", OutputThroughput: 94}, []FailOn{thr})
	for _, x := range d {
		if x.Key == "output_throughput" && !x.Regression {
			t.Errorf("a 6 %% lower throughput against -5%%: %+v", x)
		}
	}
	if _, missing, _ := Compare(one(1), one(1), []FailOn{{Text: "g", Key: "request_goodput", Share: 0.1}}); len(missing) != 1 {
		t.Errorf("a gated figure neither summary has: missing %v, want it named", missing)
	}
	for _, bad := range []string{"p99_ttft_ms:10%", "p99_ttft_ms", "p99_ttft_ms:+0%", "p99_tft_ms:+10%"} {
		if _, err := ParseFailOn(bad); err == nil {
			t.Errorf("ParseFailOn(%q): no error", bad)
		}
	}
}
