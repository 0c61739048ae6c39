package arrival

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdSleeper waits for absolute instants on a timerfd read through the
// runtime's network poller: the waiting goroutine parks like one waiting
// for a socket, holding no OS thread and no processor, and the kernel's
// high-resolution timer (no timer slack) makes the file readable at the
// due time, which wakes a thread already waiting in the poller. A wait
// costs two system calls (arming the timer, reading it) and no thread of
// its own: a clock_nanosleep on a pinned thread is as precise, but every
// wake-up of that thread and every hand-over of its processor costs more
// than the request it dispatches at thousands of requests per second.
type timerfdSleeper struct {
	fd      int // f's; f.Fd() would make f blocking
	f       *os.File
	stop    func() bool
	between func() // runs between the two clock readings (tests)
}

// newTimerfdSleeper returns a sleeper whose waits end when ctx does, or an
// error where timerfd is unavailable.
func newTimerfdSleeper(ctx context.Context) (*timerfdSleeper, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	s := &timerfdSleeper{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
	// A canceled context ends the wait in progress, and every later one.
	s.stop = context.AfterFunc(ctx, func() { s.f.SetReadDeadline(time.Unix(1, 0)) })
	return s, nil
}

func (s *timerfdSleeper) close() {
	s.stop()
	s.f.Close()
}

// sleepUntil returns when t has come or ctx is done (with ctx's error).
// The due time is converted to the kernel's monotonic clock afresh: the
// time left is read on Go's clock first and the kernel's second, so a
// pause between the two readings makes the wake-up late, never early.
func (s *timerfdSleeper) sleepUntil(ctx context.Context, t time.Time) error {
	left := time.Until(t)
	if left <= 0 {
		return ctx.Err()
	}
	if s.between != nil {
		s.between()
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return err
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(now.Nano() + int64(left))}
	if err := unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return err
	}
	var buf [8]byte
	for {
		_, err := s.f.Read(buf[:])
		switch {
		case err == nil:
			return nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return ctx.Err()
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return err
		}
	}
}
