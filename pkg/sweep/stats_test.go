package sweep

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The sequential test settles a share far from the threshold in few
// requests, on the right side, and keeps its error rate near its alpha
// at the edges of the indifference zone (seeded; 2,000 runs each).
func TestShareTestSPRT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(p float64, limit int) (decision, n int) {
		st := NewShareTest(0.9, ShareDelta, ShareAlpha, 1)
		for st.Decision() == 0 && st.N < limit {
			st.Add(rng.Float64() < p)
		}
		return st.Decision(), st.N
	}
	// Far from 0.9: settled, right, and soon.
	for _, c := range []struct {
		p    float64
		want int
		most int
	}{{1.0, 1, 80}, {0.5, -1, 40}, {0.7, -1, 150}} {
		wrong, total := 0, 0
		for range 200 {
			d, n := run(c.p, 100000)
			if d != c.want {
				wrong++
			}
			total += n
		}
		if wrong > 0 || total/200 > c.most {
			t.Errorf("share %g: %d of 200 wrong, %d requests on average (want 0 wrong, ≤ %d)", c.p, wrong, total/200, c.most)
		}
	}
	// At the zone's edges (0.88 fails, 0.92 passes) each wrong answer
	// should come at most ~alpha of the time: 5 %; allowed 8 %.
	for _, c := range []struct {
		p    float64
		want int
	}{{0.88, -1}, {0.92, 1}} {
		wrong := 0
		for range 2000 {
			if d, _ := run(c.p, 1000000); d != c.want {
				wrong++
			}
		}
		if wrong > 160 {
			t.Errorf("share %g: %d of 2000 wrong, want ≤ 160 (alpha 5 %%)", c.p, wrong)
		}
	}
}

