package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/plan"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// planFlags are the flags a plan adds to those of a run and a sweep's
// search.
type planFlags struct {
	window, delay time.Duration
	// downDelay is the scale-down stabilization window.
	downDelay   time.Duration
	minReplicas int
	json        string
	sweeps      []string
	cvs         []float64
	saveSweeps  string
}

const planUsage = `Usage: fineserve-gen plan [run flags] [plan flags]

Plans the replicas a whole day of this workload needs within the SLO
(docs/CAPACITY.md): the schedule any run would send (nothing of it is sent)
is cut into windows; each window's offered rate and burstiness (the CV of
its gaps) and one replica's capacity at that burstiness give its replicas.
The capacity curve is measured by rate sweeps against one replica
(--base-url) with the workload's own length mix at the day's low, typical
and high burstiness, or read from earlier sweeps (--sweep-json). --verify
replays the day's busiest stretch against the planned N replicas and N−1
(several --base-url); exit 3 when the plan does not hold.

`

// addPlanFlags declares the plan's own flags onto fs.
func addPlanFlags(fs *pflag.FlagSet, f *planFlags) {
	fs.Var(durationValue{&f.window}, "plan-window", "length of a planning window")
	fs.Var(durationValue{&f.delay}, "scale-up-delay", "what-if: a reactive autoscaler sees a window's need only this long after it starts (a cold start): report the time it is under-provisioned")
	fs.Var(durationValue{&f.downDelay}, "scale-down-delay", "hold a scale-down this long, as an autoscaler's stabilization window does (Kubernetes HPA: 5m): a window's replicas rise to its need at once and fall only once the lower count has sufficed this long (0: every window its own count)")
	fs.IntVar(&f.minReplicas, "min-replicas", 1, "the fewest replicas any window keeps (0: scale to zero when no request comes)")
	fs.StringVar(&f.json, "plan-json", "", "write the plan as JSON: windows[] (start_s, offered_rate, burstiness, replicas, utilization, idle_share), the day's totals and the capacity curve")
	fs.StringArrayVar(&f.sweeps, "sweep-json", nil, "read the capacity curve from these earlier rate sweeps (fineserve-gen sweep --mode poisson --burstiness k --sweep-json F: one point at CV 1/√k each) instead of measuring it; give it once a point")
	fs.Float64SliceVar(&f.cvs, "plan-burstiness", nil, "measure the curve at these burstiness values (CVs of the gaps; default: the day's p10, p50, p90 and highest, then the burstiness the replicas of split windows see below them)")
	fs.StringVar(&f.saveSweeps, "save-sweeps", "", "write each measuring sweep's JSON as PREFIX-cvX.XX.json (read again with --sweep-json)")
}

func planCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := options.Defaults()
	var prof profiles
	sf, pf, vf := defaultSweepFlags(), defaultPlanFlags(), defaultVerifyFlags()
	args = joinGoodputArgs(args)
	fs, errs, code, ok := parseRunFlags(args, &o, &prof, func(fs *pflag.FlagSet) {
		addSearchFlags(fs, &sf)
		addPlanFlags(fs, &pf)
		addVerifyFlags(fs, &vf)
	}, planUsage, stdout, stderr)
	if !ok {
		return code
	}
	errs = append(errs, planChecks(fs, &o, &sf, &pf)...)
	errs = append(errs, verifyChecks(&o, &vf)...)
	if err := experimentOnlyRun("plan", &o); err != nil {
		errs = append(errs, err)
	}
	if code, ok = settleRunOptions("plan", args, fs, &o, errs, stderr); !ok {
		return code
	}
	name := workloadName(&o)

	// The day: the schedule a run of these flags would send.
	wl, _, err := launch.Schedule(o, runner.IO{Err: stderr})
	if err != nil {
		return exitCode(err, stderr)
	}
	if wl.Sessions != nil || wl.Agentic != nil {
		// Read from the workload, not the flags: an agentic trace
		// brings its sessions with it.
		return usageExit(stderr, errors.New("sessions (agentic conversations, --turns, --multi-turn): a session's later turns follow its answers and are not in the schedule a plan reads"))
	}
	cfg := plan.Config{Window: pf.window, Horizon: o.Duration, MinReplicas: pf.minReplicas, ScaleUpDelay: pf.delay, ScaleDownDelay: pf.downDelay}
	ws, _, err := plan.Survey(wl.Schedule, cfg)
	if err != nil {
		return exitCode(options.Usage(err), stderr)
	}
	p10, p50, p90, top := plan.BurstinessRange(ws)
	fmt.Fprintf(stderr, "plan: %d windows; burstiness (CV of the gaps) p10 %.2f, p50 %.2f, p90 %.2f, max %.2f\n", len(ws), p10, p50, p90, top)

	var curve *plan.Curve
	if len(pf.sweeps) > 0 {
		curve, err = curveFromFiles(pf.sweeps)
		if err != nil {
			return exitCode(options.Usage(err), stderr)
		}
	} else {
		cvs := pf.cvs
		if len(cvs) == 0 {
			cvs = spread([]float64{p10, p50, p90, top}, 0.1)
		}
		mix := plan.LengthMix(wl.Schedule)
		curve, err = measureCurve(ctx, fs, &o, &sf, &pf, cvs, mix, stderr)
		if err == nil && len(pf.cvs) == 0 {
			curve, err = measureBelow(ctx, fs, &o, &sf, &pf, wl.Schedule, cfg, curve, mix, stderr)
		}
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintf(stderr, "fineserve-gen: interrupted while measuring the capacity curve: %v\n", err)
				return exitInterrupted
			}
			return exitCode(err, stderr)
		}
	}
	cfg.Curve = curve
	res, err := plan.Plan(wl.Schedule, cfg)
	if err != nil {
		return exitCode(options.Usage(err), stderr)
	}
	if err := plan.WriteTable(stdout, res, name); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen: %v\n", err)
		return exitFailure
	}
	var v *verifyResult
	var verr error
	if vf.on {
		minGood := o.Observe.MinGoodput
		if !fs.Changed("min-goodput") {
			minGood = sweep.DefaultMinGoodput
		}
		v, verr = verifyPlan(ctx, &o, &vf, &pf, wl.Schedule, res, minGood, sf.maxLag, stderr)
		var ue *options.UsageError
		switch {
		case verr != nil && ctx.Err() != nil:
			fmt.Fprintf(stderr, "fineserve-gen: interrupted while verifying: %v\n", verr)
			return exitInterrupted
		case errors.As(verr, &ue):
			// The plan stands; only its check could not run: it is
			// written, and a measured curve is not lost.
			if err := planOutputs(&o, &pf, res, name, nil, stderr); err != nil {
				fmt.Fprintf(stderr, "fineserve-gen: %v\n", err)
			}
			if len(pf.sweeps) == 0 && pf.saveSweeps == "" {
				fmt.Fprintln(stderr, "fineserve-gen: plan: the capacity curve measured here is in the table above; --save-sweeps PREFIX keeps its sweeps, to plan and verify again from them with --sweep-json instead of measuring")
			}
			return exitCode(verr, stderr)
		}
		if v != nil {
			for _, l := range v.Lines {
				fmt.Fprintln(stdout, l)
			}
		}
	}
	if err := planOutputs(&o, &pf, res, name, v, stderr); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen: %v\n", err)
		return exitFailure
	}
	if verr != nil { // the plan is written; the replay says nothing of it
		return exitCode(verr, stderr)
	}
	if v != nil && !v.Holds {
		fmt.Fprintln(stderr, "fineserve-gen: plan --verify: the plan does not hold on the busiest stretch")
		return exitBudget
	}
	return exitOK
}

