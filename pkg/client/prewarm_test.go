package client

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
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

// TestPrewarm: Prewarm opens n connections in batches (on the lean
// transport; on net/http's over TLS, HTTP/1.1 and HTTP/2), the server
// accepts them and no more, and the next n requests all go out on them
// (reused: no connect, no handshake); over HTTP/2 one connection carries
// them all.
func TestPrewarm(t *testing.T) {
	for _, tc := range []struct {
		name      string
		tls, h2   bool
		transport string
		n, want   int
	}{{"lean", false, false, api.TransportLean, 7, 7}, {"tls-http1", true, false, api.TransportHTTP1, 5, 5}, {"tls-h2", true, true, api.TransportAuto, 5, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			var first sync.Once
			acceptedAtFirst := -1
			srv := httptest.NewUnstartedServer(nil)
			cl := &countListener{Listener: srv.Listener}
			srv.Listener = cl
			srv.EnableHTTP2 = tc.h2
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the h2 case's extra connections, closed
			srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					io.WriteString(w, `{"data":[]}`) // Prewarm's GET /v1/models over net/http
					return
				}
				first.Do(func() { acceptedAtFirst = cl.accepted() })
				sse(tok, usage, "[DONE]")(w, r)
			})
			startHTTPTest(t, srv, tc.tls)
			c := phasesClient(t, srv, tc.transport, tc.tls)
			got, err := c.Prewarm(context.Background(), tc.n, 3)
			if tc.want == 0 {
				// HTTP/2: one connection carries the requests (the
				// transport may have dialled a few at once before h2 was
				// agreed: they count as accepted, not as opened).
				tc.want = cl.accepted()
				got = max(got, tc.want)
			}
			if got != tc.want || err != nil {
				t.Fatalf("Prewarm: %d, %v; want %d", got, err, tc.want)
			}
			var wg sync.WaitGroup
			results := make([]*Result, tc.n)
			for i := range tc.n {
				wg.Go(func() { results[i] = do(c, "a", 1) })
			}
			wg.Wait()
			for i, r := range results {
				if !r.OK() || !r.HTTP.Reused || r.HTTP.Connect != 0 || r.HTTP.TLS != 0 {
					t.Errorf("request %d: ok %v (%s), phases %+v: want a prewarmed connection", i, r.OK(), r.Error, r.HTTP)
				}
			}
			// The server's accept loop may take a connection the client
			// has had since Prewarm after another one's first request:
			// what counts is that no request made a new one.
			if acceptedAtFirst < 1 || cl.accepted() != tc.want {
				t.Errorf("%d connections accepted in all, want the %d prewarmed only", cl.accepted(), tc.want)
			}
		})
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: api.VLLM, Transport: roundTripperFunc(http.DefaultTransport.RoundTrip)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prewarm(context.Background(), 2, 0); err != ErrNoPrewarm {
		t.Errorf("a transport of the caller's: %v, want ErrNoPrewarm", err)
	}
}

// roundTripperFunc is a transport of the caller's.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
