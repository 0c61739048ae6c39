package arrival

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// preciseTimer waits for absolute instants on a timerfd read through the
// runtime's network poller: the waiting goroutine parks like one waiting
// for a socket, holding no thread and no processor, and the kernel's
// high-resolution timer (which has no timer slack) makes the file readable
// at the due time, waking a thread that waits in the poller.
type preciseTimer struct {
	fd   int // f's; f.Fd() would make f blocking
	f    *os.File
	stop func() bool
	// between, when set, runs between the two clock readings (tests).
	between func()
}

// newPreciseTimer returns a timer whose waits end (with an error) once ctx
// is done.
func newPreciseTimer(ctx context.Context) (*preciseTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	p := &preciseTimer{fd: fd, f: os.NewFile(uintptr(fd), "timerfd")}
	p.stop = context.AfterFunc(ctx, func() { p.f.SetReadDeadline(time.Unix(1, 0)) })
	return p, nil
}

func (p *preciseTimer) close() {
	p.stop()
	p.f.Close()
}

// sleepUntil returns when t has come, or with an error. The due time is
// converted to the kernel's monotonic clock (the one Go's monotonic
// readings come from) afresh: the time left is read on Go's clock first
// and the kernel's second, so a pause between the two readings (a
// preempted thread) makes the wake-up that much late, never early.
func (p *preciseTimer) sleepUntil(t time.Time) error {
	left := time.Until(t)
	if p.between != nil {
		p.between()
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return err
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(now.Nano() + max(int64(left), 1))}
	if err := unix.TimerfdSettime(p.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
		return err
	}
	var buf [8]byte
	for {
		_, err := p.f.Read(buf[:])
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
