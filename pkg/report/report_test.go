package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", name, got)
	}
}

func sampleSummary() *metrics.Summary {
	mc := 64
	return &metrics.Summary{
		Backend: "vllm", Mode: "poisson", RequestRate: 50, MaxConcurrency: &mc,
		Duration: 4.25, Completed: 198, Failed: 2, TotalInputTokens: 202752, TotalOutputTokens: 6336,
		RequestThroughput: 46.59, InputThroughput: 47706.35, OutputThroughput: 1490.82, TotalThroughput: 49197.18,
		Concurrency:       16.4,
		E2E:               metrics.Dist{Mean: 361.2, Median: 360.9, P99: 362.3},
		TTFT:              metrics.Dist{Mean: 50.97, Median: 50.94, P99: 52.09},
		ITL:               metrics.Dist{Mean: 10, Median: 10.1, P95: 10.7, P99: 10.99, Max: 14.02},
		TPOT:              metrics.Dist{Mean: 10, Median: 10, P99: 10.04},
		SendLag:           metrics.Dist{Median: 0.12, P99: 0.31, Max: 1.03},
		TTFTFromScheduled: metrics.Dist{P99: 52.58}, E2EFromScheduled: metrics.Dist{P99: 362.24},
		PromptTokensCounted: 198,
		ErrorsByClass:       map[string]int64{"http_5xx": 2},
		ErrorSamples:        []metrics.ErrorSample{{Index: 17, Class: "http_5xx", Message: "503 Service Unavailable: overloaded"}},
	}
}

func TestTableMatchesFineServeLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, sampleSummary()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	// FineServe's section rules are 50 characters wide, centred as Python's
	// "{:=^50}" does, and its rows are "{:<40} {:<10}".
	for _, line := range []string{
		"============ Serving Benchmark Result ============",
		"----------------End-to-End Latency----------------",
		"---------------Time to First Token----------------",
		"---------------Inter-Token Latency----------------",
		"Successful requests:                     198       ",
		"Median TTFT (ms):                        50.94     ",
		"P99 TPOT (ms):                           10.04     ",
	} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("table lacks line %q", line)
		}
	}
	golden(t, "table.golden", buf.Bytes())
}

func TestRecordFields(t *testing.T) {
	r := &record.Request{}
	r.Reset()
	r.Index, r.Scheduled, r.Sent, r.FirstToken, r.End = 3, time.Second, time.Second+500*time.Microsecond, 2*time.Second, 3*time.Second
	r.TokenTimes = []time.Duration{2 * time.Second, 2*time.Second + 10*time.Millisecond, 2*time.Second + 25*time.Millisecond}
	r.InputLen, r.OutputLen, r.PromptTokens, r.CompletionTokens = 10, 3, 10, 3
	r.Model, r.Status, r.Error = "m\"<x>", 200, "bad \xff byte"
	var s metrics.Sample
	s.From(r, metrics.NoSLO)
	line := AppendRecord(nil, &s)
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("record is not JSON: %v\n%s", err, line)
	}
	for _, k := range strings.Fields("index scheduled_s sent_s ttft_ms e2e_ms itl_ms input_len output_len prompt_tokens completion_tokens model status error") {
		if _, ok := m[k]; !ok {
			t.Errorf("record lacks %q", k)
		}
	}
	if m["ttft_ms"] != 999.5 || m["e2e_ms"] != 1999.5 || m["sent_s"] != 1.0005 {
		t.Errorf("times %v %v %v", m["ttft_ms"], m["e2e_ms"], m["sent_s"])
	}
	if itl := m["itl_ms"].([]any); len(itl) != 2 || itl[0] != 10.0 || itl[1] != 15.0 {
		t.Errorf("itl %v", itl)
	}
	if m["model"] != "m\"<x>" || bytes.Contains(line, []byte("<x>")) {
		t.Errorf("model %v not escaped for HTML viewers: %s", m["model"], line)
	}
	if m["cached_tokens"] != nil {
		t.Errorf("cached_tokens %v, want null when the server gave none", m["cached_tokens"])
	}
}

