package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func leanGet(t *testing.T, tr *leanTransport, ctx context.Context, url string) (string, error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"x":1}`))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestLeanTransportReusesConnections(t *testing.T) {
	for _, name := range []string{"content-length", "chunked"} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if name == "chunked" {
					w.(http.Flusher).Flush() // forces chunked encoding
				}
				fmt.Fprintf(w, "%s %s", r.Header.Get("X-Test"), b)
			}))
			defer srv.Close()
			tr := newLeanTransport(100)
			for i := range 20 {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/x?q=1", strings.NewReader(`{"i":`+fmt.Sprint(i)+`}`))
				req.Header.Set("X-Test", "h")
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf(`h {"i":%d}`, i); string(b) != want {
					t.Fatalf("response %q, want %q", b, want)
				}
			}
			if tr.dials != 1 {
				t.Errorf("%d connections for 20 sequential requests, want 1", tr.dials)
			}
		})
	}
}

func TestLeanTransportConcurrency(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	inside := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inside++
		if inside == 40 {
			close(release)
		}
		mu.Unlock()
		<-release
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := newLeanTransport(1000)
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if b, err := leanGet(t, tr, context.Background(), srv.URL); err != nil || b != "ok" {
				t.Errorf("%q %v", b, err)
			}
		}()
	}
	wg.Wait()
	if tr.dials != 40 {
		t.Errorf("%d dials for 40 concurrent requests", tr.dials)
	}
	leanGet(t, tr, context.Background(), srv.URL)
	if tr.dials != 40 {
		t.Errorf("a later request dialed again (%d): idle connections were not kept", tr.dials)
	}
}

func TestLeanTransportConnectionClose(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	}))
	defer srv.Close()
	tr := newLeanTransport(10)
	for range 3 {
		if b, err := leanGet(t, tr, context.Background(), srv.URL); err != nil || b != "bye" {
			t.Fatalf("%q %v", b, err)
		}
	}
	if tr.dials != 3 {
		t.Errorf("%d dials: a Connection: close response must not be reused", tr.dials)
	}
}

// serveConns listens on a loopback port and serves every connection it
// accepts with serve on a goroutine of its own, closing the connection when
// serve returns; the listener closes when the test ends. It returns the
// listener's address.
func serveConns(tb testing.TB, serve func(c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// serveReplies serves loopback connections until the test ends, answering
// every request on them with the raw HTTP response resp; it returns the
// address.
func serveReplies(tb testing.TB, resp string) string {
	return serveConns(tb, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
}

// TestLeanTransportRetriesStaleKeepAlive uses a server that closes every
// connection after one response without saying so.
func TestLeanTransportRetriesStaleKeepAlive(t *testing.T) {
	closed := make(chan struct{}, 5) // the server has closed a connection
	addr := serveConns(t, func(c net.Conn) {
		defer func() { c.Close(); closed <- struct{}{} }()
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	tr := newLeanTransport(10)
	url := "http://" + addr
	for i := range 5 {
		if b, err := leanGet(t, tr, context.Background(), url); err != nil || b != "ok" {
			t.Fatalf("request %d: %q %v", i, b, err)
		}
		<-closed // the server's close is on its way (on loopback: there)
	}
	if tr.dials < 5 {
		t.Errorf("%d dials for 5 requests on a server that closes after each", tr.dials)
	}
}

func TestLeanTransportCancelMidBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	tr := newLeanTransport(10)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("{}"))
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("%q %v", buf, err)
	}
	go func() { time.Sleep(20 * time.Millisecond); cancel() }() // a delay on purpose: the cancel lands while the read waits
	_, err = resp.Body.Read(make([]byte, 10))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	resp.Body.Close()
}

// TestLeanTransportIsPlainHTTPOnly: the lean transport refuses an https://
// URL instead of sending it in clear or half-configured TLS.
func TestLeanTransportIsPlainHTTPOnly(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secure") }))
	defer srv.Close()
	_, err := leanGet(t, newLeanTransport(1), context.Background(), srv.URL)
	if err == nil || !strings.Contains(err.Error(), "plain HTTP only") {
		t.Errorf("https:// through the lean transport: %v, want a plain-HTTP-only error", err)
	}
}

func TestLeanTransportRejectsHeaderInjection(t *testing.T) {
	tr := newLeanTransport(1)
	req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer x\r\nX-Evil: 1")
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("err %v, want an invalid header error", err)
	}
}

// TestLeanTransportNeverResendsADeliveredRequest: a server that reads each
// request and closes the connection without answering must see every
// request exactly once, on fresh and on reused connections alike.
func TestLeanTransportNeverResendsADeliveredRequest(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	ended := make(chan struct{}, 4) // a connection's handler is done
	addr := serveConns(t, func(c net.Conn) {
		defer func() { ended <- struct{}{} }()
		br := bufio.NewReader(c)
		for n := 0; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			mu.Lock()
			seen++
			mu.Unlock()
			if n == 1 { // answer the first request, drop the second
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newLeanTransport(10)
	url := "http://" + addr
	if b, err := leanGet(t, tr, context.Background(), url); err != nil || b != "ok" {
		t.Fatalf("first request: %q %v", b, err)
	}
	// The second request goes out on the reused connection, is read by the
	// server, and the connection closes without a response.
	_, err := leanGet(t, tr, context.Background(), url)
	if !errors.Is(err, errNoResponse) {
		t.Errorf("second request: %v, want the no-response error", err)
	}
	// A resent request would have reached the server before the
	// transport's answer: its handlers are done with every connection it
	// was given once the transport is closed and they have all ended.
	tr.CloseIdleConnections()
	for range tr.dials {
		<-ended
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != 2 {
		t.Errorf("the server received %d requests for 2 sent: a delivered request was sent again", seen)
	}
}

// TestLeanTransportOrdersWritesForRaceDetector: a value the client writes
// before sending a request is read by the server's handler with no lock; the
// request itself orders the two. Under -race this fails if the transport
// sends with a write the detector does not see (writev).
func TestLeanTransportOrdersWritesForRaceDetector(t *testing.T) {
	var seen []int
	var got int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen = append(seen, got)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := newLeanTransport(1)
	for i := range 3 {
		got = i + 1
		if _, err := leanGet(t, tr, context.Background(), srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(seen) != "[1 2 3]" {
		t.Fatalf("server saw %v", seen)
	}
}
