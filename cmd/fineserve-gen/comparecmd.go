package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/experiment"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

const compareUsage = `Usage:
  fineserve-gen compare BASE.json NEW.json [--fail-on KEY:+PCT%]…

Prints the differences of two runs' headline figures (their summaries,
--summary-json) and gates on them, for CI: --fail-on p99_ttft_ms:+10%
fails when NEW's p99 TTFT is more than 10 % above BASE's, --fail-on
output_throughput:-5% when NEW's output throughput is more than 5 % below.
When both summaries are of repeated runs (--repeat), a figure's values over
the runs are compared by Welch's t-test, and a change beyond the gate fails
only when it is significant (p < 0.05): noise is not a regression
(docs/EXPERIMENTS.md). Exit 99 on a regression, 2 on bad input.

fineserve-gen report BASE.json NEW.json -o cmp.html draws the comparison.

`

func compareCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("compare")
	failOn := fs.StringArray("fail-on", nil, "KEY:+PCT% or KEY:-PCT%: a regression when the summary key grows (+) or shrinks (−) by more than PCT % (repeatable)")
	if code, done := parseSubcommand(fs, args, "compare", compareUsage, stdout, stderr); done {
		return code
	}
	var errs []error
	if fs.NArg() != 2 {
		errs = append(errs, fmt.Errorf("want two summaries, BASE.json NEW.json; got %d", fs.NArg()))
	}
	var gates []experiment.FailOn
	for _, s := range *failOn {
		g, err := experiment.ParseFailOn(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gates = append(gates, g)
	}
	var sums [2]*metrics.Summary
	for i := 0; i < fs.NArg() && i < 2; i++ {
		s, err := readCompareSummary(fs.Arg(i))
		if err != nil {
			errs = append(errs, err)
		}
		sums[i] = s
	}
	if len(errs) > 0 {
		return usageFail(stderr, "compare", errs...)
	}
	diffs, missing, err := experiment.Compare(sums[0], sums[1], gates)
	if err != nil {
		return usageFail(stderr, "compare", err)
	}
	if err := experiment.WriteCompare(stdout, diffs); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen compare: %v\n", err)
		return exitFailure
	}
	for _, r := range []*metrics.Summary{sums[0], sums[1]} {
		if r.Repeats == nil && len(gates) > 0 {
			fmt.Fprintln(stderr, "fineserve-gen compare: one run a side: the gates judge the difference alone (run both with --repeat to test it against the runs' noise)")
			break
		}
	}
	code := exitOK
	for _, k := range missing {
		fmt.Fprintf(stderr, "fineserve-gen compare: REGRESSION: %s is missing from a summary\n", termsafe.String(k))
		code = exitThreshold
	}
	for _, d := range diffs {
		if d.Regression {
			fmt.Fprintf(stderr, "fineserve-gen compare: REGRESSION: %s %s (%s → %s, %s)\n", d.Key, d.Gate.Text, fmtFig(d.Base), fmtFig(d.New), changeText(d))
			code = exitThreshold
		}
	}
	return code
}

func changeText(d experiment.Diff) string {
	s := fmt.Sprintf("%+.1f %%", 100*d.Change)
	if d.Tested {
		s += fmt.Sprintf(", Welch p %.3f", d.P)
	}
	return s
}

// readCompareSummary reads a summary for compare (a --summary-json file
// or an --output-file, its last line).
func readCompareSummary(path string) (*metrics.Summary, error) {
	b, err := bounded.ReadFile(path, maxSummaryFile)
	if err != nil {
		return nil, err
	}
	s, _, err := report.ReadSummary(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