// The slope's interval covers the true slope at its stated level on
// noisy lines (seeded; 2,000 fits), and is exact on a clean one.
func TestSlopeCICoverage(t *testing.T) {
	if s, ok := SlopeCI([]float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 0.95); !ok || s.Slope != 2 || s.Lo != 2 || s.Hi != 2 || s.N != 4 {
		t.Errorf("clean line: %+v %v", s, ok)
	}
	if _, ok := SlopeCI([]float64{1, 1, 1}, []float64{1, 2, 3}, 0.95); ok {
		t.Error("no spread in x: fitted")
	}
	if _, ok := SlopeCI([]float64{1, 2}, []float64{1, 2}, 0.95); ok {
		t.Error("two points: fitted")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	miss := 0
	const runs = 2000
	for range runs {
		x, y := make([]float64, 8), make([]float64, 8)
		for i := range x {
			x[i] = float64(i)
			y[i] = 10 + 0.5*x[i] + 2*rng.NormFloat64()
		}
		s, ok := SlopeCI(x, y, 0.95)
		if !ok {
			t.Fatal("not fitted")
		}
		if s.Lo > 0.5 || s.Hi < 0.5 {
			miss++
		}
	}
	// 5 % expected: 100 ± 10; allowed 60–140.
	if miss < 60 || miss > 140 {
		t.Errorf("the 95 %% interval missed the slope %d of %d times, want about 100", miss, runs)
	}
}

// sample is a finished request for the watch: scheduled and ended at
// these times from the run's start, waiting wait for its first token.
func sample(sched, end, wait time.Duration, good bool) *metrics.Sample {
	s := &metrics.Sample{OK: true, HasTTFT: true, TTFTFromScheduled: wait, Good: good}
	s.Scheduled, s.End = sched, end
	return s
}

// The watch settles a step whose wait grows and whose server serves less
// than the rate as failing, one whose wait is flat as passing, and
// neither before the step's minimum length (seeded Poisson arrivals).
func TestWatchSettles(t *testing.T) {
	const rate, capacity = 100.0, 80.0
	cv := 0.0
	feed := func(v float64, min time.Duration, slo bool, goodShare float64) (w *watch, stoppedAt time.Duration) {
		c := &Config{Variable: Rate, StepMin: min, Tolerance: 0.03, MinGoodput: 0.9, SLO: metrics.NoSLO, ArrivalCV: cv}
		if slo {
			c.SLO, _ = metrics.ParseSLO([]string{"ttft:500"})
		}
		stopped := false
		w = newWatch(c, v, func() { stopped = true })
		rng := rand.New(rand.NewPCG(5, 6))
		at, free := 0.0, 0.0 // the next arrival; when the (single, fast) server is next free
		for at < 20 && !stopped {
			at += rng.ExpFloat64() / v
			start := math.Max(at, free)
			free = start + 1/capacity
			wait := start - at + 0.02
			end := free + 0.075
			w.Add(sample(time.Duration(at*1e9), time.Duration(end*1e9), time.Duration(wait*1e9), rng.Float64() < goodShare))
			if stopped {
				return w, time.Duration(end * 1e9)
			}
		}
		return w, 0
	}
	w, at := feed(rate, 2*time.Second, false, 1)
	settled, v, why, _ := w.outcome()
	if !settled || v != Fail || at < 2*time.Second || at > 8*time.Second {
		t.Errorf("offered 100 to a server of 80: settled %v %s at %v (%s), want a fail between 2 s and 8 s", settled, v, at, why)
	}
	w, at = feed(50, 2*time.Second, false, 1)
	if settled, v, why, _ = w.outcome(); !settled || v != Pass || at < 2*time.Second || at > 8*time.Second {
		t.Errorf("offered 50 to a server of 80: settled %v %s at %v (%s), want a pass between 2 s and 8 s", settled, v, at, why)
	}
	w, _ = feed(50, 2*time.Second, true, 0.5)
	if settled, v, why, _ = w.outcome(); !settled || v != Fail {
		t.Errorf("goodput 50 %% against 90 %%: settled %v %s (%s), want a fail", settled, v, why)
	}
	w, at = feed(50, 30*time.Second, false, 1)
	if settled, _, _, _ = w.outcome(); settled {
		t.Errorf("settled at %v before the minimum of 30 s", at)
	}
	// A schedule of CV 2: each request weighs a quarter, and the step
	// says so.
	cv = 2
	w, _ = feed(50, 2*time.Second, true, 0.5)
	if settled, v, why, _ = w.outcome(); !settled || v != Fail || !strings.Contains(why, "each 1/4 of one (CV 2.00)") || w.share.N < 60 {
		t.Errorf("goodput 50 %% at CV 2: settled %v %s (%s) after %d requests, want a fail weighing each request a quarter", settled, v, why, w.share.N)
	}
}

// burstyGoodput simulates a step of n requests against a server of 8
// slots, each request holding one for 175 ms, under Gamma gaps of the
// given CV at rate lam: whether each request's E2E met 500 ms.
func burstyGoodput(rng *rand.Rand, lam, cv float64, n int) []bool {
	k := 1 / (cv * cv)
	gaps := distuv.Gamma{Alpha: k, Beta: lam * k, Src: rng}
	free := make([]float64, 8)
	t := 0.0
	out := make([]bool, n)
	for i := range out {
		t += gaps.Rand()
		slot := slices.Index(free, slices.Min(free))
		start := math.Max(t, free[slot])
		free[slot] = start + 0.175
		out[i] = free[slot]-t <= 0.5
	}
	return out
}

// TestShareTestBursty: under a bursty schedule (CV 3.4) the requests of a
// step miss or meet the SLO in runs, and Wald's test taken as if they were
// independent settles wrongly: a step whose long-run goodput is below the
// target passes on the quiet start of the step. Weighted by Evidence it
// keeps its error rate (seeded; 400 steps of 20 s each; the long-run
// shares, from 400,000 requests, are stated beside).
func TestShareTestBursty(t *testing.T) {
	const cv = 3.4
	rng := rand.New(rand.NewPCG(3, 4))
	decide := func(lam, weight float64) (pass, fail int) {
		for range 400 {
			st := NewShareTest(0.9, ShareDelta, ShareAlpha, weight)
			for i, good := range burstyGoodput(rng, lam, cv, int(20*lam)) {
				st.Add(good)
				// As the watch looks: past the 2 s minimum, every 8 requests.
				if i < int(2*lam) || i%8 != 0 {
					continue
				}
				if d := st.Decision(); d != 0 {
					if d > 0 {
						pass++
					} else {
						fail++
					}
					break
				}
			}
		}
		return pass, fail
	}
	// Goodput 0.87 at 22 req/s: below the target.
	if pass, _ := decide(22, 1); pass < 200 {
		t.Errorf("unweighted at 22 req/s: %d of 400 passed; the premise (most pass wrongly) does not hold", pass)
	}
	if pass, _ := decide(22, Evidence(cv)); pass > 20 {
		t.Errorf("weighted at 22 req/s: %d of 400 passed, want ≤ 20 (5 %%)", pass)
	}
	// Goodput 0.97 at 12 req/s: above it.
	if _, fail := decide(12, Evidence(cv)); fail > 20 {
		t.Errorf("weighted at 12 req/s: %d of 400 failed, want ≤ 20 (5 %%)", fail)
	}
	if Evidence(1) != 1 || Evidence(0) != 1 || Evidence(0.5) != 1 || math.Abs(Evidence(2)-0.25) > 1e-12 {
		t.Errorf("Evidence: %g %g %g %g", Evidence(1), Evidence(0), Evidence(0.5), Evidence(2))
	}
}
