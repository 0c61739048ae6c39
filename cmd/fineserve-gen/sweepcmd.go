package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/plan"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// sweepFlags are the flags a sweep adds to those of a run.
type sweepFlags struct {
	variable               string
	min, max, tolerance    float64
	values                 []float64
	stepDuration, maxDur   time.Duration
	stepMin, stepMax       time.Duration
	idleQuiet, idleTimeout time.Duration
	json                   string
	maxSteps               int
	maxLag                 float64
	probe                  bool
}

const sweepUsage = `Usage: fineserve-gen sweep [run flags] [sweep flags]

Runs the workload at growing loads, each step a whole run, and answers with
the highest load that meets the SLO (--goodput, --min-goodput) and the limit
the server's metrics point to (docs/CAPACITY.md). Every flag of a run works;
--report-html writes the sweep's report.

`

// addSweepFlags declares the sweep's own flags onto fs.
func addSweepFlags(fs *pflag.FlagSet, f *sweepFlags) {
	addSearchFlags(fs, f)
	fs.StringVar(&f.json, "sweep-json", "", "write every step's summary and the answer as JSON (fineserve-gen report renders it)")
}

// addSearchFlags declares the flags of a sweep's search onto fs (a sweep's
// and a plan's measurements).
func addSearchFlags(fs *pflag.FlagSet, f *sweepFlags) {
	fs.StringVar(&f.variable, "sweep-variable", "", "what grows from step to step: rate (Poisson), time-scale (replay, parametric: the workload's shape is kept) or max-concurrency (default: rate for poisson, else time-scale)")
	fs.Float64Var(&f.min, "sweep-min", 1, "the first step's load; the search grows it geometrically (×2) until a step fails")
	fs.Float64Var(&f.max, "sweep-max", 0, "the highest load tried (default: 1024 × --sweep-min)")
	fs.Float64SliceVar(&f.values, "sweep-values", nil, "run exactly these loads, in increasing order (e.g. 10,20,40), instead of a search")
	fs.Float64Var(&f.tolerance, "sweep-tolerance", sweep.DefaultTolerance, "relative resolution of the answer: bisection stops once the failing load is within this share of the passing one (default 0.05 with fixed steps, 0.03 with steps that end when settled)")
	fs.Var(durationValue{&f.stepDuration}, "step-duration", "length of each step's schedule (default 60s; with --num-prompts, whichever ends first)")
	fs.Var(durationValue{&f.stepMin}, "step-min", "a step ends once its verdict is settled (docs/CAPACITY.md), but not before this (default 2s)")
	fs.Var(durationValue{&f.stepMax}, "step-max", "a step ends once its verdict is settled, at the latest after this (default 20s; --step-duration alone: fixed steps of that length)")
	fs.Var(durationValue{&f.maxDur}, "max-duration", "stop the whole sweep after this long and answer from the finished steps (0: no limit)")
	fs.Var(durationValue{&f.idleQuiet}, "sweep-quiet", "pause between steps when the server's metrics cannot say it is idle")
	fs.Var(durationValue{&f.idleTimeout}, "sweep-idle-timeout", "wait at most this long between steps for the server to be idle")
	fs.Float64Var(&f.maxLag, "sweep-max-lag", sweep.DefaultMaxLag, "a step whose send-lag p90 exceeds this many ms is the client's limit: the sweep stops there")
	fs.IntVar(&f.maxSteps, "sweep-max-steps", sweep.DefaultMaxSteps, "run at most this many steps")
	fs.BoolVar(&f.probe, "sweep-probe", true, "before a rate search, probe the server (a few requests one at a time, then a burst) for its service time and slots and start the search from Little's law's capacity, slots / service time; =false, or nothing read: double from --sweep-min")
}

func sweepCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := options.Defaults()
	var prof profiles
	sf := defaultSweepFlags()
	args = joinGoodputArgs(args)
	fs, file, errs, code, ok := parseRunFlags(args, &o, &prof, func(fs *pflag.FlagSet) { addSweepFlags(fs, &sf) }, sweepUsage, stdout, stderr)
	if !ok {
		return code
	}
	cfg, stepOpts, err := sweepSetup(fs.Changed, &o, &sf)
	if err != nil {
		errs = append(errs, err)
	}
	if code, ok = settleRunOptions("sweep", args, fs, file, &o, errs, stderr); !ok {
		return code
	}
	stopProfiles, err := startProfiles(prof)
	if err != nil {
		return exitCode(&options.UsageError{Err: err}, stderr)
	}
	res, serr := sweepRun(ctx, &o, &sf, cfg, stepOpts, stderr)
	perr := stopProfiles()
	if perr != nil {
		fmt.Fprintf(stderr, "fineserve-gen: %v\n", perr)
	}
	var ue *options.UsageError
	if res == nil || (serr != nil && errors.As(serr, &ue) && len(res.Steps) == 0) {
		return exitCode(locate(file, serr), stderr)
	}
	if err := sweepOutputs(&o, &sf, res, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen: %v\n", err)
		return exitFailure
	}
	switch {
	case serr != nil:
		return exitCode(serr, stderr)
	case ctx.Err() != nil:
		fmt.Fprintln(stderr, "fineserve-gen: interrupted; the finished steps and the answer so far are written")
		return exitInterrupted
	case res.Capacity == nil:
		fmt.Fprintln(stderr, "fineserve-gen: no step met the target")
		return exitBudget
	case perr != nil:
		return exitFailure // a profile could not be written at the end
	}
	return exitOK
}

// sweepRun runs the sweep cfg describes against o's server, each step a run
// of stepOpts, waiting for the server to be idle before every step (its
// metrics, else --sweep-quiet), and stopping at --max-duration.
func sweepRun(ctx context.Context, o *options.Options, sf *sweepFlags, cfg sweep.Config, stepOpts func(int, float64) options.Options, stderr io.Writer) (*sweep.Result, error) {
	sctx := ctx
	if sf.maxDur > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, sf.maxDur, sweep.ErrMaxDuration)
		defer cancel()
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	cfg.Logf = logf
	if url, ok := o.ServerMetricsTarget(); ok || sf.idleQuiet > 0 {
		if !ok {
			url = ""
		}
		idle := &servermetrics.Idle{URL: url, Quiet: sf.idleQuiet, Timeout: sf.idleTimeout, Warnf: func(f string, a ...any) { logf("warning: "+f, a...) }}
		cfg.Idle = idle.Wait
	}
	if cfg.Variable == sweep.TimeScale && cfg.StepMax > 0 && cfg.ArrivalCV == 0 {
		// A trace's or day's own burstiness weighs its requests in the
		// goodput test, as --burstiness does a Poisson step's.
		first := cfg.Min
		if len(cfg.Values) > 0 {
			first = slices.Min(cfg.Values)
		}
		var n int
		if cfg.ArrivalCV, n = scheduleCV(stepOpts(0, first)); cfg.ArrivalCV > 0 {
			logf("sweep: the schedule's gaps have CV %.2f (its first %d): a bursty schedule's requests weigh less in the goodput test", cfg.ArrivalCV, n)
		}
	}
	if cfg.Probe == nil && sf.probe && cfg.Variable == sweep.Rate && len(cfg.Values) == 0 {
		cfg.Probe = func(ctx context.Context) (sweep.Probe, error) { return probeServer(ctx, stepOpts(0, 1), stderr) }
	}
	cfg.Run = func(ctx context.Context, step int, v float64) (*metrics.Summary, error) {
		so := stepOpts(step, v)
		stdio := runner.IO{Out: io.Discard, Err: stderr, Abort: abortFrom(ctx)}
		if sink, stop, ok := sweep.Watching(ctx); ok {
			stdio.Observe, stdio.Stop = sink, stop
		}
		return launch.Run(ctx, so, stdio)
	}
	res, err := sweep.Sweep(sctx, cfg)
	if res != nil && res.Caveat != "" {
		logf("note: sweep: %s", res.Caveat)
	}
	return res, err
}

// arrivalCV is the CV of a sweep's gaps: 1/√k of --burstiness k in
// Poisson mode (Gamma gaps), 0 (unknown) for a trace's or parametric
// day's shape (scheduleCV measures it).
func arrivalCV(o *options.Options) float64 {
	if o.Mode != workload.ModePoisson || !(o.Burstiness > 0) {
		return 0
	}
	return 1 / math.Sqrt(o.Burstiness)
}

// cvSpan is the stretch of a schedule scheduleCV reads: its first 30
// minutes at time scale 1.
const cvSpan = 30 * time.Minute

