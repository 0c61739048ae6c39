package options

import (
	"errors"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/experiment"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// ExperimentOptions are a run's experiment settings (docs/EXPERIMENTS.md):
// repeats, the steady-state window and thresholds.
type ExperimentOptions struct {
	// Repeat is --repeat: how many runs (1: one).
	Repeat int
	// UntilConverged is --until-converged FIGURE:PCT ("": run all).
	UntilConverged string
	// Thresholds are the --threshold values.
	Thresholds []string
	// SteadyState is --steady-state: off, auto or START:END.
	SteadyState string
	// RepeatsCSV is --repeats-csv: the intervals as CSV ("": none).
	RepeatsCSV string
}

// Experiment is what the experiment settings say, parsed.
type Experiment struct {
	Converge   *experiment.Converge
	Thresholds []experiment.Threshold
	Steady     metrics.SteadyConfig
}

// Parse checks the experiment settings and returns them parsed, every
// problem at once.
func (e *ExperimentOptions) Parse() (Experiment, error) {
	var x Experiment
	var errs []error
	if e.Repeat < 1 || e.Repeat > experiment.MaxRepeat {
		errs = append(errs, fmt.Errorf("--repeat %d: want 1 to %d", e.Repeat, experiment.MaxRepeat))
	}
	if e.UntilConverged != "" {
		c, err := experiment.ParseConverge(e.UntilConverged)
		if err != nil {
			errs = append(errs, err)
		} else {
			x.Converge = &c
		}
		if e.Repeat < experiment.MinRuns {
			errs = append(errs, fmt.Errorf("--until-converged judges after %d runs: give --repeat %d or more (the most runs made)", experiment.MinRuns, experiment.MinRuns))
		}
	}
	for _, s := range e.Thresholds {
		t, err := experiment.ParseThreshold(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if t.On != experiment.OnMean && e.Repeat < 2 {
			errs = append(errs, fmt.Errorf("--threshold %q: an interval's bound needs --repeat 2 or more", s))
		}
		x.Thresholds = append(x.Thresholds, t)
	}
	if e.RepeatsCSV != "" && e.Repeat < 2 {
		errs = append(errs, fmt.Errorf("--repeats-csv: the intervals of a repeated run need --repeat 2 or more"))
	}
	st, err := metrics.ParseSteady(e.SteadyState)
	if err != nil {
		errs = append(errs, err)
	}
	x.Steady = st
	return x, errors.Join(errs...)
}

// SteadyConfig is the steady-state window --steady-state chooses (none
// when it is not valid: Validate says so).
func (o *Options) SteadyConfig() metrics.SteadyConfig {
	c, _ := metrics.ParseSteady(o.Experiment.SteadyState)
	return c
}
