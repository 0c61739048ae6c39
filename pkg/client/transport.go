package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// leanTransport is an HTTP/1.1 RoundTripper for benchmarking: the goroutine
// that sends a request writes it and reads its response itself, on a pooled
// keep-alive connection. net/http's Transport hands every request to two
// goroutines of its own (a write loop and a read loop), which costs thread
// wake-ups per request that show up in the client's CPU and lag at
// thousands of requests per second. The common response head is read by
// readHead (head.go); every other one by http.ReadResponse, so framing
// (chunked, Content-Length, Connection: close) is net/http's own or
// checked against it; interim 1xx responses are skipped, as net/http
// does. It speaks plain HTTP only: https:// targets go through net/http's
// transport (httptransport.go).
type leanTransport struct {
	dialer      net.Dialer
	maxIdle     int
	idleTimeout time.Duration

	mu   sync.Mutex
	idle map[string][]*leanConn

	dials int64 // connections opened (tests)
}

var _ http.RoundTripper = (*leanTransport)(nil)

func newLeanTransport(maxIdle int) *leanTransport {
	return &leanTransport{
		dialer:      net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     maxIdle,
		idleTimeout: 90 * time.Second,
		idle:        map[string][]*leanConn{},
	}
}

// countingConn counts the bytes read from a connection, to tell a server
// that closed without answering from one that answered in part.
type countingConn struct {
	net.Conn
	n int64
	// mark asks for the instant of the next byte read, kept in first
	// (the HTTP phases' first response byte).
	mark  bool
	first time.Time
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n += int64(n)
	if c.mark && n > 0 {
		c.mark, c.first = false, time.Now()
	}
	return n, err
}

// leanConn is one keep-alive connection.
type leanConn struct {
	t        *leanTransport
	key      string
	nc       net.Conn
	cc       *countingConn
	br       *bufio.Reader
	wbuf     []byte
	bufs     [2][]byte   // head and body of the request being written
	out      net.Buffers // over bufs
	lastUsed time.Time
	// The liveness peek (alive), made once per connection.
	raw    syscall.RawConn
	peek   func(fd uintptr) bool
	usable bool
}

func hostPort(u *http.Request) string {
	if u.URL.Port() == "" {
		return net.JoinHostPort(u.URL.Hostname(), "80")
	}
	return u.URL.Host
}

// get returns an idle connection for key or dials a new one. An idle
// connection is reused only if it is still open: a server closes idle
// keep-alive connections (uvicorn after 5 s), and a request written on one
// of those would be lost.
func (t *leanTransport) get(ctx context.Context, req *http.Request, key string) (*leanConn, bool, error) {
	now := time.Now()
	for {
		t.mu.Lock()
		stack := t.idle[key]
		if len(stack) == 0 {
			break // with t.mu held
		}
		c := stack[len(stack)-1]
		t.idle[key] = stack[:len(stack)-1]
		t.mu.Unlock()
		if now.Sub(c.lastUsed) < t.idleTimeout && c.alive() {
			return c, true, nil
		}
		c.nc.Close()
	}
	t.dials++
	t.mu.Unlock()
	nc, err := t.dialer.DialContext(ctx, "tcp", hostPort(req))
	if err != nil {
		return nil, false, err
	}
	cc := &countingConn{Conn: nc}
	return &leanConn{t: t, key: key, nc: nc, cc: cc, br: newConnReader(cc), wbuf: make([]byte, 0, 512)}, false, nil
}

// connReaderSize is a connection's read buffer. An SSE event is a few
// hundred bytes and comes in a read of its own; a larger body is read past
// the buffer (bufio hands a read as large as the buffer straight to the
// connection). 2 KB instead of bufio's 4 KB keeps 20 MB less per 10,000
// open streams (docs/PERFORMANCE.md, "Streaming accuracy against a floor").
const connReaderSize = 2 << 10

// newConnReader is a connection's buffered reader.
func newConnReader(cc *countingConn) *bufio.Reader { return bufio.NewReaderSize(cc, connReaderSize) }