// scheduleCV is the CV of the gaps of the schedule o sends (a time scale
// leaves it as it is: read at 1), and how many gaps it read: a replay's or
// parametric day's burstiness, measured as a plan measures a window's (one
// window of cvSpan), which its time-scale sweep's goodput test weighs
// requests by. 0 with fewer than plan.MinGaps gaps or no schedule.
func scheduleCV(o options.Options) (float64, int) {
	o.ScheduleOut, o.TimeScale, o.Duration = "", 1, cvSpan
	wl, _, err := launch.Schedule(o, runner.IO{Out: io.Discard, Err: io.Discard})
	if err != nil {
		return 0, 0
	}
	ws, _, err := plan.Survey(wl.Schedule, plan.Config{Window: cvSpan, Horizon: cvSpan})
	if err != nil || len(ws) == 0 || ws[0].Requests < 2 {
		return 0, 0
	}
	gaps := int(ws[0].Requests - 1)
	if gaps < plan.MinGaps {
		return 0, gaps
	}
	return ws[0].Burstiness, gaps
}

// sweepSetup checks the sweep's flags against the run's and returns the
// sweep's configuration and the options of each step. changed tells
// whether a flag was given (pflag.FlagSet.Changed).
func sweepSetup(changed func(name string) bool, o *options.Options, sf *sweepFlags) (sweep.Config, func(step int, v float64) options.Options, error) {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	v := sweep.Variable(sf.variable)
	if v == "" {
		v = sweep.TimeScale
		if workload.Rated(o.Mode) {
			v = sweep.Rate
		}
	}
	switch {
	case v == sweep.Rate && !workload.Rated(o.Mode):
		add("--sweep-variable rate goes with --mode poisson; replay and parametric sweep time-scale (their shape is kept)")
	case v == sweep.TimeScale && workload.Rated(o.Mode):
		add("--sweep-variable time-scale goes with --mode replay or parametric; poisson sweeps rate")
	case v == sweep.TimeScale && o.Replay.TargetRate > 0:
		add("--target-rate sets the time scale: leave it out of a time-scale sweep")
	}
	if changed("duration") {
		add("--duration: in a sweep each step's length is --step-duration, and the whole sweep's --max-duration")
	}
	if changed("sweep-values") && (changed("sweep-min") || changed("sweep-max")) {
		add("--sweep-values replaces --sweep-min/--sweep-max: give one or the other")
	}
	if o.DryRun {
		add("--dry-run: a sweep judges results; use run --dry-run to see a schedule")
	}
	if err := experimentOnlyRun("sweep", o); err != nil {
		errs = append(errs, err)
	}
	if o.Load.Stages != "" || o.Load.RampStrategy != "" {
		add("--stages and --ramp-up-strategy: a sweep sets each step's load itself (a staged run is a run of its own)")
	}
	if o.ShardCount > 1 || !o.StartAt.IsZero() {
		add("--shard and --start-at: a sweep runs from one machine; when its client is the limit, run the load found with --shard across machines (docs/SCALE_OUT.md)")
	}
	if o.OutputFile == "-" {
		add("--output-file -: a sweep prints its table; use --sweep-json for the steps' summaries")
	}
	// The sweep's own files, and the first step's (the steps' are beside
	// it), are checked before its first step.
	sweepOuts := append(o.Outputs(), options.Output{Flag: "--sweep-json", Path: sf.json})
	if sf.json == "" {
		sweepOuts = sweepOuts[:len(sweepOuts)-1]
	}
	if err := options.CheckOutputs(sweepOuts); err != nil {
		errs = append(errs, err)
	}
	if sf.maxDur < 0 || sf.stepDuration < 0 {
		add("--step-duration and --max-duration must be ≥ 0")
	}
	if !(sf.maxLag > 0) {
		add("--sweep-max-lag %g: want > 0 ms", sf.maxLag)
	}
	if sf.maxSteps < 1 {
		add("--sweep-max-steps %d: want ≥ 1", sf.maxSteps)
	}
	if sf.stepMin < 0 || sf.stepMax < 0 {
		add("--step-min and --step-max must be ≥ 0")
	}
	if changed("step-max") && changed("step-duration") {
		add("--step-max and --step-duration: give one (--step-duration alone runs fixed steps; with --step-min it is the longest step)")
	}
	// Steps end once settled unless --step-duration alone asks for fixed
	// steps (or --num-prompts sizes them).
	adaptive := (!changed("step-duration") || changed("step-min")) && !o.NumPromptsSet
	var stepMin, stepMax time.Duration
	if adaptive {
		stepMin, stepMax = cmp.Or(sf.stepMin, defaultStepMin), cmp.Or(sf.stepMax, sf.stepDuration, defaultStepMax)
		if stepMin > stepMax {
			add("--step-min %v is longer than the longest step %v", stepMin, stepMax)
		}
	} else if changed("step-min") || changed("step-max") {
		add("--step-min and --step-max size steps that end when settled: leave out --num-prompts")
	}
	step := sf.stepDuration
	if adaptive {
		step = stepMax
	}
	if step == 0 && !o.NumPromptsSet {
		step = time.Minute
	}
	allAtOnce := workload.Rated(o.Mode) && math.IsInf(o.RequestRate, 1) && v != sweep.Rate
	if allAtOnce && step > 0 && changed("step-duration") {
		add("--request-rate inf sends every request at once: give --num-prompts, not --step-duration")
	}
	if allAtOnce {
		step, adaptive, stepMin, stepMax = 0, false, 0, 0
	}
	minGood := o.Observe.MinGoodput
	if o.Observe.Goodput.Set() && !changed("min-goodput") {
		minGood = sweep.DefaultMinGoodput
	}
	tolerance := sf.tolerance
	if adaptive && !changed("sweep-tolerance") {
		tolerance = sweep.SettledTolerance // steps far from the knee are short: a finer answer costs little
	}
	cfg := sweep.Config{
		Variable: v, Min: sf.min, Max: sf.max, Values: sf.values, Tolerance: tolerance,
		MaxSteps: sf.maxSteps, MaxLag: sf.maxLag, SLO: o.Observe.Goodput, MinGoodput: minGood, MaxErrorRate: o.MaxErrorRate,
		StepMin: stepMin, StepMax: stepMax, ArrivalCV: arrivalCV(o),
		Workload: workloadName(o), Run: func(context.Context, int, float64) (*metrics.Summary, error) { return nil, nil },
	}
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	base := *o
	base.Quiet = true
	base.Observe.ReportHTML = ""
	base.Observe.MinGoodput = 0 // judged by the sweep
	base.Duration = step
	if step > 0 {
		if !changed("window-seconds") {
			base.Observe.Window = max(step/4, 100*time.Millisecond)
		}
		if !changed("server-metrics-interval") {
			base.Observe.ServerMetricsInterval = min(max(step/20, 50*time.Millisecond), 2*time.Second)
			if adaptive {
				base.Observe.ServerMetricsInterval = min(max(stepMin/10, 50*time.Millisecond), 2*time.Second)
			}
		}
	}
	if base.Seed == -1 { // one schedule for every step: only the load changes
		base.Seed = time.Now().UnixNano() & (1<<53 - 1)
	}
	stepOpts := func(n int, x float64) options.Options {
		so := base
		switch v {
		case sweep.Rate:
			so.RequestRate = x
		case sweep.TimeScale:
			so.TimeScale = x
		case sweep.MaxConcurrency:
			so.MaxConcurrency = int(x)
		}
		so.SummaryJSON = stepPath(so.SummaryJSON, n)
		so.ResultsJSONL = stepPath(so.ResultsJSONL, n)
		so.ResultsCSV = stepPath(so.ResultsCSV, n)
		so.ResultsParquet = stepPath(so.ResultsParquet, n)
		so.BenchmarkReport = stepPath(so.BenchmarkReport, n)
		so.ScheduleOut = stepPath(so.ScheduleOut, n)
		return so
	}
	return cfg, stepOpts, errors.Join(errs...)
}

