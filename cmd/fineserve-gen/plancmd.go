package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
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
(--base-url) with the workload's own length mix, at the burstiness the
windows' replicas see (a probe's ceiling bounds their counts from below),
or read from earlier sweeps (--sweep-json). --verify
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
	fs.Float64SliceVar(&f.cvs, "plan-burstiness", nil, "measure the curve at these burstiness values (CVs of the gaps; default: where the windows' replicas are — their counts bounded by the probe's ceiling and checked, then lower where a point could change a count; without the probe, the day's p10, p50, p90 and highest)")
	fs.StringVar(&f.saveSweeps, "save-sweeps", "", "write each measuring sweep's JSON as PREFIX-cvX.XX.json (read again with --sweep-json)")
}

func planCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := options.Defaults()
	var prof profiles
	sf, pf, vf := defaultSweepFlags(), defaultPlanFlags(), defaultVerifyFlags()
	args = joinGoodputArgs(args)
	fs, file, errs, code, ok := parseRunFlags(args, &o, &prof, func(fs *pflag.FlagSet) {
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
	if code, ok = settleRunOptions("plan", args, fs, file, &o, errs, stderr); !ok {
		return code
	}
	name := workloadName(&o)

	// The day: the schedule a run of these flags would send.
	wl, _, err := launch.Schedule(o, runner.IO{Err: stderr})
	if err != nil {
		return exitCode(locate(file, err), stderr)
	}
	if wl.Sessions != nil || wl.Agentic != nil {
		// Read from the workload, not the flags: an agentic trace
		// brings its sessions with it.
		return usageExit(stderr, locate(file, errors.New("sessions (agentic conversations, --turns, --multi-turn): a session's later turns follow its answers and are not in the schedule a plan reads")))
	}
	cfg := plan.Config{Window: pf.window, Horizon: o.Duration, MinReplicas: pf.minReplicas, ScaleUpDelay: pf.delay, ScaleDownDelay: pf.downDelay}
	ws, _, err := plan.Survey(wl.Schedule, cfg)
	if err != nil {
		return exitCode(locate(file, options.Usage(err)), stderr)
	}
	p10, p50, p90, top := plan.BurstinessRange(ws)
	fmt.Fprintf(stderr, "plan: %d windows; burstiness (CV of the gaps) p10 %.2f, p50 %.2f, p90 %.2f, max %.2f\n", len(ws), p10, p50, p90, top)

	var curve *plan.Curve
	var measured *measurement
	if len(pf.sweeps) > 0 {
		curve, err = curveFromFiles(pf.sweeps)
		if err != nil {
			return exitCode(options.Usage(err), stderr)
		}
	} else {
		mx := newMeasurer(ctx, fs, &o, &sf, &pf, plan.LengthMix(wl.Schedule), stderr)
		cvs := pf.cvs
		if len(cvs) == 0 {
			cvs, err = mx.first(wl.Schedule, cfg, ws)
		}
		if err == nil {
			curve, err = mx.curve(cvs)
		}
		if err == nil && len(pf.cvs) == 0 {
			curve, err = mx.below(wl.Schedule, cfg, curve)
		}
		mx.done()
		measured = &mx.m
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
			if err := planOutputs(&o, &pf, planFile{Workload: name, Command: o.Command, Result: res, Measurement: measured}, stderr); err != nil {
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
	if err := planOutputs(&o, &pf, planFile{Workload: name, Command: o.Command, Result: res, Measurement: measured, Verify: v}, stderr); err != nil {
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

// measurer measures a plan's capacity curve against o's (first) server:
// a probe for the ceiling, checks of the windows that might need fewest
// replicas, and a rate sweep a burstiness, each a Poisson-mode run with
// Gamma gaps of that CV and the day's length mix, judged as a sweep judges.
type measurer struct {
	ctx    context.Context
	fs     *pflag.FlagSet
	o      *options.Options
	sf     *sweepFlags
	pf     *planFlags
	mix    string
	stderr io.Writer
	began  time.Time
	// bound is the rate where the last sweep first failed, at boundCV: a
	// burstier schedule is served no faster.
	bound, boundCV float64
	// ttft and tpot are the smoothest point's service time (ms).
	ttft, tpot, smoothest float64
	slo                   string
	m                     measurement
}

// measurement is what the plan's JSON says of how its curve was measured.
type measurement struct {
	Seconds float64 `json:"seconds"`
	// Probe is the server's service time and slots; Ceiling is Little's
	// law's capacity from them (req/s), which no replica exceeds at any
	// burstiness (0: the probe gave none, or did not run).
	Probe   *sweep.Probe `json:"probe,omitempty"`
	Ceiling float64      `json:"ceiling_rate,omitempty"`
	// Checks are the single steps run before the curve (plan.FirstPoints):
	// each, failing, showed windows need more replicas than the ceiling
	// says.
	Checks       []plan.Check `json:"checks,omitempty"`
	CheckSeconds float64      `json:"check_seconds,omitempty"`
	// Sweeps is how many rate sweeps measured the curve, SweepSeconds
	// how long they took.
	Sweeps       int     `json:"sweeps"`
	SweepSeconds float64 `json:"sweep_seconds"`
	// Notes are the sweeps' caveats (sweep.Result.Caveat): a point that
	// may read high.
	Notes []string `json:"notes,omitempty"`
	// Line says it in words (stderr, the HTML report).
	Line string `json:"-"`
}

func newMeasurer(ctx context.Context, fs *pflag.FlagSet, o *options.Options, sf *sweepFlags, pf *planFlags, mix string, stderr io.Writer) *measurer {
	return &measurer{ctx: ctx, fs: fs, o: o, sf: sf, pf: pf, mix: mix, stderr: stderr, began: time.Now()}
}

// changed tells whether a flag was given: the day's --duration is its
// horizon, not a step's length.
func (m *measurer) changed(name string) bool { return name != "duration" && m.fs.Changed(name) }

// setup is a measuring sweep's configuration at burstiness cv.
func (m *measurer) setup(cv float64) (options.Options, sweep.Config, func(int, float64) options.Options, error) {
	so := measureOptions(m.o, cv, m.mix)
	cfg, stepOpts, err := sweepSetup(m.changed, &so, m.sf)
	if err != nil {
		return so, cfg, nil, options.Usage(err)
	}
	cfg.Workload = fmt.Sprintf("the day's length mix, CV %.2f (--burstiness %.4g)", cv, so.Burstiness)
	return so, cfg, stepOpts, nil
}

// done closes the measurement: how long it took, on stderr and in m.m.
func (m *measurer) done() {
	m.m.Seconds = time.Since(m.began).Seconds()
	var parts []string
	if m.m.Probe != nil {
		parts = append(parts, fmt.Sprintf("the probe %.1f s", m.m.Probe.Seconds))
	}
	if n := len(m.m.Checks); n > 0 {
		parts = append(parts, fmt.Sprintf("%d check step(s) %.1f s", n, m.m.CheckSeconds))
	}
	parts = append(parts, fmt.Sprintf("%d sweep(s) %.1f s", m.m.Sweeps, m.m.SweepSeconds))
	m.m.Line = fmt.Sprintf("The curve's measurement took %.1f s: %s.", m.m.Seconds, strings.Join(parts, ", "))
	fmt.Fprintf(m.stderr, "plan: the curve's measurement took %.1f s: %s\n", m.m.Seconds, strings.Join(parts, ", "))
}

// first returns where to measure the curve first. With the probe (the
// default) a ceiling bounds every window's replicas from below and the
// curve starts at the burstiness those replicas see (plan.FirstPoints);
// without one, at the day's own burstiness: its p10, p50, p90 and highest
// (within 10 % of each other taken once).
func (m *measurer) first(day arrival.Schedule, cfg plan.Config, ws []plan.Window) ([]float64, error) {
	p10, p50, p90, top := plan.BurstinessRange(ws)
	dayCVs := plan.Spread([]float64{p10, p50, p90, top}, 0.1)
	if !m.sf.probe || len(m.sf.values) > 0 {
		return dayCVs, nil
	}
	_, _, stepOpts, err := m.setup(1)
	if err != nil {
		return nil, err
	}
	p, err := probeServer(m.ctx, stepOpts(0, 1), m.stderr)
	if err != nil {
		if m.ctx.Err() != nil {
			return nil, err
		}
		fmt.Fprintf(m.stderr, "plan: the probe failed (%v): measuring at the day's burstiness\n", err)
		return dayCVs, nil
	}
	m.m.Probe = &p
	ceiling, ok := sweep.LittleCapacity(p.Slots, p.ServiceTime)
	if !ok || p.AtLeast {
		why := "the server's running count was not read"
		if p.AtLeast {
			why = p.SlotsFrom + ": the slots may be more"
		}
		fmt.Fprintf(m.stderr, "plan: the probe gives no ceiling (%s): measuring at the day's burstiness\n", why)
		return dayCVs, nil
	}
	m.m.Ceiling = ceiling
	fmt.Fprintf(m.stderr, "plan: one replica serves at most %.1f req/s at any burstiness (Little's law: %d slots (%s) / %.1f ms service time)\n",
		ceiling, p.Slots, p.SlotsFrom, 1e3*p.ServiceTime)
	f, err := plan.FirstPoints(day, cfg, ceiling, m.check)
	if f != nil {
		m.m.Checks = f.Checks
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(m.stderr, "plan: every window needs at least %s replicas: measuring where they are (CV %s)\n", span(f.Least, f.Most), formatCVs(f.CVs))
	return f.CVs, nil
}

// span is "a" or "a–b".
func span(a, b int) string {
	if a == b {
		return strconv.Itoa(a)
	}
	return fmt.Sprintf("%d–%d", a, b)
}

// check runs one step of ck (plan.FirstPoints): whether it fails. A step
// that gives no verdict of the server (the client fell behind, the run
// failed) is not a failure: the windows are then measured.
func (m *measurer) check(ck plan.Check) (bool, error) {
	began := time.Now()
	defer func() { m.m.CheckSeconds += time.Since(began).Seconds() }()
	fmt.Fprintf(m.stderr, "plan: can %d replica(s) serve the %d window(s) that might need only that many (%d requests)? one step at the least any asks of each: %.2f req/s at CV %.2f\n",
		ck.Replicas, ck.Windows, ck.Requests, ck.Rate, ck.CV)
	so, cfg, stepOpts, err := m.setup(ck.CV)
	if err != nil {
		return false, err
	}
	cfg.Values = []float64{ck.Rate}
	res, err := sweepRun(m.ctx, &so, m.sf, cfg, stepOpts, m.stderr)
	switch {
	case m.ctx.Err() != nil:
		return false, m.ctx.Err()
	case err != nil || res == nil || len(res.Steps) == 0 || res.Stopped != "":
		why := "no step ran"
		if err != nil {
			why = err.Error()
		} else if res != nil && res.Stopped != "" {
			why = res.StopReason
		}
		fmt.Fprintf(m.stderr, "plan: the check gave no verdict (%s): those windows are measured\n", why)
		return false, nil
	}
	if v := res.Steps[0].Verdict; v != sweep.Fail {
		what := "passed"
		if v != sweep.Pass {
			what = "gave no verdict of the server (" + string(v) + ")"
		}
		fmt.Fprintf(m.stderr, "plan: the check %s: those windows may need %d replica(s), and are measured\n", what, ck.Replicas)
		return false, nil
	}
	fmt.Fprintf(m.stderr, "plan: the check failed: those windows need at least %d replicas\n", ck.Replicas+1)
	return true, nil
}

// curve runs one rate sweep a burstiness of cvs and returns the curve of
// their points.
func (m *measurer) curve(cvs []float64) (*plan.Curve, error) {
	var pts []plan.Point
	// Smoothest first: a burstier schedule is served no faster, so the
	// rate where a smoother one failed bounds the next search from above
	// and it starts under it (sweep.Config.Below) instead of probing.
	cvs = slices.Sorted(slices.Values(cvs))
	for i, cv := range cvs {
		so, cfg, stepOpts, err := m.setup(cv)
		if err != nil {
			return nil, err
		}
		if m.sf.probe && m.bound > 0 && m.boundCV < cv && len(cfg.Values) == 0 {
			cfg.Below, cfg.BelowWhy = m.bound, fmt.Sprintf("the first failing rate at CV %.2f (a burstier schedule is served no faster)", m.boundCV)
		}
		if p := m.m.Probe; p != nil && m.sf.probe && len(cfg.Values) == 0 {
			cfg.Probe = func(context.Context) (sweep.Probe, error) { return *p, nil } // the plan's, measured once
		}
		fmt.Fprintf(m.stderr, "plan: measuring one replica at CV %.2f (%d of %d)\n", cv, i+1, len(cvs))
		res, err := sweepRun(m.ctx, &so, m.sf, cfg, stepOpts, m.stderr)
		if res != nil {
			m.m.Sweeps++
			m.m.SweepSeconds += res.Seconds
			if res.Caveat != "" {
				m.m.Notes = append(m.m.Notes, res.Caveat)
			}
		}
		if res != nil && m.pf.saveSweeps != "" {
			path := fmt.Sprintf("%s-cv%.2f.json", m.pf.saveSweeps, cv)
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
		fmt.Fprintf(m.stderr, "plan: CV %.2f: %s (%d steps, %.1f s)\n", cv, res.Line, len(res.Steps), res.Seconds)
		if res.FailedAt > 0 {
			m.bound, m.boundCV = res.FailedAt, cv
		}
		p, t1, t2, err := pointFromSweep(res, fmt.Sprintf("sweep at --burstiness %.4g: %d steps", so.Burstiness, len(res.Steps)))
		if err != nil {
			return nil, fmt.Errorf("measuring at CV %.2f: %w (lower --sweep-min)", cv, err)
		}
		if res.Capacity.AtLeast {
			fmt.Fprintf(m.stderr, "warning: plan: at CV %.2f no step failed: the capacity is at least %.2f req/s (raise --sweep-max)\n", cv, p.Rate)
		}
		p.CV = cv // the value asked for, not 1/√k of a rounded k
		if m.slo == "" || cv < m.smoothest {
			// The smoothest point's service time: the least queueing.
			m.ttft, m.tpot, m.smoothest = t1, t2, cv
		}
		if m.slo == "" {
			m.slo = sloLine(res.SLO, res.MinGoodput)
		}
		pts = append(pts, p)
	}
	c, err := plan.NewCurve(pts, m.ttft, m.tpot)
	if err != nil {
		return nil, err
	}
	c.SLO = m.slo
	return c, nil
}

// below completes a curve measured where the windows' replicas were first
// placed: with more replicas a window's split sees less burstiness (the
// CV of its lag-n gaps), where the curve is only held at its first point.
// It plans the day with curve, measures at the per-replica burstiness of
// the windows below it (plan.BelowPoints), and returns the curve with
// those points added.
func (m *measurer) below(day arrival.Schedule, cfg plan.Config, curve *plan.Curve) (*plan.Curve, error) {
	cfg.Curve = curve
	prov, err := plan.Plan(day, cfg)
	if err != nil {
		return nil, options.Usage(err)
	}
	lower := plan.BelowPoints(prov, m.m.Ceiling)
	if len(lower) == 0 {
		return curve, nil
	}
	fmt.Fprintf(m.stderr, "plan: the replicas of %d windows see less burstiness than CV %.2f, and one fewer might serve some: measuring at CV %s too\n", prov.BelowCurve, curve.Points[0].CV, formatCVs(lower))
	more, err := m.curve(lower)
	if err != nil {
		return nil, err
	}
	c, err := plan.NewCurve(append(more.Points, curve.Points...), m.ttft, m.tpot)
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
	// Measurement is how the curve was measured (none: read from
	// --sweep-json).
	Measurement *measurement  `json:"measurement,omitempty"`
	Verify      *verifyResult `json:"verify,omitempty"`
}

// planOutputs writes --plan-json and --report-html.
func planOutputs(o *options.Options, pf *planFlags, f planFile, stderr io.Writer) error {
	var outs []report.Output
	if pf.json != "" {
		outs = append(outs, report.JSONOutput("--plan-json "+pf.json, pf.json, f))
	}
	path := o.Observe.ReportHTML
	if path != "" {
		page := plan.Page{Workload: f.Workload, Command: f.Command}
		if f.Verify != nil {
			page.Verify = f.Verify.Lines
		}
		if f.Measurement != nil {
			page.Measured, page.Notes = f.Measurement.Line, f.Measurement.Notes
		}
		outs = append(outs, report.Output{Name: "--report-html " + path, Path: path, Write: func(w io.Writer) error { return plan.WriteHTML(w, f.Result, page) }})
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