// put returns a connection whose response was read to the end.
func (t *leanTransport) put(c *leanConn) {
	c.lastUsed = time.Now()
	t.mu.Lock()
	if len(t.idle[c.key]) < t.maxIdle {
		t.idle[c.key] = append(t.idle[c.key], c)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	c.nc.Close()
}

// CloseIdleConnections closes every idle connection.
func (t *leanTransport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, stack := range t.idle {
		for _, c := range stack {
			c.nc.Close()
		}
		delete(t.idle, k)
	}
}

// errStale is a reused connection that failed while the request was being
// written: the server never received the whole request, so it is sent again
// on another connection.
var errStale = errors.New("keep-alive connection closed by the server")

// errNoResponse is a server that closed a connection without a byte of
// response. It wraps io.EOF, as net/http's transport reports it.
var errNoResponse = fmt.Errorf("server closed the connection before sending a response: %w", io.EOF)

// RoundTrip implements http.RoundTripper: the request's context ends it.
func (t *leanTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("the lean transport speaks plain HTTP only, not %q", req.URL.Scheme)
	}
	if err := checkHeader(req.Header); err != nil {
		return nil, err
	}
	body, err := readAllBody(req)
	if err != nil {
		return nil, err
	}
	g := newGuard(req.Context())
	g.watchParent()
	resp, err := t.send(g, req, body, true)
	if err != nil {
		g.release()
	}
	return resp, err
}

// send writes req with body and reads the response head; req's URL, Host
// and Header (checked by the caller) are only read, so one request can
// serve many sends at once. g ends it from outside. When own is set, the
// response body releases g once it is done with (RoundTrip); otherwise
// the caller does, after closing the body (Client.attempt).
func (t *leanTransport) send(g *guard, req *http.Request, body []byte, own bool) (*http.Response, error) {
	key := req.URL.Host
	for attempt := 0; ; attempt++ {
		var t0 time.Time
		if g.ph != nil {
			t0 = time.Now()
		}
		c, reused, err := t.get(g.parent, req, key)
		if g.ph != nil {
			*g.ph = Phases{Measured: true, Reused: reused}
			if !reused {
				g.ph.Connect = time.Since(t0)
			}
		}
		if err != nil {
			return nil, err
		}
		resp, err := c.roundTrip(g, req, body, own)
		if errors.Is(err, errStale) && reused && attempt < 2 {
			continue // the request was not delivered: send it on another connection
		}
		// Once a request is written it is never sent again here: the server
		// may have read it (retries are --retries, counted in the results).
		return resp, err
	}
}

// checkHeader refuses header names and values that would break the request
// framing (CR, LF, NUL), as net/http does.
func checkHeader(h http.Header) error {
	bad := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c == '\r' || c == '\n' || c == 0 {
				return true
			}
		}
		return false
	}
	for k, vs := range h {
		if bad(k) || strings.ContainsAny(k, " :") {
			return fmt.Errorf("invalid header name %q", k)
		}
		for _, v := range vs {
			if bad(v) {
				return fmt.Errorf("invalid value for header %q", k) // the value may be a secret
			}
		}
	}
	return nil
}

// byteBody is a request body whose bytes the lean transport writes as
// they are, without reading them into a copy.
type byteBody struct {
	bytes.Reader
	b []byte
}

func newByteBody(b []byte) *byteBody {
	bb := &byteBody{b: b}
	bb.Reset(b)
	return bb
}

// Close implements io.Closer.
func (*byteBody) Close() error { return nil }

func readAllBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	if bb, ok := req.Body.(*byteBody); ok {
		return bb.b, nil
	}
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		req.Body.Close()
		return readBody(rc, req.ContentLength)
	}
	defer req.Body.Close()
	return readBody(req.Body, req.ContentLength)
}