// stepPath names step n's copy of an output file: sum.json → sum-step03.json.
func stepPath(path string, n int) string {
	if path == "" {
		return ""
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-step" + fmt.Sprintf("%02d", n) + ext
}

// workloadName names the workload in the answer.
func workloadName(o *options.Options) string {
	m, ok := workload.LookupMode(o.Mode)
	switch {
	case !ok || m.Rated:
		return o.Mode
	case m.Trace:
		return filepath.Base(o.Replay.TracePath)
	case o.Parametric.GammaParamsCSV != "":
		return filepath.Base(o.Parametric.GammaParamsCSV)
	case o.Parametric.ServeGen != "":
		return "servegen " + filepath.Base(filepath.Clean(o.Parametric.ServeGen))
	}
	return o.Parametric.ModelClass
}

// sweepOutputs prints the table and writes --sweep-json and --report-html.
func sweepOutputs(o *options.Options, sf *sweepFlags, res *sweep.Result, stdout, stderr io.Writer) error {
	if err := report.WriteOutputs(stdout, sweep.Outputs(res, sf.json, o.Observe.ReportHTML)...); err != nil {
		return err
	}
	if path := o.Observe.ReportHTML; path != "" {
		fmt.Fprintf(stderr, "report: %s\n", path)
	}
	return nil
}

// isSweepJSON reports whether the file at path is a sweep's --sweep-json.
func isSweepJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [4096]byte
	n, _ := io.ReadFull(f, head[:])
	s := string(head[:n])
	i := strings.IndexByte(s, '{')
	return i >= 0 && strings.HasPrefix(strings.TrimLeft(s[i+1:], " \t\r\n"), strconv.Quote("variable"))
}

