package runner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/monitor"
)

// Scale-out (docs/SCALE_OUT.md): N copies of one run each compute the same
// seeded schedule, keep the arrivals with Index % N == I (--shard I/N),
// start it at the same wall-clock instant (--start-at) and write a summary
// that `fineserve-gen merge` combines exactly. The schedule's hash is
// measured with the workload (pkg/workload).

// StartAtSlack is how far in the past --start-at may be when a copy is
// ready to start: later, the copy refuses to run, since its first requests
// would all leave at once, late.
const StartAtSlack = time.Second

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

// checkStartAt refuses a --start-at more than StartAtSlack before now.
func checkStartAt(o *Options, now time.Time, when string) error {
	if o.StartAt.IsZero() {
		return nil
	}
	if late := now.Sub(o.StartAt); late > StartAtSlack {
		return fmt.Errorf("--start-at %s was %.1f s ago %s (at most %v in the past is accepted): give every copy a time far enough ahead to build the schedule, connect and warm up",
			o.StartAt.UTC().Format(time.RFC3339Nano), late.Seconds(), when, StartAtSlack)
	}
	return nil
}

// waitForStart returns the instant the run's schedule starts: now, or
// --start-at after sleeping until it. The instant returned carries a
// monotonic clock reading, so the schedule is kept on the monotonic clock
// from there (a step of the wall clock during the run does not move it).
func waitForStart(ctx context.Context, o *Options, log *logger) (time.Time, error) {
	now := time.Now()
	if o.StartAt.IsZero() {
		return now, nil
	}
	if err := checkStartAt(o, now, "when this copy was ready (after the warm-up)"); err != nil {
		return time.Time{}, usage(err)
	}
	if wait := o.StartAt.Sub(now); wait > 0 {
		log.Infof("start-at: waiting %v for %s", wait.Round(time.Millisecond), o.StartAt.UTC().Format(time.RFC3339Nano))
		if err := arrival.SleepUntil(ctx, o.StartAt); err != nil {
			return time.Time{}, fmt.Errorf("stopped while waiting for --start-at: %w", err)
		}
	}
	now = time.Now()
	return now.Add(o.StartAt.Sub(now)), nil
}

// runSalt is the prompt salt of a run without --prompt-salt: new content
// every run (no prefix cache carries over from an earlier run), but the
// same for every copy of a sharded run — derived from the shared
// --start-at — so requests that share a prefix in the schedule share it on
// the wire whichever copy sends them.
func runSalt(o *Options, seed uint64) uint64 {
	if !o.StartAt.IsZero() {
		return uint64(o.StartAt.UnixNano()) ^ seed<<1
	}
	return uint64(time.Now().UnixNano()) ^ seed<<1
}

// annotateShard adds the run's identity and merge state to the summary:
// the schedule hash, the shard, --start-at and the merge state — the
// collector, the breakdowns the summary holds, and the monitor's windows,
// lengths and goodput — which `fineserve-gen merge` combines with other
// copies'.
func annotateShard(sum *metrics.Summary, o *Options, hash string, col *metrics.Collector, mon *monitor.Monitor, elapsed time.Duration, breakdowns []breakdown, sessions *metrics.SessionsRun, byEndpoint *metrics.Endpoints) error {
	sum.ScheduleHash = hash
	sum.Shard = &metrics.ShardInfo{Count: o.ShardCount, Indices: []int64{o.ShardIndex}}
	if !o.StartAt.IsZero() {
		sum.StartAt = o.StartAt.UTC().Format(time.RFC3339Nano)
	}
	groups := map[string]*metrics.Groups{}
	for _, g := range breakdowns {
		if sum.Breakdown(g.key) != nil { // only those the summary holds
			groups[g.key] = g.Groups
		}
	}
	p := metrics.RunState{Collector: col, Elapsed: elapsed, Groups: groups, Sessions: sessions, Endpoints: byEndpoint}
	if err := mon.FillRunState(&p); err != nil {
		return fmt.Errorf("merge state: %w", err)
	}
	st, err := metrics.NewMergeState(p)
	if err != nil {
		return fmt.Errorf("merge state: %w", err)
	}
	sum.MergeState = &st
	return nil
}
