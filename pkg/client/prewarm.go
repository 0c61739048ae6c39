package client

import (
	"context"
	"errors"
	"net"
	"sync"
)

// PrewarmBatch is how many connections Prewarm dials at once: a batch is
// dialled, then the next, so that a server's accept backlog (Linux's
// somaxconn, 4,096 by default; Go's listeners ask for it) never
// overflows into SYN retransmits that cost a second each.
const PrewarmBatch = 512

// ErrNoPrewarm is a client whose transport cannot be pre-dialled: only the
// lean transport (plain http://) keeps connections Prewarm can open.
var ErrNoPrewarm = errors.New("only the lean transport (plain http://) opens connections ahead of use")

// Prewarm opens n keep-alive connections to the client's server and puts
// them in its idle pool, batch at a time (≤ 0: PrewarmBatch), so the
// first requests find them ready instead of dialling: n in all with the
// idle ones it already has (at most the pool's idle bound). It returns
// how many it opened and the first dial error.
func (c *Client) Prewarm(ctx context.Context, n, batch int) (int, error) {
	if c.lean == nil {
		return 0, ErrNoPrewarm
	}
	return c.lean.prewarm(ctx, hostPort(c.post), c.post.URL.Host, n, batch)
}

// prewarm dials n connections to addr and keeps them idle under key.
func (t *leanTransport) prewarm(ctx context.Context, addr, key string, n, batch int) (int, error) {
	if batch <= 0 {
		batch = PrewarmBatch
	}
	t.mu.Lock()
	n = min(n, t.maxIdle) - len(t.idle[key]) // the warm-up's are ready too
	t.mu.Unlock()
	opened := 0
	var first error
	for done := 0; done < n && ctx.Err() == nil; done += batch {
		k := min(batch, n-done)
		conns := make([]net.Conn, k)
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Go(func() { conns[i], errs[i] = t.dialer.DialContext(ctx, "tcp", addr) })
		}
		wg.Wait()
		for i, nc := range conns {
			if errs[i] != nil {
				if first == nil {
					first = errs[i]
				}
				continue
			}
			t.mu.Lock()
			t.dials++
			t.mu.Unlock()
			cc := &countingConn{Conn: nc}
			t.put(&leanConn{t: t, key: key, nc: nc, cc: cc, br: newConnReader(cc), wbuf: make([]byte, 0, 512)})
			opened++
		}
		if first != nil && opened == 0 {
			break // the server cannot be reached: no point in dialling the rest
		}
	}
	return opened, first
}

// Prewarm opens n connections to each live endpoint (Client.Prewarm) and
// returns how many each got and its error, by endpoint index.
func (p *Pool) Prewarm(ctx context.Context, n, batch int) ([]int, []error) {
	opened, errs := make([]int, len(p.clients)), make([]error, len(p.clients))
	for i, c := range p.clients {
		if !p.live[i] {
			continue
		}
		opened[i], errs[i] = c.Prewarm(ctx, n, batch)
	}
	return opened, errs
}
