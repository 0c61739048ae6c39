package client

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/textproto"
)

// A stream's chunked body, on the lean transport, is read by its
// lineReader straight from the connection into the reader's own buffer and
// deframed there: no chunked reader, buffered reader or counting wrapper
// between the event and its line. At 10,000 open streams each of those is
// one more structure per event to bring back into the processor's cache,
// and it is the cache, not the instructions, that a read of an event costs
// (docs/PERFORMANCE.md). The framing is net/http's, with its errors and
// limits (net/http/internal/chunked.go); FuzzFramed checks the two against
// each other.

// chunkState is where the deframing stands.
type chunkState struct {
	phase  chunkPhase
	left   uint64 // data bytes left in the current chunk
	excess int64  // framing bytes beyond what data pays for (net/http's)
	// trailer holds the trailer section read so far (nil when there is
	// none), at most maxTrailer bytes; extra says bytes came after it.
	trailer []byte
	extra   bool
}

type chunkPhase uint8

const (
	chunkHeader  chunkPhase = iota // before a chunk-size line
	chunkData                      // in a chunk's data
	chunkCRLF                      // after a chunk's data, before its CRLF
	chunkTrailer                   // after the last chunk, in the trailer
	chunkDone                      // the body has ended
)

// Errors of a chunked body, as net/http words them.
var (
	errChunkMalformed = errors.New("malformed chunked encoding")
	errChunkBareLF    = errors.New("chunked line ends with bare LF")
	errChunkCR        = errors.New("invalid CR in chunked line")
	errChunkLine      = errors.New("header line too long")
	errChunkExcess    = errors.New("chunked encoding contains too much non-data")
	errChunkHexEmpty  = errors.New("empty hex number for chunk length")
	errChunkHexByte   = errors.New("invalid byte in chunk length")
	errChunkHexLong   = errors.New("http chunk length too large")
)

// maxChunkLine bounds a chunk-size line (net/http's maxLineLength).
const maxChunkLine = 4096

// maxTrailer bounds the trailer section (net/http: its reader's buffer).
const maxTrailer = 4096

// trailerEnd returns the length of the trailer section at the start of b
// (0: its end is not here yet), or the error net/http gives it.
func trailerEnd(b []byte) (int, error) {
	if len(b) < 2 {
		return 0, nil
	}
	if b[0] == '\r' && b[1] == '\n' {
		return 2, nil
	}
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) >= maxTrailer {
			return 0, errLongTrailer
		}
		return 0, nil
	}
	br := bufio.NewReader(bytes.NewReader(b[:end+4]))
	if _, err := textproto.NewReader(br).ReadMIMEHeader(); err != nil {
		if err == io.EOF {
			return 0, errTrailerEOF
		}
		return 0, err
	}
	return end + 4 - br.Buffered(), nil
}

// framedBody returns body when it is the lean transport's chunked body,
// not yet read, or nil.
func framedBody(body io.Reader) *leanBody {
	lb, ok := body.(*leanBody)
	if !ok || lb.done {
		return nil
	}
	if cb, ok := lb.rc.(*chunkedBody); !ok || cb.done {
		return nil
	}
	return lb
}

// resetFramed makes l read lb's chunked body from its connection: first
// what the connection's buffered reader already holds past the head, then
// the connection itself.
func (l *lineReader) resetFramed(lb *leanBody, buf []byte) {
	l.reset(lb.c.nc, buf)
	l.body = lb
	if br := lb.c.br; br.Buffered() > 0 {
		n := br.Buffered()
		if n > len(l.buf) {
			l.buf = make([]byte, n)
		}
		b, _ := br.Peek(n)
		l.raw = copy(l.buf, b)
		br.Discard(n)
		// Stamped as a read of them from the buffered reader was.
		l.at = l.now()
		if l.watch != nil {
			l.watch.touch(l.at)
		}
		l.deframe()
	}
}

