package mockserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
)

// Pace is how a stream's chunks are timed (Config.Pace).
type Pace int8

const (
	// PaceDefault times chunk k at start + TTFT + prefill + k·ITL, start
	// being the moment the request got a generation slot (after its body
	// was read and parsed).
	PaceDefault Pace = iota
	// PaceExact times chunk k at arrival + TTFT + prefill + k·ITL, arrival
	// being the moment the handler was entered: every due time is absolute
	// from the arrival, never shifted by the server's own work or a wait
	// for a slot (a chunk already late is written at once, the next one
	// still at its due time), and each chunk is written and flushed on its
	// own, the last one included. With a chunk log (--chunk-log) it is the
	// truth a client's figures are measured against.
	PaceExact
)

// ParsePace reads --pace: default or exact.
func ParsePace(s string) (Pace, error) {
	switch s {
	case "default", "":
		return PaceDefault, nil
	case "exact":
		return PaceExact, nil
	}
	return 0, fmt.Errorf("%q: want default or exact", s)
}

// maxPendingChunkBytes bounds the chunk-log lines held between two flushes
// (64 MiB); requests beyond it are counted and reported by Close.
const maxPendingChunkBytes = 64 << 20

// maxTracedWrites bounds the writes one request's trace keeps (a stream
// longer than this has its later gaps left out, its last write still
// logged).
const maxTracedWrites = 1 << 16

// ChunkLog records, for every streamed completion, chat completion or
// Responses API answer, when it arrived and when each write of its token
// chunks reached the socket: the server's truth of its time to first token
// and inter-token gaps. It writes one JSON line per request when the
// request ends:
//
//	{"id":7,"arrival_unix_ns":…,"received_ns":-48211,"first_write_ns":50012345,"last_write_ns":…,"writes":100,"gaps_ns":[…]}
//
// id is the request's number (in the response's id: cmpl-7, chatcmpl-7);
// arrival is when the handler was entered (what exact pacing counts
// from); received_ns, on Linux, is when the kernel received the request's
// first bytes, as an offset from the arrival (≤ 0: the time the server
// took to get to the request; absent when not known); first and last
// write are offsets from the arrival (first_write_ns is the TTFT the
// server delivered, counted from its handler; less received_ns, counted
// from the request's receipt: the truth a client's TTFT is held to);
// gaps_ns are the writes' successive differences (writes−1 of them; of a
// stream of more than 65,536 writes, the first 65,535 and the one from
// there to the last). Only token writes count: the headers, the chat role
// chunk and the Responses API's created events sent before the first token
// do not. A write is timed after its flush returned (the bytes are in the
// kernel). With ITL 0 a stream
// goes out back to back in large pieces, unflushed: only its last write
// is timed (first and last write are the same instant).
//
// The handler times into a pooled trace and formats its line itself; the
// line is appended to memory under a mutex and one goroutine writes the
// lines out every flush interval, so logging never waits on I/O. Create
// one with NewChunkLog and Close it when the server has stopped.
type ChunkLog struct {
	base   time.Time
	baseNS int64

	log    pendingLog[byte] // the lines
	traces sync.Pool
}

// NewChunkLog returns a log writing to w every flush interval (≤ 0:
// 100 ms). The caller closes w after Close.
func NewChunkLog(w io.Writer, flush time.Duration) *ChunkLog {
	now := time.Now()
	l := &ChunkLog{base: now, baseNS: now.UnixNano()}
	l.traces.New = func() any { return &chunkTrace{writes: make([]time.Time, 0, 128)} }
	l.log.start("chunk log", maxPendingChunkBytes, w, 256<<10, "", flush, func(batch []byte) error {
		_, err := l.log.w.Write(batch)
		return err
	})
	return l
}

// chunkTrace is one request's arrival and token writes.
type chunkTrace struct {
	arrival  time.Time
	received time.Time // the kernel's receipt (zero: not known)
	reqID    string    // the request's X-Request-Id ("": none)
	writes   []time.Time
	n        int // writes, all of them (writes keeps maxTracedWrites)
	line     []byte
}

// start begins the trace of a request whose handler was entered at
// arrival, whose first bytes the kernel received at received (zero: not
// known) and whose X-Request-Id is reqID (requestID; "": none); nil l: no
// log, a nil trace.
func (l *ChunkLog) start(arrival, received time.Time, reqID string) *chunkTrace {
	if l == nil {
		return nil
	}
	t := l.traces.Get().(*chunkTrace)
	t.arrival, t.received, t.reqID, t.writes, t.n = arrival, received, reqID, t.writes[:0], 0
	return t
}

// wrote notes a token write that has just reached the socket.
func (t *chunkTrace) wrote() {
	if t == nil {
		return
	}
	now := time.Now()
	t.n++
	if len(t.writes) == maxTracedWrites {
		t.writes[len(t.writes)-1] = now
		return
	}
	t.writes = append(t.writes, now)
}

