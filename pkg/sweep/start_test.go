package sweep

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

func TestLittleCapacity(t *testing.T) {
	// The built-in server of docs/CAPACITY.md: 8 slots, 20 + 15·5 = 95 ms.
	if c, ok := LittleCapacity(8, 0.095); !ok || math.Abs(c-84.21) > 0.01 {
		t.Errorf("8 slots / 95 ms = %g (%v), want 84.21", c, ok)
	}
	for _, bad := range []struct {
		slots int
		s     float64
	}{{0, 0.1}, {8, 0}, {8, math.NaN()}, {8, math.Inf(1)}, {-1, 0.1}} {
		if _, ok := LittleCapacity(bad.slots, bad.s); ok {
			t.Errorf("LittleCapacity(%d, %g) ok", bad.slots, bad.s)
		}
	}
}

// A probe that finds the slots and the service time starts the search at
// 95 % of Little's law's estimate: the search brackets the capacity in two
// steps and reaches the tolerance in far fewer steps than doubling from 1.
func TestSweepStartsFromLittlesLaw(t *testing.T) {
	probe := func(context.Context) (Probe, error) {
		return Probe{ServiceTime: 0.095, Slots: 8, SlotsFrom: "the server's running count while requests waited"}, nil
	}
	q := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
	res, err := Sweep(context.Background(), Config{Variable: Rate, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	if res.Start == nil || res.Start.Estimate < 84 || res.Start.Estimate > 84.3 || q.calls[0] != 80 {
		t.Fatalf("start %+v, first step %g; want the estimate 84.2 and the first step at 80", res.Start, q.calls[0])
	}
	if !strings.Contains(res.Start.Why, "Little's law: 8 slots") {
		t.Errorf("why %q", res.Start.Why)
	}
	// 80 passes, ×1.1 = 88 fails (its achieved rate, 84.2 served over a
	// schedule that took longer, is 92 % of offered): bracketed.
	if len(q.calls) < 3 || q.calls[1] != 88 || q.calls[2] <= 80 || q.calls[2] >= 88 {
		t.Errorf("steps %v, want 80, 88, then one between", q.calls)
	}
	old := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
	if _, err := Sweep(context.Background(), Config{Variable: Rate, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: old.run}); err != nil {
		t.Fatal(err)
	}
	if len(q.calls) >= len(old.calls)-3 {
		t.Errorf("%d steps from the estimate, %d doubling from 1: want at least 3 fewer", len(q.calls), len(old.calls))
	}
	limit := q.capacity / ThroughputShare
	if c := res.Capacity; c == nil || c.Value > limit || c.Value < limit/1.05/1.05 || (res.FailedAt-c.Value)/c.Value > 0.05 {
		t.Errorf("capacity %+v failed at %g, want within 5 %% below %g", c, res.FailedAt, limit)
	}
}

// An estimate too high: the first step fails and the search goes down.
func TestSweepStartBelowWhenTheFirstStepFails(t *testing.T) {
	probe := func(context.Context) (Probe, error) {
		return Probe{ServiceTime: 0.05, Slots: 8, SlotsFrom: "test"}, nil
	} // 160 req/s
	q := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
	res, err := Sweep(context.Background(), Config{Variable: Rate, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, Probe: probe})
	if err != nil {
		t.Fatal(err)
	}
	if q.calls[0] != 152 || q.calls[1] >= q.calls[0] {
		t.Fatalf("steps %v, want 152 then lower", q.calls)
	}
	limit := q.capacity / ThroughputShare
	if c := res.Capacity; c == nil || c.Value > limit || c.Value < limit/1.05/1.05 {
		t.Errorf("capacity %+v, want within 5 %% below %g", c, limit)
	}
}

// A probe that finds nothing, a failed probe and a time-scale sweep fall
// back to doubling from --sweep-min, and say why.
func TestSweepStartFallsBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		v     Variable
		probe func(context.Context) (Probe, error)
		why   string
	}{
		{"no slots", Rate, func(context.Context) (Probe, error) { return Probe{ServiceTime: 0.1}, nil }, "running count was not read"},
		{"error", Rate, func(context.Context) (Probe, error) { return Probe{}, errors.New("refused") }, "the probe failed: refused"},
		{"time-scale", TimeScale, func(context.Context) (Probe, error) { t.Error("probed a time-scale sweep"); return Probe{}, nil }, "doubles from --sweep-min"},
	} {
		q := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
		res, err := Sweep(context.Background(), Config{Variable: c.v, Min: 10, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, Probe: c.probe})
		if err != nil {
			t.Fatal(err)
		}
		if q.calls[0] != 10 || q.calls[1] != 20 || !strings.Contains(res.Start.Why, c.why) {
			t.Errorf("%s: steps %v, why %q; want 10, 20… and %q", c.name, q.calls, res.Start.Why, c.why)
		}
	}
}

