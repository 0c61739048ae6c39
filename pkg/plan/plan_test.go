package plan

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// seg is one stretch of a synthetic day: Gamma gaps of shape k (CV 1/√k)
// at rate req/s.
type seg struct {
	rate, k float64
	d       time.Duration
}

// day concatenates seeded Gamma schedules, one a segment.
func day(seed uint64, segs ...seg) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		var off time.Duration
		var idx int64
		for i, s := range segs {
			if s.rate > 0 {
				p := arrival.Poisson(arrival.PoissonConfig{Rate: s.rate, Burstiness: s.k, Duration: s.d, Seed: seed + uint64(i),
					Lengths: arrival.UniformLengths{Input: 32, Output: 16}})
				for a := range p {
					if a.At >= s.d {
						break
					}
					a.At += off
					a.Index = idx
					idx++
					if !yield(a) {
						return
					}
				}
			}
			off += s.d
		}
	}
}

// synthetic is a replica of 10 req/s at CV 0.5, 8 at CV 1 and 4 at CV 3,
// whose requests hold a slot 20 ms + 5 ms per further token.
func synthetic(t *testing.T) *Curve {
	t.Helper()
	c, err := NewCurve([]Point{{CV: 1, Rate: 8}, {CV: 0.5, Rate: 10}, {CV: 3, Rate: 4}}, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCurve(t *testing.T) {
	c := synthetic(t)
	for _, tc := range []struct {
		cv, want float64
		beyond   bool
	}{{0, 10, false}, {0.5, 10, false}, {0.75, 9, false}, {1, 8, false}, {2, 6, false}, {3, 4, false}, {5, 4, true}} {
		got, beyond := c.At(tc.cv)
		if math.Abs(got-tc.want) > 1e-9 || beyond != tc.beyond {
			t.Errorf("At(%g) = %g, %v; want %g, %v", tc.cv, got, beyond, tc.want, tc.beyond)
		}
	}
	// A burstier point measured faster is lowered to keep the curve monotone.
	m, err := NewCurve([]Point{{CV: 1, Rate: 8}, {CV: 2, Rate: 9}, {CV: 2, Rate: 9.5}, {CV: 3, Rate: 5}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Points) != 3 || m.Points[1].Rate != 8 || m.Points[1].Measured != 9 || m.Points[2].Rate != 5 {
		t.Errorf("monotone curve: %+v", m.Points)
	}
	for _, bad := range [][]Point{nil, {{CV: -1, Rate: 1}}, {{CV: 1, Rate: 0}}, {{CV: math.NaN(), Rate: 1}}, {{CV: 1, Rate: math.Inf(1)}}} {
		if _, err := NewCurve(bad, 0, 0); err == nil {
			t.Errorf("NewCurve(%v): no error", bad)
		}
	}
}

func TestReplicas(t *testing.T) {
	for _, tc := range []struct {
		rate, capacity float64
		least, want    int
	}{{0, 8, 0, 0}, {0, 8, 1, 1}, {1, 8, 0, 1}, {8, 8, 0, 1}, {8.0000001, 8, 0, 1}, {8.1, 8, 0, 2}, {30, 8, 0, 4}, {3, 8, 2, 2}} {
		if got := Replicas(tc.rate, tc.capacity, tc.least); got != tc.want {
			t.Errorf("Replicas(%g, %g, %d) = %d, want %d", tc.rate, tc.capacity, tc.least, got, tc.want)
		}
	}
}

// roundRobin is the oracle of a Gamma window's replicas: the fewest n
// with rate/n ≤ C(cv/√n) (every n-th gap of a Gamma(k) renewal process is
// a sum of n gaps: Gamma(nk), CV 1/√(nk)).
func roundRobin(c *Curve, rate, cv float64) int {
	for n := 1; ; n++ {
		if capacity, _ := c.At(cv / math.Sqrt(float64(n))); rate/float64(n) <= capacity {
			return n
		}
	}
}

// A flat Poisson day plans one count all day; replica-hours equal static.
func TestFlatPoissonDay(t *testing.T) {
	segs := []seg{{rate: 27, k: 1, d: time.Hour}}
	c := synthetic(t)
	r, err := Plan(day(1, segs...), Config{Window: 5 * time.Minute, Horizon: time.Hour, Curve: c})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Windows) != 12 {
		t.Fatalf("%d windows, want 12", len(r.Windows))
	}
	// 3 replicas see CV 1/√3 = 0.58 each, capacity 9.69: 27/3 = 9 fits
	// with 7 % to spare (the rate's noise is 1 %, the CV's 1.5 %); 2 would
	// take 13.5 each, above the curve's best.
	for _, w := range r.Windows {
		if w.Replicas != 3 || math.Abs(w.Burstiness-1) > 0.05 || math.Abs(w.ReplicaBurstiness-1/math.Sqrt(3)) > 0.05 {
			t.Errorf("window at %g s: %d replicas at CV %.3f (each %.3f), want 3 at CV 1 ± 0.05 (each 0.58 ± 0.05)", w.StartS, w.Replicas, w.Burstiness, w.ReplicaBurstiness)
		}
		if floor := int(math.Ceil(w.OfferedRate / c.Points[0].Rate)); w.Replicas < floor {
			t.Errorf("window at %g s: %d replicas, fewer than rate over the best capacity: %d", w.StartS, w.Replicas, floor)
		}
	}
	if r.PeakReplicas != 3 || math.Abs(r.ReplicaHours-3) > 1e-9 || math.Abs(r.StaticReplicaHours-3) > 1e-9 || math.Abs(r.Saving) > 1e-9 {
		t.Errorf("peak %d, replica-hours %g, static %g, saving %g; want 3, 3, 3, 0", r.PeakReplicas, r.ReplicaHours, r.StaticReplicaHours, r.Saving)
	}
	capacity, _ := c.At(1 / math.Sqrt(3))
	if want := 27 / (3 * capacity); math.Abs(r.MeanUtilization-want) > 0.03 {
		t.Errorf("mean utilisation %.3f, want %.3f ± 0.03", r.MeanUtilization, want)
	}
}

// A day that swings in rate and burstiness: every window plans the
// replicas its true rate and burstiness need, within the noise of the
// measured rate (3 %) and CV (7 %): never fewer than its rate over the
// curve's best capacity, never more than its rate over the capacity at the
// window's own burstiness (no split credited).
func TestSwingingDay(t *testing.T) {
	segs := []seg{
		{rate: 3, k: 1, d: 10 * time.Minute},
		{rate: 16, k: 4, d: 10 * time.Minute},     // CV 0.5
		{rate: 16, k: 0.25, d: 10 * time.Minute},  // CV 2: same rate, more replicas
		{rate: 44, k: 1, d: 10 * time.Minute},     // the peak
		{rate: 20, k: 0.111, d: 10 * time.Minute}, // CV 3
		{rate: 0.5, k: 1, d: 10 * time.Minute},    // nearly idle
	}
	c, err := NewCurve([]Point{{CV: 0.5, Rate: 10}, {CV: 1, Rate: 8}, {CV: 3, Rate: 2}}, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(day(7, segs...), Config{Window: 5 * time.Minute, Curve: c, MinReplicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Windows) != 12 {
		t.Fatalf("%d windows, want 12", len(r.Windows))
	}
	for i, w := range r.Windows {
		s := segs[i/2]
		trueCV := 1 / math.Sqrt(s.k)
		lo, hi := roundRobin(c, s.rate*0.97, trueCV*0.93), roundRobin(c, s.rate*1.03, trueCV*1.07)
		if w.Requests < 100 { // too few gaps for a CV: planned at least as for Poisson
			lo, hi = 1, 2
		}
		if w.Replicas < lo || w.Replicas > hi {
			t.Errorf("window %d (rate %g, CV %.2f; measured %.2f, CV %.2f): %d replicas, want %d–%d",
				i, s.rate, trueCV, w.OfferedRate, w.Burstiness, w.Replicas, lo, hi)
		}
		own, _ := c.At(w.Burstiness)
		if floor, ceil := int(math.Ceil(w.OfferedRate/c.Points[0].Rate)), Replicas(w.OfferedRate, own, 1); w.Replicas < floor || w.Replicas > ceil {
			t.Errorf("window %d: %d replicas, want between %d (the best capacity) and %d (the window's own burstiness)", i, w.Replicas, floor, ceil)
		}
		if w.Requests > 2000 && math.Abs(w.Burstiness/trueCV-1) > 0.15 {
			t.Errorf("window %d: CV %.3f, want %.3f ± 15 %%", i, w.Burstiness, trueCV)
		}
		if w.Replicas > 1 && w.Requests > 2000 && math.Abs(w.ReplicaBurstiness*math.Sqrt(float64(w.Replicas))/trueCV-1) > 0.15 {
			t.Errorf("window %d: each of %d replicas sees CV %.3f, want %.3f ± 15 %%", i, w.Replicas, w.ReplicaBurstiness, trueCV/math.Sqrt(float64(w.Replicas)))
		}
		if w.Utilization > 1+1e-6 {
			t.Errorf("window %d: utilisation %.3f > 1", i, w.Utilization)
		}
	}
	// Queueing-aware: the bursty stretch at 16 req/s needs more replicas
	// than the smooth one at the same rate (mean over mean would plan 2 for
	// both).
	if smooth, bursty := r.Windows[2].Replicas, r.Windows[4].Replicas; bursty <= smooth {
		t.Errorf("16 req/s: %d replicas at CV 2, %d at CV 0.5: want more for the bursty window", bursty, smooth)
	}
	if r.PeakReplicas != 5 || r.PeakStartS != 1800 && r.PeakStartS != 2100 {
		t.Errorf("peak %d replicas at %g s, want 5 at 1800 or 2100 s", r.PeakReplicas, r.PeakStartS)
	}
	if !(r.ReplicaHours < r.StaticReplicaHours) || math.Abs(r.StaticReplicaHours-5*r.HorizonS/3600) > 1e-6 {
		t.Errorf("replica-hours %g, static %g: want fewer than 5 × the horizon", r.ReplicaHours, r.StaticReplicaHours)
	}
	if !(r.BurstinessLow < r.BurstinessTypical && r.BurstinessTypical < r.BurstinessHigh) || r.BurstinessHigh < 2 {
		t.Errorf("burstiness p10/p50/p90 %.2f/%.2f/%.2f: want increasing, p90 ≥ 2", r.BurstinessLow, r.BurstinessTypical, r.BurstinessHigh)
	}
}

// The idle share of a replica under Poisson arrivals is the chance that
// none of its requests is in flight: exp(−λ·s) for rate λ and service s
// (M/G/∞).
func TestIdleShare(t *testing.T) {
	c, err := NewCurve([]Point{{CV: 1, Rate: 8}}, 100, 0) // every request 100 ms
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(day(3, seg{rate: 2, k: 1, d: 20 * time.Minute}), Config{Window: 10 * time.Minute, Curve: c})
	if err != nil {
		t.Fatal(err)
	}
	want := math.Exp(-2 * 0.1)
	for _, w := range r.Windows {
		if w.Replicas != 1 || math.Abs(w.IdleShare-want) > 0.03 {
			t.Errorf("window at %g s: %d replicas, idle share %.3f; want 1, %.3f ± 0.03", w.StartS, w.Replicas, w.IdleShare, want)
		}
	}
}

// A reactive autoscaler seeing the need only after the delay leaves the
// start of a rise under-provisioned; the fall costs only replica-hours.
func TestScaleUpDelay(t *testing.T) {
	c, err := NewCurve([]Point{{CV: 1, Rate: 10}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 1, 1, 4, 4, 1 replicas (regular gaps: CV 0).
	segs := []seg{{5, 1e6, 5 * time.Minute}, {5, 1e6, 5 * time.Minute}, {35, 1e6, 5 * time.Minute}, {35, 1e6, 5 * time.Minute}, {5, 1e6, 5 * time.Minute}}
	for _, tc := range []struct {
		delay   time.Duration
		under   float64
		windows int
	}{{2 * time.Minute, 2, 1}, {5 * time.Minute, 5, 1}, {7 * time.Minute, 7, 2}} {
		r, err := Plan(day(1, segs...), Config{Window: 5 * time.Minute, Horizon: 25 * time.Minute, Curve: c, ScaleUpDelay: tc.delay})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, w := range r.Windows {
			got = append(got, w.Replicas)
		}
		if want := []int{1, 1, 4, 4, 1}; !equal(got, want) {
			t.Fatalf("replicas %v, want %v", got, want)
		}
		su := r.ScaleUp
		if math.Abs(su.UnderMinutes-tc.under) > 1e-9 || su.UnderWindows != tc.windows {
			t.Errorf("delay %v: %g min under in %d windows, want %g in %d", tc.delay, su.UnderMinutes, su.UnderWindows, tc.under, tc.windows)
		}
		if math.Abs(su.RequestsAtRisk/(35*60*tc.under)-1) > 1e-3 {
			t.Errorf("delay %v: %g requests at risk, want %g", tc.delay, su.RequestsAtRisk, 35*60*tc.under)
		}
		// Same count of replica-windows, shifted: equal replica-hours,
		// but for the last window's tail, held at 4 over the delay.
		if math.Abs(su.ReplicaHours-r.ReplicaHours) > 3*tc.delay.Hours()+1e-9 {
			t.Errorf("delay %v: autoscaler %g replica-hours, plan %g", tc.delay, su.ReplicaHours, r.ReplicaHours)
		}
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanErrors(t *testing.T) {
	c := synthetic(t)
	for name, tc := range map[string]struct {
		s    arrival.Schedule
		cfg  Config
		want string
	}{
		"no window":   {day(1, seg{1, 1, time.Minute}), Config{Curve: c}, "--plan-window"},
		"no curve":    {day(1, seg{1, 1, time.Minute}), Config{Window: time.Minute}, "capacity curve"},
		"delay":       {day(1, seg{1, 1, time.Minute}), Config{Window: time.Minute, Curve: c, ScaleUpDelay: -1}, "--scale-up-delay"},
		"empty":       {day(1), Config{Window: time.Minute, Curve: c}, "empty"},
		"minreplicas": {day(1, seg{1, 1, time.Minute}), Config{Window: time.Minute, Curve: c, MinReplicas: -1}, "--min-replicas"},
	} {
		if _, err := Plan(tc.s, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", name, err, tc.want)
		}
	}
}

func TestBusiestSlice(t *testing.T) {
	s := day(2, seg{1, 1, 10 * time.Minute}, seg{20, 1, 5 * time.Minute}, seg{5, 1, 10 * time.Minute}, seg{30, 1, 5 * time.Minute})
	ws, _, err := Survey(s, Config{Window: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		span     time.Duration
		from, to time.Duration
	}{{5 * time.Minute, 25 * time.Minute, 30 * time.Minute}, {10 * time.Minute, 20 * time.Minute, 30 * time.Minute},
		{3 * time.Minute, 25 * time.Minute, 30 * time.Minute}, {time.Hour, 0, 30 * time.Minute}} {
		from, to := Busiest(ws, 5*time.Minute, tc.span)
		if from != tc.from || to != tc.to {
			t.Errorf("span %v: busiest %v–%v, want %v–%v", tc.span, from, to, tc.from, tc.to)
		}
	}
	var n int64
	var last time.Duration
	for a := range Scale(Slice(s, 25*time.Minute, 30*time.Minute), 10) {
		if a.Index != n || a.At < last || a.At >= 30*time.Second {
			t.Fatalf("arrival %d: index %d at %v after %v: want renumbered, sorted, within 30 s", n, a.Index, a.At, last)
		}
		n, last = n+1, a.At
	}
	if want := ws[5].Requests; n != want {
		t.Errorf("slice of %d arrivals, the window holds %d", n, want)
	}
}

// A curve measured only at the windows' own burstiness leaves the replicas
// of a split window below its first point; BelowPoints says where to
// measure next, and with those points the plan needs fewer replicas. A
// window whose fewer replicas see as much burstiness as the first point
// cannot change, and asks for no point.
func TestBelowPoints(t *testing.T) {
	s := day(4, seg{rate: 60, k: 0.25, d: 10 * time.Minute}) // CV 2; 3 replicas see CV ≈ 1.15
	c, err := NewCurve([]Point{{CV: 2, Rate: 12}}, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Plan(s, Config{Window: 5 * time.Minute, Curve: c})
	if err != nil {
		t.Fatal(err)
	}
	pts := BelowPoints(r, 0)
	if len(pts) == 0 || pts[0] > 1.8 || pts[0] < 0.3 {
		t.Fatalf("below points %v for replicas at CV %.2f: want some in (0.3, 1.8)", pts, r.Windows[0].ReplicaBurstiness)
	}
	// A ceiling under the rate one replica fewer would each carry: no
	// point below can lower the replicas, none is measured.
	if n := r.Windows[0].Replicas; BelowPoints(r, 0.9*60/float64(n-1)) != nil {
		t.Errorf("a ceiling of %.1f req/s under %d replicas' share of 60 req/s: below points %v, want none", 0.9*60/float64(n-1), n-1, BelowPoints(r, 0.9*60/float64(n-1)))
	}
	var more []Point
	for _, cv := range pts {
		more = append(more, Point{CV: cv, Rate: 12 + 10*(2-cv)}) // smoother: faster
	}
	c2, err := NewCurve(append(more, c.Points...), 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Plan(s, Config{Window: 5 * time.Minute, Curve: c2})
	if err != nil {
		t.Fatal(err)
	}
	if r2.PeakReplicas >= r.PeakReplicas || BelowPoints(r2, 0) != nil && r2.BelowCurve >= r.BelowCurve {
		t.Errorf("with the lower points: peak %d (was %d), %d windows below (was %d): want fewer", r2.PeakReplicas, r.PeakReplicas, r2.BelowCurve, r.BelowCurve)
	}
	// One point at CV 1.5 of 25 req/s: 3 replicas (lag-3 CV ≈ 1.15, below
	// it), and 2 would see CV ≈ 1.41, within 10 % of it: nothing to measure.
	c3, err := NewCurve([]Point{{CV: 1.5, Rate: 25}}, 20, 5)
	if err != nil {
		t.Fatal(err)
	}
	r3, err := Plan(s, Config{Window: 5 * time.Minute, Curve: c3})
	if err != nil {
		t.Fatal(err)
	}
	if r3.PeakReplicas != 3 || r3.BelowCurve == 0 || BelowPoints(r3, 0) != nil {
		t.Errorf("a point at CV 1.5: peak %d, %d windows below, below points %v: want 3, some, none", r3.PeakReplicas, r3.BelowCurve, BelowPoints(r3, 0))
	}
}

// TestStabilize: an autoscaler with a scale-down delay rises at once and
// falls only once the lower count has sufficed the whole delay; a delay of
// 0 changes nothing; a delay of a fraction of a window rounds up to it.
func TestStabilize(t *testing.T) {
	const m = time.Minute
	for _, tc := range []struct {
		name          string
		need          []int
		window, delay time.Duration
		want          []int
	}{
		{"spike held two windows", []int{1, 1, 4, 1, 1, 1, 1}, m, 2 * m, []int{1, 1, 4, 4, 4, 1, 1}},
		{"no delay", []int{1, 3, 2, 5, 1}, m, 0, []int{1, 3, 2, 5, 1}},
		{"rise at once", []int{1, 2, 3, 4}, m, 10 * m, []int{1, 2, 3, 4}},
		{"comb flattened", []int{3, 2, 3, 2, 3, 2}, 5 * m, 5 * m, []int{3, 3, 3, 3, 3, 3}},
		{"partial window rounds up", []int{3, 1, 1, 1, 1}, 2 * m, 3 * m, []int{3, 3, 3, 1, 1}},
		{"steps down one at a time", []int{4, 3, 2, 1, 1, 1}, m, m, []int{4, 4, 3, 2, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Stabilize(tc.need, tc.window, tc.delay)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Stabilize(%v, %v, %v) = %v, want %v", tc.need, tc.window, tc.delay, got, tc.want)
			}
		})
	}
}

// TestScaleDownDelayFlattensAComb: a day whose windows alternate between
// needing 3 and 2 replicas (a comb) is held at 3 all day with a 5-minute
// delay and 5-minute windows — one run of equal replicas — while without
// a delay every window is its own run; the windows' own needs (replicas)
// do not change, the held replica-hours are 3 an hour.
func TestScaleDownDelayFlattensAComb(t *testing.T) {
	var segs []seg
	for i := range 12 {
		rate := 25.0 // 3 replicas of 10 req/s at CV ≤ 0.5
		if i%2 == 1 {
			rate = 15 // 2
		}
		segs = append(segs, seg{rate, 4, 5 * time.Minute})
	}
	for _, delay := range []time.Duration{0, 5 * time.Minute} {
		r, err := Plan(day(7, segs...), Config{Window: 5 * time.Minute, Curve: synthetic(t), MinReplicas: 1, ScaleDownDelay: delay})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range r.Windows {
			if want := 3 - i%2; w.Replicas != want {
				t.Fatalf("window %d (%.1f req/s): need %d, want %d: the input is not a comb", i, w.OfferedRate, w.Replicas, want)
			}
			if want := map[bool]int{true: w.Replicas, false: 3}[delay == 0]; w.Stabilized != want {
				t.Errorf("delay %v: window %d holds %d, want %d", delay, i, w.Stabilized, want)
			}
		}
		wantRuns := map[bool]int{true: 12, false: 1}[delay == 0]
		if len(r.Runs) != wantRuns {
			t.Errorf("delay %v: %d runs, want %d: %+v", delay, len(r.Runs), wantRuns, r.Runs)
		}
		if delay > 0 {
			if run := r.Runs[0]; run.FromS != 0 || math.Abs(run.ToS-3600) > 1 || run.Replicas != 3 || run.Windows != 12 || run.NeedMin != 2 || run.NeedMax != 3 ||
				math.Abs(run.PeakRate-25) > 1 || math.Abs(r.StabilizedReplicaHours-3) > 1e-3 || r.ScaleDownDelayS != 300 {
				t.Errorf("run %+v, held replica-hours %.3f, delay %g s: want 0–3600 s at 3 (need 2–3, peak ~25 req/s), 3 replica-hours, 300 s",
					run, r.StabilizedReplicaHours, r.ScaleDownDelayS)
			}
			var b strings.Builder
			if err := WriteTable(&b, r, "comb"); err != nil {
				t.Fatal(err)
			}
			if out := b.String(); !strings.Contains(out, "(1 runs of equal replicas over 12 windows of 5 min, a scale-down held 5 min") ||
				!strings.Contains(out, "from       to  replicas  windows  peak rate/s  need") || strings.Contains(out, "0:05") {
				t.Errorf("the table lists more than the one run:\n%s", out)
			}
		}
	}
}

// TestScaleDownAfterExactlyTheDelay: a sustained drop from 3 replicas'
// need to 2 at 0:30 is followed after exactly the delay (a whole number of
// windows), or at the first window start past it; a rise back at 1:30 is
// followed at once.
func TestScaleDownAfterExactlyTheDelay(t *testing.T) {
	s := day(11, seg{25, 4, 30 * time.Minute}, seg{15, 4, 60 * time.Minute}, seg{25, 4, 10 * time.Minute})
	for _, tc := range []struct{ delay, down time.Duration }{
		{5 * time.Minute, 35 * time.Minute},
		{10 * time.Minute, 40 * time.Minute},
		{150 * time.Second, 33 * time.Minute}, // 2.5 windows: at the third
	} {
		r, err := Plan(s, Config{Window: time.Minute, Curve: synthetic(t), MinReplicas: 1, ScaleDownDelay: tc.delay})
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range r.Windows {
			start := time.Duration(w.StartS * float64(time.Second))
			want := 2
			if start < tc.down || start >= 90*time.Minute {
				want = 3
			}
			if w.Stabilized != want {
				t.Errorf("delay %v: window %d (%v, need %d) holds %d, want %d", tc.delay, i, start, w.Replicas, w.Stabilized, want)
			}
		}
		if len(r.Runs) != 3 || r.Runs[1].FromS != tc.down.Seconds() || r.Runs[2].FromS != 5400 {
			t.Errorf("delay %v: runs %+v, want 3: down at %v, up at 1:30", tc.delay, r.Runs, tc.down)
		}
	}
}

// TestWindowCountBounded: a window so short that the schedule would need
// more than MaxWindows of them is an error giving the least window, found
// before any window is held, with or without a horizon (1µs windows over a
// day took gigabytes); at the least window it names, the plan is made.
func TestWindowCountBounded(t *testing.T) {
	s := day(1, seg{rate: 5, k: 1, d: 400 * time.Second})
	for _, h := range []time.Duration{0, 400 * time.Second} {
		_, _, err := Survey(s, Config{Window: time.Millisecond, Horizon: h})
		if err == nil || !strings.Contains(err.Error(), "more than the most a plan has (131072): want --plan-window ≥ 4ms") {
			t.Fatalf("horizon %v: %v", h, err)
		}
		ws, _, err := Survey(s, Config{Window: 4 * time.Millisecond, Horizon: h})
		if err != nil || len(ws) > MaxWindows || len(ws) < 99000 {
			t.Errorf("horizon %v, window 4ms: %d windows, %v", h, len(ws), err)
		}
	}
}
