package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/experiment"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addExperimentFlags declares a run's experiment flags (docs/EXPERIMENTS.md):
// repeats and their intervals, the steady-state window, thresholds.
func addExperimentFlags(fs *pflag.FlagSet, o *options.Options) {
	e := &o.Experiment
	fs.IntVar(&e.Repeat, "repeat", e.Repeat, fmt.Sprintf("run the experiment N times (each with its own seed drawn from --seed, and fresh prompts unless --prompt-salt; a pause until the server is idle between runs) and report each headline figure as its mean ± the half-width of a %.0f %% confidence interval over the runs (Student's t; marked wide beyond %.0f %% of the mean)", 100*experiment.Confidence, 100*experiment.WideShare))
	fs.StringVar(&e.UntilConverged, "until-converged", e.UntilConverged, fmt.Sprintf("with --repeat N: stop once FIGURE's interval half-width is within PCT of its mean, judged from run %d on (FIGURE:PCT, e.g. p99_ttft_ms:5%%); at most N runs", experiment.MinRuns))
	fs.StringArrayVar(&e.Thresholds, "threshold", e.Thresholds, "fail the run (exit 99) unless KEY OP VALUE holds, KEY a summary key, OP <=, <, >= or >, e.g. 'p99_ttft_ms<=300' (repeatable; one verdict line each); with --repeat judged on the mean, or on the interval's bound with @upper or @lower: 'p99_ttft_ms<=300@upper'")
	fs.StringVar(&e.SteadyState, "steady-state", e.SteadyState, fmt.Sprintf("also report the figures over a steady-state window (the summary's steady_state): off; auto (from when the requests in flight first reach %.0f %% of their running level to the last send; docs/EXPERIMENTS.md); or START:END, seconds from the run's start", 100*metrics.SteadyLevelShare))
	fs.StringVar(&e.RepeatsCSV, "repeats-csv", e.RepeatsCSV, "with --repeat: write the intervals as CSV (figure, mean, half-width, n, wide, then each run's value)")
}

// experimentOnlyRun is the error of a sweep or plan given a run's
// repeat or threshold flags: one problem a flag given, naming it first.
func experimentOnlyRun(cmd string, o *options.Options) error {
	e := o.Experiment
	var errs []error
	for _, f := range []struct {
		flag  string
		given bool
	}{{"--repeat", e.Repeat > 1}, {"--until-converged", e.UntilConverged != ""}, {"--threshold", len(e.Thresholds) > 0}, {"--repeats-csv", e.RepeatsCSV != ""}} {
		if f.given {
			errs = append(errs, fmt.Errorf("%s: --repeat, --until-converged, --threshold and --repeats-csv go with fineserve-gen run, not %s", f.flag, cmd))
		}
	}
	return errors.Join(errs...)
}
