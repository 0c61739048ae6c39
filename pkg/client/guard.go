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
	// shared, when set, is the watch of parent the attempt is in instead
	// of a context.AfterFunc of its own (Client.watchParent).
	shared *parentWatch
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

// parentWatch ends every attempt made under one context — the run's,
// which every request of a run is sent under — when it ends: one
// context.AfterFunc for all of them. An AfterFunc per attempt registers
// each attempt with that context under the context's one mutex: with
// thousands of requests sent at once that mutex was contended, fell into
// starvation mode (each unlock handed to the next waiter through the
// scheduler) and held a few thousand sends back by 10–60 ms between their
// send time and their write, in about one run of three at 10,000 streams
// (docs/PERFORMANCE.md). The attempts are kept in a sync.Map, which
// neither locks one mutex nor allocates per attempt a context.
type parentWatch struct {
	done     <-chan struct{} // the watched context's Done
	attempts sync.Map        // *guard → struct{}
	stop     func() bool     // its AfterFunc's
}

// newParentWatch watches parent, which can end (its Done is not nil).
func newParentWatch(parent context.Context) *parentWatch {
	w := &parentWatch{done: parent.Done()}
	w.stop = context.AfterFunc(parent, func() {
		w.attempts.Range(func(k, _ any) bool {
			g := k.(*guard)
			g.end(context.Cause(g.parent))
			return true
		})
	})
	return w
}

// ended reports whether the watched context has ended.
func (w *parentWatch) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// add makes the end of g's parent, which is w's, end g; release removes
// it.
func (w *parentWatch) add(g *guard) {
	g.shared = w
	w.attempts.Store(g, struct{}{})
	// Ended before the Store: the Range above may have missed g.
	if g.parent.Err() != nil {
		g.end(context.Cause(g.parent))
	}
}

// release stops watching the caller's context and frees the attempt's
// context, if it has one; call it once the attempt is over.
func (g *guard) release() {
	g.written()
	if g.stop != nil {
		g.stop()
	}
	if g.shared != nil {
		g.shared.attempts.Delete(g)
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
