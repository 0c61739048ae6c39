package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// startMock serves cfg on 127.0.0.1 for the test and returns its port.
func startMock(t *testing.T, cfg mockserver.Config) int {
	_, port := mocktest.Start(t, cfg)
	return port
}

func testOptions(port int) options.Options {
	o := options.Defaults()
	o.Port = port
	o.Seed = 1
	o.Quiet = true
	o.WarmupRequests = 0
	return o
}

// run runs o and fails the test on an error; it returns the summary and
// what the run printed (the table).
func run(t *testing.T, o options.Options) (*metrics.Summary, string) {
	t.Helper()
	sum, out, errs, err := runCaptured(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errs)
	}
	return sum, out
}

// runCaptured runs o and returns its summary, what it wrote to stdout and
// to stderr, and its error.
func runCaptured(ctx context.Context, o options.Options) (sum *metrics.Summary, stdout, stderr string, err error) {
	var out, errb bytes.Buffer
	sum, err = Run(ctx, o, runner.IO{Out: &out, Err: &errb})
	return sum, out.String(), errb.String(), err
}

// runQuiet runs o with its output discarded, for a test that checks the
// error or the files written.
func runQuiet(o options.Options) (*metrics.Summary, error) {
	return Run(context.Background(), o, runner.IO{Out: io.Discard, Err: io.Discard})
}

