package client

import (
	"context"
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Phases is how one attempt's HTTP exchange went (pkg/record's).
type Phases = record.Phases

// startPhases readies res's phases for an attempt when the client times
// them, and hands them to g for the transport to fill.
func (c *Client) startPhases(g *guard, res *Result) {
	if !c.cfg.HTTPPhases {
		return
	}
	res.HTTP = Phases{Measured: true}
	g.ph = &res.HTTP
}

// phaseTrace times net/http's transport's phases through its
// httptrace.ClientTrace hooks, which run on the transport's goroutines:
// the times are kept under a mutex and copied out once the response head
// has arrived (done).
type phaseTrace struct {
	mu                      sync.Mutex
	reused                  bool
	connStart, connDone     time.Time
	tlsStart, tlsDone       time.Time
	gotConn, wrote, firstAt time.Time
}

// withPhaseTrace returns ctx with a trace that times the phases.
func withPhaseTrace(ctx context.Context, pt *phaseTrace) context.Context {
	at := func(p *time.Time, first bool) {
		pt.mu.Lock()
		if !first || p.IsZero() {
			*p = time.Now()
		}
		pt.mu.Unlock()
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectStart:      func(string, string) { at(&pt.connStart, true) },
		ConnectDone:       func(string, string, error) { at(&pt.connDone, false) },
		TLSHandshakeStart: func() { at(&pt.tlsStart, true) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { at(&pt.tlsDone, false) },
		GotConn: func(i httptrace.GotConnInfo) {
			pt.mu.Lock()
			pt.reused, pt.gotConn = i.Reused, time.Now()
			pt.mu.Unlock()
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { at(&pt.wrote, false) },
		GotFirstResponseByte: func() { at(&pt.firstAt, true) },
	})
}

// done copies the phases timed into ph.
func (pt *phaseTrace) done(ph *Phases) {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	span := func(a, b time.Time) time.Duration {
		if a.IsZero() || b.IsZero() || b.Before(a) {
			return 0
		}
		return b.Sub(a)
	}
	ph.Reused = pt.reused
	ph.Connect = span(pt.connStart, pt.connDone)
	ph.TLS = span(pt.tlsStart, pt.tlsDone)
	ph.Write = span(pt.gotConn, pt.wrote)
	ph.Wait = span(pt.wrote, pt.firstAt)
}
