package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
)

// runSeries makes a run file's series: one run a value of its flag, each
// the command line (args) plus --FLAG VALUE, with its own output files
// (seriesPath), in the order the file lists them; then the comparison of
// their summaries, as fineserve-gen report makes it — its table, and at
// --report-html's own path its page. The exit code is the first run's
// that was not 0; a stopped run ends the series.
func runSeries(ctx context.Context, args []string, o *options.Options, s *runfile.Series, stdout, stderr io.Writer) int {
	scratch := ""
	if o.SummaryJSON == "" { // the comparison reads every run's summary
		dir, err := os.MkdirTemp("", "fineserve-gen-series-")
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen: series: %v\n", err)
			return exitFailure
		}
		defer os.RemoveAll(dir)
		scratch = dir
	}
	code := exitOK
	var runs []*report.Data
	for i, v := range s.Values {
		runArgs := append(slices.Clone(args), "--"+s.Flag, v)
		sum := ""
		o.EachOutput(func(flag string, _ options.OutputKind, path *string) {
			if *path == "" || *path == "-" {
				return
			}
			p := seriesPath(*path, s.Flag, v)
			runArgs = append(runArgs, flag, p)
			if flag == "--summary-json" {
				sum = p
			}
		})
		if sum == "" {
			sum = filepath.Join(scratch, fmt.Sprintf("summary-%d.json", i))
			runArgs = append(runArgs, "--summary-json", sum)
		}
		fmt.Fprintf(stderr, "series: run %d of %d: --%s %s\n", i+1, len(s.Values), s.Flag, v)
		c := runCommand(ctx, runArgs, stdout, stderr)
		if c != exitOK && code == exitOK {
			code = c
		}
		if ctx.Err() != nil || c == exitUsage || c == exitInterrupted {
			return code
		}
		d, err := report.Load(sum, report.LoadOptions{})
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen: series: run %d: %v\n", i+1, err)
			continue
		}
		d.Label = s.Flag + "=" + v
		runs = append(runs, d)
	}
	if len(runs) < 2 {
		return code
	}
	outs := []report.Output{{Name: "the series' comparison (standard output)", Write: func(w io.Writer) error { return report.WriteCompareTable(w, runs) }}}
	if p := o.Observe.ReportHTML; p != "" {
		outs = append(outs, report.Output{Name: "--report-html " + p, Path: p, Write: func(w io.Writer) error { return report.WriteCompareHTML(w, runs) }})
	}
	fmt.Fprintf(stdout, "\nSeries of %d runs over --%s\n", len(runs), s.Flag)
	if err := report.WriteOutputs(stdout, outs...); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen: series: %v\n", err)
		if code == exitOK {
			code = exitFailure
		}
	}
	return code
}

// seriesErrors checks every run of file's series as it will run — the
// command line args (which name file) with --FLAG VALUE, parsed and
// validated — before the first sends anything; extra adds a command's own
// flags (nil: run's alone). Each problem says which run it is of, at the
// file's line of the flag it names (the series' line for the series'
// flag).
func seriesErrors(args []string, file *runfile.File, extra func(*pflag.FlagSet)) []error {
	s := file.Series
	var errs []error
	for _, v := range s.Values {
		o := options.Defaults()
		var prof profiles
		_, vf, verrs, _, ok := parseRunFlags(append(slices.Clone(args), "--"+s.Flag, v), &o, &prof, extra, "", io.Discard, io.Discard)
		if !ok { // args parsed already: a value the flag refuses
			verrs = []error{fmt.Errorf("--%s %q: not a value of the flag", s.Flag, v)}
		} else if err := o.Validate(); err != nil {
			verrs = append(verrs, err)
		}
		at := &runfile.File{Path: file.Path, Lines: map[string]int{s.Flag: s.Line}}
		if vf != nil {
			maps.Copy(at.Lines, vf.Lines)
			at.Lines[s.Flag] = s.Line
		}
		for _, err := range appendLeaves(nil, errors.Join(verrs...)) {
			if fe, ok := at.Locate(err).(*runfile.Error); ok {
				errs = append(errs, &runfile.Error{Path: fe.Path, Line: fe.Line, Err: fmt.Errorf("the run of --%s %s: %w", s.Flag, v, fe.Err)})
			} else {
				errs = append(errs, fmt.Errorf("the run of --%s %s: %w", s.Flag, v, err))
			}
		}
	}
	return errs
}

// seriesPath is an output's path for the run of one value: the flag and
// the value put before the extension ("out/summary.json", request-rate,
// 20 → "out/summary.request-rate-20.json"), the value's characters other
// than letters, digits, '.' and '-' written as '_'.
func seriesPath(path, flag, value string) string {
	ext := filepath.Ext(path)
	safe := strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, value)
	return strings.TrimSuffix(path, ext) + "." + flag + "-" + safe + ext
}
