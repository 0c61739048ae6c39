package client

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// stallWatch ends an attempt whose server sends no byte for d
// (--stall-timeout). It costs a read an atomic store of the time the read
// returned, which the stream reader takes anyway: no timer is touched per
// chunk. The attempt's one timer fires once d after the last time it
// looked; it then ends the attempt if nothing came since d ago, or waits
// for what is left of d after the last byte.
type stallWatch struct {
	d     time.Duration
	now   func() time.Time
	base  time.Time    // monotonic origin of last
	last  atomic.Int64 // nanoseconds from base to the last byte
	done  atomic.Bool
	timer *time.Timer
	stop  context.CancelCauseFunc
}

// watchStall starts watching an attempt that has just been sent, on the
// clock now; cancel ends it with errStall.
func watchStall(d time.Duration, now func() time.Time, cancel context.CancelCauseFunc) *stallWatch {
	w := &stallWatch{d: d, now: now, base: now(), stop: cancel}
	w.timer = time.AfterFunc(d, w.check)
	return w
}

// touch records bytes that arrived at t (a reading of the watch's clock).
func (w *stallWatch) touch(t time.Time) { w.last.Store(int64(t.Sub(w.base))) }

// check runs on the timer's goroutine.
func (w *stallWatch) check() {
	if w.done.Load() {
		return
	}
	idle := w.now().Sub(w.base) - time.Duration(w.last.Load())
	if idle >= w.d {
		w.stop(errStall)
		return
	}
	w.timer.Reset(w.d - idle)
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
