package parametric

import (
	"fmt"
	"math"
	"testing"
	"time"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat"

	"github.com/fineserve-gen/fineserve-gen/datasets"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// The statistical acceptance checks of issue 4, on generated schedules (no
// clock). For each window w with mean event gap m = shape·scale·E[K] and
// CV² = 1/shape, a Gamma renewal process puts N_w events in its T seconds
// with mean ≈ T/m and variance ≈ T·CV²/m, so z = (N_w − T/m)/√(T·CV²/m)
// should be within ±2.5 in at least 95 % of windows (about 98.8 % for a
// normal z), and the total within ±1 % of Σ T/m. Every gap, transformed by
// the Gamma CDF of the window it starts in, is uniform: its deciles must
// each hold 10 ± 0.5 % of the gaps.

const (
	zBound       = 2.5
	zShareMin    = 0.95
	totalTol     = 0.01
	decileTol    = 0.005
	nbMeanTol    = 0.03
	nbVarTol     = 0.10
	nbTotalTol   = 0.02
	corrTol      = 0.1
	corrTol30    = 0.03
	day          = 24 * time.Hour
	bundledRows  = 288
	windowLength = 300 * time.Second
)

// windowCheck accumulates the checks over a run's windows.
type windowCheck struct {
	wins      []Window
	ek        float64 // gap stretch (E[K] for burst events)
	counts    []int64
	deciles   [10]int64
	gaps      int64
	prev      float64
	started   bool
	w         int // window of prev
	decileMax float64
}

func newWindowCheck(wins []Window, ek float64) *windowCheck {
	return &windowCheck{wins: wins, ek: ek, counts: make([]int64, len(wins))}
}

// add records an event at t seconds (unscaled); events come in order.
func (c *windowCheck) add(t float64) {
	if c.started {
		w := c.wins[c.w]
		x := (t - c.prev) / (w.ScaleMS / 1e3 * c.ek)
		u := mathext.GammaIncReg(w.Shape, x)
		c.deciles[min(int(u*10), 9)]++
		c.gaps++
	}
	for c.w < len(c.wins)-1 && t >= c.wins[c.w].End {
		c.w++
	}
	if t < c.wins[c.w].End {
		c.counts[c.w]++
	}
	c.prev, c.started = t, true
}

type checkResult struct {
	windows, within int
	worstZ          float64
	total, expected float64
	deciles         [10]float64
}

func (r checkResult) String() string {
	d := ""
	for _, x := range r.deciles {
		d += fmt.Sprintf(" %.2f", 100*x)
	}
	return fmt.Sprintf("%d/%d windows |z| ≤ %.1f (worst %.2f); total %.0f vs %.0f expected (%+.3f%%); deciles %%:%s",
		r.within, r.windows, zBound, r.worstZ, r.total, r.expected, 100*(r.total/r.expected-1), d)
}

func (c *windowCheck) result() checkResult {
	var r checkResult
	for i, w := range c.wins {
		T := w.End - w.Start
		m := w.MeanGap() * c.ek
		exp := T / m
		z := (float64(c.counts[i]) - exp) / math.Sqrt(T/w.Shape/m)
		r.windows++
		if math.Abs(z) <= zBound {
			r.within++
		}
		if math.Abs(z) > math.Abs(r.worstZ) {
			r.worstZ = z
		}
		r.total += float64(c.counts[i])
		r.expected += exp
	}
	for i, n := range c.deciles {
		r.deciles[i] = float64(n) / float64(c.gaps)
	}
	return r
}

// problems lists how r misses the acceptance bounds (totalTol for the
// total count).
func (r checkResult) problems(totalTol float64) []string {
	var p []string
	if share := float64(r.within) / float64(r.windows); share < zShareMin {
		p = append(p, fmt.Sprintf("only %.1f%% of windows have |z| ≤ %.1f, want ≥ %.0f%%", 100*share, zBound, 100*zShareMin))
	}
	if d := math.Abs(r.total/r.expected - 1); d > totalTol {
		p = append(p, fmt.Sprintf("total %.0f is %.2f%% from the expected %.0f, want within %.1f%%", r.total, 100*d, r.expected, 100*totalTol))
	}
	for i, x := range r.deciles {
		if math.Abs(x-0.1) > decileTol {
			p = append(p, fmt.Sprintf("decile %d holds %.2f%% of the gaps, want 10 ± %.1f%%", i+1, 100*x, 100*decileTol))
		}
	}
	return p
}

// verify fails t unless r meets the acceptance bounds.
func (r checkResult) verify(t *testing.T, what string, totalTol float64) {
	t.Helper()
	t.Logf("%s: %s", what, r)
	for _, p := range r.problems(totalTol) {
		t.Errorf("%s: %s", what, p)
	}
}

// checkSchedule runs the window checks on the events (first requests of
// bursts) of s against wins, gaps stretched by ek; times are multiplied
// by timeScale to undo --time-scale.
func checkSchedule(t *testing.T, s arrival.Schedule, wins []Window, ek, timeScale float64) checkResult {
	t.Helper()
	chk := newWindowCheck(wins, ek)
	var last time.Duration
	for a := range s {
		if a.At < last {
			t.Fatalf("arrival %d at %v before %v", a.Index, a.At, last)
		}
		last = a.At
		if a.Burst == a.Index {
			chk.add(a.At.Seconds() * timeScale)
		}
	}
	return chk.result()
}

// windowsUpTo lists the windows of plan (seed) that start before end.
func windowsUpTo(plan *Plan, seed uint64, end float64) []Window {
	var ws []Window
	for w := range plan.Windows(seed) {
		if w.Start >= end {
			break
		}
		ws = append(ws, w)
	}
	return ws
}

func bundledPlan(t testing.TB, class string, ext Extension) *Plan {
	t.Helper()
	plan, err := NewPlan(PlanConfig{Table: bundledTable(t, class), Window: windowLength, Extension: ext, JitterRatio: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestDayPerClass: one pass over each class's 288 windows (24 h), without
// NB; events are requests.
func TestDayPerClass(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	for i, class := range datasets.Classes {
		t.Run(class, func(t *testing.T) {
			seed := uint64(100 + i)
			plan := bundledPlan(t, class, RepeatJitter)
			if plan.Rows() != bundledRows || plan.PassEnd() != day.Seconds() {
				t.Fatalf("%d rows over %g s, want %d over a day", plan.Rows(), plan.PassEnd(), bundledRows)
			}
			c := Config{Plan: plan, Seed: seed, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}
			chk := newWindowCheck(windowsUpTo(plan, seed, plan.PassEnd()), 1)
			var last time.Duration
			for a := range Schedule(c) {
				if a.Burst != a.Index || a.At < last {
					t.Fatalf("arrival %+v after %v", a, last)
				}
				last = a.At
				chk.add(a.At.Seconds())
			}
			if last >= day {
				t.Fatalf("last arrival at %v: one pass ends at 24 h", last)
			}
			chk.result().verify(t, class, totalTol)
		})
	}
}

// TestDayLt10BWithNB: Dense_lt10B with its bundled NB: the Gamma checks on
// burst events (gaps stretched by E[K]), the burst-size moments and the
// total request count.
func TestDayLt10BWithNB(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	const seed = 7
	plan := bundledPlan(t, "Dense_lt10B", RepeatJitter)
	nb := bundledNB(t)
	ek, vk := nb.Mean(), nb.Variance()
	if math.Abs(ek-2.861) > 0.001 || math.Abs(vk-2.47) > 0.01 {
		t.Fatalf("E[K] %.4f, Var[K] %.4f: want 2.861 and 2.47 for FineServe's Dense_lt10B NB", ek, vk)
	}
	c := Config{Plan: plan, NB: nb, Seed: seed, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}
	wins := windowsUpTo(plan, seed, plan.PassEnd())
	chk := newWindowCheck(wins, ek)
	var sizes []int32 // by request index: the size of the burst it opens
	var firstAt []time.Duration
	var requests, events int64
	var last time.Duration
	for a := range Schedule(c) {
		if a.At < last {
			t.Fatalf("arrival %d at %v before %v", a.Index, a.At, last)
		}
		last = a.At
		requests++
		sizes = append(sizes, 0)
		firstAt = append(firstAt, a.At)
		if a.Burst == a.Index {
			events++
			chk.add(a.At.Seconds())
		} else if a.Burst > a.Index || sizes[a.Burst] == 0 || a.At-firstAt[a.Burst] >= BurstSpread {
			t.Fatalf("request %d of burst %d at %v: not within 1 ms after its burst's first request", a.Index, a.Burst, a.At)
		}
		sizes[a.Burst]++
	}
	var hist []int64 // burst size → count
	for _, k := range sizes {
		if k > 0 {
			for int32(len(hist)) <= k {
				hist = append(hist, 0)
			}
			hist[k]++
		}
	}
	chk.result().verify(t, "Dense_lt10B burst events", totalTol)

	var n, s1, s2 float64
	for k, c := range hist {
		n += float64(c)
		s1 += float64(k) * float64(c)
		s2 += float64(k*k) * float64(c)
	}
	mean := s1 / n
	variance := s2/n - mean*mean
	t.Logf("%d requests in %d bursts: mean size %.4f (E[K] %.4f), variance %.4f (%.4f); largest %d", requests, events, mean, ek, variance, vk, len(hist)-1)
	if math.Abs(mean/ek-1) > nbMeanTol {
		t.Errorf("mean burst size %.4f, want %.3f ± %.0f%%", mean, ek, 100*nbMeanTol)
	}
	if math.Abs(variance/vk-1) > nbVarTol {
		t.Errorf("burst-size variance %.4f, want %.3f ± %.0f%%", variance, vk, 100*nbVarTol)
	}
	var implied float64
	for _, w := range wins {
		implied += (w.End - w.Start) / w.MeanGap()
	}
	if d := float64(requests)/implied - 1; math.Abs(d) > nbTotalTol {
		t.Errorf("%d requests, %.0f implied by the Gamma rows (%+.2f%%), want within %.0f%%", requests, implied, 100*d, 100*nbTotalTol)
	} else {
		t.Logf("total requests %d vs %.0f implied by the Gamma rows (%+.3f%%)", requests, implied, 100*d)
	}
}

// TestChecksCanFail runs the same checks on schedules that are wrong in
// ways they must catch: a 3 % rate error, Poisson gaps where the windows
// say Gamma, the wrong window for a gap, and a wrong E[K] stretch.
func TestChecksCanFail(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	const seed = 3
	good := bundledTable(t, "Dense_10to30B")
	goodPlan := bundledPlan(t, "Dense_10to30B", RepeatJitter)
	const span = 6 * time.Hour // the first 72 windows: enough to tell
	wins := windowsUpTo(goodPlan, seed, span.Seconds())
	variant := func(f func(r Row, i int) Row) *Plan {
		tb := &Table{Name: "variant"}
		for i, r := range good.Rows {
			tb.Rows = append(tb.Rows, f(r, i))
		}
		p, err := NewPlan(PlanConfig{Table: tb, Window: windowLength})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	lengths := arrival.UniformLengths{Input: 1, Output: 1}
	cases := []struct {
		name string
		plan *Plan
		ek   float64
	}{
		{"rate 3% high", variant(func(r Row, _ int) Row { r.ScaleMS /= 1.03; return r }), 1},
		{"Poisson gaps", variant(func(r Row, _ int) Row { r.ScaleMS *= r.Shape; r.Shape = 1; return r }), 1},
		{"windows shifted by one", variant(func(_ Row, i int) Row { return good.Rows[(i+1)%len(good.Rows)] }), 1},
		{"E[K] ignored", goodPlan, 1.05},
	}
	t.Run("the right schedule passes", func(t *testing.T) {
		r := checkSchedule(t, Schedule(Config{Plan: goodPlan, Seed: seed, Duration: span, Lengths: lengths}), wins, 1, 1)
		if p := r.problems(totalTol); len(p) > 0 {
			t.Errorf("%s → %v", r, p)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := checkSchedule(t, Schedule(Config{Plan: tc.plan, Seed: seed, Duration: span, Lengths: lengths}), wins, tc.ek, 1)
			p := r.problems(totalTol)
			t.Logf("%s → %v", r, p)
			if len(p) == 0 {
				t.Errorf("the checks pass a wrong schedule (%s)", tc.name)
			}
		})
	}
}

// TestExtension48h: two days of each class in both extension modes. The
// second day's windows differ from the first's and stay positive;
// repeat_jitter's factors stay in [1−r, 1+r); model_sample keeps the
// correlation of log shape and log scale of the file within ±0.1; and the
// 48 h schedules pass the window checks against the windows they were drawn
// from.
func TestExtension48h(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	for _, ext := range []Extension{RepeatJitter, ModelSample} {
		for i, class := range datasets.Classes {
			t.Run(ext.String()+"/"+class, func(t *testing.T) {
				// One seed for every class. A day of model_sample windows
				// estimates a correlation with a standard error of
				// (1−ρ²)/√288: 0.056 for Dense_30to100B (ρ = 0.22), where
				// about 1 seed in 10 misses ±0.1 by chance (docs/PARAMETRIC.md).
				seed := uint64(1)
				_ = i
				plan := bundledPlan(t, class, ext)
				wins := windowsUpTo(plan, seed, 2*day.Seconds())
				if len(wins) != 2*bundledRows {
					t.Fatalf("%d windows in 48 h, want %d", len(wins), 2*bundledRows)
				}
				var ls, lc []float64
				for j, w := range wins[bundledRows:] {
					d1 := wins[j]
					if !(w.Shape > 0 && w.ScaleMS > 0) || math.IsInf(w.Shape*w.ScaleMS, 0) {
						t.Fatalf("window %d: shape %g scale %g", w.Index, w.Shape, w.ScaleMS)
					}
					if w.Shape == d1.Shape || w.ScaleMS == d1.ScaleMS {
						t.Fatalf("window %d repeats window %d: %+v", w.Index, d1.Index, w)
					}
					if w.Start != d1.Start+day.Seconds() || w.End != d1.End+day.Seconds() {
						t.Fatalf("window %d spans [%g, %g), want day 1's shifted by 24 h", w.Index, w.Start, w.End)
					}
					if ext == RepeatJitter {
						f1, f2 := w.Shape/d1.Shape, w.ScaleMS/d1.ScaleMS
						if f1 < 0.95-1e-12 || f1 >= 1.05 || f2 < 0.95-1e-12 || f2 >= 1.05 {
							t.Fatalf("window %d: jitter factors %g, %g outside [0.95, 1.05)", w.Index, f1, f2)
						}
					}
					ls, lc = append(ls, math.Log(w.Shape)), append(lc, math.Log(w.ScaleMS))
				}
				var fs, fc []float64
				for _, w := range wins[:bundledRows] {
					fs, fc = append(fs, math.Log(w.Shape)), append(fc, math.Log(w.ScaleMS))
				}
				want, got := stat.Correlation(fs, fc, nil), stat.Correlation(ls, lc, nil)
				t.Logf("corr(log shape, log scale): file %.3f, day 2 %.3f", want, got)
				if ext == ModelSample && math.Abs(got-want) > corrTol {
					t.Errorf("day 2 correlation %.3f, file %.3f: want within ±%.1f", got, want, corrTol)
				}
				if ext == ModelSample {
					// Over 30 days the sampling error is a sixth of a day's:
					// the draws keep the correlation without bias.
					var ms, mc []float64
					for w := range plan.Windows(seed) {
						if w.Pass > 30 {
							break
						}
						if w.Pass > 0 {
							ms, mc = append(ms, math.Log(w.Shape)), append(mc, math.Log(w.ScaleMS))
						}
					}
					if got := stat.Correlation(ms, mc, nil); math.Abs(got-want) > corrTol30 {
						t.Errorf("30-day correlation %.3f, file %.3f: want within ±%.2f", got, want, corrTol30)
					} else {
						t.Logf("30-day correlation %.3f", got)
					}
				}
				// Reproducible, and seed-dependent.
				again := windowsUpTo(plan, seed, 2*day.Seconds())
				other := windowsUpTo(plan, seed+1, 2*day.Seconds())
				if again[400] != wins[400] || other[400] == wins[400] {
					t.Fatal("windows are not a function of the seed")
				}
				if class == "Dense_lt10B" || class == "Dense_10to30B" {
					return // the schedule checks below run on the two lighter classes
				}
				c := Config{Plan: plan, Seed: seed, Duration: 2 * day, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}
				checkSchedule(t, Schedule(c), wins, 1, 1).verify(t, "48 h schedule", totalTol)
			})
		}
	}
}
