package client

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
)

// guard ends one attempt from outside, with a cause: the caller's context
// ended (the run stopped), --request-timeout or --stall-timeout expired.
// The first cause is kept. On the lean transport ending it closes the
// attempt's connection, which unblocks a write or read in progress; on
// net/http's it cancels the attempt's context.
//
// It replaces a context per attempt (and a context with a deadline per
// request): an attempt on the lean transport creates no context and arms
// no timer of its own unless a timeout asks for one (see stallWatch), and
// watches the caller's context only when that context can end.
type guard struct {
	parent context.Context

	mu     sync.Mutex
	cause  error
	conn   net.Conn                // lean transport: the attempt's connection
	cancel context.CancelCauseFunc // net/http's transport: the attempt's context
	stop   func() bool             // stops watching parent (lean transport)

	// unwritten, when set, counts this attempt's request until it is
	// written (Client.Unwritten).
	unwritten *atomic.Int64
	// ph, when set, receives the attempt's HTTP phases (phases.go).
	ph *Phases
	// requestID, when set, is sent as the request's X-Request-Id
	// (Config.RequestIDPrefix).
	requestID string
}

// written tells that the request has been written (or will not be).
func (g *guard) written() {
	if g.unwritten != nil {
		g.unwritten.Add(-1)
		g.unwritten = nil
	}
}

// newGuard returns the guard of an attempt made under parent.
func newGuard(parent context.Context) *guard {
	return &guard{parent: parent}
}

// watchParent makes the end of parent end the attempt (closing its
// connection); the lean transport needs it, net/http's derives its context
// from parent instead. It does nothing for a context that cannot end.
func (g *guard) watchParent() {
	if g.parent.Done() == nil {
		return
	}
	g.stop = context.AfterFunc(g.parent, func() { g.end(context.Cause(g.parent)) })
}

// release stops watching the caller's context and frees the attempt's
// context, if it has one; call it once the attempt is over.
func (g *guard) release() {
	g.written()
	if g.stop != nil {
		g.stop()
	}
	if g.cancel != nil {
		g.cancel(nil)
	}
}

// end ends the attempt with cause, unless it has already ended.
func (g *guard) end(cause error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause != nil {
		return
	}
	g.cause = cause
	if g.conn != nil {
		g.conn.Close()
	}
	if g.cancel != nil {
		g.cancel(cause)
	}
}

// err is why the attempt was ended from outside, or nil.
func (g *guard) err() error {
	g.mu.Lock()
	cause := g.cause
	g.mu.Unlock()
	if cause == nil && g.parent.Err() != nil {
		cause = context.Cause(g.parent)
	}
	return cause
}

// attach makes c the attempt's connection, closed if the attempt is ended.
// It reports false (and closes c) when the attempt has ended already.
func (g *guard) attach(c net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cause != nil || g.parent.Err() != nil {
		c.Close()
		return false
	}
	g.conn = c
	return true
}

// detach releases the attempt's connection. It reports whether the
// connection is still usable: not closed by the attempt's end.
func (g *guard) detach() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conn = nil
	return g.cause == nil
}
