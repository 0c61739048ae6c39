package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/experiment"
	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

// exitThreshold is the exit code of a run that breached a --threshold,
// and of compare on a regression (k6's code for a failed threshold).
const exitThreshold = 99

// runExperiment carries out o: one run, or with --repeat N up to N runs
// and their intervals; then judges the thresholds. It returns the exit
// code. A problem of the settings of file (the run file read; nil: none)
// is given its line.
func runExperiment(ctx context.Context, o *options.Options, file *runfile.File, stdio runner.IO, stderr io.Writer) int {
	var sum *metrics.Summary
	var err error
	if o.Experiment.Repeat > 1 {
		sum, err = runRepeats(ctx, o, stdio)
	} else {
		sum, err = launch.Run(ctx, *o, stdio)
	}
	var ue *options.UsageError
	if errors.As(err, &ue) {
		err = locate(file, err)
	}
	code := outcome(ctx, o, sum, err, stderr)
	return judgeThresholds(o, sum, code, stderr)
}

// judgeThresholds prints each --threshold's verdict on sum, one a line,
// and returns exitThreshold when one is breached and the run otherwise
// ended with exitOK or exitBudget (a run that failed, was stopped or
// found a bug keeps its code; no summary, no verdicts).
func judgeThresholds(o *options.Options, sum *metrics.Summary, code int, stderr io.Writer) int {
	if len(o.Experiment.Thresholds) == 0 || sum == nil || (code != exitOK && code != exitBudget) {
		return code
	}
	x, err := o.Experiment.Parse()
	if err != nil { // checked before the run
		return exitCode(&options.UsageError{Err: err}, stderr)
	}
	vs, err := experiment.Judge(x.Thresholds, sum)
	if err != nil {
		return exitCode(err, stderr)
	}
	breached := false
	for _, v := range vs {
		fmt.Fprintf(stderr, "fineserve-gen: %s\n", termsafe.Lines(v.Text()))
		breached = breached || !v.Pass
	}
	if breached {
		return exitThreshold
	}
	return code
}

// runRepeats makes the runs of --repeat (stopping early by
// --until-converged), waiting between runs for the server to be idle as a
// sweep does between its steps, and returns the repeated run's summary:
// the last run's, its headline figures replaced by their means over the
// runs, with the repeats section; it prints its table and writes its
// outputs. A run that fails ends the series with its error; a signal
// during a run or between two ends it too, and the finished runs are
// combined and written, marked interrupted.
func runRepeats(ctx context.Context, o *options.Options, stdio runner.IO) (*metrics.Summary, error) {
	x, err := o.Experiment.Parse()
	if err != nil {
		return nil, options.Usage(err)
	}
	// The repeated run's own outputs (its summary, report, intervals) are
	// checked before the first run sends anything, as a run's are.
	if err := options.CheckOutputs(o.Outputs()); err != nil {
		return nil, options.Usage(err)
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stdio.Err, format+"\n", a...) }
	base := uint64(o.Seed)
	if o.Seed == -1 {
		base = uint64(time.Now().UnixNano()) & (1<<53 - 1)
		logf("seed: %d (pass --seed %d to repeat these runs)", base, base)
	}
	sf := defaultSweepFlags()
	url, ok := o.ServerMetricsTarget()
	if !ok {
		url = ""
	}
	w := &servermetrics.Idle{URL: url, Quiet: sf.idleQuiet, Timeout: sf.idleTimeout, Warnf: func(f string, a ...any) { logf("warning: "+strings.Replace(f, "sweep: ", "repeat: ", 1), a...) }}
	idle := w.Wait
	extra := []string{}
	if x.Converge != nil {
		extra = append(extra, x.Converge.Key)
	}
	for _, t := range x.Thresholds {
		extra = append(extra, t.Key)
	}
	n := o.Experiment.Repeat
	var runs []*metrics.Summary
	var per []metrics.RepeatRun
	converged := false
	for i := 0; i < n; i++ {
		if i > 0 {
			if err := idle(ctx); err != nil {
				break
			}
		}
		ro := runOptions(o, base, i)
		sum, err := launch.Run(ctx, ro, runner.IO{Out: io.Discard, Err: stdio.Err, Abort: stdio.Abort, Hurry: stdio.Hurry})
		if err != nil || sum == nil || sum.Interrupted {
			if len(runs) == 0 || ctx.Err() == nil {
				return sum, err // nothing finished to combine, or a run that failed
			}
			// Stopped during a run: the finished runs are combined and
			// written, marked interrupted; the stopped run keeps its own
			// files.
			logf("stopped during run %d/%d: the repeated run's summary combines the %d finished run(s)", i+1, n, len(runs))
			break
		}
		runs = append(runs, sum)
		rr := metrics.RepeatRun{Seed: sum.Seed, SummaryPath: ro.SummaryJSON}
		if ro.SummaryJSON == "" {
			rr.Summary = sum
		}
		per = append(per, rr)
		logf("run %d/%d (seed %d): %s", i+1, n, sum.Seed, runLine(sum, x))
		if x.Converge != nil {
			figs, err := experiment.Aggregate(runs, extra...)
			if err != nil {
				return nil, err
			}
			if f, ok := figs[x.Converge.Key]; ok && x.Converge.Done(f.Values) {
				converged = true
				logf("converged: %s = %s ± %s after %d runs (within %s)", x.Converge.Key, fmtFig(f.Mean), fmtFig(f.HalfWidth), len(runs), strings.SplitN(x.Converge.Text, ":", 2)[1])
				break
			}
		}
	}
	if len(runs) == 0 {
		return nil, ctx.Err()
	}
	figs, err := experiment.Aggregate(runs, extra...)
	if err != nil {
		return nil, err
	}
	agg, err := withMeans(runs[len(runs)-1], figs)
	if err != nil {
		return nil, err
	}
	agg.Seed = base
	// A signal between runs ends the series: what it has is written,
	// marked interrupted.
	agg.Interrupted = agg.Interrupted || ctx.Err() != nil
	agg.Repeats = &metrics.RepeatsSummary{Runs: len(runs), Requested: n, Confidence: experiment.Confidence, WideShare: experiment.WideShare,
		UntilConverged: o.Experiment.UntilConverged, Figures: figs, PerRun: per}
	if x.Converge != nil {
		agg.Repeats.Converged = &converged
	}
	if len(x.Thresholds) > 0 {
		vs, err := experiment.Judge(x.Thresholds, agg)
		if err != nil {
			return nil, err
		}
		agg.Thresholds = experiment.Verdicts(vs)
	}
	if err := repeatOutputs(o, agg, stdio.Out); err != nil {
		return agg, err
	}
	return agg, nil
}

