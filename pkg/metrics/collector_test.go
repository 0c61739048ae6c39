package metrics

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func ok(index int64, sched, sent, first time.Duration, tokens []time.Duration, end time.Duration, out int) *record.Request {
	r := &record.Request{}
	r.Reset()
	r.Index, r.Scheduled, r.Sent, r.FirstToken, r.End = index, sched, sent, first, end
	r.TokenTimes = tokens
	r.InputLen, r.OutputLen, r.CompletionTokens, r.PromptTokens = 100, out, out, 100
	r.Status = 200
	return r
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func TestCollectorDefinitions(t *testing.T) {
	c := NewCollector()
	// Due at 0, sent at 2 ms, tokens at 12, 17, 27 ms, end at 30 ms.
	c.Add(sampleOf(ok(0, 0, ms(2), ms(12), []time.Duration{ms(12), ms(17), ms(27)}, ms(30), 3)))
	failed := &record.Request{}
	failed.Reset()
	failed.Index, failed.Sent, failed.End, failed.ErrorClass, failed.Error = 1, ms(5), ms(6), record.ErrHTTP5xx, "boom"
	failed.RequestID = "run7-1"
	c.Add(sampleOf(failed))
	var s Summary
	c.Summarize(&s, time.Second)
	if len(s.ErrorSamples) != 1 || s.ErrorSamples[0] != (ErrorSample{Index: 1, RequestID: "run7-1", Class: record.ErrHTTP5xx, Message: "boom"}) {
		t.Errorf("error samples %+v: want the failed request with its X-Request-Id", s.ErrorSamples)
	}
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.002 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("ttft", s.TTFT.Mean, 10)     // send → first text chunk
	check("e2e", s.E2E.Mean, 28)       // send → last byte
	check("tpot", s.TPOT.Mean, 9)      // (28 − 10) / (3 − 1)
	check("itl mean", s.ITL.Mean, 7.5) // gaps 5 and 10
	check("itl max", s.ITL.Max, 10)    //
	check("ttft from scheduled", s.TTFTFromScheduled.Mean, 12)
	check("e2e from scheduled", s.E2EFromScheduled.Mean, 30)
	check("lag max", s.SendLag.Max, 5) // the failed request was sent 5 ms late
	if s.Completed != 1 || s.Failed != 1 || s.ErrorsByClass[record.ErrHTTP5xx] != 1 || s.ErrorRate != 0.5 {
		t.Errorf("completed %d failed %d errors %v rate %v", s.Completed, s.Failed, s.ErrorsByClass, s.ErrorRate)
	}
	if s.TotalInputTokens != 100 || s.TotalOutputTokens != 3 {
		t.Errorf("tokens in %d out %d: failed requests must not count", s.TotalInputTokens, s.TotalOutputTokens)
	}
	check("concurrency", s.Concurrency, 0.028) // Σ E2E / duration, as FineServe
}

func TestSummaryJSONKeys(t *testing.T) {
	c := NewCollector()
	c.Add(sampleOf(ok(0, 0, ms(1), ms(2), []time.Duration{ms(2), ms(3)}, ms(4), 2)))
	s := Summary{Backend: "vllm", Mode: "poisson", RequestRate: Rate(math.Inf(1))}
	c.Summarize(&s, time.Second)
	s.WindowSeconds, s.Windows = 1, []WindowStats{{Index: 1}, {Index: 2}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("summary is not valid JSON: %v\n%s", err, b)
	}
	// FineServe's keys, and ours (DESIGN.md's output contract).
	keys := strings.Fields(`backend mode request_rate max_concurrency duration completed total_input_tokens
		total_output_tokens request_throughput input_throughput output_throughput
		mean_ttft_ms median_ttft_ms std_ttft_ms p99_ttft_ms mean_tpot_ms median_tpot_ms std_tpot_ms p99_tpot_ms
		mean_itl_ms median_itl_ms std_itl_ms p95_itl_ms p99_itl_ms
		mean_e2e_latency_ms median_e2e_latency_ms std_e2e_latency_ms p99_e2e_latency_ms concurrency
		failed p90_ttft_ms p95_ttft_ms p999_ttft_ms p90_e2e_latency_ms p999_itl_ms
		send_lag_p50_ms send_lag_p99_ms send_lag_max_ms ttft_from_scheduled_p99_ms e2e_from_scheduled_p99_ms windows`)
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if m["request_rate"] != "inf" {
		t.Errorf("request_rate %v, want \"inf\"", m["request_rate"])
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	uncounted := func(d Dist) Dist { d.Count = 0; return d } // counts are not part of the JSON
	if back.TTFT != uncounted(s.TTFT) || back.SendLag != uncounted(s.SendLag) || !math.IsInf(float64(back.RequestRate), 1) || len(back.Windows) != 2 || back.Windows[1].Index != 2 {
		t.Errorf("round trip lost data:\n%+v\n%+v", back, s)
	}
}

func TestSummaryRoundTripWritesEachKeyOnce(t *testing.T) {
	s := Summary{Backend: "vllm", Mode: "replay", Model: "m", Command: "fineserve-gen --seed 1", StartedAt: "2026-01-01T00:00:00Z"}
	back, first := testenv.RoundTrip(t, s)
	second, _ := json.Marshal(back)
	if string(first) != string(second) {
		t.Errorf("re-marshalled summary differs:\n%s\n%s", first, second)
	}
}

// TestNoSampleIsNull: a run whose every request failed has no TTFT, TPOT,
// ITL or E2E: those keys are null, not 0, and stay null through a re-read;
// a distribution with samples (the send lag of failed requests) is a
// number.
func TestNoSampleIsNull(t *testing.T) {
	c := NewCollector()
	for i := range int64(3) {
		r := &record.Request{}
		r.Reset()
		r.Index, r.Scheduled, r.Sent, r.End = i, ms(10*float64(i)), ms(10*float64(i)+0.5), ms(10*float64(i)+2)
		r.ErrorClass, r.Error, r.Status = record.ErrHTTP5xx, "503", 503
		c.Add(sampleOf(r))
	}
	var s Summary
	c.Summarize(&s, time.Second)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	check := func(b []byte) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_itl_ms", "max_itl_ms",
			"mean_e2e_latency_ms", "p99_e2e_latency_ms", "ttft_from_scheduled_p99_ms", "e2e_from_scheduled_p99_ms"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Errorf("%s = %v (present %v), want null", k, v, ok)
			}
		}
		for _, k := range []string{"send_lag_p99_ms", "send_lag_mean_ms"} {
			if v, ok := m[k].(float64); !ok || v <= 0 {
				t.Errorf("%s = %v, want the failed requests' send lag", k, m[k])
			}
		}
	}
	check(b)
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.TTFT.Empty() || back.SendLag.Empty() {
		t.Errorf("re-read: TTFT %+v, send lag %+v", back.TTFT, back.SendLag)
	}
	b2, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	check(b2)
}

