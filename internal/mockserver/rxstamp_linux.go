package mockserver

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// With a chunk log, the server asks the kernel when each request's first
// bytes were received (SO_TIMESTAMPNS, stamped as the packet arrives,
// before any of the server's goroutines has run): the truth's time to first
// token then starts there, not when the handler was entered, and the time
// the server took to get to a request — scheduling, reading, parsing, on
// cores it may share with the client — is the server's, not counted as the
// client's error.

// stampListener returns ln accepting connections that note the kernel's
// receive time of each request's first bytes (stampHandler takes it).
// The listening socket asks for the stamps too: a connection inherits it
// when accepted, so that bytes a client sent before the accept are
// stamped as well.
func stampListener(ln net.Listener) net.Listener {
	if tl, ok := ln.(*net.TCPListener); ok {
		if rc, err := tl.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
			})
		}
	}
	return &stampedListener{ln}
}

type stampedListener struct{ net.Listener }

func (l *stampedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c, nil // not stamped: the handler's entry stands in
	}
	return &stampedConn{TCPConn: tc, rc: rc}, nil
}

// stampedConn reads with recvmsg and keeps the kernel's receive time of
// the first bytes read since the last take, and the receipt of the request
// being served (taken); net/http serves a connection's requests one at a
// time.
type stampedConn struct {
	*net.TCPConn
	rc    syscall.RawConn
	oob   [64]byte
	first atomic.Int64 // Unix ns; 0: no read since the last take; -1: not stamped
	taken atomic.Int64 // the request being served's first, as taken
}

func (c *stampedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob[:], 0)
		return rerr != syscall.EAGAIN && rerr != syscall.EWOULDBLOCK
	})
	if err != nil {
		return 0, err // a deadline, a closed connection
	}
	if rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
	}
	if n == 0 {
		return 0, io.EOF
	}
	// Bytes that came without a stamp make the request's receipt unknown
	// (-1), not the next read's: the kernel turns stamping on a moment
	// after it is first asked for, so a connection's first bytes can miss
	// it.
	ts := rxTimestamp(c.oob[:oobn])
	if ts <= 0 {
		ts = -1
	}
	c.first.CompareAndSwap(0, ts)
	return n, nil
}

// rxTimestamp returns the SCM_TIMESTAMPNS in a control message buffer, in
// Unix ns (0: none).
func rxTimestamp(oob []byte) int64 {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			return sec*1e9 + nsec
		}
	}
	return 0
}

// stampKey carries a request's stampedConn in its context.
type stampKey struct{}

// stampContext is the http.Server's ConnContext: it makes a stamped
// connection reachable from its requests.
func stampContext(ctx context.Context, c net.Conn) context.Context {
	if sc, ok := c.(*stampedConn); ok {
		return context.WithValue(ctx, stampKey{}, sc)
	}
	return ctx
}

// stampHandler takes for every request the kernel's receipt of its first
// bytes (received reads it) and, once it has been served, forgets the
// reads of its body: the connection's next request counts from its own
// first bytes. Every request takes its receipt, logged or not, so that
// none is left for the next one on the connection.
func stampHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sc, ok := r.Context().Value(stampKey{}).(*stampedConn)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		sc.taken.Store(sc.first.Swap(0))
		next.ServeHTTP(w, r)
		// The client sends its next request once this response has
		// ended, which is after this returns.
		sc.first.Store(0)
	})
}

// received returns when the kernel received the first bytes of r (zero
// when not known).
func received(r *http.Request) time.Time {
	if sc, ok := r.Context().Value(stampKey{}).(*stampedConn); ok {
		if ns := sc.taken.Load(); ns > 0 {
			return time.Unix(0, ns)
		}
	}
	return time.Time{}
}
