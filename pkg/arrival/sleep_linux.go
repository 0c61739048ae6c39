package arrival

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// preciseClock sleeps with clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME),
// the clock Go's monotonic readings come from. Each wait converts its due
// time afresh: the time left is read on Go's clock first and the kernel's
// clock second, so a pause between the two readings (a preempted thread)
// makes the wake-up that much late, never early.
type preciseClock struct {
	available bool
	// between, when set, runs between the two readings (tests).
	between func()
}

func newPreciseClock() preciseClock {
	var ts unix.Timespec
	return preciseClock{available: unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil}
}

func (c preciseClock) ok() bool { return c.available }

func (c preciseClock) sleepUntil(t time.Time) {
	left := time.Until(t)
	if c.between != nil {
		c.between()
	}
	var now unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &now) != nil {
		return
	}
	ts := unix.NsecToTimespec(now.Nano() + int64(left))
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
