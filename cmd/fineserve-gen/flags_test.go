package main

import (
	"bytes"
	"context"
	"math"
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

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"--request-rate", "fast"},
		{"frobnicate"},
		{"--mode", "bursty", "--port", "1"},
	} {
		wantUsage(t, args)
	}
	var out bytes.Buffer
	if code := dispatch(context.Background(), []string{"run", "--help"}, &out, &out); code != exitOK || !strings.Contains(out.String(), "--request-rate") {
		t.Errorf("run --help: exit %d\n%s", code, out.String())
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
