package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Scale-out (docs/SCALE_OUT.md): N copies of one run each compute the same
// seeded schedule, keep the arrivals with Index % N == I (--shard I/N),
// start it at the same wall-clock instant (--start-at) and write a summary
// that `fineserve-gen merge` combines exactly.

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

// scheduleHash computes the hash of the whole schedule on the first walk
// that goes through it to the end (the runner walks it to count it before
// sending anything): "sha256:" and the SHA-256 of the schedule CSV
// --schedule-out writes for the unsharded schedule, header included, so
// `fineserve-gen … --dry-run --schedule-out s.csv && sha256sum s.csv`
// gives the same digits. Later walks pass through untouched.
type scheduleHash struct {
	mu   sync.Mutex
	done bool
	sum  string
	n    int64
}

// wrap returns s, hashing it on its first complete walk. It must wrap the
// unsharded schedule.
func (h *scheduleHash) wrap(s arrival.Schedule) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		h.mu.Lock()
		done := h.done
		h.mu.Unlock()
		if done {
			s(yield)
			return
		}
		d := sha256.New()
		d.Write([]byte(arrival.ScheduleHeader + "\n"))
		var line []byte
		var n int64
		for a := range s {
			line = arrival.AppendCSVRow(line[:0], a)
			d.Write(line)
			n++
			if !yield(a) {
				return
			}
		}
		h.mu.Lock()
		if !h.done {
			h.done, h.sum, h.n = true, "sha256:"+hex.EncodeToString(d.Sum(nil)), n
		}
		h.mu.Unlock()
	}
}

// result returns the hash and the number of arrivals of the whole schedule
// (ok: a walk has completed).
func (h *scheduleHash) result() (sum string, n int64, ok bool) {
	if h == nil {
		return "", 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sum, h.n, h.done
}

// shardRecorder keeps what a run's summary needs to merge with other
// copies' (metrics.MergeState): the states of the closed windows; the
// breakdowns and distributions are the run's own (wl.groups, the monitor's).
type shardRecorder struct {
	o       *Options
	wl      *workload
	mon     *monitor
	col     *metrics.Collector
	windows []metrics.WindowState
	err     error
}

// watchShard starts recording the run's merge state: it keeps each
// window's distributions when the monitor closes it, and annotates the
// summary last. Call it before the monitor begins.
func watchShard(o *Options, wl *workload, mon *monitor, col *metrics.Collector) *shardRecorder {
	r := &shardRecorder{o: o, wl: wl, mon: mon, col: col}
	closeWindow := mon.win.onClose
	mon.win.onClose = func(p *period) {
		closeWindow(p)
		// The monitor has just numbered and kept the window; its
		// accumulator is reset after this returns.
		ws, err := p.acc.State(len(mon.windows) - 1)
		if err != nil && r.err == nil {
			r.err = err
		}
		r.windows = append(r.windows, ws)
	}
	wl.annotate = append(wl.annotate, r.annotate)
	return r
}

// annotate adds the run's identity and merge state to the summary: the
// schedule hash, the shard, --start-at and metrics.KeyMergeState.
func (r *shardRecorder) annotate(sum *metrics.Summary, elapsed time.Duration) error {
	if r.err != nil {
		return fmt.Errorf("merge state: %w", r.err)
	}
	var errs []error
	if h, _, ok := r.wl.hash.result(); ok {
		errs = append(errs, sum.SetExtra(metrics.KeyScheduleHash, h))
	}
	errs = append(errs, sum.SetExtra(metrics.KeyShard, metrics.ShardInfo{Count: r.o.ShardCount, Indices: []int64{r.o.ShardIndex}}))
	if !r.o.StartAt.IsZero() {
		errs = append(errs, sum.SetExtra(metrics.KeyStartAt, r.o.StartAt.UTC().Format(time.RFC3339Nano)))
	}
	groups := map[string]*metrics.Groups{}
	for k, g := range r.wl.groups {
		if _, ok := sum.Extra[k]; ok { // only those the summary holds
			groups[k] = g
		}
	}
	p := metrics.RunState{
		Collector: r.col, Elapsed: elapsed, Windows: r.windows, Groups: groups,
		InputLengths: r.mon.lengths.In, OutputLengths: r.mon.lengths.Out,
	}
	if r.mon.slo.Set() {
		p.Goodput = &r.mon.good
	}
	st, err := metrics.NewMergeState(p)
	if err == nil {
		err = sum.SetExtra(metrics.KeyMergeState, st)
	}
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("merge state: %w", err)
	}
	return nil
}