// TestNoSampleIsNotApplicable: the table and the HTML report show "n/a" for
// a latency with no sample (every request failed), never 0.
func TestNoSampleIsNotApplicable(t *testing.T) {
	s := sampleSummary()
	s.Completed, s.Failed = 0, 200
	s.TTFT, s.TPOT, s.ITL, s.E2E, s.TTFTFromScheduled, s.E2EFromScheduled = metrics.Dist{}, metrics.Dist{}, metrics.Dist{}, metrics.Dist{}, metrics.Dist{}, metrics.Dist{}
	var b bytes.Buffer
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(b.String(), "\n") {
		latency := strings.Contains(line, "TTFT") || strings.Contains(line, "ITL") || strings.Contains(line, "TPOT") || strings.Contains(line, "E2E")
		if latency && strings.HasSuffix(line, "(ms):") {
			continue
		}
		if latency && strings.Contains(line, "(ms):") && !strings.Contains(line, "n/a") {
			t.Errorf("no sample, yet %q", line)
		}
		if strings.Contains(line, "Send lag P99") && strings.Contains(line, "n/a") {
			t.Errorf("the send lag has samples: %q", line)
		}
	}
	var h bytes.Buffer
	if err := WriteHTML(&h, &Data{Summary: s, Source: "all failed"}); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	for _, label := range []string{"Mean TTFT", "P99 E2E latency"} {
		i := strings.Index(page, label)
		if i < 0 {
			t.Fatalf("the report has no %q", label)
		}
		if rest := page[i:min(len(page), i+200)]; !strings.Contains(rest, "n/a") {
			t.Errorf("%s is not n/a: %s", label, rest)
		}
	}
}

// TestRecordRoundTrip: a record of any shape (csvResults, and a request id,
// images and a failure needing escapes) read back (ParseRecord) and written again
// gives the same bytes: the writer and the reader share one definition.
func TestRecordRoundTrip(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	text := &record.Request{}
	text.Reset()
	text.Index, text.Scheduled, text.Sent, text.FirstToken, text.End = 4, ms(10), ms(10.5), ms(30), ms(52)
	text.TokenTimes = []time.Duration{ms(30), ms(41), ms(52)}
	text.InputLen, text.OutputLen, text.PromptTokens, text.CompletionTokens, text.CachedTokens = 64, 3, 61, 3, 16
	text.Model, text.Status, text.Retries, text.Images = "m\"<x>", 200, 1, 2
	text.RequestID = "run7-4"
	failed := &record.Request{}
	failed.Reset()
	failed.Index, failed.Scheduled, failed.ErrorClass, failed.Error = 6, ms(3), record.ErrCanceled, "refused\n\"x\" <b> é"
	var p fastjson.Parser
	var back record.Request
	for _, r := range append([]*record.Request{text, failed}, csvResults()...) { // an image generation among them
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		line := AppendRecord(nil, &s)
		v, err := p.ParseBytes(line)
		if err != nil {
			t.Fatalf("record %d is not JSON: %v\n%s", r.Index, err, line)
		}
		if err := ParseRecord(v, &back); err != nil {
			t.Fatal(err)
		}
		s.From(&back, metrics.NoSLO)
		if again := AppendRecord(nil, &s); !bytes.Equal(again, line) {
			t.Errorf("record %d read back and written again:\n got %s\nwant %s", r.Index, again, line)
		}
		if got := bytes.Contains(line, []byte(`"request_id":`)); got != (r.RequestID != "") || back.RequestID != r.RequestID {
			t.Errorf("record %d: request_id written %v, read back %q; want it only when sent (%q)", r.Index, got, back.RequestID, r.RequestID)
		}
	}
}

