package client

import (
	"fmt"
	"io"
	"sync"
)

// A non-streamed body is read into chunks taken from a pool and given back
// when the answer is released, so that the bodies read at once hold at
// most maxWholeInFlight bytes in chunks and leave no garbage behind: a
// body read into one buffer doubled as it grew, and each doubling left the
// old buffer to the collector (512 oversized answers read at once held
// 937 MB against a bound of 256 MiB). A body that fits is then copied into
// one buffer of its exact size, reserved too, and its chunks are given
// back at once.
const (
	firstChunk = 4 << 10  // a body's first chunk: most answers fit in it
	wholeChunk = 64 << 10 // the next ones
)

var (
	firstChunks = sync.Pool{New: func() any { b := make([]byte, firstChunk); return &b }}
	wholeChunks = sync.Pool{New: func() any { b := make([]byte, wholeChunk); return &b }}
)

// bodyChunks are the chunks of one body and the bytes reserved for it.
type bodyChunks struct {
	chunks []*[]byte
	held   int64
}

// reserve reserves n bytes against maxWholeInFlight.
func (b *bodyChunks) reserve(n int) bool {
	if wholeInFlight.Add(int64(n)) > maxWholeInFlight {
		wholeInFlight.Add(-int64(n))
		return false
	}
	b.held += int64(n)
	return true
}

// free gives the chunks back to their pools, with their reservation.
func (b *bodyChunks) free() {
	for i, c := range b.chunks {
		if i == 0 {
			firstChunks.Put(c)
		} else {
			wholeChunks.Put(c)
		}
		b.held -= int64(len(*c))
		wholeInFlight.Add(-int64(len(*c)))
	}
	b.chunks = nil
}

// readChunked reads body into chunks (readWholeBody); release gives back
// everything reserved.
func readChunked(body io.Reader) (raw []byte, release func(), err error) {
	b := &bodyChunks{}
	release = func() {
		b.free()
		wholeInFlight.Add(-b.held)
		b.held = 0
	}
	budget := protocolError{fmt.Sprintf("the non-streamed answers being read hold more than %d MiB: this one was not read (stream, or lower --max-concurrency)", maxWholeInFlight>>20)}
	total, last := 0, 0 // bytes in all, in the last chunk
	for {
		if len(b.chunks) == 0 || last == len(*b.chunks[len(b.chunks)-1]) {
			size, pool := wholeChunk, &wholeChunks
			if len(b.chunks) == 0 {
				size, pool = firstChunk, &firstChunks
			}
			if !b.reserve(size) {
				return nil, release, budget
			}
			b.chunks = append(b.chunks, pool.Get().(*[]byte))
			last = 0
		}
		c := *b.chunks[len(b.chunks)-1]
		n, rerr := body.Read(c[last:])
		last += n
		total += n
		if total > maxWholeResponse {
			return nil, release, protocolError{fmt.Sprintf("response larger than %d MiB (non-streamed answers are read whole)", maxWholeResponse>>20)}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, release, rerr
		}
	}
	if !b.reserve(total) {
		return nil, release, budget
	}
	raw = make([]byte, 0, total)
	for i, c := range b.chunks {
		if i == len(b.chunks)-1 {
			raw = append(raw, (*c)[:last]...)
		} else {
			raw = append(raw, *c...)
		}
	}
	b.free()
	return raw, release, nil
}
