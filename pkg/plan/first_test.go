package plan

import (
	"errors"
	"math"
	"testing"
	"time"
)

// TestFirstPoints: a day whose few bursty windows (8 req/s, CV 3) one
// replica might serve by the ceiling (12 req/s) and whose busy ones
// (30 req/s, CV 2) need 3. A replica of capacity 8/(1+CV) fails the
// bursty windows' checks at 1 and 2 replicas, so the curve is measured at
// the CVs 3 replicas see; a check that passes keeps the bursty windows at
// one replica and measures their CV too; the busy majority is never
// checked.
func TestFirstPoints(t *testing.T) {
	s := day(7, seg{8, 1.0 / 9, 4 * time.Minute}, seg{30, 0.25, 12 * time.Minute})
	c := Config{Window: 2 * time.Minute}
	near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol*want }
	capacity := func(cv float64) float64 { return 8 / (1 + cv) }
	var asked []Check
	f, err := FirstPoints(s, c, 12, func(ck Check) (bool, error) {
		asked = append(asked, ck)
		return ck.Rate > capacity(ck.CV), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Checks) != MaxChecks || len(asked) != MaxChecks {
		t.Fatalf("checks %+v (asked %d): want %d", f.Checks, len(asked), MaxChecks)
	}
	for i, ck := range f.Checks {
		n := float64(i + 1)
		if ck.Replicas != i+1 || ck.Windows != 2 || !ck.Fails || !near(ck.Rate, 8/n, 0.3) || !near(ck.CV, 3/math.Sqrt(n), 0.35) {
			t.Errorf("check %d: %+v: want %d replicas, 2 windows, rate ≈ %.1f, CV ≈ %.2f, failing", i, ck, i+1, 8/n, 3/math.Sqrt(n))
		}
		if ck.Requests < 1400 || ck.Requests > 2500 {
			t.Errorf("check %d: %d requests, want ≈ 1920", i, ck.Requests)
		}
	}
	if f.Least != 3 || f.Most != 3 {
		t.Errorf("replicas at least %d–%d, want 3–3", f.Least, f.Most)
	}
	if n := len(f.CVs); n < 2 || n > 3 || !near(f.CVs[0], 2/math.Sqrt(3), 0.2) || !near(f.CVs[n-1], 3/math.Sqrt(3), 0.3) {
		t.Errorf("first CVs %v: want 2–3 from ≈ %.2f (the busy windows' over 3 replicas) to ≈ %.2f (the bursty ones')", f.CVs, 2/math.Sqrt(3), 3/math.Sqrt(3))
	}

	// A check that passes: the bursty windows may need one replica, so
	// the curve is measured at their own CV as well.
	f, err = FirstPoints(s, c, 12, func(Check) (bool, error) { return false, nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Checks) != 1 || f.Checks[0].Fails || f.Least != 1 || f.Most != 3 {
		t.Errorf("passing check: %+v, replicas %d–%d: want one check, 1–3", f.Checks, f.Least, f.Most)
	}
	if top := f.CVs[len(f.CVs)-1]; !near(top, 3, 0.3) {
		t.Errorf("passing check: CVs %v, want the bursty windows' ≈ 3 last", f.CVs)
	}

	// The busy windows alone: every window is in the least group, and
	// it is measured, not checked.
	busy := day(7, seg{30, 0.25, 12 * time.Minute})
	f, err = FirstPoints(busy, c, 12, func(ck Check) (bool, error) {
		t.Errorf("a check of the majority: %+v", ck)
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.Least != 3 || len(f.Checks) != 0 || len(f.CVs) != 1 || !near(f.CVs[0], 2/math.Sqrt(3), 0.2) {
		t.Errorf("busy day: %+v: want 3 replicas, no check, one CV ≈ %.2f", f, 2/math.Sqrt(3))
	}

	// A check's error ends it; a ceiling must be a rate.
	boom := errors.New("server gone")
	if _, err := FirstPoints(s, c, 12, func(Check) (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Errorf("check error: %v, want %v", err, boom)
	}
	for _, bad := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := FirstPoints(s, c, bad, nil); err == nil {
			t.Errorf("ceiling %g: no error", bad)
		}
	}
}

func TestSpread(t *testing.T) {
	got := Spread([]float64{3.3, 1, 1.05, 2, 3.4, 2.1, 2.3}, 0.1)
	want := []float64{1, 2, 2.3, 3.3}
	if len(got) != len(want) {
		t.Fatalf("Spread = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Spread = %v, want %v", got, want)
		}
	}
}