// TestTableServerMetrics: when the server's /metrics was scraped the table
// shows its requests running and waiting and KV-cache usage, mean and
// largest scraped, its idle fraction and preemptions; when no scrape
// succeeded it says so; a run that scraped nothing has no such section.
func TestTableServerMetrics(t *testing.T) {
	table := func(sm *metrics.ServerSummary) string {
		var b bytes.Buffer
		if err := WriteTable(&b, &metrics.Summary{Backend: "vllm", Completed: 3, ServerMetrics: sm}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	out := table(&metrics.ServerSummary{URL: "http://127.0.0.1:1/metrics", Available: true, ServerStats: &metrics.ServerStats{
		Samples: 5, RunningMean: 3.2, RunningMax: 8, WaitingMean: 0.5, WaitingMax: 2, KVCacheMean: 0.125, KVCacheMax: 0.31,
		IdleFraction: 0.04, Preemptions: 1, Observed: 8}})
	for _, want := range []string{
		"-----------------Server Metrics-----------------",
		"Server running (mean / max):             3.20 / 8",
		"Server waiting (mean / max):             0.50 / 2",
		"Server KV-cache usage (mean / max):      12.5% / 31.0%",
		"Server idle fraction:                    not shown: 5 scrape(s), fewer than the 30 an idle share needs",
		"Server preemptions:                      1",
		"Server scrapes (time covered):           5 (8.0 s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The idle fraction is shown from metrics.MinIdleScrapes scrapes on,
	// with their number; one scrape fewer withholds it.
	for n, want := range map[int64]string{
		metrics.MinIdleScrapes:     "Server idle fraction:                    4.0% (30 scrapes)",
		metrics.MinIdleScrapes - 1: "Server idle fraction:                    not shown: 29 scrape(s)",
		45:                         "Server idle fraction:                    4.0% (45 scrapes)",
	} {
		out := table(&metrics.ServerSummary{Available: true, ServerStats: &metrics.ServerStats{Samples: n, IdleFraction: 0.04, Observed: 90}})
		if !strings.Contains(out, want) {
			t.Errorf("%d scrapes: table lacks %q:\n%s", n, want, out)
		}
	}
	if out := table(&metrics.ServerSummary{Failures: 4}); !strings.Contains(out, "none succeeded (4 failed)") {
		t.Errorf("failed scrapes not said:\n%s", out)
	}
	if out := table(nil); strings.Contains(out, "Server") {
		t.Errorf("a run without scrapes shows server lines:\n%s", out)
	}
}

// TestTablePeaks: the table shows vLLM's peaks: output tokens in the
// busiest second and requests in flight at once.
func TestTablePeaks(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, &metrics.Summary{Backend: "vllm", MaxOutputTokensPerS: 123, MaxInFlight: 7}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Peak output token throughput (tok/s):    123.00", "Peak concurrent requests:                7"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestErrorSamplesNameTheRequestID: a failed request sent with an
// X-Request-Id is named by it in the table and the HTML report, so that it
// can be found in the server's logs; one without is shown as before.
func TestErrorSamplesNameTheRequestID(t *testing.T) {
	s := sampleSummary()
	s.ErrorSamples = append(s.ErrorSamples, metrics.ErrorSample{Index: 18, RequestID: "run7-18", Class: "http_5xx", Message: "503"})
	var table, page bytes.Buffer
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&page, &Data{Summary: s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- Failed Request #1 (index 17, http_5xx) ---", "--- Failed Request #2 (index 18, X-Request-Id run7-18, http_5xx) ---"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	if !strings.Contains(page.String(), "<tr><td>18 (run7-18)</td>") || !strings.Contains(page.String(), "<tr><td>17</td>") {
		t.Error("the HTML report's error samples do not name the request id (or name one where there is none)")
	}
}

// TestTablePromptErrorOfRerank: a rerank or score request's prompt is the
// query with each document, not the target length: the table says the
// gap is expected; a generation's line stays a bare figure.
func TestTablePromptErrorOfRerank(t *testing.T) {
	for backend, want := range map[string]string{
		"vllm-rerank": "Prompt tokens vs target, mean |err|:     203.00 (expected: the server counts the query with every document",
		"vllm-score":  "Prompt tokens vs target, mean |err|:     203.00 (expected:",
		"vllm":        "Prompt tokens vs target, mean |err|:     203.00    \n",
	} {
		var b bytes.Buffer
		if err := WriteTable(&b, &metrics.Summary{Backend: backend, Completed: 3, PromptTokensCounted: 3, PromptTokensErrorMean: 203}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s: table lacks %q:\n%s", backend, want, b.String())
		}
	}
}

// parseBack reads a JSON Lines record back with ParseRecord.
func parseBack(t *testing.T, line []byte) record.Request {
	t.Helper()
	var back record.Request
	v, err := fastjson.ParseBytes(line)
	if err == nil {
		err = ParseRecord(v, &back)
	}
	if err != nil {
		t.Fatalf("record %s: %v", line, err)
	}
	return back
}
