package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"strings"
)

// readHead reads a response head and frames its body. The common response
// — HTTP/1.1, a final status with a reason phrase, plain header lines, a
// body framed by one Content-Length or by chunked encoding, the connection
// kept alive — is read from the bytes already buffered, without
// http.ReadResponse's per-response reader, transfer state and copies.
// Anything else (interim responses, a head split across reads, a body
// read to the connection's end, Connection: close, continuation lines,
// HEAD requests, 204 and 304 answers...) goes to http.ReadResponse, the
// reference: the conformance tests run both paths.
func readHead(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if _, err := br.Peek(1); err != nil {
		return nil, err // as http.ReadResponse reports a connection that ends here
	}
	if resp := fastHead(br, req); resp != nil {
		return resp, nil
	}
	return http.ReadResponse(br, req)
}

// maxFastHead bounds the head fastHead reads; a longer one is left to
// http.ReadResponse.
const maxFastHead = 4 << 10

// fastHead parses the buffered head of a common response and consumes it,
// or returns nil and consumes nothing.
func fastHead(br *bufio.Reader, req *http.Request) *http.Response {
	if req.Method == http.MethodHead {
		return nil
	}
	buf, _ := br.Peek(min(br.Buffered(), maxFastHead))
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil
	}
	// One string holds the head: the status and every value are parts
	// of it, and the values share one slice, as net/http shares them.
	hs := string(buf[:end+2]) // every line with its CRLF
	line, rest := cutLine(hs)
	status, ok := strings.CutPrefix(line, "HTTP/1.1 ")
	if !ok || len(status) < 5 || status[3] != ' ' {
		return nil
	}
	code, err := strconv.Atoi(status[:3])
	if err != nil || code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified ||
		!printable(status[4:]) {
		return nil
	}
	n := strings.Count(rest, "\r\n")
	vals := make([]string, n)
	resp := &http.Response{
		Status: status, StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, n), Request: req, ContentLength: -1,
	}
	var length string
	chunked := false
	for i := 0; len(rest) > 0; i++ {
		line, rest = cutLine(rest)
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !token(line[:colon]) {
			return nil // a continuation line, a bare LF, a malformed name
		}
		v := strings.Trim(line[colon+1:], " \t")
		if !printable(v) {
			return nil
		}
		key := headerKey(line[:colon])
		switch key {
		case "Content-Length":
			if length != "" || !digits(v) {
				return nil
			}
			length = v
		case "Transfer-Encoding":
			if chunked || !strings.EqualFold(v, "chunked") {
				return nil
			}
			chunked = true
		case "Connection":
			if !strings.EqualFold(v, "keep-alive") {
				return nil
			}
		case "Trailer":
			return nil // net/http announces the trailer in Response.Trailer
		}
		if have := resp.Header[key]; have != nil {
			resp.Header[key] = append(have, v)
		} else {
			vals[i] = v
			resp.Header[key] = vals[i : i+1 : i+1]
		}
	}
	switch {
	case chunked && length == "":
		resp.TransferEncoding = []string{"chunked"}
		resp.Body = &chunkedBody{br: br, r: httputil.NewChunkedReader(br)}
	case length != "" && !chunked:
		n, err := strconv.ParseInt(length, 10, 64)
		if err != nil {
			return nil
		}
		resp.ContentLength = n
		resp.Body = &lengthBody{br: br, left: n}
	default:
		return nil
	}
	br.Discard(end + 4)
	return resp
}

// cutLine splits s after its first CRLF; a bare LF makes the line hold a
// '\n', which token and printable refuse.
func cutLine(s string) (line, rest string) {
	line, rest, _ = strings.Cut(s, "\r\n")
	return line, rest
}

// commonKeys are header names in canonical form, used as they are when a
// name matches one whatever its case (no string made per header).
var commonKeys = []string{"Content-Type", "Content-Length", "Transfer-Encoding", "Date", "Connection",
	"Cache-Control", "Server", "Retry-After", "X-Request-Id", "Vary", "Keep-Alive", "Trailer"}

// headerKey is the canonical form of the header name k.
func headerKey(k string) string {
	for _, c := range commonKeys {
		if strings.EqualFold(k, c) {
			return c
		}
	}
	return textproto.CanonicalMIMEHeaderKey(k)
}

// token reports whether s is a header name (RFC 9110 token characters).
func token(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return len(s) > 0
}

// printable reports whether s holds no control character but tab.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			return false
		}
	}
	return len(s) > 0 && len(s) <= 18
}

// lengthBody is a body of Content-Length bytes; one that ends short is an
// unexpected EOF, as net/http reports it.
type lengthBody struct {
	br   *bufio.Reader
	left int64
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (*lengthBody) Close() error { return nil }

// chunkedBody is a chunked body; after its last chunk it reads the trailer
// section (ignored), so that the connection is left at the next response.
type chunkedBody struct {
	br   *bufio.Reader
	r    io.Reader
	done bool
}

var (
	errTrailerEOF  = errors.New("http: unexpected EOF reading trailer")
	errLongTrailer = errors.New("http: suspiciously long trailer after chunked body")
)

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.done = true
		if terr := b.readTrailer(); terr != nil {
			return n, terr
		}
	}
	return n, err
}

// readTrailer reads past the trailer section after the last chunk as
// net/http does (and with its errors), ignoring the trailers.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		b.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	// A header terminator must come within the reader's buffer.
	for size := 4; ; size++ {
		buf, err := b.br.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			break
		}
		if err != nil {
			return errLongTrailer
		}
	}
	if _, err := textproto.NewReader(b.br).ReadMIMEHeader(); err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return err
	}
	return nil
}

func (*chunkedBody) Close() error { return nil }
