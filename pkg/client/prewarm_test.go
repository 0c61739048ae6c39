package client

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// countListener counts the connections it accepted.
type countListener struct {
	net.Listener
	mu sync.Mutex
	n  int
}

func (l *countListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.mu.Lock()
		l.n++
		l.mu.Unlock()
	}
	return c, err
}

func (l *countListener) accepted() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// TestPrewarm: Prewarm opens n connections in batches, the server accepts
// them before any request, and the next n requests all go out on them
// (reused, no connect phase) without a dial; a net/http client says it
// cannot.
func TestPrewarm(t *testing.T) {
	var first sync.Once
	acceptedAtFirst := -1
	srv := httptest.NewUnstartedServer(nil)
	cl := &countListener{Listener: srv.Listener}
	srv.Listener = cl
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.Do(func() { acceptedAtFirst = cl.accepted() })
		sse(tok, usage, "[DONE]")(w, r)
	})
	srv.Start()
	defer srv.Close()
	const n = 7
	c := newTestClient(t, srv, Config{HTTPPhases: true, HTTPTransport: TransportLean, Stream: true})
	defer c.CloseIdleConnections()
	got, err := c.Prewarm(context.Background(), n, 3)
	if got != n || err != nil {
		t.Fatalf("Prewarm: %d, %v; want %d", got, err, n)
	}
	var wg sync.WaitGroup
	results := make([]*Result, n)
	for i := range n {
		wg.Go(func() { results[i] = do(c, "a", 1) })
	}
	wg.Wait()
	for i, r := range results {
		if !r.OK() || !r.HTTP.Reused || r.HTTP.Connect != 0 {
			t.Errorf("request %d: ok %v, phases %+v: want a prewarmed connection", i, r.OK(), r.HTTP)
		}
	}
	if acceptedAtFirst != n || c.lean.dials != n {
		t.Errorf("accepted %d connections before the first request, %d dialled in all; want %d and %d", acceptedAtFirst, c.lean.dials, n, n)
	}

	nh := newTestClient(t, srv, Config{HTTPTransport: TransportNetHTTP})
	if _, err := nh.Prewarm(context.Background(), 2, 0); err != ErrNoPrewarm {
		t.Errorf("net/http Prewarm: %v, want ErrNoPrewarm", err)
	}
}
