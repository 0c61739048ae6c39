package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// schedule is arrivals at the given offsets (ms).
func schedule(ms ...int) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for i, m := range ms {
			if !yield(arrival.Arrival{Index: int64(i), At: time.Duration(m) * time.Millisecond}) {
				return
			}
		}
	}
}

// TestPrewarmCount: a count is itself; auto is --max-concurrency (at most
// the run's requests), else the busiest window of the expected latency
// (here 2 s) of the schedule, capped.
func TestPrewarmCount(t *testing.T) {
	burst := schedule(0, 100, 200, 5000, 5100, 5200, 5300, 6900, 7100, 20000)
	for _, tc := range []struct {
		name        string
		n, maxConc  int
		s           arrival.Schedule
		count, want int64
	}{
		{"a count", 5, 0, burst, 10, 5},
		{"none", 0, 0, burst, 10, 0},
		{"auto from max-concurrency", PrewarmAuto, 3, burst, 10, 3},
		{"auto, max-concurrency above the requests", PrewarmAuto, 50, burst, 10, 10},
		// 5000, 5100, 5200, 5300, 6900 lie within 2 s; 7100 is 2.1 s after 5000.
		{"auto from the schedule", PrewarmAuto, 0, burst, 10, 5},
		{"auto, capped", PrewarmAuto, 0, schedule(slices.Repeat([]int{0}, 20)...), 3, 3},
	} {
		if got := prewarmCount(tc.n, tc.maxConc, tc.s, tc.count, prewarmLatency); int64(got) != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := peakInWindow(schedule(0, 1, 2, 3, 4), time.Second, 3); got != 3 {
		t.Errorf("peakInWindow stops at its limit: %d, want 3", got)
	}
}

// TestLatencyProbe: the expected latency is the fastest warm-up's TTFT
// plus its time per token for the schedule's mean output, at least 1 s;
// without a warm-up that answered, 2 s.
func TestLatencyProbe(t *testing.T) {
	ms := time.Millisecond
	var none *latencyProbe
	if got := none.expected(100); got != prewarmLatency {
		t.Errorf("no probe: %v, want %v", got, prewarmLatency)
	}
	p := &latencyProbe{}
	failed := client.Result{ErrorClass: record.ErrHTTP5xx}
	p.add([]client.Result{failed})
	if got := p.expected(100); got != prewarmLatency {
		t.Errorf("failed warm-up: %v, want %v", got, prewarmLatency)
	}
	// 50 ms to the first of 11 tokens, then 10 tokens in 200 ms: 20 ms each.
	fast := client.Result{Sent: 10 * ms, FirstToken: 60 * ms, End: 260 * ms, CompletionTokens: 11, PromptTokens: -1, CachedTokens: -1}
	slow := client.Result{Sent: 10 * ms, FirstToken: 90 * ms, End: 500 * ms, CompletionTokens: 11, PromptTokens: -1, CachedTokens: -1}
	p.add([]client.Result{slow, fast})
	if got, want := p.expected(101), 50*ms+100*20*ms; got != want {
		t.Errorf("expected(101) = %v, want %v", got, want)
	}
	if got := p.expected(2); got != prewarmMinLatency {
		t.Errorf("expected(2) = %v, want the floor %v", got, prewarmMinLatency)
	}
	// The window follows the latency: 5 s holds 5000–7100 ms, 6 arrivals.
	burst := schedule(0, 100, 200, 5000, 5100, 5200, 5300, 6900, 7100, 20000)
	if got := prewarmCount(PrewarmAuto, 0, burst, 10, 5*time.Second); got != 6 {
		t.Errorf("auto over a 5 s window: %d, want 6", got)
	}
}