// runOptions are the options of run i (from 0) of a repeated run of
// base seed: its seed (experiment.RunSeed), its own files beside the
// repeated run's (sum.json → sum-run01.json: every per-request output, its
// summary and benchmark report), no table, report, line or intervals of
// its own (the repeated run writes them).
func runOptions(o *options.Options, base uint64, i int) options.Options {
	ro := *o
	ro.Seed = int64(experiment.RunSeed(base, i))
	ro.Experiment.Thresholds = nil // judged on the repeated run, not on each
	ro.Quiet = true
	ro.DisableProgress = true
	ro.EachOutput(func(flag string, kind options.OutputKind, path *string) {
		switch {
		case kind == options.PerRequest, flag == "--summary-json", flag == "--benchmark-report":
			*path = runPath(*path, i) // every run's own
		default:
			*path = "" // the repeated run's: its table, line, report and intervals
		}
	})
	if i > 0 {
		ro.WarmupRequests = 0 // the server is warm
	}
	return ro
}

// runPath names run i's copy of an output file: sum.json → sum-run01.json.
func runPath(path string, i int) string {
	if path == "" || path == "-" {
		return ""
	}
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + fmt.Sprintf("-run%02d", i+1) + ext
}

// runLine is a run's line of progress: its throughput, TTFT and the
// figures judged.
func runLine(s *metrics.Summary, x options.Experiment) string {
	v, err := experiment.Values(s)
	if err != nil {
		return err.Error()
	}
	keys := []string{"request_throughput", "output_throughput", "mean_ttft_ms", "p99_ttft_ms"}
	if x.Converge != nil {
		keys = append(keys, x.Converge.Key)
	}
	var parts []string
	for _, k := range keys {
		if f, ok := v[k]; ok && !slices.Contains(parts, k+" "+fmtFig(f)) {
			parts = append(parts, k+" "+fmtFig(f))
		}
	}
	return strings.Join(parts, ", ")
}

func fmtFig(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// withMeans returns a copy of s whose figures under figs' keys are their
// means over the runs.
func withMeans(s *metrics.Summary, figs map[string]metrics.RepeatFigure) (*metrics.Summary, error) {
	out := *s
	// The sections a figure may be set in are copied: the last run's
	// summary keeps its own.
	if s.Goodput != nil {
		g := *s.Goodput
		out.Goodput = &g
	}
	if s.ClientCPU != nil {
		c := *s.ClientCPU
		out.ClientCPU = &c
	}
	if s.Saturation != nil {
		sat := *s.Saturation
		if sat.SendRate != nil {
			r := *sat.SendRate
			sat.SendRate = &r
		}
		out.Saturation = &sat
	}
	for k, f := range figs {
		if _, ok := s.Figures()[k]; ok {
			out.SetFigure(k, f.Mean)
		}
	}
	out.MergeState = nil // the runs' states do not add up to one run's
	return &out, nil
}

// repeatOutputs prints the repeated run's table and writes its summary,
// line, report and --repeats-csv.
func repeatOutputs(o *options.Options, agg *metrics.Summary, stdout io.Writer) error {
	outs := report.SummaryOutputs(agg, report.SummaryPaths{SummaryJSON: o.SummaryJSON, OutputFile: o.OutputFile,
		ReportHTML: o.Observe.ReportHTML, HTML: func() *report.Data { return &report.Data{Summary: agg, Source: "repeated run"} }})
	if err := report.WriteOutputs(stdout, outs...); err != nil {
		return err
	}
	if p := o.Experiment.RepeatsCSV; p != "" {
		return writeRepeatsCSV(p, agg.Repeats)
	}
	return nil
}

// writeRepeatsCSV writes the intervals: a row a figure (figure, mean,
// half_width, n, wide, run1…).
func writeRepeatsCSV(path string, r *metrics.RepeatsSummary) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--repeats-csv: %w", err)
	}
	w := csv.NewWriter(f)
	head := []string{"figure", "mean", "half_width", "n", "wide"}
	for i := range r.Runs {
		head = append(head, fmt.Sprintf("run%d", i+1))
	}
	_ = w.Write(head)
	keys := make([]string, 0, len(r.Figures))
	for k := range r.Figures {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, k := range keys {
		fg := r.Figures[k]
		row := []string{k, g(fg.Mean), g(fg.HalfWidth), strconv.Itoa(fg.N), strconv.FormatBool(fg.Wide)}
		for _, v := range fg.Values {
			row = append(row, g(v))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("--repeats-csv: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--repeats-csv: %w", err)
	}
	return nil
}
