package runner

import (
	"slices"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
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
// the run's requests), else the busiest 2 s of the schedule, capped.
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
		if got := prewarmCount(tc.n, tc.maxConc, tc.s, tc.count); int64(got) != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := peakInWindow(schedule(0, 1, 2, 3, 4), time.Second, 3); got != 3 {
		t.Errorf("peakInWindow stops at its limit: %d, want 3", got)
	}
}
