package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/merge"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

const mergeUsage = `Usage:
  fineserve-gen merge SUMMARY.json… [-o MERGED.json]

Merges the summaries of the copies of one run (--shard I/N, docs/SCALE_OUT.md)
into one: percentiles from merged histograms, counts and tokens added,
throughputs over the union's duration, windows combined, goodput and the
breakdowns merged. Prints the result table; -o writes the merged summary,
which "fineserve-gen report" renders and "fineserve-gen merge" merges again.

A file may be a --summary-json file, a --output-file (its last line), or a
log holding the summary line (kubectl logs of a copy run with
--output-file /dev/stdout). A pattern (shard-*.json) is expanded when no
file has that name. Disagreements (schedule hash, seed, start time…) and
missing or repeated shards are warnings; --strict makes them errors.

`

// maxSummaryFile bounds one file merge reads.
const maxSummaryFile = 1 << 30

// mergeCommand merges the summaries of a sharded run.
func mergeCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("merge")
	out := fs.StringP("output", "o", "", "write the merged summary (JSON) to this file")
	strict := fs.Bool("strict", false, "fail (exit 2, nothing written) when the summaries disagree or a shard is missing or repeated")
	quiet := fs.Bool("quiet", false, "print warnings only, not the notes on how figures were combined")
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "%s%s", mergeUsage, fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(stderr, "fineserve-gen merge: %v\n%s", err, mergeUsage)
		return exitUsage
	}
	files, err := expandFiles(fs.Args())
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen merge: %v\n", err)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintf(stderr, "fineserve-gen merge: no summary given\n%s", mergeUsage)
		return exitUsage
	}
	ins := make([]merge.Input, 0, len(files))
	for _, f := range files {
		s, err := readMergeInput(f)
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen merge: %s: %s\n", f, termsafe.Lines(err.Error()))
			return exitUsage
		}
		ins = append(ins, merge.Input{Name: f, Summary: s})
	}
	res, err := merge.Summaries(ins)
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen merge: %v\n", err)
		return exitUsage
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", termsafe.String(w)) // from the summaries' text
	}
	if *strict && len(res.Warnings) > 0 {
		fmt.Fprintf(stderr, "fineserve-gen merge: %d warning(s) with --strict: nothing written\n", len(res.Warnings))
		return exitUsage
	}
	if !*quiet {
		for _, n := range res.Notes {
			fmt.Fprintf(stderr, "merge: %s\n", termsafe.String(n))
		}
	}
	sum := res.Summary
	sum.Command = commandLine(append([]string{"merge"}, args...))
	if err := report.WriteOutputs(stdout, report.SummaryOutputs(sum, report.SummaryPaths{SummaryJSON: *out})...); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen merge: %v\n", err)
		return exitFailure
	}
	if *out != "" {
		fmt.Fprintf(stderr, "merged %d summaries into %s\n", len(files), *out)
	}
	return exitOK
}

// expandFiles returns args with each pattern that names no file replaced
// by its matches (so a container without a shell can say shard-*.json).
func expandFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if _, err := os.Stat(a); err == nil || !strings.ContainsAny(a, "*?[") {
			out = append(out, a)
			continue
		}
		m, err := filepath.Glob(a)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file matches", a)
		}
		out = append(out, m...)
	}
	return out, nil
}

// readMergeInput reads a summary to merge: a summary JSON (the last of an
// --output-file), else the last line of a log that is a summary with a
// merge state.
func readMergeInput(path string) (*metrics.Summary, error) {
	b, err := bounded.ReadFile(path, maxSummaryFile)
	var tl *bounded.TooLarge
	if errors.As(err, &tl) {
		return nil, fmt.Errorf("%w: not a summary", err)
	}
	if err != nil {
		return nil, err
	}
	s, _, jerr := report.ReadSummary(bytes.NewReader(b))
	if jerr == nil {
		return s, nil
	}
	// A log: the table, notes, and the summary on one line.
	var found *metrics.Summary
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 1<<20), maxSummaryFile)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(`"`+metrics.KeyMergeState+`"`)) {
			continue
		}
		var s metrics.Summary
		if err := json.Unmarshal(line, &s); err == nil {
			found = &s
		}
	}
	if found == nil {
		return nil, fmt.Errorf("not a summary (%v), and no line of it is one with a %s", jerr, metrics.KeyMergeState)
	}
	return found, nil
}
