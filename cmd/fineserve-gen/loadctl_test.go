package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestLoadControlUsageErrors: every load-control flag rejects a bad value
// with exit 2 and a message naming the flag and the part, and conflicting
// flags are named together.
func TestLoadControlUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--stages", "30s:10,2m:abc"}, []string{`--stages: stage 2 "2m:abc": rate is not a number`}},
		{[]string{"--stages", "30s:10", "--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "5"},
			[]string{"--stages and --ramp-up-strategy: choose one"}},
		{[]string{"--stages", "30s:10", "--request-rate", "5"}, []string{"--stages and --request-rate: choose one"}},
		{[]string{"--ramp-up-strategy", "step"}, []string{`--ramp-up-strategy "step": want linear or exponential`}},
		{[]string{"--ramp-up-strategy", "exponential", "--ramp-up-start-rps", "0", "--ramp-up-end-rps", "5"}, []string{"--ramp-up-start-rps 0: an exponential ramp needs rates > 0"}},
		{[]string{"--ramp-up-end-rps", "5"}, []string{"need --ramp-up-strategy"}},
		{[]string{"--mode", "replay", "--request-trace-csv", "x.csv", "--lengths", "1,1:1"}, []string{"--lengths applies to poisson and parametric mode"}},
		{[]string{"--lengths", "128,64:40;512,x:60"}, []string{`--lengths: component 2 "512,x:60": output length "x"`}},
		{[]string{"--prefix-len", "100", "--num-prefixes", "0"}, []string{"--num-prefixes 0"}},
		{[]string{"--prefix-len", "100", "--prefix-dist", "zipf:-2"}, []string{"--prefix-dist"}},
		{[]string{"--prefix-len", "-1"}, []string{"--prefix-len -1"}},
	} {
		wantUsage(t, append([]string{"run", "--dry-run"}, c.args...), c.want...)
	}
}

// TestStagesDryRun: `--dry-run --schedule-out` shows a staged schedule: as
// many arrivals as ∫λ (within 5 σ), none after the last stage, and more in
// the stage at 100 req/s than in the one at 10.
func TestStagesDryRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.csv")
	_, e := mustRun(t, "run", "--dry-run", "--stages", "0s:10,10s:10,0s:100,10s:100,5s:0", "--seed", "3", "--schedule-out", out)
	col, rows := testenv.ReadCSV(t, out)
	var low, high, n float64
	for _, r := range rows {
		ts, _ := strconv.ParseFloat(r[col["time_s"]], 64)
		switch {
		case ts >= 25:
			t.Fatalf("arrival at %g s, after the stages' end", ts)
		case ts < 10:
			low++
		case ts < 20:
			high++
		}
		n++
	}
	const want = 100 + 1000 + 250 // ∫λ
	if math.Abs(n-want) > 5*math.Sqrt(want) || low > 200 || high < 800 {
		t.Errorf("%g arrivals (%g in 0–10 s, %g in 10–20 s), want about %d", n, low, high, want)
	}
	if !strings.Contains(e, "target: --stages over 25 s") {
		t.Errorf("no target line: %s", e)
	}
}

// TestSharedPrefixCacheShare runs shared-prefix prompts against the mock's
// prefix cache: the cached tokens the server reports match the schedule's
// analytic expectation (after its first use, a prefix is served from the
// cache) to within one 16-token cache block per request that reuses a
// prefix; and the summary carries shared_prefix, length_mix and target_rate.
func TestSharedPrefixCacheShare(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 16}})
	r := mustRunTool(t, "run", "--port", strconv.Itoa(port), "--stages", "0s:100,2s:100", "--num-prompts", "150",
		"--prefix-len", "1000", "--num-prefixes", "6", "--prefix-dist", "zipf:1.1",
		"--lengths", "1500,4:70;600±0.2,4:30", "--warmup-requests", "0", "--seed", "5", "--quiet")
	data := testenv.ReadFile(t, r.path("summary.json"))
	var sum struct {
		Completed    int64                     `json:"completed"`
		Cached       int64                     `json:"cached_prompt_tokens"`
		Input        int64                     `json:"total_input_tokens"`
		SharedPrefix *metrics.SharedPrefixInfo `json:"shared_prefix"`
		LengthMix    []metrics.LengthMixEntry  `json:"length_mix"`
		TargetRate   *metrics.TargetRate       `json:"target_rate"`
		RequestRate  *float64                  `json:"request_rate"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	sp := sum.SharedPrefix
	if sp == nil || sum.LengthMix == nil || sum.TargetRate == nil {
		t.Fatalf("summary sections missing: %s", data)
	}
	if sum.Completed != sp.Requests || sp.Truncated == 0 || sp.Truncated == sp.Requests {
		t.Errorf("%d completed, %d with a prefix, %d truncated", sum.Completed, sp.Requests, sp.Truncated)
	}
	reusing := sp.Requests - int64(sp.Used)
	const block = 16
	if sum.Cached > sp.ReusedTokens || sp.ReusedTokens-sum.Cached > block*reusing {
		t.Errorf("server cached %d tokens, expected %d to within %d (one block for each of %d requests reusing a prefix)",
			sum.Cached, sp.ReusedTokens, block*reusing, reusing)
	}
	share := float64(sum.Cached) / float64(sum.Input)
	t.Logf("cached share %.4f, expected %.4f (%d of %d tokens cached, %d expected; %d requests reuse one of %d prefixes; %d truncated); stats %+v",
		share, sp.ExpectedCachedShare, sum.Cached, sum.Input, sp.ReusedTokens, reusing, sp.Used, sp.Truncated, srv.PrefixCacheStats())
	if sum.RequestRate != nil || sum.TargetRate.Unit != "req/s" || len(sum.TargetRate.Stages) != 2 {
		t.Errorf("request_rate %v, target_rate %+v", sum.RequestRate, sum.TargetRate)
	}
}

// TestMaxConcurrencyRamp: with --max-concurrency 4 --max-concurrency-ramp
// 900ms, a burst of requests that each take 1 s starts one more request
// every 300 ms: the i-th send comes no earlier than i·300 ms (the ramp
// never opens a slot early, however slow the machine), and never more than
// 4 are in flight.
func TestMaxConcurrencyRamp(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Second})
	run := mustRunTool(t, "run", "--port", strconv.Itoa(port), "--request-rate", "inf", "--num-prompts", "6",
		"--max-concurrency", "4", "--max-concurrency-ramp", "900ms", "--random-input-len", "8", "--random-output-len", "2",
		"--warmup-requests", "0", "--quiet")
	var sent []float64
	for _, r := range readRecords(t, run.path("results.jsonl")) {
		sent = append(sent, r.Sent.Seconds())
	}
	slices.Sort(sent)
	if len(sent) != 6 {
		t.Fatalf("%d records", len(sent))
	}
	for i := 1; i < 4; i++ {
		if min := 0.3 * float64(i); sent[i] < min {
			t.Errorf("send %d at %.3f s, before the ramp's slot at %.1f s (sends %v)", i, sent[i], min, sent)
		}
	}
	if sum := run.summary(t); sum.MaxInFlight > 4 || sum.MaxInFlight < 2 {
		t.Errorf("max in flight %d, want 2 to 4", sum.MaxInFlight)
	}
}
