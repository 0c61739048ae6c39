package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// checkCaseExperiment checks the experiment dimension: a threshold's
// verdict line and its record in the summary; the steady_state section; and, for repeat2, the case run
// again with --repeat 2 (checkCaseRepeat).
func checkCaseExperiment(t testing.TB, c matrixCase, ports []int, r *caseRun, sum *metrics.Summary, dryCSV []byte, fail func(string, ...any)) {
	switch c.v(dExperiment) {
	case "threshold":
		if !strings.Contains(r.stderr, "fineserve-gen: threshold completed>=0: ok (completed ") {
			fail("--threshold: no verdict line")
		}
		if th := sum.Thresholds; len(th) != 1 || !th[0].Pass || th[0].Value == nil || *th[0].Value != float64(sum.Completed) {
			fail("--threshold: the summary's thresholds %+v (completed %d)", th, sum.Completed)
		}
	case "steady":
		ss := sum.SteadyState
		if ss == nil || ss.Rule != metrics.SteadyAuto || (ss.Note == "" && (ss.StartS > ss.EndS || ss.EndS > sum.Duration || ss.Requests < 1)) {
			fail("--steady-state auto: steady_state %+v over a run of %v s", ss, sum.Duration)
		}
	default:
		if sum.SteadyState != nil || sum.Thresholds != nil || strings.Contains(r.stderr, "threshold") {
			fail("a steady_state section or a threshold verdict without their options")
		}
	}
	if c.v(dExperiment) == "repeat2" {
		checkCaseRepeat(t, c, ports, dryCSV, fail)
	}
}

// checkCaseRepeat runs the case again with --repeat 2 and checks its
// outputs: the repeated run's summary (file, line or standard output) has
// two runs, the first with the case's seed; each run has its own records
// (results-run01.jsonl…), schedule (the first's the dry run's, byte for
// byte) and summary file (else its summary inline); the report shows the
// intervals.
func checkCaseRepeat(t testing.TB, c matrixCase, ports []int, dryCSV []byte, fail func(string, ...any)) {
	r := &caseRun{dir: filepath.Join(t.TempDir(), "repeat")}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args, _ := caseArgs(c, ports, r.dir)
	args = append(args, "--repeat", "2")
	var stdout, stderr bytes.Buffer
	r.code = dispatch(context.Background(), args, &stdout, &stderr)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	failed := c.v(dRetries) == "retry-503" || c.v(dEndpoints) == "two-dead"
	if r.code != exitOK && !(r.code == exitBudget && failed) {
		fail("--repeat 2: exit %d\n%s", r.code, r.stderr)
		return
	}
	s := readCaseSummary(t, c, r, fail)
	if s == nil {
		return
	}
	rep := s.Repeats
	if rep == nil || rep.Runs != 2 || len(rep.PerRun) != 2 || rep.PerRun[0].Seed != 7 || s.Seed != 7 || len(rep.Figures) == 0 {
		fail("--repeat 2: repeats %+v, seed %d", rep, s.Seed)
		return
	}
	for i, pr := range rep.PerRun {
		if c.v(dSummary) == "summary-json" {
			if _, err := os.Stat(pr.SummaryPath); err != nil || pr.SummaryPath != runPath(r.path("summary.json"), i) {
				fail("--repeat 2: run %d's summary %q: %v", i, pr.SummaryPath, err)
			}
		} else if pr.Summary == nil || pr.Summary.Seed != pr.Seed {
			fail("--repeat 2: run %d's summary not inline", i)
		}
		if _, err := os.Stat(runPath(r.path("results.jsonl"), i)); err != nil {
			fail("--repeat 2: run %d's records: %v", i, err)
		}
	}
	if _, err := os.Stat(r.path("results.jsonl")); err == nil {
		fail("--repeat 2 wrote results.jsonl: the records are the runs'")
	}
	if c.v(dScheduleOut) == "schedule-out" {
		if b, err := os.ReadFile(runPath(r.path("schedule.csv"), 0)); err != nil || !bytes.Equal(b, dryCSV) {
			fail("--repeat 2: the first run's schedule differs from the dry run's (%v)", err)
		}
	}
	if c.v(dHTML) == "html" {
		if b, err := os.ReadFile(r.path("report.html")); err != nil || !bytes.Contains(b, []byte("Repeated Runs (2 of 2)")) {
			fail("--repeat 2: the report shows no intervals (%v)", err)
		}
	}
	if c.v(dSummary) != "output-stdout" && !strings.Contains(r.stdout, "Repeated Runs (2 of 2)") {
		fail("--repeat 2: the table shows no intervals:\n%s", r.stdout)
	}
}