// TestOutputFrom: the completed requests whose output tokens the client
// counted are counted by how, in the summary and through a merge of
// states; a failed one is not; a state with an unknown way or a negative
// count is refused.
func TestOutputFrom(t *testing.T) {
	c := NewCollector()
	add := func(from string, okay bool) {
		r := ok(1, 0, ms(1), ms(5), []time.Duration{ms(5), ms(6)}, ms(7), 2)
		r.OutputFrom = from
		if !okay {
			r.ErrorClass, r.Error = record.ErrReset, "reset"
		}
		c.Add(sampleOf(r))
	}
	add("", true)
	add(record.OutputChunks, true)
	add(record.OutputChunks, true)
	add(record.OutputRequested, true)
	add(record.OutputText, false) // failed: not counted
	var s Summary
	c.Summarize(&s, time.Second)
	if len(s.OutputTokensFrom) != 2 || s.OutputTokensFrom[record.OutputChunks] != 2 || s.OutputTokensFrom[record.OutputRequested] != 1 {
		t.Errorf("output tokens from %v: want 2 chunks, 1 requested", s.OutputTokensFrom)
	}
	st, err := c.State()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back CollectorState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	merged, err := CollectorFromState(back)
	if err != nil {
		t.Fatal(err)
	}
	merged.Merge(c)
	var m Summary
	merged.Summarize(&m, time.Second)
	if m.OutputTokensFrom[record.OutputChunks] != 4 || m.OutputTokensFrom[record.OutputRequested] != 2 {
		t.Errorf("merged twice: %v, want 4 chunks, 2 requested", m.OutputTokensFrom)
	}
	for _, bad := range []map[string]int64{{"guessed": 1}, {record.OutputText: -1}} {
		back.OutputFrom = bad
		if _, err := CollectorFromState(back); err == nil || !strings.Contains(err.Error(), "output_from") {
			t.Errorf("state with output_from %v: %v, want an error naming it", bad, err)
		}
	}
	// Every request counted by the server: nothing to say.
	d := NewCollector()
	d.Add(sampleOf(ok(1, 0, ms(1), ms(5), []time.Duration{ms(5)}, ms(7), 1)))
	var n Summary
	d.Summarize(&n, time.Second)
	if n.OutputTokensFrom != nil {
		t.Errorf("all counted by the server: %v, want none", n.OutputTokensFrom)
	}
}