// planChecks returns the problems of the plan's flags and of the run's
// flags a plan does not take.
func planChecks(fs *pflag.FlagSet, o *options.Options, sf *sweepFlags, pf *planFlags) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if pf.window <= 0 {
		add("--plan-window %v: want > 0 (e.g. 5m)", pf.window)
	}
	if pf.delay < 0 {
		add("--scale-up-delay %v: want ≥ 0", pf.delay)
	}
	if pf.downDelay < 0 {
		add("--scale-down-delay %v: want ≥ 0", pf.downDelay)
	}
	if pf.minReplicas < 0 {
		add("--min-replicas %d: want ≥ 0", pf.minReplicas)
	}
	for _, cv := range pf.cvs {
		if !(cv >= 0) || math.IsInf(cv, 0) {
			add("--plan-burstiness %g: want CVs ≥ 0", cv)
		}
	}
	if len(pf.sweeps) > 0 && len(pf.cvs) > 0 {
		add("--sweep-json and --plan-burstiness: the curve is read from the sweeps or measured at these values, not both")
	}
	if len(pf.sweeps) > 0 && pf.saveSweeps != "" {
		add("--save-sweeps: nothing is measured with --sweep-json")
	}
	if sf.variable != "" && sweep.Variable(sf.variable) != sweep.Rate {
		add("--sweep-variable %s: a plan measures its curve with rate sweeps (the burstiness is set, the rate found)", sf.variable)
	}
	if o.DryRun {
		add("--dry-run: a plan sends nothing but its measurements; give --sweep-json to send nothing at all")
	}
	if o.ShardCount > 1 || !o.StartAt.IsZero() {
		add("--shard and --start-at: a plan reads the whole day's schedule")
	}
	if st, err := balance.Parse(o.Balance); err == nil && st != balance.RoundRobin {
		add("--balance %s: a plan models round-robin (each of n replicas sees every n-th arrival of its window) and --verify replays that way; %s is not modelled", st, st)
	}
	if o.OutputFile != "" || o.SummaryJSON != "" || o.ResultsJSONL != "" || o.ResultsCSV != "" || o.ResultsParquet != "" || o.BenchmarkReport != "" {
		add("--output-file, --summary-json, --results-jsonl, --results-csv, --results-parquet, --benchmark-report: a plan writes --plan-json (its measurements: --save-sweeps)")
	}
	if fs.Changed("sweep-values") && (fs.Changed("sweep-min") || fs.Changed("sweep-max")) {
		add("--sweep-values replaces --sweep-min/--sweep-max: give one or the other")
	}
	return errs
}