func readBody(r io.Reader, n int64) ([]byte, error) {
	if n > 0 {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	return io.ReadAll(r)
}

// roundTrip writes req on c and reads the response head.
func (c *leanConn) roundTrip(g *guard, req *http.Request, body []byte, own bool) (*http.Response, error) {
	b := c.wbuf[:0]
	b = append(b, req.Method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	if req.Host != "" { // as net/http: Request.Host, else the URL's host
		b = append(b, req.Host...)
	} else {
		b = append(b, req.URL.Host...)
	}
	b = append(b, "\r\n"...)
	for k, vs := range req.Header {
		if k == "Host" {
			continue // net/http ignores it too: Request.Host is the Host
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if g.requestID != "" {
		b = append(b, "X-Request-Id: "...)
		b = append(b, g.requestID...)
		b = append(b, "\r\n"...)
	}
	if body != nil || req.Method == http.MethodPost {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "\r\n"...)
	// One write for head and body: writev (no copy of the body). A
	// race-enabled build uses write(2) instead (see raceEnabled). The
	// buffer list is the connection's, so that it is not allocated.
	var out *net.Buffers
	if !raceEnabled {
		c.bufs[0], c.bufs[1] = b, body
		c.out = c.bufs[:]
		out = &c.out
	} else {
		b = append(b, body...)
	}
	c.wbuf = b[:0]

	// An attempt ended from outside closes its connection, which unblocks
	// any read or write in progress.
	fail := func(err error) (*http.Response, error) {
		g.detach()
		c.nc.Close()
		if cause := g.err(); cause != nil {
			return nil, fmt.Errorf("%w (%w)", cause, err)
		}
		return nil, err
	}
	if !g.attach(c.nc) {
		return fail(net.ErrClosed)
	}
	var err error
	var w0 time.Time
	if g.ph != nil {
		w0 = time.Now()
	}
	if out != nil {
		_, err = out.WriteTo(c.nc)
		c.bufs = [2][]byte{} // WriteTo consumed c.out; keep no reference to the body
	} else {
		_, err = c.nc.Write(b)
	}
	if err != nil {
		if isConnGone(err) {
			err = fmt.Errorf("%w: %w", errStale, err)
		}
		return fail(err)
	}
	g.written()
	var w1 time.Time
	if g.ph != nil {
		w1 = time.Now()
		g.ph.Write = w1.Sub(w0)
		c.cc.mark = c.br.Buffered() == 0
	}
	before := c.cc.n
	resp, err := readHead(c.br, req)
	if g.ph != nil && !c.cc.mark && !c.cc.first.IsZero() {
		g.ph.Wait = c.cc.first.Sub(w1)
	}
	c.cc.mark, c.cc.first = false, time.Time{}
	// Interim responses (100 Continue, 103 Early Hints) have no body and
	// come before the response; 101 Switching Protocols is final.
	for n := 0; err == nil && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols; n++ {
		if n == max1xx {
			err = fmt.Errorf("more than %d interim (1xx) responses", max1xx)
			break
		}
		resp, err = readHead(c.br, req)
	}
	if err != nil {
		if c.cc.n == before && g.err() == nil && (isConnGone(err) || errors.Is(err, io.ErrUnexpectedEOF)) {
			err = errNoResponse
		}
		return fail(err)
	}
	resp.Body = &leanBody{c: c, rc: resp.Body, g: g, own: own, reuse: !resp.Close}
	return resp, nil
}

// max1xx bounds the interim responses read before a response, as net/http
// bounds them.
const max1xx = 5

// isConnGone reports an error of a connection the peer has closed.
func isConnGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// leanBody returns its connection to the pool once read to the end, and
// closes it otherwise.
type leanBody struct {
	c     *leanConn
	rc    io.ReadCloser
	g     *guard
	own   bool // release g when done (RoundTrip)
	reuse bool
	done  bool
}

func (b *leanBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
		return n, io.EOF
	}
	if err != nil {
		if cause := b.g.err(); cause != nil {
			err = fmt.Errorf("%w (%w)", cause, err)
		}
		b.finish(false)
	}
	return n, err
}

func (b *leanBody) finish(complete bool) {
	if b.done {
		return
	}
	b.done = true
	usable := b.g.detach() // false if the attempt's end closed the conn
	if b.own {
		b.g.release()
	}
	if complete && b.reuse && usable {
		b.c.t.put(b.c)
		return
	}
	b.c.nc.Close()
}

// Close implements io.Closer: a body not read to the end closes its
// connection (what is left of the response cannot be skipped cheaply).
func (b *leanBody) Close() error {
	b.finish(false)
	return nil
}

// proxied reports whether the environment routes base through a proxy.
func proxied(base string) bool {
	req, err := http.NewRequest(http.MethodGet, base, nil)
	if err != nil {
		return false
	}
	u, err := http.ProxyFromEnvironment(req)
	return err == nil && u != nil
}
