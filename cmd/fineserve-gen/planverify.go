package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/plan"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// verifyFlags are plan --verify's flags.
type verifyFlags struct {
	on    bool
	span  time.Duration
	scale float64
}

// VerifyTolerance is how far below the planned attainment (the
// --min-goodput target) the planned replicas' may fall: a relative 10 %.
const verifyTolerance = 0.1

func addVerifyFlags(fs *pflag.FlagSet, f *verifyFlags) {
	fs.BoolVar(&f.on, "verify", false, "replay the busiest stretch of the day (--verify-span, sped up by --verify-time-scale) against the planned N replicas and N−1 (the first --base-url values): the SLO must hold with N and not with N−1 (exit 3 otherwise)")
	fs.Var(durationValue{&f.span}, "verify-span", "the stretch of the day --verify replays: the busiest of this length (whole windows)")
	fs.Float64Var(&f.scale, "verify-time-scale", 1, "--verify replays its stretch this many times faster (its rate this many times higher: N is planned for the sped-up stretch)")
}

// verifyChecks returns the problems of --verify's flags.
func verifyChecks(o *options.Options, vf *verifyFlags) []error {
	var errs []error
	if !vf.on {
		return nil
	}
	if vf.span <= 0 {
		errs = append(errs, fmt.Errorf("--verify-span %v: want > 0", vf.span))
	}
	if !(vf.scale > 0) || vf.scale > 1e6 {
		errs = append(errs, fmt.Errorf("--verify-time-scale %g: want > 0", vf.scale))
	}
	if !o.Observe.Goodput.Set() {
		errs = append(errs, errors.New("--verify needs --goodput targets: it checks the share of requests meeting them"))
	}
	return errs
}

// errVerifyClient: the client could not keep the replay's schedule, so the
// replay says nothing of the plan.
var errVerifyClient = errors.New("--verify is inconclusive: the client could not keep its schedule")

// verifyResult is what plan --verify found.
type verifyResult struct {
	FromS     float64 `json:"from_s"`
	ToS       float64 `json:"to_s"`
	TimeScale float64 `json:"time_scale"`
	Requests  int64   `json:"requests"`
	// Replicas is N, planned for the sped-up stretch; Target the planned
	// attainment (--min-goodput).
	Replicas int     `json:"replicas"`
	Target   float64 `json:"planned_attainment"`
	// Attainment is the share of requests meeting the SLO with N and with
	// N−1 replicas (nil: not run, N = 1).
	Attainment      float64  `json:"attainment"`
	AttainmentFewer *float64 `json:"attainment_n_minus_1,omitempty"`
	// Over is how far the stretch's busiest window asks for more than N−1
	// replicas' measured capacity (0.05: 5 % more). N−1 meeting the SLO
	// with Over under verifyTolerance proves nothing either way: the curve
	// is measured to about that (Inconclusive).
	Over         float64  `json:"demand_over_n_minus_1"`
	Inconclusive bool     `json:"n_minus_1_inconclusive,omitempty"`
	Holds        bool     `json:"holds"`
	Lines        []string `json:"lines"`
}