// A step that fails on growth alone below a passing one is measured again,
// and the answer believes the second measurement; a step that failed for
// another reason is believed.
func TestSweepRemeasuresAContradictedStep(t *testing.T) {
	q := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
	c := &Config{Variable: Rate, Min: 10, Max: 160, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, MaxSteps: DefaultMaxSteps, MaxLag: DefaultMaxLag}
	pass := func(i int, v float64) Step {
		return Step{Index: i, Value: v, Verdict: Pass, Figures: Figures{Offered: v, Achieved: v}}
	}
	fail := func(i int, v float64, why string) Step {
		return Step{Index: i, Value: v, Verdict: Fail, Reasons: []string{why}, Figures: Figures{Offered: v, Achieved: v}}
	}
	s := &search{c: c, res: &Result{Variable: Rate, Steps: []Step{pass(1, 30), pass(2, 45), fail(3, 40, "latency growing: wait slope 0.030 [0.001, 0.060] > 0.02"), fail(4, 90, "achieved 84 req/s < 95 % of offered 90")}}}
	if err := s.remeasure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(q.calls) != 1 || q.calls[0] != 40 {
		t.Fatalf("re-measured %v, want 40 once", q.calls)
	}
	if st := s.res.Steps; len(st) != 5 || st[2].RemeasuredBy != 5 || st[4].Verdict != Pass || st[3].RemeasuredBy != 0 {
		t.Fatalf("steps %+v", st)
	}
	s.answer()
	if s.res.Capacity == nil || s.res.Capacity.Value != 45 || s.res.FailedAt != 90 {
		t.Errorf("capacity %+v failed at %g: want 45 and 90, the contradicted fail at 40 not believed", s.res.Capacity, s.res.FailedAt)
	}
	// Nothing contradicted: nothing run.
	q.calls = nil
	s = &search{c: c, res: &Result{Variable: Rate, Steps: []Step{pass(1, 30), fail(2, 40, "latency growing: …"), fail(3, 45, "goodput 50 % < 90 %")}}}
	if err := s.remeasure(context.Background()); err != nil || len(q.calls) != 0 {
		t.Errorf("re-measured %v (%v) without a contradiction", q.calls, err)
	}
}

// A known upper bound (Below: a smoother schedule's capacity) starts the
// search under it without probing, and the search still brackets and
// bisects there.
func TestSweepStartsBelowAKnownBound(t *testing.T) {
	probed := false
	probe := func(context.Context) (Probe, error) { probed = true; return Probe{}, nil }
	q := &queue{capacity: 42, span: 60, ttft: 20, slots: 8}
	res, err := Sweep(context.Background(), Config{Variable: Rate, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, Probe: probe,
		Below: 50, BelowWhy: "the curve's point at CV 1.00"})
	if err != nil {
		t.Fatal(err)
	}
	if probed || res.Start == nil || q.calls[0] != 47.5 || !strings.Contains(res.Start.Why, "the curve's point at CV 1.00: 50.0 req/s at most") {
		t.Fatalf("probed %v, start %+v, steps %v: want no probe and a first step at 47.5", probed, res.Start, q.calls)
	}
	limit := q.capacity / ThroughputShare
	if c := res.Capacity; c == nil || c.Value > limit || c.Value < limit/1.05/1.05 || len(q.calls) > 6 {
		t.Errorf("capacity %+v in %d steps %v, want within 5 %% below %g in at most 6", c, len(q.calls), q.calls, limit)
	}
	// A time-scale sweep has no rate bound: it starts at Min.
	q2 := &queue{capacity: 42, span: 60, ttft: 20, slots: 8}
	if res, _ := Sweep(context.Background(), Config{Variable: TimeScale, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q2.run, Below: 50}); res.Start == nil || res.Start.Value != 1 {
		t.Errorf("time-scale start %+v, want Min", res.Start)
	}
}

// A bursty schedule (CV 4) starts at Little's law's estimate over √CV:
// 95 % of 84.2 / 2.
func TestSweepStartsLowerForABurstySchedule(t *testing.T) {
	probe := func(context.Context) (Probe, error) {
		return Probe{ServiceTime: 0.095, Slots: 8, SlotsFrom: "the server's running count while requests waited"}, nil
	}
	q := &queue{capacity: 84.2, span: 60, ttft: 20, slots: 8}
	res, err := Sweep(context.Background(), Config{Variable: Rate, Min: 1, Tolerance: 0.05, SLO: metrics.NoSLO, Run: q.run, Probe: probe, ArrivalCV: 4})
	if err != nil {
		t.Fatal(err)
	}
	if q.calls[0] != 40 || !strings.Contains(res.Start.Why, "divided by √CV for a schedule of CV 4.00") {
		t.Errorf("first step %g (%s), want 40 and the reason", q.calls[0], res.Start.Why)
	}
}

// TestCaveat: an answer searched at CV ≥ ShortBurstyCV in settled steps
// carries the caveat that it can read high; in fixed steps, at a smoother
// schedule, from a list of values, over concurrency or with no answer it
// does not.
func TestCaveat(t *testing.T) {
	answered := &Result{Capacity: &Answer{Value: 30, Rate: 30}}
	bursty := Config{Variable: Rate, ArrivalCV: 2.31, StepMax: 20 * time.Second}
	if got := caveat(&bursty, answered); !strings.HasPrefix(got, "the answer at CV 2.31 was measured in steps that end when settled (at most 20s): at CV ≥ 1.5 they can read high") {
		t.Errorf("caveat %q", got)
	}
	for name, c := range map[string]Config{
		"fixed steps":     {Variable: Rate, ArrivalCV: 2.31},
		"smoother":        {Variable: Rate, ArrivalCV: 1.4, StepMax: 20 * time.Second},
		"a list":          {Variable: Rate, ArrivalCV: 2.31, StepMax: 20 * time.Second, Values: []float64{10, 20}},
		"max-concurrency": {Variable: MaxConcurrency, ArrivalCV: 2.31, StepMax: 20 * time.Second},
	} {
		if got := caveat(&c, answered); got != "" {
			t.Errorf("%s: caveat %q, want none", name, got)
		}
	}
	if got := caveat(&bursty, &Result{}); got != "" {
		t.Errorf("no answer: caveat %q, want none", got)
	}
	r := &Result{Variable: Rate, Caveat: "the answer at CV 2.31 …"}
	if n := r.Notes(); len(n) == 0 || n[len(n)-1] != "note: the answer at CV 2.31 …" {
		t.Errorf("notes %q: want the caveat last", n)
	}
}