// finish logs a traced request (id: its response's number) and recycles
// its trace; a request without a token write is not logged.
func (l *ChunkLog) finish(t *chunkTrace, id int64) {
	if t == nil {
		return
	}
	defer l.traces.Put(t)
	if len(t.writes) == 0 {
		return
	}
	b := append(t.line[:0], `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	if t.reqID != "" { // a plain id (requestID): nothing to escape
		b = append(b, `,"request_id":"`...)
		b = append(b, t.reqID...)
		b = append(b, '"')
	}
	b = append(b, `,"arrival_unix_ns":`...)
	b = strconv.AppendInt(b, l.baseNS+int64(t.arrival.Sub(l.base)), 10)
	if !t.received.IsZero() {
		b = append(b, `,"received_ns":`...)
		b = strconv.AppendInt(b, t.received.UnixNano()-t.arrival.UnixNano(), 10)
	}
	b = append(b, `,"first_write_ns":`...)
	b = strconv.AppendInt(b, int64(t.writes[0].Sub(t.arrival)), 10)
	b = append(b, `,"last_write_ns":`...)
	b = strconv.AppendInt(b, int64(t.writes[len(t.writes)-1].Sub(t.arrival)), 10)
	b = append(b, `,"writes":`...)
	b = strconv.AppendInt(b, int64(t.n), 10)
	b = append(b, `,"gaps_ns":[`...)
	for i := 1; i < len(t.writes); i++ {
		if i > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(t.writes[i].Sub(t.writes[i-1])), 10)
	}
	b = append(b, "]}\n"...)
	t.line = b
	l.log.mu.Lock()
	l.log.addLocked(b...)
	l.log.mu.Unlock()
}

// Close stops recording, writes what is pending and returns the first
// write error, or an error counting the requests that could not be held.
func (l *ChunkLog) Close() error {
	dropped, err := l.log.close()
	if err == nil && dropped > 0 {
		err = fmt.Errorf("chunk log: %d requests not logged (more than %d bytes were waiting for the writer)", dropped, maxPendingChunkBytes)
	}
	return err
}

// ChunkRecord is one line of a chunk log.
type ChunkRecord struct {
	ID            int64   `json:"id"`
	RequestID     string  `json:"request_id,omitempty"`
	ArrivalUnixNS int64   `json:"arrival_unix_ns"`
	ReceivedNS    *int64  `json:"received_ns,omitempty"`
	FirstWriteNS  int64   `json:"first_write_ns"`
	LastWriteNS   int64   `json:"last_write_ns"`
	Writes        int     `json:"writes"`
	GapsNS        []int64 `json:"gaps_ns"`
}

// TTFTNS is the truth's time to first token: from the kernel's receipt
// of the request when known, else from the handler's entry.
func (c ChunkRecord) TTFTNS() int64 {
	if c.ReceivedNS != nil {
		return c.FirstWriteNS - *c.ReceivedNS
	}
	return c.FirstWriteNS
}

// ReadChunkLog reads a chunk log; a line that is not a record, one with a
// negative time, or one whose gaps do not add up to its last write less its
// first, is an error naming its line.
func ReadChunkLog(r io.Reader) ([]ChunkRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var out []ChunkRecord
	line := 0
	for sc.Scan() {
		line++
		var c ChunkRecord
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("chunk log: line %d: %w", line, err)
		}
		var sum int64
		for _, g := range c.GapsNS {
			if g < 0 || sum > math.MaxInt64-g {
				return nil, fmt.Errorf("chunk log: line %d: gap %d ns: want gaps ≥ 0 adding up to an int64", line, g)
			}
			sum += g
		}
		if c.ReceivedNS != nil && (*c.ReceivedNS > 0 || *c.ReceivedNS < -int64(time.Hour)) {
			return nil, fmt.Errorf("chunk log: line %d: received_ns %d: want the kernel's receipt before the arrival, within an hour", line, *c.ReceivedNS)
		}
		if c.FirstWriteNS < 0 || c.LastWriteNS < c.FirstWriteNS {
			return nil, fmt.Errorf("chunk log: line %d: first write %d ns, last %d ns: want 0 ≤ first ≤ last", line, c.FirstWriteNS, c.LastWriteNS)
		}
		if c.Writes < 1 || len(c.GapsNS) != min(c.Writes, maxTracedWrites)-1 || (c.Writes <= maxTracedWrites && sum != c.LastWriteNS-c.FirstWriteNS) {
			return nil, fmt.Errorf("chunk log: line %d: %d writes, %d gaps adding up to %d ns, from %d to %d ns: inconsistent",
				line, c.Writes, len(c.GapsNS), sum, c.FirstWriteNS, c.LastWriteNS)
		}
		out = append(out, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("chunk log: line %d: %w", line+1, err)
	}
	return out, nil
}
