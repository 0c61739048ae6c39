package arrival

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseClock sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME),
// the clock Go's monotonic readings come from, so a due time converts
// exactly and no error accumulates.
type preciseClock struct {
	base     time.Time
	baseMono int64
}

func newPreciseClock() preciseClock {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return preciseClock{}
	}
	return preciseClock{base: time.Now(), baseMono: ts.Nano()}
}

func (c preciseClock) ok() bool { return c.baseMono != 0 }

func (c preciseClock) sleepUntil(t time.Time) {
	ts := unix.NsecToTimespec(c.baseMono + int64(t.Sub(c.base)))
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}

// lockPreciseThread pins the calling goroutine to its OS thread and sets
// the thread's timer slack to 1 ns (the default 50 µs slack would be added
// to every wake-up). The goroutine must exit without unlocking, so that the
// runtime discards the thread and its setting with it.
func lockPreciseThread() {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}
