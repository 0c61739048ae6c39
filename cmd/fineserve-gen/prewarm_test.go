package main

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// acceptCounter is a built-in server on 127.0.0.1 that numbers the
// connections it accepts (from 1) and notes how many it had accepted when
// the first generation request arrived, and on which connections the
// generation requests came.
type acceptCounter struct {
	url     string
	mu      sync.Mutex
	n       int
	atFirst int          // -1: no request yet
	want    int          // connections expected before the first request
	used    map[int]bool // connections that carried a generation request
	// accepted is closed when the want-th connection is accepted.
	accepted chan struct{}
}

type connKey struct{}

func startCountedMock(t *testing.T, want int) *acceptCounter {
	t.Helper()
	a := &acceptCounter{atFirst: -1, used: map[int]bool{}, want: want, accepted: make(chan struct{})}
	if want <= 0 {
		close(a.accepted) // nothing to wait for
	}
	srv := mocktest.New(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.n++
			if a.n == a.want {
				close(a.accepted)
			}
			return context.WithValue(ctx, connKey{}, a.n)
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				a.mu.Lock()
				if a.atFirst < 0 {
					// The connections the client has are in the kernel's
					// accept queue if not accepted yet: the accept loop
					// may lag behind a request on another one. Give it
					// a moment to take them.
					a.mu.Unlock()
					wait := time.NewTimer(time.Second)
					select {
					case <-a.accepted:
					case <-wait.C:
					}
					wait.Stop()
					a.mu.Lock()
					if a.atFirst < 0 {
						a.atFirst = a.n
					}
				}
				a.used[r.Context().Value(connKey{}).(int)] = true
				a.mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	a.url = "http://" + ln.Addr().String()
	return a
}

// TestPrewarmConnections: with --prewarm-connections N (or auto, from
// --max-concurrency) the server has accepted N connections (spread over
// two endpoints) before the first request, every request comes on one of
// them, and no record has a connect phase; without it, the first requests
// dial (a connect phase, not reused).
func TestPrewarmConnections(t *testing.T) {
	const n = 8
	for _, tc := range []struct {
		name      string
		endpoints int
		prewarm   string
	}{{"one endpoint", 1, strconv.Itoa(n)}, {"two endpoints", 2, strconv.Itoa(n)}, {"auto", 1, "auto"}, {"none", 1, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			var mocks []*acceptCounter
			args := []string{"--model", "mock-model", "--num-prompts", strconv.Itoa(n), "--request-rate", "inf", "--max-concurrency", strconv.Itoa(n),
				"--random-input-len", "8", "--random-output-len", "4", "--seed", "1", "--warmup-requests", "0", "--quiet", "--http-phases"}
			for range tc.endpoints {
				want := n / tc.endpoints
				if tc.prewarm == "" {
					want = 0
				}
				m := startCountedMock(t, want)
				mocks = append(mocks, m)
				args = append(args, "--base-url", m.url)
			}
			if tc.prewarm != "" {
				args = append(args, "--prewarm-connections", tc.prewarm)
			}
			r := mustRunTool(t, args...)
			for i, m := range mocks {
				m.mu.Lock()
				// Every generation request on a connection accepted before
				// the first one arrived (the model check's, reused, among
				// them), on at most N of them.
				late := 0
				for c := range m.used {
					if c > m.atFirst {
						late++
					}
				}
				used, atFirst := len(m.used), m.atFirst
				m.mu.Unlock()
				if want := n / tc.endpoints; tc.prewarm != "" && (atFirst < want || late > 0 || used > want+1) {
					t.Errorf("endpoint %d: %d connections accepted before the first request; the requests came on %d, %d of them accepted later; want at least %d before, at most %d used, none later",
						i+1, atFirst, used, late, want, want+1)
				}
			}
			connects := 0
			recs := readRecords(t, r.path("results.jsonl"))
			for _, rec := range recs {
				if !rec.has("http_reused") || !rec.has("http_wait_ms") || rec.HTTP.Reused == rec.has("http_connect_ms") {
					t.Fatalf("record %d: phases %s: want http_reused, http_wait_ms, and http_connect_ms exactly when not reused", rec.Index, rec.json)
				}
				if rec.has("http_connect_ms") {
					connects++
				}
			}
			if len(recs) != n || (tc.prewarm != "") != (connects == 0) {
				t.Errorf("%d records, %d with a connect phase; want %d, none only when prewarmed", len(recs), connects, n)
			}
			if s := r.summary(t); s.HTTPPhases == nil || s.HTTPPhases.Requests != n || s.HTTPPhases.NewConnections != int64(connects) {
				t.Errorf("summary http_phases %+v: want %d requests, %d on new connections", s.HTTPPhases, n, connects)
			}
		})
	}
}

// TestPrewarmConnectionsUsage: a value that is neither a count nor auto is
// a usage error naming the flag.
func TestPrewarmConnectionsUsage(t *testing.T) {
	for _, v := range []string{"-1", "many", "1.5"} {
		wantUsage(t, []string{"--port", "1", "--prewarm-connections", v}, "--prewarm-connections")
	}
}

// TestPrewarmConnectionsHTTPS: over TLS with HTTP/1.1 (net/http's
// transport), --prewarm-connections 4 opens the connections, handshakes
// included, before the first send: no record has a connect or TLS phase,
// and the server accepted no connection once the first request came.
func TestPrewarmConnectionsHTTPS(t *testing.T) {
	srv := mocktest.New(t, mockserver.Config{TTFT: 5 * time.Millisecond})
	var mu sync.Mutex
	accepted, atFirst := 0, -1
	inner := srv.Handler()
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			if atFirst < 0 {
				atFirst = accepted
			}
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			accepted++
			mu.Unlock()
		}
	}
	hs.StartTLS()
	defer hs.Close()
	r := mustRunTool(t, "--base-url", hs.URL, "--model", "mock-model", "--num-prompts", "4", "--max-concurrency", "4", "--request-rate", "inf",
		"--random-input-len", "4", "--random-output-len", "2", "--insecure", "--http-transport", "http1", "--warmup-requests", "0",
		"--prewarm-connections", "4", "--http-phases", "--quiet", "--scrape-server-metrics=false") // its poller has a client of its own
	recs := readRecords(t, r.path("results.jsonl"))
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}
	for _, rec := range recs {
		if !rec.has("http_reused") || !rec.HTTP.Reused || rec.has("http_connect_ms") {
			t.Errorf("record %d: reused %v, connect %v: want a prewarmed connection", rec.Index, rec.json.Get("http_reused"), rec.json.Get("http_connect_ms"))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if atFirst < 4 || accepted != atFirst {
		t.Errorf("%d connections accepted before the first request, %d in all: want at least 4, none later", atFirst, accepted)
	}
}
