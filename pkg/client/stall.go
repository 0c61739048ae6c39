package client

import (
	"io"
	"sync/atomic"
	"time"
)

// stallWatch ends an attempt whose server sends no byte for d
// (--stall-timeout), or that is still going at deadline (--request-timeout
// without retries). It costs a read an atomic store of the time the read
// returned, which the stream reader takes anyway: no timer is touched per
// chunk. The attempt's one timer fires once d after the last time it
// looked (or at the deadline, if sooner); it then ends the attempt if
// nothing came since d ago or the deadline has passed, or waits for what
// is left.
type stallWatch struct {
	d        time.Duration // 0: no stall check
	deadline time.Time     // zero: none; on the runtime's clock (time.Now)
	now      func() time.Time
	base     time.Time    // monotonic origin of last
	last     atomic.Int64 // nanoseconds from base to the last byte
	done     atomic.Bool
	timer    *time.Timer
	stop     func(cause error)
}

// watchStall starts watching an attempt that has just been sent, on the
// clock now; cancel ends it with errStall.
func watchStall(d time.Duration, now func() time.Time, cancel func(cause error)) *stallWatch {
	return watchAttempt(d, time.Time{}, now, cancel)
}

// watchAttempt starts watching an attempt for a stall of d (0: none) and
// for deadline (zero: none): cancel ends it with errStall or
// errRequestTimeout.
func watchAttempt(d time.Duration, deadline time.Time, now func() time.Time, cancel func(cause error)) *stallWatch {
	w := &stallWatch{d: d, deadline: deadline, now: now, base: now(), stop: cancel}
	w.timer = time.AfterFunc(w.wait(d), w.check)
	return w
}

// wait is how long the timer waits for a stall of d: at most until the
// deadline.
func (w *stallWatch) wait(d time.Duration) time.Duration {
	if w.deadline.IsZero() {
		return d
	}
	if left := time.Until(w.deadline); d <= 0 || left < d {
		return left
	}
	return d
}

// touch records bytes that arrived at t (a reading of the watch's clock).
func (w *stallWatch) touch(t time.Time) { w.last.Store(int64(t.Sub(w.base))) }

// check runs on the timer's goroutine.
func (w *stallWatch) check() {
	if w.done.Load() {
		return
	}
	if !w.deadline.IsZero() && !time.Now().Before(w.deadline) {
		w.stop(errRequestTimeout)
		return
	}
	var next time.Duration
	if w.d > 0 {
		idle := w.now().Sub(w.base) - time.Duration(w.last.Load())
		if idle >= w.d {
			w.stop(errStall)
			return
		}
		next = w.d - idle
	}
	w.timer.Reset(w.wait(next))
}

// end stops watching.
func (w *stallWatch) end() {
	w.done.Store(true)
	w.timer.Stop()
}

// stallReader records every read that returned bytes with its watch (for
// bodies the stream reader does not read: errors, whole JSON answers).
type stallReader struct {
	r io.Reader
	w *stallWatch
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.w.touch(s.w.now())
	}
	return n, err
}