// verifyPlan replays the busiest stretch of the day against the planned
// replicas and one fewer.
// A replay whose send-lag p90 exceeds maxLag ms (--sweep-max-lag) is the
// client's limit: the verification is inconclusive (errVerifyClient).
func verifyPlan(ctx context.Context, o *options.Options, vf *verifyFlags, pf *planFlags, day arrival.Schedule, res *plan.Result, minGood, maxLag float64, stderr io.Writer) (*verifyResult, error) {
	window := arrival.Seconds(res.WindowS)
	from, to := plan.Busiest(res.Windows, window, vf.span)
	slice := plan.Slice(day, from, to)
	sped := plan.Scale(slice, vf.scale)
	sub, err := plan.Plan(sped, plan.Config{Window: time.Duration(float64(window) / vf.scale), Horizon: time.Duration(float64(to-from) / vf.scale),
		Curve: res.Curve, MinReplicas: max(pf.minReplicas, 1)})
	if err != nil {
		return nil, err
	}
	n := sub.PeakReplicas
	urls := o.BaseURLs
	if len(urls) == 0 {
		urls = []string{o.BaseURL}
	}
	if n > len(urls) {
		return nil, options.Usage(fmt.Errorf("--verify: the stretch needs %d replicas and %d --base-url values were given: give %d, or a lower --verify-time-scale", n, len(urls), n))
	}
	dir, err := os.MkdirTemp("", "fineserve-plan-verify")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	trace := filepath.Join(dir, "slice.csv")
	f, err := os.Create(trace)
	if err != nil {
		return nil, err
	}
	count, err := arrival.WriteCSV(f, slice)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--verify: %s: %w", trace, err)
	}
	v := &verifyResult{FromS: from.Seconds(), ToS: to.Seconds(), TimeScale: vf.scale, Requests: count, Replicas: n, Target: minGood}
	run := func(k int) (float64, error) {
		vo := verifyOptions(o, trace, vf.scale, count, urls[:k])
		fmt.Fprintf(stderr, "plan: verify: %d requests of %s–%s, %g× faster, against %d replica(s)\n", count, plan.ClockTime(from.Seconds()), plan.ClockTime(to.Seconds()), vf.scale, k)
		sum, err := launch.Run(ctx, vo, runner.IO{Out: io.Discard, Err: stderr, Abort: abortFrom(ctx)})
		if err != nil {
			return 0, err
		}
		if sum.Goodput == nil {
			return 0, errors.New("--verify: the run has no goodput")
		}
		fmt.Fprintf(stderr, "plan: verify: %d replica(s): %d completed, %d failed; E2E p50 %.1f ms, p99 %.1f ms; send lag p90 %.1f ms, p99 %.1f ms; %.1f %% met the SLO\n",
			k, sum.Completed, sum.Failed, sum.E2E.Median, sum.E2E.P99, sum.SendLag.P90, sum.SendLag.P99, 100*sum.Goodput.Share)
		if sum.SendLag.P90 > maxLag {
			return sum.Goodput.Share, fmt.Errorf("%w: with %d replica(s), send lag p90 %.1f ms > --sweep-max-lag %g ms (%.1f %% met the SLO): run the client on a machine of its own, or lower --verify-time-scale", errVerifyClient, k, sum.SendLag.P90, maxLag, 100*sum.Goodput.Share)
		}
		return sum.Goodput.Share, nil
	}
	if v.Attainment, err = run(n); err != nil {
		return nil, err
	}
	met := v.Attainment >= minGood*(1-verifyTolerance)
	line := fmt.Sprintf("verify: %s–%s of the day (%d requests) %g× faster: %d replicas planned; with %d, %.1f %% met the SLO (planned ≥ %.0f %%, −10 %%: %.1f %%): %s",
		plan.ClockTime(from.Seconds()), plan.ClockTime(to.Seconds()), count, vf.scale, n, n, 100*v.Attainment, 100*minGood, 100*minGood*(1-verifyTolerance), okText(met, "met", "missed"))
	v.Lines = append(v.Lines, line)
	fewerOK := true
	if n > 1 {
		a, err := run(n - 1)
		if err != nil {
			return nil, err
		}
		v.AttainmentFewer = &a
		v.Over = overFewer(sub.Windows, n)
		var line string
		fewerOK, v.Inconclusive, line = judgeFewer(a, minGood, v.Over, n)
		v.Lines = append(v.Lines, line)
	} else {
		v.Lines = append(v.Lines, "verify: one replica planned: no N−1 to try")
	}
	v.Holds = met && fewerOK
	return v, nil
}

// overFewer is how far the busiest of windows (planned for up to n
// replicas) asks for more than n−1 replicas' capacity: its offered rate
// over n−1 times one replica's capacity at its burstiness, less 1.
func overFewer(windows []plan.Window, n int) float64 {
	over := math.Inf(-1)
	for _, w := range windows {
		if w.Replicas == n && w.Capacity > 0 {
			over = max(over, w.OfferedRate/(float64(n-1)*w.Capacity)-1)
		}
	}
	if math.IsInf(over, -1) {
		return 0
	}
	return over
}

// judgeFewer judges the run with n−1 replicas: a plan holds if they miss
// the SLO (attainment a below minGood). If they meet it, the plan asked
// for more than the stretch needs — unless the stretch asks for less than
// verifyTolerance more than their measured capacity (over): then their
// success is within the curve's measurement error and proves nothing
// (inconclusive; the plan holds).
func judgeFewer(a, minGood, over float64, n int) (holds, inconclusive bool, line string) {
	head := fmt.Sprintf("verify: with %d, %.1f %% met the SLO", n-1, 100*a)
	switch {
	case a < minGood:
		return true, false, head + ": missed, as planned"
	case over < verifyTolerance:
		return true, true, fmt.Sprintf("%s: inconclusive — the busiest window asks for %.1f %% more than %d replica(s)' measured capacity, within the curve's error (%.0f %%): a curve measured with longer --step-duration and a lower --sweep-tolerance can tell", head, 100*over, n-1, 100*verifyTolerance)
	}
	return false, false, fmt.Sprintf("%s: met — the plan asks for more replicas than this stretch needs (it asks for %.1f %% more than %d replica(s)' measured capacity: the curve is low)", head, 100*over, n-1)
}

func okText(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// verifyOptions are the options of a verifying run: o's requests, SLO and
// prompts, replaying the stretch's schedule CSV (trace) count requests
// long, scale times faster, round-robin over urls.
func verifyOptions(o *options.Options, trace string, scale float64, count int64, urls []string) options.Options {
	vo := *o
	vo.Mode = workload.ModeReplay
	vo.Replay = workload.DefaultReplayOptions()
	vo.Replay.TracePath = trace
	vo.Parametric = workload.DefaultParametricOptions()
	vo.TimeScale = scale
	vo.Load.Stages, vo.Load.RampStrategy, vo.Load.Lengths = "", "", ""
	vo.Duration = 0
	vo.NumPrompts, vo.NumPromptsSet = count, true
	vo.ScheduleOut = ""
	vo.Quiet = true
	vo.Observe.ReportHTML = ""
	vo.Observe.MinGoodput = 0 // judged here
	vo.BaseURL, vo.BaseURLs = urls[0], nil
	if len(urls) > 1 {
		vo.BaseURL, vo.BaseURLs = "", urls
	}
	return vo
}
