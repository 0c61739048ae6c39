package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/parametric"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
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
	out, errb := mustRun(t, "fit", fitTrace, "-o", prefix, "--method", "mle")
	for _, want := range []string{"requests: 21116", "96 of 5m0s", "maximum likelihood", "nb_mu", "partial window"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errb, "skipped 6350 unusable row(s)") {
		t.Errorf("skipped rows not reported:\n%s", errb)
	}
	gamma := prefix + "_gamma_5min.csv"
	for _, f := range []string{gamma, prefix + "_nb.json", prefix + "_fit.txt"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	// Generate one pass from the fit, as a user would.
	sched := filepath.Join(dir, "s.csv")
	mustRun(t, "--mode", "parametric", "--gamma-params-csv", gamma,
		"--parametric-nb-json", prefix+"_nb.json", "--seed", "3", "--dry-run", "--schedule-out", sched)
	rows, err := arrival.ReadCSV(testenv.Open(t, sched))
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
	tb, err := parametric.ReadGammaCSV(testenv.Open(t, gamma), gamma, parametric.Columns{})
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
		wantUsage(t, args, "fineserve-gen fit: ")
	}
}

// TestFitLengthsReproduceTrace: fit writes the trace's joint (input,
// output) lengths and suggests --request-lengths-csv, so the suggested
// parametric command generates requests of the trace's sizes (not the
// 1024/128 defaults): every generated pair is one the trace has, and the
// mean input and output lengths are the trace's within 5 standard errors.
// A --max-length-pairs bound writes a seeded sample of that many pairs.
func TestFitLengthsReproduceTrace(t *testing.T) {
	const trace = "../../pkg/replay/testdata/azure2023_code.csv.gz"
	dir := t.TempDir()
	prefix := filepath.Join(dir, "az")
	_, errb := mustRun(t, "fit", trace, "-o", prefix, "--parametric-window-seconds", "60", "--quiet")
	tr, err := replay.Load(trace, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	had := map[[2]int]bool{}
	var traceIn, traceOut []float64
	for i := range tr.Len() {
		had[[2]int{tr.InputTokens(i), tr.OutputTokens(i)}] = true
		traceIn = append(traceIn, float64(tr.InputTokens(i)))
		traceOut = append(traceOut, float64(tr.OutputTokens(i)))
	}
	lp, err := parametric.ReadLengthPairs(testenv.Open(t, prefix+"_lengths.csv"), "az_lengths.csv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Pairs) != tr.Len() || lp.Skipped != 0 {
		t.Errorf("lengths file: %d pairs (%d skipped), want the trace's %d", len(lp.Pairs), lp.Skipped, tr.Len())
	}

	// Run the suggested command, as printed, with --dry-run --schedule-out.
	_, hint, ok := strings.Cut(errb, "generate from it with: fineserve-gen ")
	hint, _, _ = strings.Cut(hint, " …")
	if !ok || !strings.Contains(hint, "--request-lengths-csv "+prefix+"_lengths.csv") {
		t.Fatalf("the suggested command lacks --request-lengths-csv %s_lengths.csv:\n%s", prefix, errb)
	}
	sched := filepath.Join(dir, "s.csv")
	mustRun(t, append(strings.Fields(hint), "--seed", "5", "--dry-run", "--schedule-out", sched)...)
	rows, err := arrival.ReadCSV(testenv.Open(t, sched))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < tr.Len()/2 {
		t.Fatalf("%d requests generated from a fit of %d", len(rows), tr.Len())
	}
	var genIn, genOut []float64
	for _, r := range rows {
		if !had[[2]int{r.InputTokens, r.OutputTokens}] {
			t.Fatalf("request %d: (%d, %d) is no pair of the trace", r.Index, r.InputTokens, r.OutputTokens)
		}
		genIn, genOut = append(genIn, float64(r.InputTokens)), append(genOut, float64(r.OutputTokens))
	}
	for _, c := range []struct {
		what       string
		trace, gen []float64
	}{{"input", traceIn, genIn}, {"output", traceOut, genOut}} {
		m, sd := meanSD(c.trace)
		g, _ := meanSD(c.gen)
		if se := sd / math.Sqrt(float64(len(c.gen))); math.Abs(g-m) > 5*se {
			t.Errorf("%s length: generated mean %.1f, trace mean %.1f (5 SE = %.1f)", c.what, g, m, 5*se)
		}
	}

	// A bound: a seeded sample of that many of the trace's pairs, the same
	// file every time.
	var files [2][]byte
	for i := range files {
		small := filepath.Join(dir, "small"+strconv.Itoa(i))
		_, errb := mustRun(t, "fit", trace, "-o", small, "--max-length-pairs", "500", "--quiet")
		if !strings.Contains(errb, "a uniform sample of 500 of the trace's 8819 length pairs") {
			t.Errorf("the sample is not reported:\n%s", errb)
		}
		files[i] = testenv.ReadFile(t, small+"_lengths.csv")
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("two fits of one trace wrote different length samples")
	}
	lp, err = parametric.ReadLengthPairs(bytes.NewReader(files[0]), "small_lengths.csv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Pairs) != 500 {
		t.Errorf("%d pairs written under --max-length-pairs 500", len(lp.Pairs))
	}
	for _, p := range lp.Pairs {
		if !had[p] {
			t.Fatalf("sampled pair %v is no pair of the trace", p)
		}
	}

	// 0 writes none, and the suggestion does not name one; a negative bound
	// is a usage error.
	none := filepath.Join(dir, "none")
	_, errb = mustRun(t, "fit", trace, "-o", none, "--max-length-pairs", "0", "--quiet")
	if _, err := os.Stat(none + "_lengths.csv"); !os.IsNotExist(err) || strings.Contains(errb, "--request-lengths-csv") {
		t.Errorf("--max-length-pairs 0 wrote or suggested a lengths file: %v\n%s", err, errb)
	}
	wantUsage(t, []string{"fit", trace, "--max-length-pairs", "-1"}, "--max-length-pairs -1")
}

// TestFitWithoutLengths: a trace that gives no lengths (timestamps only)
// gets no lengths file, says so, and the suggestion names none.
func TestFitWithoutLengths(t *testing.T) {
	dir := t.TempDir()
	trace := timesTrace(t, dir, -1)
	prefix := filepath.Join(dir, "t")
	_, errb := mustRun(t, "fit", trace, "-o", prefix, "--timestamp-column", "ts", "--timestamp-unit", "ms", "--quiet")
	if _, err := os.Stat(prefix + "_lengths.csv"); !os.IsNotExist(err) {
		t.Errorf("a lengths file was written for a trace without lengths: %v", err)
	}
	if !strings.Contains(errb, "gives no input and output lengths") || strings.Contains(errb, "--request-lengths-csv") {
		t.Errorf("stderr:\n%s", errb)
	}
}

func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}
