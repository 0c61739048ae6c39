package client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PrewarmBatch is how many connections Prewarm dials at once: a batch is
// dialled, then the next, so that a server's accept backlog (Linux's
// somaxconn, 4,096 by default; Go's listeners ask for it) never
// overflows into SYN retransmits that cost a second each.
const PrewarmBatch = 512

// ErrNoPrewarm is a client whose transport cannot be pre-dialled: one a
// test put in its place (Config.Transport).
var ErrNoPrewarm = errors.New("this transport cannot open connections ahead of use")

// prewarmHold bounds how long net/http's prewarm requests hold their
// connections waiting for the rest of their batch.
const prewarmHold = 10 * time.Second

// Prewarm opens n keep-alive connections to the client's server and puts
// them in its idle pool, batch at a time (≤ 0: PrewarmBatch), so the
// first requests find them ready instead of dialling: n in all with the
// idle ones it already has (at most the pool's idle bound). It returns
// how many it opened and the first dial error.
//
// On net/http's transport (https://, --http-transport net/http, h2,
// http1) it sends GET /v1/models batch at a time and holds each request
// on its connection (in the httptrace GotConn hook) until the whole batch
// has one, so the batch's connections are distinct, then reads the
// answers: the connections (and their TLS sessions) stay in the pool.
// Over HTTP/2 the requests share one connection, which is all there is
// to open.
func (c *Client) Prewarm(ctx context.Context, n, batch int) (int, error) {
	if batch <= 0 {
		batch = PrewarmBatch
	}
	if c.lean != nil {
		return c.lean.prewarm(ctx, hostPort(c.post), c.post.URL.Host, n, batch)
	}
	if _, ok := c.http.Transport.(*http.Transport); !ok {
		return 0, ErrNoPrewarm
	}
	return c.prewarmHTTP(ctx, strings.TrimRight(c.cfg.BaseURL, "/")+"/v1/models", n, batch)
}

// prewarmHTTP opens n connections of net/http's transport (Prewarm):
// the requests are started batch at a time, the next batch once every
// request of this one has its connection, and all hold their connections
// until all n have one (a request let go early would hand its connection
// to the next batch instead of a new one being dialled).
func (c *Client) prewarmHTTP(ctx context.Context, url string, n, batch int) (int, error) {
	var mu sync.Mutex
	opened := 0
	var first error
	var arrived atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	started := 0
	for done := 0; done < n && ctx.Err() == nil; done += batch {
		k := min(batch, n-done)
		started += k
		batchDone := make(chan struct{})
		var inBatch atomic.Int64
		arrive := func() {
			if inBatch.Add(1) == int64(k) {
				close(batchDone)
			}
			if arrived.Add(1) == int64(n) {
				close(release)
			}
		}
		for range k {
			wg.Go(func() {
				var once sync.Once
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
					once.Do(arrive)
					if !i.Reused {
						mu.Lock()
						opened++
						mu.Unlock()
					}
					hold := time.NewTimer(prewarmHold)
					defer hold.Stop()
					select {
					case <-release:
					case <-ctx.Done():
					case <-hold.C:
					}
				}}
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
				if err != nil {
					once.Do(arrive)
					return
				}
				req.Header, req.Host = c.header, c.cfg.Host
				resp, err := c.http.Do(req)
				once.Do(arrive) // a request that got no connection lets the others go
				if err != nil {
					mu.Lock()
					if first == nil {
						first = errors.New(c.redact(err.Error()))
					}
					mu.Unlock()
					return
				}
				io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
			})
		}
		select {
		case <-batchDone:
		case <-ctx.Done():
		}
		mu.Lock()
		failed := first != nil && opened == 0
		mu.Unlock()
		if failed {
			break // the server cannot be reached: no point in dialling the rest
		}
	}
	if started < n {
		// Stopped early (ctx, or a server that cannot be reached): let the
		// requests started go (fewer than n: none of them closes release).
		close(release)
	}
	wg.Wait()
	return opened, first
}

// prewarm dials n connections to addr and keeps them idle under key.
func (t *leanTransport) prewarm(ctx context.Context, addr, key string, n, batch int) (int, error) {
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
