package main

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
)

// TestSweepFromRunFile: a sweep runs end to end from a run file — the
// run's keys and the sweep's own in their sections, two short steps —
// and does what the file says: its loads, its steps' length, sizes and
// seed, its SLO.
func TestSweepFromRunFile(t *testing.T) {
	port := startSweepServer(t)
	dir := t.TempDir()
	file := testenv.WriteFile(t, "sweep.yaml", `seed: 7
workload:
  random-input-len: 16
  random-output-len: 4
  random-range-ratio: 0
  warmup-requests: 0
slo:
  goodput: e2el:5000
observe:
  report-interval: 0s
sweep:
  sweep-values: [5, 10]
  step-duration: 0.5s
  sweep-quiet: 0s
  sweep-max-lag: 250
`)
	start := time.Now()
	res, _ := runSweep(t, []string{"sweep", "--config", file, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--sweep-json", filepath.Join(dir, "sweep.json")}, exitOK)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("two steps of 0.5 s took %v", took)
	}
	if res.Variable != sweep.Rate || len(res.Steps) != 2 || res.Steps[0].Value != 5 || res.Steps[1].Value != 10 {
		t.Fatalf("variable %s, steps %+v: want the file's rates 5 and 10", res.Variable, res.Steps)
	}
	if res.Capacity == nil || res.Capacity.Value != 10 || res.SLO["e2el"] != 5000 {
		t.Errorf("capacity %+v under SLO %v: want 10, under the file's e2el:5000", res.Capacity, res.SLO)
	}
	for _, st := range res.Steps {
		s := st.Summary
		if s == nil || s.Completed == 0 || s.TotalInputTokens != 16*s.Completed || s.TotalOutputTokens != 4*s.Completed || s.Seed != 7 {
			t.Fatalf("step at %g: %+v: want the file's sizes (16 in, 4 out) and seed 7", st.Value, s)
		}
		if s.ScheduleSpan > 0.5 {
			t.Errorf("step at %g: a schedule of %.2f s, want the file's 0.5 s at most", st.Value, s.ScheduleSpan)
		}
	}
}

// TestPlanFromRunFile: a plan runs end to end from a run file — a day of
// Gamma windows, its windows, and the measuring sweep's one burstiness and
// two loads of short steps, against the built-in server — and plans what
// the file says: its windows, the curve measured at its burstiness.
func TestPlanFromRunFile(t *testing.T) {
	port := startSweepServer(t)
	dir := t.TempDir()
	day := testenv.WriteFile(t, "day.csv", planDay)
	file := testenv.WriteFile(t, "plan.yaml", `seed: 3
workload:
  mode: parametric
  gamma-params-csv: `+day+`
  duration: 30m
  random-input-len: 16
  random-output-len: 16
  random-range-ratio: 0
  warmup-requests: 0
slo:
  goodput: e2el:250
observe:
  report-interval: 0s
plan:
  plan-window: 10m
  plan-burstiness: [1]
  sweep-values: [5, 10]
  step-duration: 1s
  sweep-quiet: 0s
  sweep-max-lag: 1000
`)
	out := filepath.Join(dir, "plan.json")
	start := time.Now()
	stdout, stderr := mustRun(t, "plan", "--config", file, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--plan-json", out)
	if took := time.Since(start); took > time.Minute {
		t.Errorf("a plan measured with two steps of 1 s took %v", took)
	}
	p := testenv.ReadJSON[planJSON](t, out)
	if len(p.Windows) != 3 || p.Windows[1].StartS != 600 {
		t.Errorf("%d windows (the second at %v s): want the file's 10-minute windows of its 30-minute day\n%s\n%s", len(p.Windows), p.Windows, stdout, stderr)
	}
	if pts := p.Curve.Points; len(pts) != 1 || pts[0].CV != 1 || pts[0].Rate <= 0 {
		t.Errorf("curve %+v: want one point, at the file's burstiness 1", pts)
	}
	if p.Measurement == nil || p.Measurement.Sweeps != 1 || !slices.ContainsFunc(strings.Split(stderr, "\n"), func(l string) bool { return strings.Contains(l, "sweep: step 2") }) {
		t.Errorf("measurement %+v: want one sweep of the file's two steps\n%s", p.Measurement, stderr)
	}
}
