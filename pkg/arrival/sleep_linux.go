package arrival

import (
	"context"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer waits for absolute instants on a timerfd read through the
// runtime's network poller: the waiting goroutine parks like one waiting
// for a socket, holding no thread and no processor, and the kernel's
// high-resolution timer (which has no timer slack) makes the file readable
// at the due time, waking a thread that waits in the poller.
//
// A wait costs one system call, the timer's setting: the due time is
// converted to the kernel's monotonic clock with an offset measured once
// (not a clock reading per wait), and the file is not read — setting the
// timer clears its count of expirations, and the poller, edge-triggered,
// reports each new expiry.
type preciseTimer struct {
	fd  int // f's; f.Fd() would make f blocking
	f   *os.File
	raw syscall.RawConn
	// base, read on Go's clock, was at or before baseKernel (nanoseconds on
	// CLOCK_MONOTONIC): a due time converted through them comes late by
	// the gap between the two readings, never early.
	base       time.Time
	baseKernel int64
	// wait is how long after base the wait in progress ends; due, given
	// to the poller, reports whether it has (made once: no allocation per
	// wait).
	wait time.Duration
	due  func(uintptr) bool
	stop func() bool
	// between, when set, runs between the two clock readings (tests).
	between func()
}

// calibrationGap is the widest bracket of kernel clock readings around a
// Go clock reading that newPreciseTimer accepts at once: the most its waits
// can come late by the conversion. It tries a few times for a narrower one
// (a thread preempted between the readings widens it) and keeps the
// narrowest.
const calibrationGap = 2 * time.Microsecond

// newPreciseTimer returns a timer whose waits end (with an error) once ctx
// is done.
func newPreciseTimer(ctx context.Context) (*preciseTimer, error) {
	return newPreciseTimerWith(ctx, nil)
}

func newPreciseTimerWith(ctx context.Context, between func()) (*preciseTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	p := &preciseTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd"), between: between}
	p.due = func(uintptr) bool { return time.Since(p.base) >= p.wait }
	if p.raw, err = p.f.SyscallConn(); err == nil {
		err = p.calibrate()
	}
	if err != nil {
		p.f.Close()
		return nil, err
	}
	p.stop = context.AfterFunc(ctx, func() { p.f.SetReadDeadline(time.Unix(1, 0)) })
	return p, nil
}

// calibrate sets base and baseKernel from the narrowest of a few brackets
// kernel reading, Go reading, kernel reading.
func (p *preciseTimer) calibrate() error {
	best := time.Duration(-1)
	for range 8 {
		var k0, k1 unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &k0); err != nil {
			return err
		}
		now := time.Now()
		if p.between != nil {
			p.between()
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &k1); err != nil {
			return err
		}
		if gap := time.Duration(k1.Nano() - k0.Nano()); best < 0 || gap < best {
			best, p.base, p.baseKernel = gap, now, k1.Nano()
		}
		if best <= calibrationGap {
			break
		}
	}
	return nil
}

func (p *preciseTimer) close() {
	p.stop()
	p.f.Close()
}

// sleepUntil returns when t has come, or with an error.
func (p *preciseTimer) sleepUntil(t time.Time) error {
	p.wait = max(t.Sub(p.base), 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(p.baseKernel + int64(p.wait))}
	if err := unix.TimerfdSettime(p.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return err
	}
	// Once the timer has fired, at least wait has passed since base on
	// Go's monotonic clock; woken before (a readiness left from an earlier
	// wait), it waits again.
	return p.raw.Read(p.due)
}
