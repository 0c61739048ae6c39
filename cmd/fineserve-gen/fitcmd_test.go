package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/parametric"
)

// FineServe's Dense_30to100B replay trace, gzipped (read as --mode replay
// reads it).
const fitTrace = "../../pkg/replay/testdata/fineserve_Dense_30to100B.csv.gz"

// TestFitCommand: fit writes FineServe-format files that --mode parametric
// reads, and the generated schedule has the trace's window counts (within
// the z bound the package tests assert; here: the totals and the count of
// windows).
func TestFitCommand(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "d30")
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"fit", fitTrace, "-o", prefix, "--method", "mle"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	for _, want := range []string{"requests: 21116", "96 of 5m0s", "maximum likelihood", "nb_mu", "partial window"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "skipped 6350 unusable row(s)") {
		t.Errorf("skipped rows not reported:\n%s", errb.String())
	}
	gamma := prefix + "_gamma_5min.csv"
	for _, f := range []string{gamma, prefix + "_nb.json", prefix + "_fit.txt"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	// Generate one pass from the fit, as a user would.
	sched := filepath.Join(dir, "s.csv")
	errb.Reset()
	code = dispatch(context.Background(), []string{"--mode", "parametric", "--gamma-params-csv", gamma,
		"--parametric-nb-json", prefix + "_nb.json", "--seed", "3", "--dry-run", "--schedule-out", sched}, &out, &errb)
	if code != exitOK {
		t.Fatalf("generation from the fit: exit %d\n%s", code, errb.String())
	}
	f, err := os.Open(sched)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := arrival.ReadCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	// 21,116 requests in the trace; one pass of 96 full windows adds the
	// rest of the last, partial one (about 2 of its 5 minutes).
	if n := len(rows); n < 20700 || n > 21700 {
		t.Errorf("%d requests generated from the fit of 21,116", n)
	}
	if last := rows[len(rows)-1].At.Hours(); last < 7.9 || last >= 8 {
		t.Errorf("last request at %.2f h, want one pass of 96 windows (8 h)", last)
	}
	tb, err := parametric.ReadGammaCSV(mustOpen(t, gamma), gamma, parametric.Columns{})
	if err != nil || len(tb.Rows) != 96 {
		t.Fatalf("fitted table: %v", err)
	}

	// Bad input is a usage error naming the problem.
	for _, args := range [][]string{
		{"fit"},
		{"fit", fitTrace, "--method", "bayes"},
		{"fit", fitTrace, "--burst-width", "-1ms"},
		{"fit", filepath.Join(dir, "missing.csv")},
		{"fit", fitTrace, "--gamma-on", "bursts", "--burst-width", "0"},
	} {
		errb.Reset()
		if code := dispatch(context.Background(), args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "fineserve-gen fit: ") {
			t.Errorf("%v: exit %d, %q", args, code, errb.String())
		}
	}
}

func mustOpen(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
