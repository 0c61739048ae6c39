package mockserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
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
	log    pendingLog[int64]
	seq    int64  // the writer goroutine's
	line   []byte // the writer goroutine's
}

// NewArrivalLog returns a log writing to w every flush interval (≤ 0:
// 100 ms). The caller closes w after Close.
func NewArrivalLog(w io.Writer, flush time.Duration) *ArrivalLog {
	now := time.Now()
	l := &ArrivalLog{base: now, baseNS: now.UnixNano()}
	l.log.start("arrival log", maxPendingArrivals, w, 64<<10, ArrivalLogHeader+"\n", flush, l.write)
	return l
}

// Record notes that a request arrived now. It is safe for concurrent use.
func (l *ArrivalLog) Record() {
	l.log.mu.Lock()
	// The clock is read under the lock, so seq order is arrival order.
	l.log.addLocked(l.baseNS + int64(time.Since(l.base)))
	l.log.mu.Unlock()
}

// write writes a batch of arrivals as lines.
func (l *ArrivalLog) write(batch []int64) error {
	for _, ns := range batch {
		b := strconv.AppendInt(l.line[:0], l.seq, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, ns, 10)
		b = append(b, '\n')
		l.line = b
		l.seq++
		if _, err := l.log.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Close stops recording, writes what is pending and returns the first
// write error, or an error counting the arrivals that could not be held.
func (l *ArrivalLog) Close() error {
	dropped, err := l.log.close()
	if err == nil && dropped > 0 {
		err = fmt.Errorf("arrival log: %d arrivals not logged (more than %d were waiting for the writer)", dropped, maxPendingArrivals)
	}
	return err
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
