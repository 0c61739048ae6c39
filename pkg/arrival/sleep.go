package arrival

import (
	"context"
	"time"
)

// The dispatcher waits on one of two clocks, chosen wait by wait
// (timerPolicy):
//
//   - the Go runtime's timers cost nothing beyond the wait itself, and keep
//     time while the process is busy: its threads check them whenever they
//     schedule a goroutine. An idle process waits in its network poller in
//     whole milliseconds, though, so a timer due in 300 µs fires up to a
//     millisecond late: a full mean gap at 1,000 req/s.
//   - a precise kernel timer (timerfd on Linux, read through the same
//     poller) wakes the process at the due time to the microsecond, at
//     the price of two system calls and a wake-up of its own per wait.
const (
	// timerTolerance is how late a runtime timer may fire and still be
	// trusted with the next wait.
	timerTolerance = 200 * time.Microsecond
	// preciseSpell is how many waits are taken on the precise timer after
	// a runtime timer came late (and at the start), before the runtime's
	// timers are tried again.
	preciseSpell = 4096
)

// timerPolicy picks the clock of each wait: the precise one for a spell
// after a runtime timer fired later than timerTolerance, the runtime's
// otherwise. It is a pure state machine (tests drive it directly).
type timerPolicy struct {
	precise int // waits left to take on the precise timer
}

func newTimerPolicy() timerPolicy { return timerPolicy{precise: preciseSpell} }

// usePrecise reports whether the next wait is taken on the precise timer.
func (p *timerPolicy) usePrecise() bool { return p.precise > 0 }

// observe records a wait that ended late after its due time, on the
// precise timer or the runtime's.
func (p *timerPolicy) observe(precise bool, late time.Duration) {
	switch {
	case precise:
		p.precise--
	case late > timerTolerance:
		p.precise = preciseSpell
	}
}

// sleeper waits until absolute instants. It is used by one goroutine.
type sleeper struct {
	timer   *time.Timer
	precise *preciseTimer // nil where the platform has none
	policy  timerPolicy
}

// newSleeper returns a sleeper whose precise waits end early when ctx is
// done (its runtime waits watch ctx themselves).
func newSleeper(ctx context.Context) *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	s := &sleeper{timer: t, policy: newTimerPolicy()}
	if p, err := newPreciseTimer(ctx); err == nil {
		s.precise = p
	}
	return s
}

func (s *sleeper) close() {
	s.timer.Stop()
	if s.precise != nil {
		s.precise.close()
	}
}

// sleepUntil returns when t has come or ctx is done (with ctx's error).
func (s *sleeper) sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	precise := s.precise != nil && s.policy.usePrecise()
	if precise {
		if err := s.precise.sleepUntil(t); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// The precise timer failed: the runtime's from now on.
			s.precise.close()
			s.precise = nil
			return s.sleepUntil(ctx, t)
		}
	} else {
		s.timer.Reset(d)
		select {
		case <-ctx.Done():
			s.timer.Stop()
			return ctx.Err()
		case <-s.timer.C:
		}
	}
	s.policy.observe(precise, time.Since(t))
	return ctx.Err()
}

// SleepUntil is the Dispatcher's default sleep, usable on any goroutine: it
// waits until t or ctx is done, precisely where the platform allows.
func SleepUntil(ctx context.Context, t time.Time) error {
	s := newSleeper(ctx)
	defer s.close()
	return s.sleepUntil(ctx, t)
}