type record struct {
	Index            int64     `json:"index"`
	ScheduledS       float64   `json:"scheduled_s"`
	SentS            float64   `json:"sent_s"`
	TTFTMs           *float64  `json:"ttft_ms"`
	ITLMs            []float64 `json:"itl_ms"`
	InputLen         int       `json:"input_len"`
	OutputLen        int       `json:"output_len"`
	PromptTokens     *int      `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	Status           int       `json:"status"`
	Error            string    `json:"error"`
}

func readRecords(t *testing.T, path string) []record {
	return testenv.ReadJSONL[record](t, path)
}

// TestTimingPoissonBenchmarkAgainstMock is the walking skeleton's
// acceptance test: 200 requests of 32 output tokens at 50 req/s against a
// server with a 50 ms time to first token and a 10 ms inter-token latency.
func TestTimingPoissonBenchmarkAgainstMock(t *testing.T) {
	testenv.SkipUnderRace(t)
	port := startMock(t, mockserver.Config{TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond})
	dir := t.TempDir()
	o := testOptions(port)
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 50, 200, true
	o.RandomInputLen, o.RandomOutputLen = 256, 32
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	o.SummaryJSON = filepath.Join(dir, "s.json")
	o.OutputFile = filepath.Join(dir, "out.jsonl")
	o.WarmupRequests = 2
	sum, table := run(t, o)

	if sum.Failed != 0 || sum.Completed != 200 {
		t.Fatalf("completed %d failed %d", sum.Completed, sum.Failed)
	}
	if sum.TTFT.Median < 50 || sum.TTFT.Median > 56 {
		t.Errorf("median TTFT %.2f ms, want 50–56", sum.TTFT.Median)
	}
	if sum.ITL.Median < 9.5 || sum.ITL.Median > 11 {
		t.Errorf("median ITL %.2f ms, want 9.5–11", sum.ITL.Median)
	}
	recs := readRecords(t, o.ResultsJSONL)
	if len(recs) != 200 {
		t.Fatalf("%d records, want 200", len(recs))
	}
	var want int64
	seen := map[int64]bool{}
	for _, r := range recs {
		want += int64(r.OutputLen)
		seen[r.Index] = true
		if r.PromptTokens == nil || *r.PromptTokens != r.InputLen {
			t.Errorf("request %d: prompt_tokens %v, target %d", r.Index, r.PromptTokens, r.InputLen)
		}
		if r.CompletionTokens != r.OutputLen || len(r.ITLMs) != r.OutputLen-1 {
			t.Errorf("request %d: %d tokens, %d gaps; want %d", r.Index, r.CompletionTokens, len(r.ITLMs), r.OutputLen)
		}
		if r.SentS < r.ScheduledS {
			t.Errorf("request %d sent at %.6f before its due time %.6f", r.Index, r.SentS, r.ScheduledS)
		}
	}
	if len(seen) != 200 || sum.TotalOutputTokens != want || want != 6400 {
		t.Errorf("%d distinct records; %d output tokens, want %d", len(seen), sum.TotalOutputTokens, want)
	}
	if sum.PromptTokensErrorMax != 0 || sum.PromptTokensCounted != 200 {
		t.Errorf("prompt sizing: max error %d over %d", sum.PromptTokensErrorMax, sum.PromptTokensCounted)
	}
	for _, label := range []string{"Serving Benchmark Result", "End-to-End Latency", "Time to First Token", "Inter-Token Latency", "Mean TPOT (ms):"} {
		if !strings.Contains(table, label) {
			t.Errorf("table lacks %q", label)
		}
	}
	var js map[string]any
	b, _ := os.ReadFile(o.SummaryJSON)
	if err := json.Unmarshal(b, &js); err != nil || js["completed"] != 200.0 || js["failed"] != 0.0 {
		t.Errorf("summary json: %v %v", err, js["completed"])
	}
	line, _ := os.ReadFile(o.OutputFile)
	if bytes.Count(line, []byte("\n")) != 1 || !bytes.Contains(line, []byte(`"median_ttft_ms"`)) {
		t.Errorf("output file: %s", line)
	}
	run(t, o) // --output-file appends, as FineServe does
	line, _ = os.ReadFile(o.OutputFile)
	if bytes.Count(line, []byte("\n")) != 2 {
		t.Errorf("output file has %d lines after two runs", bytes.Count(line, []byte("\n")))
	}
}

func TestExactOutputTokensAndExtraBody(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]any
	port := startMock(t, mockserver.Config{OnRequest: func(path string, body []byte) {
		var m map[string]any
		json.Unmarshal(body, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
	}})
	o := testOptions(port)
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 200, 40, true
	o.RandomInputLen, o.RandomOutputLen = 64, 32
	o.ExtraRequestBody = `{"top_k": 5, "repetition_penalty": 1.1}`
	sum, _ := run(t, o)
	if sum.TotalOutputTokens != 40*32 || sum.Failed != 0 {
		t.Errorf("%d output tokens, %d failed; want 1280 and 0", sum.TotalOutputTokens, sum.Failed)
	}
	if len(bodies) != 40 {
		t.Fatalf("server saw %d requests", len(bodies))
	}
	for _, b := range bodies {
		if b["top_k"] != 5.0 || b["repetition_penalty"] != 1.1 || b["ignore_eos"] != true || b["min_tokens"] != 32.0 {
			t.Fatalf("body reached the server as %v", b)
		}
	}
}

func TestDryRunWritesScheduleAndSendsNothing(t *testing.T) {
	var mu sync.Mutex
	hits := 0
	port := startMock(t, mockserver.Config{OnRequest: func(string, []byte) { mu.Lock(); hits++; mu.Unlock() }})
	dir := t.TempDir()
	o := testOptions(port)
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 100, 500, true
	o.DryRun = true
	o.ScheduleOut = filepath.Join(dir, "a.csv")
	if sum, _ := run(t, o); sum != nil {
		t.Fatal("a dry run returned a summary")
	}
	first, _ := os.ReadFile(o.ScheduleOut)
	o.ScheduleOut = filepath.Join(dir, "b.csv")
	run(t, o)
	second, _ := os.ReadFile(o.ScheduleOut)
	if !bytes.Equal(first, second) || bytes.Count(first, []byte("\n")) != 501 {
		t.Errorf("schedules differ or have the wrong length (%d lines)", bytes.Count(first, []byte("\n")))
	}
	if !bytes.HasPrefix(first, []byte(arrival.ScheduleHeader+"\n")) {
		t.Errorf("header: %.80s", first)
	}
	if hits != 0 {
		t.Errorf("a dry run sent %d requests", hits)
	}
}

func TestChatBackendAndModelDiscovery(t *testing.T) {
	port := startMock(t, mockserver.Config{Models: []string{"served-a", "served-b"}, ITL: time.Millisecond})
	dir := t.TempDir()
	o := testOptions(port)
	o.Backend = "openai-chat"
	o.Model = ""
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 100, 20, true
	o.RandomInputLen, o.RandomOutputLen = 100, 8
	o.MaxConcurrency = 4
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	sum, _ := run(t, o)
	if sum.Model != "served-a" || sum.Completed != 20 || sum.MaxInFlight > 4 {
		t.Errorf("model %q completed %d max in flight %d", sum.Model, sum.Completed, sum.MaxInFlight)
	}
	for _, r := range readRecords(t, o.ResultsJSONL) {
		if r.PromptTokens == nil || *r.PromptTokens != 100 || r.CompletionTokens != 8 {
			t.Errorf("chat request %d: prompt %v completion %d", r.Index, r.PromptTokens, r.CompletionTokens)
		}
	}
}

func TestShareGPTDatasetSizesAndText(t *testing.T) {
	dir := t.TempDir()
	var entries []map[string]any
	for i := range 30 {
		entries = append(entries, map[string]any{"conversations": []map[string]string{
			{"from": "human", "value": strings.Repeat("word ", 5+i)},
			{"from": "gpt", "value": strings.Repeat("reply ", 3+i%4)},
		}})
	}
	b, _ := json.Marshal(entries)
	path := filepath.Join(dir, "sharegpt.json")
	os.WriteFile(path, b, 0o644)
	port := startMock(t, mockserver.Config{})
	o := testOptions(port)
	o.DatasetPath = path
	o.NumPrompts, o.NumPromptsSet = 30, true
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	sum, _ := run(t, o)
	if sum.Completed != 30 || sum.PromptTokensErrorMax != 0 {
		t.Errorf("completed %d, prompt error max %d", sum.Completed, sum.PromptTokensErrorMax)
	}
	for _, r := range readRecords(t, o.ResultsJSONL) {
		if want := 5 + int(r.Index); r.InputLen != want || r.OutputLen != 3+int(r.Index)%4 {
			t.Errorf("request %d sized (%d, %d) from the dataset, want (%d, %d)", r.Index, r.InputLen, r.OutputLen, want, 3+int(r.Index)%4)
		}
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	o := options.Defaults()
	o.Backend, o.Mode, o.Port, o.TimeScale, o.MaxConcurrency = "tgi", "bursty", 0, -1, -2
	err := o.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"--backend", "--mode", "--port", "--time-scale", "--max-concurrency"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s:\n%v", want, err)
		}
	}
	_, err = runQuiet(o)
	var ue *options.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("Run returned %T, want *UsageError", err)
	}
}

func TestUnreachableServerFailsClearly(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	o := testOptions(port)
	o.WarmupRequests = 1
	o.Model = "m"
	_, err := runQuiet(o)
	if err == nil || !strings.Contains(err.Error(), "is the server up?") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("err = %v", err)
	}
}

// TestWarmupFailureSaysHow: a server that lists its models but fails every
// generation stops the run at the warm-up, which says how many failed and
// how to send more or none.
func TestWarmupFailureSaysHow(t *testing.T) {
	port := startMock(t, mockserver.Config{Faults: mockserver.FaultConfig{
		Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP503, Rate: 1}}}})
	o := testOptions(port)
	o.WarmupRequests = 1
	_, err := runQuiet(o)
	if err == nil || !strings.Contains(err.Error(), "warm-up failed: the warm-up request failed") || !strings.Contains(err.Error(), "http_5xx") ||
		!strings.Contains(err.Error(), "--warmup-requests") {
		t.Errorf("err = %v", err)
	}
	o.WarmupRequests = 3
	_, err = runQuiet(o)
	if err == nil || !strings.Contains(err.Error(), "all 3 warm-up requests failed") {
		t.Errorf("err = %v", err)
	}
}

// TestMergeStateOnlyWhenWritten: a run keeps its merge_state (every
// histogram encoded, and each window's) unless nothing it writes carries
// it; the summary's figures are the same either way.
func TestMergeStateOnlyWhenWritten(t *testing.T) {
	port := startMock(t, mockserver.Config{TTFT: time.Millisecond, ITL: time.Millisecond})
	o := testOptions(port)
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 200, 40, true
	o.RandomInputLen, o.RandomOutputLen = 16, 8
	o.Observe.Window = 100 * time.Millisecond
	kept, _ := run(t, o)
	o.NoMergeState = true
	dropped, _ := run(t, o)
	if kept.MergeState == nil || len(kept.MergeState.Windows) == 0 {
		t.Fatalf("merge_state %v: want one with the windows' distributions", kept.MergeState)
	}
	if dropped.MergeState != nil {
		t.Fatalf("merge_state kept with NoMergeState")
	}
	if kept.Completed != 40 || dropped.Completed != 40 || len(dropped.Windows) == 0 {
		t.Fatalf("completed %d and %d, %d windows without the state", kept.Completed, dropped.Completed, len(dropped.Windows))
	}
}

func TestStartAtInThePastIsRefused(t *testing.T) {
	o := options.Defaults()
	o.Seed, o.Port = 1, 1 // nothing listens: the check comes first
	o.StartAt = time.Now().Add(-5 * time.Second)
	_, err := runQuiet(o)
	if err == nil || !strings.Contains(err.Error(), "--start-at") || !strings.Contains(err.Error(), "s ago at launch") {
		t.Fatalf("error %v", err)
	}
	if _, ok := err.(*options.UsageError); !ok {
		t.Errorf("%T is not a usage error", err)
	}
	// A dry run only builds the schedule (e.g. to reproduce a past run's).
	o.DryRun = true
	if _, err := runQuiet(o); err != nil {
		t.Errorf("dry run: %v", err)
	}
	// Within the slack: accepted (the first requests leave late).
	o.StartAt = time.Now().Add(-runner.StartAtSlack / 2)
	if err := runner.CheckStartAt(o.StartAt, time.Now(), "now"); err != nil {
		t.Error(err)
	}
}
