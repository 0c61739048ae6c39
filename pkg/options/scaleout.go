package options

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Scale-out (docs/SCALE_OUT.md): N copies of one run each compute the same
// seeded schedule, keep the arrivals with Index % N == I (--shard I/N),
// start it at the same wall-clock instant (--start-at) and write a summary
// that `fineserve-gen merge` combines exactly. The schedule's hash is
// measured with the workload (pkg/workload); the wait for --start-at is the
// runner's.

// ParseStartAt reads a --start-at time: RFC 3339 (2025-06-01T12:00:00Z,
// with an offset or fractional seconds as needed) or Unix seconds, with a
// fraction if wanted (1748779200.25).
func ParseStartAt(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("--start-at: empty (want an RFC 3339 time or Unix seconds)")
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	ok := whole != "" && allDigits(whole) && len(whole) <= 12 && (!hasFrac || frac != "" && allDigits(frac))
	if !ok {
		return time.Time{}, fmt.Errorf("--start-at %q: want an RFC 3339 time (2025-06-01T12:00:00Z) or Unix seconds (1748779200, 1748779200.5)", s)
	}
	sec, _ := strconv.ParseInt(whole, 10, 64)
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ns += int64(frac[i] - '0')
		}
	}
	return time.Unix(sec, ns), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validateScaleOut returns the problems of --shard and --start-at that need
// no clock.
func (o *Options) validateScaleOut() error {
	if o.ShardCount > 1 && o.Seed == -1 {
		return fmt.Errorf("--shard %d/%d needs an explicit --seed: with a time-based seed (-1, the default) every copy would draw a different schedule, and the shards would not split one schedule; give every copy the same --seed N",
			o.ShardIndex, o.ShardCount)
	}
	return nil
}

// Salt is the prompt salt of a run: --prompt-salt, else new content every
// run (no prefix cache carries over from an earlier run), but the same for
// every copy of a sharded run — derived from the shared --start-at — so
// requests that share a prefix in the schedule share it on the wire
// whichever copy sends them.
func (o *Options) Salt(seed uint64) uint64 {
	if o.PromptSalt != 0 {
		return uint64(o.PromptSalt)
	}
	if !o.StartAt.IsZero() {
		return uint64(o.StartAt.UnixNano()) ^ seed<<1
	}
	return uint64(time.Now().UnixNano()) ^ seed<<1
}
