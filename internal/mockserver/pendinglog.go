package mockserver

import (
	"bufio"
	"fmt"
	"io"
	"sync"
	"time"
)

// pendingLog is what the server's logs (ArrivalLog, ChunkLog) share: what
// they record waits in memory under a mutex, max items at the most (more
// are counted as dropped), and one goroutine writes it out at every flush
// interval, through write, and once more when the log closes.
type pendingLog[T any] struct {
	name string // "arrival log": how errors start
	max  int

	mu      sync.Mutex
	pending []T
	dropped int64
	closed  bool

	w       *bufio.Writer
	write   func(batch []T) error // to w, called by the writer goroutine only
	spare   []T
	err     error
	stop    chan struct{}
	stopped chan struct{}
}

// start makes p write to w (buffered by size bytes, header first) every
// flush interval (≤ 0: 100 ms).
func (p *pendingLog[T]) start(name string, max int, w io.Writer, size int, header string, flush time.Duration, write func(batch []T) error) {
	if flush <= 0 {
		flush = 100 * time.Millisecond
	}
	p.name, p.max, p.write = name, max, write
	p.w = bufio.NewWriterSize(w, size)
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	_, p.err = p.w.WriteString(header)
	go p.flushEvery(flush)
}

// addLocked holds items, or counts them as dropped past max or once p is
// closed; the caller holds p.mu.
func (p *pendingLog[T]) addLocked(items ...T) {
	if len(p.pending)+len(items) <= p.max && !p.closed {
		p.pending = append(p.pending, items...)
	} else {
		p.dropped++
	}
}

// flushEvery flushes every period until stop is closed, then once more,
// and closes stopped: the writer goroutine.
func (p *pendingLog[T]) flushEvery(period time.Duration) {
	defer close(p.stopped)
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.flush()
		case <-p.stop:
			p.flush()
			return
		}
	}
}

// flush writes what is pending; only the writer goroutine calls it.
func (p *pendingLog[T]) flush() {
	p.mu.Lock()
	batch := p.pending
	p.pending, p.spare = p.spare[:0], nil
	p.mu.Unlock()
	if p.err == nil && len(batch) > 0 {
		p.err = p.write(batch)
	}
	if p.err == nil {
		p.err = p.w.Flush()
	}
	p.spare = batch[:0]
}

// close stops recording and writes what is pending; it returns the first
// write error, or how many records were dropped.
func (p *pendingLog[T]) close() (dropped int64, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return 0, fmt.Errorf("%s: already closed", p.name)
	}
	p.closed = true
	p.mu.Unlock()
	close(p.stop)
	<-p.stopped
	if p.err != nil {
		return 0, fmt.Errorf("%s: %w", p.name, p.err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped, nil
}
