package mockserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// ArrivalLogHeader is the first line of an arrival log.
const ArrivalLogHeader = "seq,arrival_unix_ns"

// maxPendingArrivals bounds the arrivals held between two flushes of an
// ArrivalLog (8 MiB); arrivals beyond it are counted and reported by Close.
const maxPendingArrivals = 1 << 20

// ArrivalLog records the instant each generation request reached the
// server, for measuring a client's send lag from the server's side. It
// writes one CSV line per request, "seq,arrival_unix_ns": seq counts
// requests from 0 in the order they arrived, arrival_unix_ns is the wall
// clock in Unix nanoseconds, read through the monotonic clock from the
// log's creation (so a clock step during a run does not move arrivals).
// Processes on one machine share the wall clock, so a client on the same
// host can compare these instants with its own schedule.
//
// Record is cheap and never blocks on I/O: arrivals are appended to memory
// under a mutex, and one goroutine writes them out at every flush interval.
// Create one with NewArrivalLog and Close it when the server has stopped.
type ArrivalLog struct {
	base   time.Time // creation instant, with its monotonic reading
	baseNS int64     // base as Unix nanoseconds

	mu      sync.Mutex
	pending []int64
	dropped int64
	closed  bool

	w       *bufio.Writer
	seq     int64
	spare   []int64
	line    []byte
	err     error
	stop    chan struct{}
	stopped chan struct{}
}

// NewArrivalLog returns a log writing to w every flush interval (≤ 0:
// 100 ms). The caller closes w after Close.
func NewArrivalLog(w io.Writer, flush time.Duration) *ArrivalLog {
	if flush <= 0 {
		flush = 100 * time.Millisecond
	}
	now := time.Now()
	l := &ArrivalLog{base: now, baseNS: now.UnixNano(), w: bufio.NewWriterSize(w, 64<<10),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	_, l.err = l.w.WriteString(ArrivalLogHeader + "\n")
	go flushEvery(flush, l.stop, l.stopped, l.flush)
	return l
}

// Record notes that a request arrived now. It is safe for concurrent use.
func (l *ArrivalLog) Record() {
	l.mu.Lock()
	// The clock is read under the lock, so seq order is arrival order.
	ns := l.baseNS + int64(time.Since(l.base))
	if len(l.pending) < maxPendingArrivals && !l.closed {
		l.pending = append(l.pending, ns)
	} else {
		l.dropped++
	}
	l.mu.Unlock()
}

// flushEvery calls flush every period until stop is closed, then once
// more, and closes stopped: the writer goroutine of the server's logs.
func flushEvery(period time.Duration, stop <-chan struct{}, stopped chan<- struct{}, flush func()) {
	defer close(stopped)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			flush()
		case <-stop:
			flush()
			return
		}
	}
}

// flush writes the pending arrivals; only the writer goroutine calls it.
func (l *ArrivalLog) flush() {
	l.mu.Lock()
	batch := l.pending
	l.pending, l.spare = l.spare[:0], nil
	l.mu.Unlock()
	for _, ns := range batch {
		b := strconv.AppendInt(l.line[:0], l.seq, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, ns, 10)
		b = append(b, '\n')
		l.line = b
		l.seq++
		if l.err == nil {
			_, l.err = l.w.Write(b)
		}
	}
	if l.err == nil {
		l.err = l.w.Flush()
	}
	l.spare = batch[:0]
}

// Close stops recording, writes what is pending and returns the first
// write error, or an error counting the arrivals that could not be held.
func (l *ArrivalLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("arrival log: already closed")
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.stopped
	if l.err != nil {
		return fmt.Errorf("arrival log: %w", l.err)
	}
	l.mu.Lock()
	dropped := l.dropped
	l.mu.Unlock()
	if dropped > 0 {
		return fmt.Errorf("arrival log: %d arrivals not logged (more than %d were waiting for the writer)", dropped, maxPendingArrivals)
	}
	return nil
}

// ReadArrivalLog reads an arrival log written by ArrivalLog and returns the
// arrival instants in Unix nanoseconds, in arrival order. A malformed line,
// a sequence number out of order or an instant earlier than the previous
// one is an error naming its line.
func ReadArrivalLog(r io.Reader) ([]int64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), 256)
	var out []int64
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			if string(b) != ArrivalLogHeader {
				return nil, fmt.Errorf("arrival log: line 1: header %q, want %q", truncate(b), ArrivalLogHeader)
			}
			continue
		}
		i := bytes.IndexByte(b, ',')
		if i < 0 {
			return nil, fmt.Errorf("arrival log: line %d: %q: want seq,arrival_unix_ns", line, truncate(b))
		}
		seq, err := strconv.ParseInt(string(b[:i]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("arrival log: line %d: seq %q: not an integer", line, truncate(b[:i]))
		}
		if seq != int64(len(out)) {
			return nil, fmt.Errorf("arrival log: line %d: seq %d, want %d (lines missing or out of order)", line, seq, len(out))
		}
		ns, err := strconv.ParseInt(string(b[i+1:]), 10, 64)
		if err != nil || ns < 0 {
			return nil, fmt.Errorf("arrival log: line %d: arrival_unix_ns %q: want a non-negative integer", line, truncate(b[i+1:]))
		}
		if n := len(out); n > 0 && ns < out[n-1] {
			return nil, fmt.Errorf("arrival log: line %d: arrival %d is before the previous one (%d)", line, ns, out[n-1])
		}
		out = append(out, ns)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("arrival log: line %d: longer than 256 bytes", line+1)
		}
		return nil, fmt.Errorf("arrival log: line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("arrival log: empty (no header)")
	}
	return out, nil
}

// truncate shortens b for an error message.
func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