// reportSweep prints a saved sweep's table and, with out, writes its HTML
// report (fineserve-gen report SWEEP.json).
func reportSweep(path, out string, stdout, stderr io.Writer) int {
	res, err := sweep.Load(path)
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen report: %v\n", err)
		return exitFailure
	}
	if err := report.WriteOutputs(stdout, sweep.Outputs(res, "", out)...); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen report: %v\n", err)
		return exitFailure
	}
	if out != "" {
		fmt.Fprintf(stderr, "report: %s\n", out)
	}
	return exitOK
}

// The default shortest and longest step that ends when settled.
const (
	defaultStepMin = 2 * time.Second
	defaultStepMax = 20 * time.Second
)

// The probe before a rate search (sweep.Probe): probeAlone requests one at
// a time give the service time, then a burst of probeBurst at once fills
// the server's slots.
const (
	probeAlone = 8
	probeBurst = 64
)

// probeServer measures the service time of the server so and its slots:
// the E2E median of requests sent one at a time, then the most requests
// the server's metrics showed running while others waited during a burst
// (with several endpoints, summed), bounded by --max-concurrency.
func probeServer(ctx context.Context, so options.Options, stderr io.Writer) (sweep.Probe, error) {
	begin := time.Now()
	var p sweep.Probe
	so.SummaryJSON, so.ResultsJSONL, so.ResultsCSV, so.ScheduleOut, so.OutputFile = "", "", "", "", ""
	so.RequestRate, so.Duration, so.NumPromptsSet = math.Inf(1), 0, true
	so.Observe.ServerMetricsInterval = 50 * time.Millisecond
	userMax := so.MaxConcurrency
	run := func(n, conc int) (*metrics.Summary, error) {
		o := so
		o.NumPrompts, o.MaxConcurrency = int64(n), conc
		sum, err := launch.Run(ctx, o, runner.IO{Out: io.Discard, Err: stderr})
		if err == nil && (sum == nil || sum.Completed == 0) {
			err = errors.New("no request completed")
		}
		return sum, err
	}
	alone, err := run(probeAlone, 1)
	if err != nil {
		return p, err
	}
	p.ServiceTime = alone.E2E.Median / 1e3
	burst, err := run(probeBurst, userMax)
	if err != nil {
		return p, err
	}
	var stats []*metrics.ServerStats
	if m := burst.ServerMetrics; m != nil && m.Available && m.ServerStats != nil {
		stats = append(stats, m.ServerStats)
	}
	if len(burst.Endpoints) > 1 {
		stats = stats[:0]
		for _, e := range burst.Endpoints {
			if m := e.ServerMetrics; m != nil && m.Available && m.ServerStats != nil {
				stats = append(stats, m.ServerStats)
			}
		}
	}
	waited := len(stats) > 0
	for _, st := range stats {
		p.Slots += int(st.RunningMax)
		waited = waited && st.WaitingMax > 0
	}
	if p.Slots > 0 {
		p.SlotsFrom, p.AtLeast = "the server's running count while requests waited", !waited
		if !waited {
			p.SlotsFrom = fmt.Sprintf("the server's running count in a burst of %d; none waited", probeBurst)
		}
	}
	if userMax > 0 && (p.Slots == 0 || userMax < p.Slots) {
		p.Slots, p.SlotsFrom, p.AtLeast = userMax, "--max-concurrency", false
	}
	p.Seconds = time.Since(begin).Seconds()
	return p, nil
}
