package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// StartAtSlack is how far in the past --start-at may be when a copy is
// ready to start: later, the copy refuses to run, since its first requests
// would all leave at once, late.
const StartAtSlack = time.Second

// StartAtError is a --start-at more than StartAtSlack before the instant a
// copy checked it (a usage error).
type StartAtError struct {
	StartAt time.Time
	Late    time.Duration
	When    string // "at launch", "when this copy was ready (after the warm-up)"
}

func (e *StartAtError) Error() string {
	return fmt.Sprintf("--start-at %s was %.1f s ago %s (at most %v in the past is accepted): give every copy a time far enough ahead to build the schedule, connect and warm up",
		e.StartAt.UTC().Format(time.RFC3339Nano), e.Late.Seconds(), e.When, StartAtSlack)
}

// CheckStartAt refuses a --start-at (zero: none) more than StartAtSlack
// before now with a *StartAtError.
func CheckStartAt(startAt, now time.Time, when string) error {
	if startAt.IsZero() {
		return nil
	}
	if late := now.Sub(startAt); late > StartAtSlack {
		return &StartAtError{StartAt: startAt, Late: late, When: when}
	}
	return nil
}

// waitForStart returns the instant the run's schedule starts: now, or
// startAt after sleeping until it. The instant returned carries a
// monotonic clock reading, so the schedule is kept on the monotonic clock
// from there (a step of the wall clock during the run does not move it).
func waitForStart(ctx context.Context, startAt time.Time, log *Logger) (time.Time, error) {
	now := time.Now()
	if startAt.IsZero() {
		return now, nil
	}
	if err := CheckStartAt(startAt, now, "when this copy was ready (after the warm-up)"); err != nil {
		return time.Time{}, err
	}
	if wait := startAt.Sub(now); wait > 0 {
		log.Infof("start-at: waiting %v for %s", wait.Round(time.Millisecond), startAt.UTC().Format(time.RFC3339Nano))
		if err := arrival.SleepUntil(ctx, startAt); err != nil {
			return time.Time{}, fmt.Errorf("stopped while waiting for --start-at: %w", err)
		}
	}
	now = time.Now()
	return now.Add(startAt.Sub(now)), nil
}