// deframe deframes buf[tail:raw] in place: the data of the chunks in it
// moves down to tail, their framing goes, and what is left of an
// unfinished chunk-size line stays after them. At the body's end it hands
// the connection back (or closes it) and sets l.err to io.EOF; on a
// framing error, or a connection that ends or fails first, it closes the
// connection and sets l.err.
func (l *lineReader) deframe() {
	b, st := l.buf, &l.chunk
	w, r := l.tail, l.tail
	var err error
loop:
	for r < l.raw && err == nil {
		switch st.phase {
		case chunkData:
			m := l.raw - r
			if uint64(m) > st.left {
				m = int(st.left)
			}
			if w != r {
				copy(b[w:], b[r:r+m])
			}
			w, r, st.left = w+m, r+m, st.left-uint64(m)
			if st.left == 0 {
				st.phase = chunkCRLF
			}
		case chunkCRLF:
			if l.raw-r < 2 {
				break loop
			}
			if b[r] != '\r' || b[r+1] != '\n' {
				err = errChunkMalformed
				break
			}
			r += 2
			st.phase = chunkHeader
		case chunkHeader:
			line, n, e := chunkLine(b[r:l.raw])
			if e != nil || n == 0 {
				err = e
				break loop
			}
			r += n
			st.excess += int64(len(line)) + 2
			line = bytes.TrimRight(line, " \t")
			line, _, _ = bytes.Cut(line, []byte(";"))
			size, e := parseChunkSize(line)
			if e != nil {
				err = e
				break
			}
			st.excess = max(st.excess-16-2*int64(size), 0)
			if st.excess > 16<<10 {
				err = errChunkExcess
				break
			}
			if size == 0 {
				st.phase = chunkTrailer
			} else {
				st.phase, st.left = chunkData, size
			}
		case chunkTrailer:
			// The trailer section, read as net/http reads it
			// (chunkedBody.readTrailer): a CRLF, or header lines up to
			// a CRLF CRLF within maxTrailer bytes; its fields are
			// dropped.
			take := min(l.raw-r, maxTrailer-len(st.trailer))
			st.trailer = append(st.trailer, b[r:r+take]...)
			r += take
			n, e := trailerEnd(st.trailer)
			if e != nil || n == 0 {
				err = e
				break loop
			}
			if n < len(st.trailer) || r < l.raw {
				st.extra = true
			}
			st.phase = chunkDone
			break loop
		default: // chunkDone: nothing may follow on this connection
			break loop
		}
	}
	l.tail = w
	l.raw = w + copy(b[w:], b[r:l.raw])
	switch {
	case err != nil:
	case st.phase == chunkDone:
		// Bytes after the body are a response nobody asked for: the
		// connection is not reused.
		l.body.reuse = l.body.reuse && !st.extra && l.raw == l.tail && l.err == nil
		l.body.finish(true)
		l.raw, l.err, st.trailer = l.tail, io.EOF, nil
		return
	case l.err == nil:
		return
	case errors.Is(l.err, io.EOF):
		err = io.ErrUnexpectedEOF
		if st.phase == chunkTrailer {
			err = errLongTrailer // as net/http, which looks for its end
			if len(st.trailer) < 2 {
				err = errTrailerEOF
			}
		}
	default:
		err = l.err
	}
	if cause := l.body.g.err(); cause != nil {
		err = fmt.Errorf("%w (%w)", cause, err)
	}
	l.body.finish(false)
	l.raw, l.err = l.tail, err
}

// chunkLine returns the chunk-size line at the start of b without its
// CRLF and the bytes it takes (0: not all here yet), as net/http reads it
// through a reader of maxChunkLine bytes: a line that does not fit, LF
// included, is too long.
func chunkLine(b []byte) (line []byte, n int, err error) {
	i := bytes.IndexByte(b[:min(len(b), maxChunkLine)], '\n')
	if i < 0 {
		if len(b) >= maxChunkLine {
			return nil, 0, errChunkLine
		}
		return nil, 0, nil
	}
	line = b[:i+1]
	switch cr := bytes.IndexByte(line, '\r'); {
	case cr < 0:
		return nil, 0, errChunkBareLF
	case cr != i-1:
		return nil, 0, errChunkCR
	}
	return line[:i-1], i + 1, nil
}

// parseChunkSize parses a chunk size, as net/http's parseHexUint.
func parseChunkSize(v []byte) (uint64, error) {
	if len(v) == 0 {
		return 0, errChunkHexEmpty
	}
	var n uint64
	for i, c := range v {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, errChunkHexByte
		}
		if i == 16 {
			return 0, errChunkHexLong
		}
		n = n<<4 | uint64(c)
	}
	return n, nil
}
