package client

import (
	"bytes"
	"errors"
	"io"
	"time"
)

// maxLine bounds one SSE line; a longer line is a protocol error.
const maxLine = 1 << 20

var errLineTooLong = errors.New("server-sent event line longer than 1 MiB")

// lineReader splits a response body into lines and stamps each with the
// time the read that completed it returned, before anything decodes it.
// Every line in the buffer after a read was completed by that read, so one
// stamp per read is exact.
type lineReader struct {
	r          io.Reader
	buf        []byte
	head, tail int
	scanned    int // buf[head:scanned] holds no '\n' (a long line is scanned once)
	at         time.Time
	now        func() time.Time
	// watch, when set, is told the time of every read that returned
	// bytes (--stall-timeout).
	watch *stallWatch
	// err is the error of the last read, acted on once the bytes that came
	// with it are consumed.
	err error

	// A chunked body of the lean transport is read straight from its
	// connection and deframed in buf (see framed.go): buf[tail:raw] holds
	// the bytes read and not yet deframed; body is nil otherwise, and raw
	// is tail.
	body  *leanBody
	raw   int
	chunk chunkState
}

func (l *lineReader) reset(r io.Reader, buf []byte) {
	l.r, l.buf, l.head, l.tail, l.scanned, l.err = r, buf[:cap(buf)], 0, 0, 0, nil
	l.at = time.Time{}
	l.body, l.raw, l.chunk = nil, 0, chunkState{}
}

// next returns the next line without its "\n" or "\r\n" and the time it
// arrived. The line is valid until the next call. At the end of the body a
// final unterminated line is returned before io.EOF.
func (l *lineReader) next() ([]byte, time.Time, error) {
	for {
		from := max(l.head, l.scanned)
		if i := bytes.IndexByte(l.buf[from:l.tail], '\n'); i >= 0 {
			line := l.buf[l.head : from+i]
			l.head = from + i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, l.at, nil
		}
		l.scanned = l.tail
		if l.head > 0 {
			l.raw = copy(l.buf, l.buf[l.head:l.raw])
			l.tail -= l.head
			l.scanned -= l.head
			l.head = 0
		}
		if l.err != nil {
			if l.tail > l.head && errors.Is(l.err, io.EOF) {
				line := l.buf[l.head:l.tail]
				l.head = l.tail
				return line, l.at, nil
			}
			return nil, l.at, l.err
		}
		if l.raw == len(l.buf) {
			if len(l.buf) >= maxLine {
				return nil, l.at, errLineTooLong
			}
			nb := make([]byte, 2*len(l.buf))
			copy(nb, l.buf[:l.raw])
			l.buf = nb
		}
		n, err := l.r.Read(l.buf[l.raw:])
		if n > 0 {
			l.at = l.now()
			l.raw += n
			if l.watch != nil {
				l.watch.touch(l.at)
			}
		}
		l.err = err
		if l.body == nil {
			l.tail = l.raw
		} else {
			l.deframe()
		}
	}
}
