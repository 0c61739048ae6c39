package arrival

import (
	"math"
	"strings"
	"testing"
	"time"
)

func mustStages(t *testing.T, s string) *Profile {
	t.Helper()
	st, err := ParseStages(s)
	if err != nil {
		t.Fatal(err)
	}
	p, err := StagesProfile(st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustRamp(t *testing.T, strategy string, from, to, span float64) *Profile {
	t.Helper()
	p, err := RampProfile(strategy, from, to, span)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// windowZ counts the arrivals of arr in windows of w seconds over the
// profile and returns each window's z-score against ∫λ over it (a Poisson
// count has variance equal to its mean), for windows expecting at least 5.
func windowZ(arr []Arrival, p *Profile, w float64) []float64 {
	n := int(math.Ceil(p.End() / w))
	counts := make([]float64, n)
	for _, a := range arr {
		if i := int(a.At.Seconds() / w); i < n {
			counts[i]++
		}
	}
	var z []float64
	for i := range n {
		lo, hi := float64(i)*w, min(float64(i+1)*w, p.End())
		e := p.Cumulative(hi) - p.Cumulative(lo)
		if e < 5 {
			continue
		}
		z = append(z, (counts[i]-e)/math.Sqrt(e))
	}
	return z
}

// TestProfileScheduleFollowsTarget checks a ramped Poisson schedule, read
// back from its CSV, against the target: per window the count's z-score
// against ∫λ is within 3 in at least 95 % of the windows, and the total is
// within 2 % of Λ(End) — for a linear, an exponential and a stepped
// profile, with several seeds.
func TestProfileScheduleFollowsTarget(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Profile
	}{
		// Λ is ≥ 35,000 in each, so 2 % of the total is ≥ 3.7 σ of a
		// Poisson count.
		{"linear 1→1500 over 60s", mustRamp(t, "linear", 1, 1500, 60)},
		{"exponential 20→3000 over 60s", mustRamp(t, "exponential", 20, 3000, 60)},
		{"stepped", mustStages(t, "0s:300,20s:300,0s:2000,20s:2000,0s:100,20s:100")},
		{"k6 stages", mustStages(t, "10s:1200,20s:1200,10s:300,10s:0")},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, seed := range []uint64{1, 2, 3} {
				arr := exported(t, Poisson(PoissonConfig{Burstiness: 1, Seed: seed, Lengths: UniformLengths{Input: 1, Output: 1}, Profile: c.p}))
				total := float64(len(arr))
				if math.Abs(total-c.p.Total())/c.p.Total() > 0.02 {
					t.Errorf("seed %d: %g arrivals, want within 2%% of Λ = %.1f", seed, total, c.p.Total())
				}
				z := windowZ(arr, c.p, 1)
				bad, worst := 0, 0.0
				for _, v := range z {
					if math.Abs(v) > 3 {
						bad++
					}
					worst = max(worst, math.Abs(v))
				}
				if len(z) < 30 || float64(bad) > 0.05*float64(len(z)) {
					t.Errorf("seed %d: %d of %d windows with |z| > 3 (worst %.2f)", seed, bad, len(z), worst)
				}
				t.Logf("seed %d: %d arrivals (Λ %.1f), %d windows, %d with |z| > 3, max |z| %.2f", seed, len(arr), c.p.Total(), len(z), bad, worst)
				if last := arr[len(arr)-1].At.Seconds(); last > c.p.End() {
					t.Errorf("seed %d: last arrival at %g s, after the profile's end %g s", seed, last, c.p.End())
				}
			}
		})
	}
}

// TestProfileBurstinessKept: inside a ramp, Gamma gaps keep their shape on
// the Λ scale (the coefficient of variation of the rescaled gaps is 1/√k)
// and the total still follows ∫λ.
func TestProfileBurstinessKept(t *testing.T) {
	p := mustRamp(t, "linear", 10, 400, 60)
	for _, k := range []float64{0.5, 4} {
		arr := exported(t, Poisson(PoissonConfig{Burstiness: k, Seed: 9, Lengths: UniformLengths{Input: 1, Output: 1}, Profile: p}))
		if math.Abs(float64(len(arr))-p.Total())/p.Total() > 0.03 {
			t.Errorf("k %g: %d arrivals, want within 3%% of %.1f", k, len(arr), p.Total())
		}
		var sum, sq float64
		for i := 1; i < len(arr); i++ {
			g := p.Cumulative(arr[i].At.Seconds()) - p.Cumulative(arr[i-1].At.Seconds())
			sum += g
			sq += g * g
		}
		n := float64(len(arr) - 1)
		mean := sum / n
		cv := math.Sqrt(sq/n-mean*mean) / mean
		if want := 1 / math.Sqrt(k); math.Abs(cv-want)/want > 0.05 {
			t.Errorf("k %g: CV of rescaled gaps %.3f, want %.3f", k, cv, want)
		}
	}
}

