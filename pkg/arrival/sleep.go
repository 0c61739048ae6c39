package arrival

import (
	"context"
	"time"
)

// coarseMargin is how early the Go timer wakes before a due time; the rest
// is slept by the platform's precise sleep. Go's timers wake up to about a
// millisecond late on Linux because the runtime's poller waits in whole
// milliseconds, which is a full mean gap at 1,000 req/s.
const coarseMargin = 2 * time.Millisecond

// sleeper waits until absolute instants. It is used by one goroutine.
type sleeper struct {
	timer   *time.Timer
	precise preciseClock
}

func newSleeper() *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{timer: t, precise: newPreciseClock()}
}

func (s *sleeper) close() { s.timer.Stop() }

// sleepUntil returns when t has come or ctx is done (with ctx's error).
// Long waits use a Go timer that a canceled context interrupts; the last
// stretch (under coarseMargin) is slept precisely and is not interruptible.
func (s *sleeper) sleepUntil(ctx context.Context, t time.Time) error {
	for {
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		if d <= coarseMargin && s.precise.ok() {
			s.precise.sleepUntil(t)
			return ctx.Err()
		}
		wait := d
		if s.precise.ok() {
			wait = d - coarseMargin
		}
		s.timer.Reset(wait)
		select {
		case <-ctx.Done():
			if !s.timer.Stop() {
				<-s.timer.C
			}
			return ctx.Err()
		case <-s.timer.C:
		}
	}
}

// SleepUntil is the Dispatcher's default sleep, usable on any goroutine: it
// waits until t or ctx is done, precisely where the platform allows.
func SleepUntil(ctx context.Context, t time.Time) error {
	s := newSleeper()
	defer s.close()
	return s.sleepUntil(ctx, t)
}
