package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// fineServeFlags is every flag of FineServe's Generator.py with a value of
// the right kind (DESIGN.md: a FineServe command line runs unchanged).
var fineServeFlags = []string{
	"--backend", "vllm", "--base-url", "http://127.0.0.1:1", "--host", "127.0.0.1", "--port", "1",
	"--dataset-name", "random", "--dataset-path", "", "--model", "m", "--tokenizer", "meta-llama/x",
	"--num-prompts", "10", "--sharegpt-output-len", "64", "--sharegpt-context-len", "4096",
	"--random-input-len", "100", "--random-output-len", "10", "--random-range-ratio", "0.5",
	"--mode", "poisson", "--request-rate", "inf", "--max-concurrency", "8", "--output-file", "x.jsonl",
	"--disable-tqdm", "--disable-stream", "--seed", "3", "--disable-ignore-eos",
	"--extra-request-body", `{"top_p": 0.9}`, "--apply-chat-template", "--prompt-suffix", "Answer:",
	"--warmup-requests", "0",
	"--model-class", "Dense_10to30B", "--parametric-data-root", "datasets/Parametric",
	"--gamma-params-csv", "g.csv", "--window-start-column", "ws", "--window-end-column", "we",
	"--gamma-shape-column", "shape", "--gamma-scale-column", "scale", "--request-lengths-csv", "l.csv",
	"--parametric-window-seconds", "300", "--parametric-extension-mode", "model_sample",
	"--parametric-jitter-ratio", "0.1", "--parametric-nb-json", "nb.json", "--disable-parametric-nb-lt10b",
	"--request-trace-csv", "t.csv", "--timestamp-column", "ts", "--time-scale", "2",
	"--input-length-column", "in", "--output-length-column", "out",
}

func TestFineServeCommandLineParses(t *testing.T) {
	o := options.Defaults()
	fs, finish := runFlags(&o, &profiles{})
	if err := fs.Parse(fineServeFlags); err != nil {
		t.Fatalf("a FineServe command line did not parse: %v", err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	if o.Stream || o.IgnoreEOS || !math.IsInf(o.RequestRate, 1) || o.MaxConcurrency != 8 || o.Seed != 3 ||
		o.NumPrompts != 10 || !o.NumPromptsSet || o.TimeScale != 2 || o.RandomRangeRatio != 0.5 {
		t.Errorf("options %+v", o)
	}
}

func TestDefaultsAreFineServes(t *testing.T) {
	o := options.Defaults()
	fs, finish := runFlags(&o, &profiles{})
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	finish()
	if o.Backend != "vllm" || o.Host != "127.0.0.1" || o.Port != 8000 || o.Mode != "poisson" ||
		!math.IsInf(o.RequestRate, 1) || o.NumPrompts != 100 || o.Seed != -1 || o.RandomInputLen != 1024 ||
		o.RandomOutputLen != 128 || o.RandomRangeRatio != 0 || !o.Stream || !o.IgnoreEOS || o.WarmupRequests != 1 ||
		o.TimeScale != 1 {
		t.Errorf("defaults %+v", o)
	}
}

func TestFlagValues(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"90", 90 * time.Second, true}, {"0.5", 500 * time.Millisecond, true}, {"1h30m", 90 * time.Minute, true},
		{"-1", 0, false}, {"1e300", 0, false}, {"NaN", 0, false}, {"soon", 0, false}, {"", 0, false}} {
		got, err := parseDuration(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseDuration(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{{"inf", true}, {"12.5", true}, {"0", false}, {"-3", false}, {"nan", false}, {"fast", false}} {
		if _, err := parseRate(tc.in); (err == nil) != tc.ok {
			t.Errorf("parseRate(%q): %v", tc.in, err)
		}
	}
	if i, n, err := parseShard("2/3"); err != nil || i != 2 || n != 3 {
		t.Errorf("parseShard(2/3) = %d, %d, %v", i, n, err)
	}
	for _, bad := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if _, _, err := parseShard(bad); err == nil {
			t.Errorf("parseShard(%q) accepted", bad)
		}
	}
}

// TestUnitValues: the mock's ms and µs flags take a fractional number of
// their unit from 0 to 10⁶ s, print back what they were given, and name
// their unit when they refuse a value.
func TestUnitValues(t *testing.T) {
	for _, tc := range []struct {
		v          func(*time.Duration) unitValue
		in         string
		want       time.Duration
		name, word string
	}{
		{millisValue, "2.5", 2500 * time.Microsecond, "ms", ""},
		{millisValue, "1e9", 1e6 * time.Second, "ms", ""},
		{millisValue, "1.000001e9", 0, "ms", "milliseconds"},
		{millisValue, "-1", 0, "ms", "milliseconds"},
		{microsValue, "2.5", 2500 * time.Nanosecond, "µs", ""},
		{microsValue, "1e12", 1e6 * time.Second, "µs", ""},
		{microsValue, "1.000001e12", 0, "µs", "microseconds"},
		{microsValue, "inf", 0, "µs", "microseconds"},
	} {
		var d time.Duration
		v := tc.v(&d)
		err := v.Set(tc.in)
		switch {
		case v.Type() != tc.name:
			t.Errorf("%q: type %s, want %s", tc.in, v.Type(), tc.name)
		case tc.word != "" && (err == nil || !strings.Contains(err.Error(), tc.word)):
			t.Errorf("%s %q: %v, want an error naming %s", tc.name, tc.in, err, tc.word)
		case tc.word == "":
			in, _ := strconv.ParseFloat(tc.in, 64)
			back, _ := strconv.ParseFloat(v.String(), 64)
			if err != nil || d != tc.want || back != in {
				t.Errorf("%s %q: %v (prints %s), %v; want %v", tc.name, tc.in, d, v.String(), err, tc.want)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--request-rate", "fast"},
		{"frobnicate"},
		{"--mode", "bursty", "--port", "1"},
	} {
		wantUsage(t, args)
	}
	if out, _ := mustRun(t, "run", "--help"); !strings.Contains(out, "--request-rate") {
		t.Errorf("run --help:\n%s", out)
	}
}

// TestDefaultTimeoutsEnd: with no timeout flag, a response that stops
// sending is ended within minutes (--stall-timeout), not after the hour of
// --request-timeout; both still turn off with 0.
func TestDefaultTimeoutsEnd(t *testing.T) {
	o := options.Defaults()
	fs, finish := runFlags(&o, &profiles{})
	if err := fs.Parse(nil); err != nil || finish() != nil {
		t.Fatal(err)
	}
	if o.StallTimeout <= 0 || o.StallTimeout > 10*time.Minute || o.StallTimeout >= o.RequestTimeout {
		t.Errorf("default --stall-timeout %v (--request-timeout %v): want a few minutes", o.StallTimeout, o.RequestTimeout)
	}
	if f := fs.Lookup("stall-timeout"); f == nil || f.DefValue != "5m0s" {
		t.Errorf("--stall-timeout's help does not show its default: %+v", f)
	}
	o = options.Defaults()
	fs, _ = runFlags(&o, &profiles{})
	if err := fs.Parse([]string{"--stall-timeout", "0", "--request-timeout", "0"}); err != nil || o.StallTimeout != 0 || o.RequestTimeout != 0 {
		t.Errorf("0 does not turn them off: %v, stall %v, request %v", err, o.StallTimeout, o.RequestTimeout)
	}
}