func TestProfileInvertsCumulative(t *testing.T) {
	for _, p := range []*Profile{
		mustRamp(t, "linear", 0, 100, 10), mustRamp(t, "linear", 80, 3, 10), mustRamp(t, "exponential", 2, 2000, 10),
		mustRamp(t, "exponential", 900, 1, 10), mustStages(t, "5s:10,5s:0,5s:0,5s:40,0s:7,5s:7"),
	} {
		for i := range 1000 {
			x := p.End() * float64(i) / 1000
			if p.Rate(x) == 0 {
				continue // Λ is flat here: Invert gives the start of the flat part's end
			}
			got, ok := p.Invert(p.Cumulative(x))
			if !ok || math.Abs(got-x) > 1e-6*max(1, x) {
				t.Fatalf("%v: Invert(Λ(%g)) = %g, %v", p.Stages(), x, got, ok)
			}
		}
		if _, ok := p.Invert(p.Total()); ok {
			t.Errorf("%v: Invert(Total) should report the end", p.Stages())
		}
	}
	// A flat 0 stretch is skipped: an arrival on its Λ is due where the
	// rate turns positive again.
	p := mustStages(t, "5s:10,5s:0,5s:0,5s:40")
	if got, _ := p.Invert(p.Cumulative(10)); math.Abs(got-15) > 1e-9 {
		t.Errorf("Invert(Λ(10)) = %g, want 15 (the end of the 0 stretch)", got)
	}
	if got, _ := p.Invert(p.Cumulative(10) + 1e-9); got < 15 {
		t.Errorf("an arrival just past the 0 stretch is due at %g, want ≥ 15", got)
	}
}

func TestRampSpanExpectsCount(t *testing.T) {
	for _, c := range []struct {
		s        string
		from, to float64
	}{{"linear", 1, 100}, {"linear", 0, 50}, {"exponential", 2, 200}, {"exponential", 7, 7}} {
		span := RampSpan(c.s, c.from, c.to, 1000)
		p := mustRamp(t, c.s, c.from, c.to, span)
		if math.Abs(p.Total()-1000) > 1e-6 {
			t.Errorf("%s %g→%g: Λ over the span %g, want 1000", c.s, c.from, c.to, p.Total())
		}
		h := p.Hold(10)
		if got, want := h.Total()-p.Total(), 10*c.to; math.Abs(got-want) > 1e-9 || h.End() != p.End()+10 || p.End() != span {
			t.Errorf("%s %g→%g: holding 10 s adds %g, want %g", c.s, c.from, c.to, got, want)
		}
	}
}

// TestWarpFollowsMultiplier: a schedule warped by a constant multiplier m
// runs m times faster; by stages, arrivals keep their order and the
// workload time covered is Λ(End).
func TestWarpFollowsMultiplier(t *testing.T) {
	base := Poisson(PoissonConfig{Rate: 10, Burstiness: 1, Count: 2000, Seed: 4, Lengths: UniformLengths{Input: 1, Output: 1}})
	p := mustStages(t, "0s:2,100s:2")
	var i int
	var orig []Arrival
	for a := range base {
		orig = append(orig, a)
	}
	for a := range Warp(base, p) {
		if want := orig[i].At / 2; (a.At - want).Abs() > time.Microsecond {
			t.Fatalf("arrival %d at %v, want %v", i, a.At, want)
		}
		i++
	}
	if end := orig[i].At.Seconds(); end < p.Total() || orig[i-1].At.Seconds() >= p.Total() {
		t.Errorf("warp kept %d arrivals; cut should fall at workload time %g", i, p.Total())
	}
	q := mustStages(t, "20s:4,20s:0")
	var last time.Duration
	for a := range Warp(base, q) {
		if a.At < last || a.At.Seconds() > q.End() {
			t.Fatalf("warped arrival %d at %v after %v (end %g)", a.Index, a.At, last, q.End())
		}
		last = a.At
	}
}

func TestParseStagesErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"30s:10,2m:abc", `stage 2 "2m:abc": rate is not a number`},
		{"30s", `stage 1 "30s": want DURATION:TARGET`},
		{"xs:10", `stage 1 "xs:10": duration "xs" is not a duration`},
		{"-5s:10", `stage 1 "-5s:10": duration "-5s" is negative`},
		{"10s:-1", `stage 1 "10s:-1": rate must be a finite number ≥ 0`},
		{"10s:NaN", `rate must be a finite number ≥ 0`},
		{"0s:10", "last 0 s"},
		{"", "empty"},
		{"999999h:1,999999h:1", "last more than"},
	} {
		_, err := ParseStages(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseStages(%q) = %v, want an error with %q", c.in, err, c.want)
		}
	}
	if _, err := StagesProfile([]Stage{{Duration: time.Second}}); err == nil {
		t.Error("an all-zero profile should be rejected")
	}
	if _, err := RampProfile("exponential", 0, 10, 5); err == nil {
		t.Error("an exponential ramp from 0 should be rejected")
	}
	if _, err := RampProfile("sine", 1, 10, 5); err == nil {
		t.Error("an unknown strategy should be rejected")
	}
	st, _ := ParseStages("30s:10, 2m:100 ,90:0")
	if got := []Stage{{30 * time.Second, 10}, {2 * time.Minute, 100}, {90 * time.Second, 0}}; len(st) != 3 || st[1] != got[1] || st[2] != got[2] {
		t.Errorf("ParseStages = %v, want %v", st, got)
	}
}

func FuzzParseStages(f *testing.F) {
	for _, s := range []string{"30s:10,2m:100,1m:100,30s:0", "0s:5,10:5", "1h:1e3", ":", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStages(s)
		if err != nil {
			return
		}
		p, err := StagesProfile(st)
		if err != nil {
			return
		}
		// Round trip through the stages' own notation.
		var parts []string
		for _, x := range st {
			parts = append(parts, x.String())
		}
		again, err := ParseStages(strings.Join(parts, ","))
		if err != nil || len(again) != len(st) {
			t.Fatalf("round trip of %q: %v", s, err)
		}
		if u := p.Total() / 2; u > 0 {
			if x, ok := p.Invert(u); !ok || x < 0 || x > p.End() || math.IsNaN(x) {
				t.Fatalf("%q: Invert(%g) = %g, %v", s, u, x, ok)
			}
		}
	})
}
