package plan

import (
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Busiest returns the stretch of span (whole windows, at least one) of the
// planned windows that holds the most requests: its start and end offsets.
func Busiest(ws []Window, window, span time.Duration) (from, to time.Duration) {
	m := max(int((span+window-1)/window), 1)
	m = min(m, len(ws))
	var sum, best int64
	bestAt := 0
	for i := range ws {
		sum += ws[i].Requests
		if i >= m {
			sum -= ws[i-m].Requests
		}
		if i >= m-1 && sum > best {
			best, bestAt = sum, i-m+1
		}
	}
	from = time.Duration(bestAt) * window
	return from, from + time.Duration(m)*window
}

// Slice is the arrivals of s due in [from, to), moved to start at 0 and
// renumbered from 0 (their burst ids with them), in the order of s.
func Slice(s arrival.Schedule, from, to time.Duration) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		var first int64 = -1
		for a := range s {
			if a.At < from {
				continue
			}
			if a.At >= to {
				return
			}
			if first < 0 {
				first = a.Index
			}
			a.At -= from
			a.Index -= first
			a.Burst = max(a.Burst-first, 0)
			if !yield(a) {
				return
			}
		}
	}
}

// Scale divides every offset of s by factor (> 1 is faster), as
// --time-scale does.
func Scale(s arrival.Schedule, factor float64) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for a := range s {
			a.At = time.Duration(float64(a.At) / factor)
			if !yield(a) {
				return
			}
		}
	}
}