// spread returns the distinct values of vs, increasing, dropping any within
// rel of the previous one kept.
func spread(vs []float64, rel float64) []float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	var out []float64
	for _, v := range s {
		if n := len(out); n > 0 && v <= out[n-1]*(1+rel) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// curveFromFiles reads one point of the curve from each sweep file.
func curveFromFiles(paths []string) (*plan.Curve, error) {
	var pts []plan.Point
	var errs []error
	ttft, tpot := math.NaN(), 0.0
	slo := ""
	for _, path := range paths {
		r, err := sweep.Load(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("--sweep-json %w", err))
			continue
		}
		p, t1, t2, err := pointFromSweep(r, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("--sweep-json %w", err))
			continue
		}
		if math.IsNaN(ttft) || p.CV < pts[0].CV {
			ttft, tpot = t1, t2 // the smoothest point's service time
		}
		pts = append(pts, p)
		if slo == "" {
			slo = sloLine(r.SLO, r.MinGoodput)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c, err := plan.NewCurve(pts, ttft, tpot)
	if err != nil {
		return nil, err
	}
	c.SLO = slo
	return c, nil
}

// sloLine describes a sweep's targets.
func sloLine(targets map[string]float64, minGood float64) string {
	if len(targets) == 0 {
		return "no --goodput: throughput kept and latency not growing"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(targets)) {
		parts = append(parts, fmt.Sprintf("%s ≤ %g ms", k, targets[k]))
	}
	return fmt.Sprintf("%s for ≥ %g %% of requests", strings.Join(parts, " and "), 100*minGood)
}

// measureCurve runs one rate sweep a burstiness against o's (first)
// server: Poisson-mode runs with Gamma gaps of that CV and the day's
// length mix (mix), each step judged as a sweep judges it.
func measureCurve(ctx context.Context, fs *pflag.FlagSet, o *options.Options, sf *sweepFlags, pf *planFlags, cvs []float64, mix string, stderr io.Writer) (*plan.Curve, error) {
	var pts []plan.Point
	ttft, tpot := 0.0, 0.0
	slo := ""
	// The day's --duration is its horizon, not a step's length; its report
	// is the plan's.
	changed := func(name string) bool { return name != "duration" && fs.Changed(name) }
	began := time.Now()
	defer func() {
		fmt.Fprintf(stderr, "plan: the curve's measurement took %.1f s (%d sweep(s))\n", time.Since(began).Seconds(), len(cvs))
	}()
	// Smoothest first: a burstier schedule is served no faster, so the
	// rate where a smoother one failed bounds the next search from above
	// and it starts under it (sweep.Config.Below) instead of probing.
	cvs = slices.Sorted(slices.Values(cvs))
	bound, boundCV := 0.0, 0.0
	for i, cv := range cvs {
		so := measureOptions(o, cv, mix)
		cfg, stepOpts, err := sweepSetup(changed, &so, sf)
		if err != nil {
			return nil, options.Usage(err)
		}
		if sf.probe && bound > 0 && len(cfg.Values) == 0 {
			cfg.Below, cfg.BelowWhy = bound, fmt.Sprintf("the first failing rate at CV %.2f (a burstier schedule is served no faster)", boundCV)
		}
		cfg.Workload = fmt.Sprintf("the day's length mix, CV %.2f (--burstiness %.4g)", cv, so.Burstiness)
		fmt.Fprintf(stderr, "plan: measuring one replica at CV %.2f (%d of %d)\n", cv, i+1, len(cvs))
		res, err := sweepRun(ctx, &so, sf, cfg, stepOpts, stderr)
		if res != nil && pf.saveSweeps != "" {
			path := fmt.Sprintf("%s-cv%.2f.json", pf.saveSweeps, cv)
			if jerr := report.WriteOutputs(io.Discard, report.JSONOutput("--save-sweeps "+path, path, res)); jerr != nil {
				return nil, jerr
			}
		}
		if err != nil {
			return nil, fmt.Errorf("measuring at CV %.2f: %w", cv, err)
		}
		if res.Stopped != "" {
			return nil, fmt.Errorf("measuring at CV %.2f: the sweep stopped early (%s): %s", cv, res.Stopped, res.StopReason)
		}
		fmt.Fprintf(stderr, "plan: CV %.2f: %s (%d steps, %.1f s)\n", cv, res.Line, len(res.Steps), res.Seconds)
		if res.FailedAt > 0 {
			bound, boundCV = res.FailedAt, cv
		}
		p, t1, t2, err := pointFromSweep(res, fmt.Sprintf("sweep at --burstiness %.4g: %d steps", so.Burstiness, len(res.Steps)))
		if err != nil {
			return nil, fmt.Errorf("measuring at CV %.2f: %w (lower --sweep-min)", cv, err)
		}
		if res.Capacity.AtLeast {
			fmt.Fprintf(stderr, "warning: plan: at CV %.2f no step failed: the capacity is at least %.2f req/s (raise --sweep-max)\n", cv, p.Rate)
		}
		p.CV = cv // the value asked for, not 1/√k of a rounded k
		if i == 0 {
			ttft, tpot = t1, t2
			slo = sloLine(res.SLO, res.MinGoodput)
		}
		pts = append(pts, p)
	}
	c, err := plan.NewCurve(pts, ttft, tpot)
	if err != nil {
		return nil, err
	}
	c.SLO = slo
	return c, nil
}

// measureBelow completes a curve measured at the windows' burstiness: the
// replicas of a window split n ways see less (the CV of its lag-n gaps),
// where the curve is only held at its first point. It plans the day with
// curve, measures at the per-replica burstiness of the windows below it
// (plan.BelowPoints), and returns the curve with those points added.
func measureBelow(ctx context.Context, fs *pflag.FlagSet, o *options.Options, sf *sweepFlags, pf *planFlags, day arrival.Schedule, cfg plan.Config, curve *plan.Curve, mix string, stderr io.Writer) (*plan.Curve, error) {
	cfg.Curve = curve
	prov, err := plan.Plan(day, cfg)
	if err != nil {
		return nil, options.Usage(err)
	}
	lower := plan.BelowPoints(prov)
	if len(lower) == 0 {
		return curve, nil
	}
	fmt.Fprintf(stderr, "plan: the replicas of %d windows see less burstiness than CV %.2f: measuring at CV %s too\n", prov.BelowCurve, curve.Points[0].CV, formatCVs(lower))
	more, err := measureCurve(ctx, fs, o, sf, pf, lower, mix, stderr)
	if err != nil {
		return nil, err
	}
	c, err := plan.NewCurve(append(more.Points, curve.Points...), more.TTFTms, more.TPOTms)
	if err != nil {
		return nil, err
	}
	c.SLO = curve.SLO
	return c, nil
}

func formatCVs(cvs []float64) string {
	parts := make([]string, len(cvs))
	for i, v := range cvs {
		parts[i] = fmt.Sprintf("%.2f", v)
	}
	return strings.Join(parts, ", ")
}

// measureOptions are the options of a measuring sweep at burstiness cv: a
// Poisson-mode run of o's requests (backend, prompts, SLO) against o's first
// endpoint, Gamma gaps of that CV, the day's length mix.
func measureOptions(o *options.Options, cv float64, mix string) options.Options {
	so := *o
	so.Mode = workload.ModePoisson
	so.Burstiness = plan.GammaShape(cv)
	so.RequestRate = 1 // each step sets it
	so.TimeScale = 1
	so.Parametric = workload.DefaultParametricOptions()
	so.Replay = workload.DefaultReplayOptions()
	so.Load.Stages, so.Load.RampStrategy = "", ""
	so.Load.Lengths = mix
	if so.DatasetPath != "" {
		so.DatasetName = "random" // the dataset's text, the day's lengths
	}
	so.Duration = 0
	so.NumPrompts, so.NumPromptsSet = options.Defaults().NumPrompts, false
	so.ScheduleOut = ""
	if len(so.BaseURLs) > 0 {
		so.BaseURL, so.BaseURLs = so.BaseURLs[0], nil
	}
	return so
}

// planFile is the --plan-json file.
type planFile struct {
	Workload string `json:"workload"`
	Command  string `json:"command"`
	*plan.Result
	Verify *verifyResult `json:"verify,omitempty"`
}

// planOutputs writes --plan-json and --report-html.
func planOutputs(o *options.Options, pf *planFlags, res *plan.Result, name string, v *verifyResult, stderr io.Writer) error {
	var outs []report.Output
	if pf.json != "" {
		outs = append(outs, report.JSONOutput("--plan-json "+pf.json, pf.json, planFile{Workload: name, Command: o.Command, Result: res, Verify: v}))
	}
	path := o.Observe.ReportHTML
	if path != "" {
		page := plan.Page{Workload: name, Command: o.Command}
		if v != nil {
			page.Verify = v.Lines
		}
		outs = append(outs, report.Output{Name: "--report-html " + path, Path: path, Write: func(w io.Writer) error { return plan.WriteHTML(w, res, page) }})
	}
	if err := report.WriteOutputs(io.Discard, outs...); err != nil {
		return err
	}
	if path != "" {
		fmt.Fprintf(stderr, "report: %s\n", path)
	}
	return nil
}

// pointFromSweep reads a rate sweep's answer as a point of the curve: its
// burstiness from the steps' --burstiness (CV 1/√k; Poisson when unset),
// its rate the capacity the sweep found. It also returns the median TTFT
// and TPOT (ms) of its lowest passing step: one request's service time at
// low load.
func pointFromSweep(r *sweep.Result, source string) (p plan.Point, ttftMS, tpotMS float64, err error) {
	if r.Variable != sweep.Rate {
		return p, 0, 0, fmt.Errorf("%s: a sweep of %s: the capacity curve needs rate sweeps (--mode poisson, --sweep-variable rate, --burstiness k for CV 1/√k)", source, r.Variable)
	}
	if r.Capacity == nil {
		return p, 0, 0, fmt.Errorf("%s: no step met the SLO: no capacity to plan with", source)
	}
	k := 1.0
	var low *sweep.Step
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.Summary != nil && st.Summary.Burstiness != nil {
			k = *st.Summary.Burstiness
		}
		if st.Verdict == sweep.Pass && (low == nil || st.Value < low.Value) {
			low = st
		}
	}
	if !(k > 0) || math.IsInf(k, 0) {
		return p, 0, 0, fmt.Errorf("%s: burstiness %g: want > 0", source, k)
	}
	if low == nil {
		return p, 0, 0, errors.New(source + ": no passing step")
	}
	// The lightest passing step's TTFT and TPOT say how long a request
	// holds a slot (utilisation, idle share); a backend without tokens
	// (embeddings, rerank, images) holds it for its E2E. Without any of
	// them every replica would look idle all day.
	ttft, tpot := low.Figures.TTFT.P50, low.Figures.TPOT.P50
	if !(ttft > 0) {
		ttft, tpot = low.Figures.E2E.P50, 0
	}
	if !(ttft > 0) || math.IsInf(ttft, 0) || !(tpot >= 0) || math.IsInf(tpot, 0) {
		return p, 0, 0, fmt.Errorf("%s: step %d has no latency figures (ttft_ms, tpot_ms or e2e_ms p50): a plan needs them for how long a request holds a replica", source, low.Index)
	}
	p = plan.Point{CV: 1 / math.Sqrt(k), Rate: r.Capacity.Rate, Source: source, Steps: len(r.Steps), BusySteps: sweep.BusySteps(r.Steps)}
	return p, ttft, tpot, nil
}
