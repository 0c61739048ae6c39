package metrics

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestVLLMKeysEqualOurs: every name vLLM's serving benchmark uses for a
// figure the summary has under its own name is written with the same
// value, and null where the figure has no sample.
func TestVLLMKeysEqualOurs(t *testing.T) {
	c := NewCollector()
	for i, e2e := range []time.Duration{10, 20, 30, 45, 50, 90} {
		c.Add(&Sample{Request: record.Request{Index: int64(i), End: e2e * time.Millisecond, InputLen: 100}, OK: true, HasE2E: true, E2E: e2e * time.Millisecond, OutputTokens: 7})
	}
	s := &Summary{Backend: "vllm", Mode: "poisson", Scheduled: 6, MaxInFlight: 4}
	c.Summarize(s, 2*time.Second)
	all := jsonObject(t, s)
	pairs := [][2]string{
		{"num_prompts", "scheduled"}, {"total_token_throughput", "total_throughput"},
		{"max_concurrent_requests", "max_in_flight"},
	}
	for _, st := range []string{"mean", "median", "std", "p90", "p95", "p99"} {
		pairs = append(pairs, [2]string{st + "_e2el_ms", st + "_e2e_latency_ms"})
	}
	for _, p := range pairs {
		v, ok := all[p[0]]
		if !ok || v != all[p[1]] || v == nil || v == 0.0 {
			t.Errorf("%s = %v (present %v), want %s's %v (not 0)", p[0], v, ok, p[1], all[p[1]])
		}
	}
	if all["total_token_throughput"] != (600.0+42.0)/2 {
		t.Errorf("total_token_throughput %v, want %v", all["total_token_throughput"], (600.0+42.0)/2)
	}

	// No E2E sample: the e2el keys are null, as ours.
	all = jsonObject(t, &Summary{Failed: 3})
	for _, st := range []string{"mean", "median", "std", "p90", "p95", "p99"} {
		if v, ok := all[st+"_e2el_ms"]; !ok || v != nil {
			t.Errorf("%s_e2el_ms = %v (present %v), want null", st, v, ok)
		}
	}
}

// TestVLLMKeysRead: a file vLLM wrote (its names only) reads into the
// summary's figures; where both names are present the summary's own wins.
func TestVLLMKeysRead(t *testing.T) {
	var s Summary
	in := `{"num_prompts":200,"total_token_throughput":1234.5,"max_concurrent_requests":17,` +
		`"mean_e2el_ms":101,"median_e2el_ms":99,"std_e2el_ms":4,"p99_e2el_ms":150,"burstiness":0.5}`
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.Scheduled != 200 || s.TotalThroughput != 1234.5 || s.MaxInFlight != 17 ||
		s.E2E.Mean != 101 || s.E2E.Median != 99 || s.E2E.Std != 4 || s.E2E.P99 != 150 ||
		s.Burstiness == nil || *s.Burstiness != 0.5 {
		t.Errorf("read %+v", s)
	}
	s = Summary{}
	if err := json.Unmarshal([]byte(`{"total_throughput":1,"total_token_throughput":2,"p99_e2e_latency_ms":3,"p99_e2el_ms":4}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.TotalThroughput != 1 || s.E2E.P99 != 3 {
		t.Errorf("the summary's own keys lost to vLLM's: %+v", s)
	}
}

// TestMaxOutputTokensPerSecond: output tokens count at their chunks'
// times in 1-second buckets from the run's start (those beyond the chunks
// at the last chunk, a non-streamed answer's at its end); the seconds add
// up to the output tokens; the summary's figure is the busiest second,
// and it is exact through the merge state.
func TestMaxOutputTokensPerSecond(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	a := NewCollector()
	// 4 chunks in second 0, 2 in second 1; usage says 8 tokens: 2 more at
	// the last chunk (second 1).
	a.Add(&Sample{Request: record.Request{TokenTimes: ms(100, 300, 500, 900, 1100, 1200), End: 1300 * time.Millisecond}, OK: true, OutputTokens: 8})
	// Non-streamed: 5 tokens at its end, second 2.
	a.Add(&Sample{Request: record.Request{End: 2500 * time.Millisecond}, OK: true, OutputTokens: 5})
	// A failed request's chunks do not count.
	a.Add(&Sample{Request: record.Request{ErrorClass: "timeout", TokenTimes: ms(100, 200)}, OK: false, OutputTokens: 50})
	if want := []int64{4, 4, 5}; !slices.Equal(a.OutputPerSecond, want) {
		t.Fatalf("per second %v, want %v", a.OutputPerSecond, want)
	}
	var sum int64
	for _, v := range a.OutputPerSecond {
		sum += v
	}
	if sum != a.OutputTokens {
		t.Errorf("seconds add up to %d, output tokens %d", sum, a.OutputTokens)
	}
	s := &Summary{}
	a.Summarize(s, 3*time.Second)
	if s.MaxOutputTokensPerS != 5 {
		t.Errorf("max_output_tokens_per_s %v, want 5", s.MaxOutputTokensPerS)
	}

	// A second copy of the run, busy in second 1: merged through the
	// state, second 1 holds 4 + 6.
	b := NewCollector()
	b.Add(&Sample{Request: record.Request{TokenTimes: ms(1000, 1100, 1200, 1300, 1400, 1500)}, OK: true, OutputTokens: 6})
	var merged *Collector
	for _, c := range []*Collector{a, b} {
		got := throughState(t, c.State, CollectorFromState)
		if merged == nil {
			merged = got
		} else {
			merged.Merge(got)
		}
	}
	if want := []int64{4, 10, 5}; !slices.Equal(merged.OutputPerSecond, want) {
		t.Errorf("merged per second %v, want %v", merged.OutputPerSecond, want)
	}
	if _, err := CollectorFromState(CollectorState{OutputPerSecond: "1,-2"}); err == nil {
		t.Error("a negative count was accepted")
	}
}
