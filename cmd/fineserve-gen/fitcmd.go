package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/parametric"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// fitCommand is "fineserve-gen fit TRACE": it fits Gamma windows and an NB
// micro-burst model to a trace and writes them in FineServe's formats, with
// a one-page summary.
func fitCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fit")
	tf := addTraceFlags(fs)
	fs.StringVar(&tf.ro.InputColumn, "input-length-column", "", "input length column (default per format)")
	fs.StringVar(&tf.ro.OutputColumn, "output-length-column", "", "output length column (default per format)")
	windowSec := fs.Float64("parametric-window-seconds", 300, "window length in seconds")
	method := fs.String("method", "moments", "Gamma shape estimator: moments (default) or mle")
	burst := fs.String("burst-width", "1ms", "micro-burst width: a burst is a request and those less than this after it (0: no NB model)")
	gammaOn := fs.String("gamma-on", "requests", "fit Gamma shapes to gaps between requests (to generate without NB) or bursts (to generate with the fitted NB)")
	bounds := fs.Bool("window-bounds", false, "also write window_start_ms,window_end_ms (the last window ends with the trace)")
	maxPairs := fs.Int("max-length-pairs", defaultMaxLengthPairs, "most (input, output) pairs written to PREFIX_lengths.csv: a larger trace's are a seeded uniform sample (0: no lengths file)")
	out := fs.StringP("out", "o", "", "output prefix (default: the trace's name, in the current directory)")
	quiet := fs.Bool("quiet", false, "do not print the summary")
	if code, done := parseSubcommand(fs, args, "fit", "Usage: fineserve-gen fit TRACE [flags]\n\n"+
		"Fits per-window Gamma parameters and a 1 ms NB micro-burst model to a trace (any format\n"+
		"--mode replay reads) and writes PREFIX_gamma_<window>.csv, PREFIX_nb.json, PREFIX_lengths.csv\n"+
		"and PREFIX_fit.txt for --gamma-params-csv, --parametric-nb-json and --request-lengths-csv.\n", stdout, stderr); done {
		return code
	}
	fail := func(err error) int { return usageFail(stderr, "fit", err) }
	if fs.NArg() != 1 {
		return fail(errors.New("want exactly one trace file: fineserve-gen fit TRACE [flags]"))
	}
	trace := fs.Arg(0)
	errs := tf.check()
	var err error
	if *maxPairs < 0 {
		errs = append(errs, fmt.Errorf("--max-length-pairs %d: want 0 or more", *maxPairs))
	}
	o := parametric.FitOptions{Window: time.Duration(math.Round(*windowSec * 1e9))}
	if !(*windowSec >= 0.001) || *windowSec > 1e9 {
		errs = append(errs, fmt.Errorf("--parametric-window-seconds %g: want at least 0.001", *windowSec))
	}
	if o.Method, err = parametric.ParseFitMethod(*method); err != nil {
		errs = append(errs, fmt.Errorf("--method: %w", err))
	}
	if d, err := parseBurstWidth(*burst); err != nil {
		errs = append(errs, fmt.Errorf("--burst-width: %w", err))
	} else {
		o.BurstBin = d
	}
	switch *gammaOn {
	case "requests":
	case "bursts":
		o.GammaOnBursts = true
		if o.BurstBin < 0 {
			errs = append(errs, errors.New("--gamma-on bursts needs a --burst-width"))
		}
	default:
		errs = append(errs, fmt.Errorf("--gamma-on %q: want requests or bursts", *gammaOn))
	}
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}

	tr, err := tf.load(trace, stderr)
	if err != nil {
		return fail(err)
	}
	times := make([]time.Duration, tr.Len())
	for i := range times {
		times[i] = tr.At(i)
	}
	fit, err := parametric.FitTimes(times, o)
	if err != nil {
		return fail(fmt.Errorf("%s: %w", trace, err))
	}

	prefix := *out
	if prefix == "" {
		base := filepath.Base(trace)
		for _, ext := range []string{".gz", ".csv", ".jsonl", ".ndjson", ".tsv", ".json"} {
			base = strings.TrimSuffix(base, ext)
		}
		prefix = base
	}
	var summary bytes.Buffer
	if err := fit.WriteSummary(&summary, trace); err != nil {
		return fitFail(stderr, err)
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{prefix + "_gamma_" + windowLabel(o.Window) + ".csv", func(w io.Writer) error { return parametric.WriteGammaCSV(w, fit.Table(*bounds)) }},
		{prefix + "_nb.json", func(w io.Writer) error { return parametric.WriteNBJSON(w, fit.NBFile) }},
		{prefix + "_fit.txt", func(w io.Writer) error { _, err := w.Write(summary.Bytes()); return err }},
	}
	if fit.NB == nil {
		files = append(files[:1], files[2])
	}
	// The joint (input, output) lengths, as the replayer sends them, so that
	// generating from the fit keeps the trace's request sizes.
	lengthsFile := ""
	switch {
	case *maxPairs == 0:
	case !tr.HasInput || !tr.HasOutput:
		fmt.Fprintf(stderr, "fit: %s gives no input and output lengths: no lengths file\n", trace)
	default:
		lengthsFile = prefix + "_lengths.csv"
		pairs := parametric.SampleLengthPairs(tr.Len(), *maxPairs, lengthsSeed, func(i int) [2]int {
			return [2]int{tr.InputTokens(i), tr.OutputTokens(i)}
		})
		if len(pairs) < tr.Len() {
			fmt.Fprintf(stderr, "fit: %s: a uniform sample of %d of the trace's %d length pairs (--max-length-pairs)\n", lengthsFile, len(pairs), tr.Len())
		}
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{lengthsFile, func(w io.Writer) error { return parametric.WriteLengthPairs(w, pairs) }})
	}
	for _, f := range files {
		if err := report.WriteFileAtomic(f.name, f.write); err != nil {
			return fitFail(stderr, fmt.Errorf("%s: %w", f.name, err))
		}
		fmt.Fprintf(stderr, "fit: wrote %s\n", f.name)
	}
	if !*quiet {
		stdout.Write(summary.Bytes())
	}
	gammaFile := files[0].name
	hint := "fineserve-gen --mode parametric --gamma-params-csv " + gammaFile
	if !*bounds && o.Window != 300*time.Second {
		hint += fmt.Sprintf(" --parametric-window-seconds %g", o.Window.Seconds())
	}
	if o.GammaOnBursts {
		hint += " --parametric-nb-json " + prefix + "_nb.json"
	}
	if lengthsFile != "" {
		hint += " --request-lengths-csv " + lengthsFile
	}
	fmt.Fprintf(stderr, "fit: generate from it with: %s …\n", hint)
	return exitOK
}

// defaultMaxLengthPairs bounds PREFIX_lengths.csv (at most about 1.5 MB);
// lengthsSeed seeds the sample of a larger trace's pairs, so the same trace
// gives the same file.
const (
	defaultMaxLengthPairs = 100_000
	lengthsSeed           = 1
)

func fitFail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "fineserve-gen fit: %s\n", termsafe.Lines(err.Error()))
	return exitFailure
}

// parseBurstWidth parses --burst-width: a duration ("1ms"); 0 means no NB
// model (returned as −1).
func parseBurstWidth(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if s == "0" {
		d, err = 0, nil
	}
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q: want a duration such as 1ms, or 0", s)
	case d < 0 || d > time.Minute:
		return 0, fmt.Errorf("%q: want 0 to 1m", s)
	case d == 0:
		return -1, nil
	}
	return d, nil
}

// windowLabel names a window length as FineServe's files do ("5min").
func windowLabel(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dmin", d/time.Minute)
	}
	return strings.ReplaceAll(fmt.Sprintf("%gs", d.Seconds()), ".", "p")
}
