package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

const reportUsage = `Usage:
  fineserve-gen report RESULTS.jsonl|SUMMARY.json [-o REPORT.html] [--summary SUMMARY.json] [--benchmark-report FILE]
  fineserve-gen report A.json B.json [C.json…] [-o COMPARE.html]
  fineserve-gen report SWEEP.json [-o SWEEP.html]

With one file, prints the run's result table and, with -o, writes its HTML
report: from per-request records (--results-jsonl) every plot is drawn; from
a summary (--summary-json) the windows and distributions it holds. With
several files, compares the runs side by side (figures, differences to the
first, overlaid CDFs). A sweep's --sweep-json prints its table of steps and
answer and, with -o, writes its report. --benchmark-report writes one run as
an llm-d Benchmark Report v0.2.1 (YAML; JSON when FILE ends in .json).

`

// The benchmark report names the tool's version.
func init() { report.ToolVersion = version }

// reportCommand builds an HTML report (or a comparison) offline from the
// files a run wrote.
func reportCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("report")
	out := fs.StringP("output", "o", "", "write the HTML report (or comparison) to this file")
	summary := fs.String("summary", "", "the run's summary JSON, to go with a results JSONL (windows, server metrics, command line, seed)")
	labels := fs.StringArray("label", nil, "name of each run in a comparison, in file order (repeatable; default: file names)")
	benchReport := fs.String("benchmark-report", "", "write the run as an llm-d Benchmark Report v0.2.1 (YAML; JSON when the name ends in .json)")
	slo := metrics.NoSLO
	fs.Var(&sloValue{slo: &slo}, "goodput", "compute goodput from per-request records: ttft:MS tpot:MS e2el:MS")
	if err := parseFlags(fs, joinGoodputArgs(args)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "%s%s", reportUsage, fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(stderr, "fineserve-gen report: %v\n%s", err, reportUsage)
		return exitUsage
	}
	files := fs.Args()
	switch {
	case len(files) == 0:
		fmt.Fprintf(stderr, "fineserve-gen report: no file given\n%s", reportUsage)
		return exitUsage
	case len(files) > 1 && *summary != "":
		fmt.Fprintln(stderr, "fineserve-gen report: --summary goes with a single results file")
		return exitUsage
	case *benchReport != "" && (len(files) > 1 || isSweepJSON(files[0])):
		fmt.Fprintln(stderr, "fineserve-gen report: --benchmark-report writes one run: give its summary (or records); a sweep's steps each have theirs (run sweep with --benchmark-report)")
		return exitUsage
	}
	if len(files) == 1 && *summary == "" && isSweepJSON(files[0]) {
		return reportSweep(files[0], *out, stdout, stderr) // sweepcmd.go
	}
	opt := report.LoadOptions{SLO: slo}
	runs := make([]*report.Data, 0, len(files))
	for i, f := range files {
		d, err := report.Load(f, opt)
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen report: %s\n", termsafe.Lines(err.Error()))
			return exitFailure
		}
		if i < len(*labels) {
			d.Label = (*labels)[i]
		}
		runs = append(runs, d)
	}
	if *summary != "" {
		s, err := report.Load(*summary, report.LoadOptions{})
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen report: --summary: %v\n", err)
			return exitFailure
		}
		if runs[0].Series == nil {
			fmt.Fprintf(stderr, "fineserve-gen report: --summary goes with a results JSONL; %s is a summary\n", files[0])
			return exitUsage
		}
		runs[0] = report.Merge(s, runs[0])
	}
	// One run: its table (as after the run) and report; several: the
	// comparison's.
	var outs []report.Output
	if len(runs) == 1 {
		run := runs[0]
		outs = report.SummaryOutputs(run.Summary, report.SummaryPaths{BenchmarkReport: *benchReport, ReportHTML: *out, HTML: func() *report.Data { return run }})
	} else {
		outs = append(outs, report.Output{Name: "the comparison (standard output)", Write: func(w io.Writer) error { return report.WriteCompareTable(w, runs) }})
		if *out != "" {
			outs = append(outs, report.Output{Name: "--output " + *out, Path: *out, Write: func(w io.Writer) error { return report.WriteCompareHTML(w, runs) }})
		}
	}
	if err := report.WriteOutputs(stdout, outs...); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen report: %s\n", termsafe.Lines(err.Error()))
		return exitFailure
	}
	if *out != "" {
		fmt.Fprintf(stderr, "report: %s\n", *out)
	}
	return exitOK
}
