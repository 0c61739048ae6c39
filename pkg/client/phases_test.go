package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// TestHTTPPhases: on each transport, a request on a new connection has a
// connect phase (and over TLS a handshake), the next one on the pooled
// connection none ("reused"); the wait to the first byte holds the
// server's delay before its headers; without Config.HTTPPhases nothing is
// timed.
func TestHTTPPhases(t *testing.T) {
	const delay = 40 * time.Millisecond
	handler := func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		sse(tok, tok, usage, "[DONE]")(w, r)
	}
	for _, tc := range []struct {
		name      string
		tls       bool
		transport string
	}{{"lean", false, api.TransportLean}, {"net/http", false, api.TransportNetHTTP}, {"tls", true, api.TransportAuto}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startHTTPTest(t, httptest.NewUnstartedServer(http.HandlerFunc(handler)), tc.tls)
			c := phasesClient(t, srv, tc.transport, tc.tls)
			for i, wantReused := range []bool{false, true} {
				res := do(c, "a", 2)
				ph := res.HTTP
				if !res.OK() || !ph.Measured || ph.Reused != wantReused {
					t.Fatalf("request %d: ok %v (%s), phases %+v: want measured, reused %v", i, res.OK(), res.Error, ph, wantReused)
				}
				if fresh := !wantReused; fresh != (ph.Connect > 0) || (tc.tls && fresh) != (ph.TLS > 0) || (!tc.tls && ph.TLS != 0) {
					t.Errorf("request %d: phases %+v: want connect and TLS only on a new connection (TLS only over TLS)", i, ph)
				}
				// The server's delay starts once it has read the request,
				// which may be before the client's write returns on a busy
				// machine: the delay lies within the write and the wait.
				if ph.Write <= 0 || ph.Write+ph.Wait < delay || ph.Wait > res.FirstToken-res.Sent {
					t.Errorf("request %d: write %v, wait %v: want a write, the two at least %v, the wait at most the TTFT %v", i, ph.Write, ph.Wait, delay, res.FirstToken-res.Sent)
				}
			}
			off := newTestClient(t, srv, Config{HTTPTransport: tc.transport, Insecure: tc.tls, Stream: true})
			defer off.CloseIdleConnections()
			if res := do(off, "a", 2); res.HTTP != (Phases{}) {
				t.Errorf("without HTTPPhases: %+v, want nothing timed", res.HTTP)
			}
		})
	}
}

// startHTTPTest starts srv, over TLS when tls, until the test ends.
func startHTTPTest(t *testing.T, srv *httptest.Server, tls bool) *httptest.Server {
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// phasesClient is a streaming client of srv through transport with its
// HTTP phases timed (Insecure over TLS), its connections closed when the
// test ends.
func phasesClient(t *testing.T, srv *httptest.Server, transport string, tls bool) *Client {
	t.Helper()
	c := newTestClient(t, srv, Config{HTTPPhases: true, HTTPTransport: transport, Insecure: tls, Stream: true})
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// BenchmarkDoHTTPPhases measures a whole streamed request through Client.Do
// on a kept-alive loopback connection, with the HTTP phases timed and
// without: what timing them costs per request (four clock reads).
func BenchmarkDoHTTPPhases(b *testing.B) {
	resp := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		chunked("data: "+tok+"\n\n") + chunked("data: "+tok+"\n\n") + chunked("data: "+usage+"\n\n") + chunked("data: [DONE]\n\n") + "0\r\n\r\n"
	addr := serveReplies(b, resp)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			c, err := New(Config{BaseURL: "http://" + addr, API: api.VLLM, Model: "m", Stream: true, Epoch: time.Now(), HTTPPhases: on})
			if err != nil {
				b.Fatal(err)
			}
			defer c.CloseIdleConnections()
			req := &Request{MaxTokens: 2, Prompt: []byte("a")}
			res := &Result{}
			b.ReportAllocs()
			for b.Loop() {
				res.Reset()
				c.Do(context.Background(), req, res)
				if !res.OK() || res.HTTP.Measured != on {
					b.Fatalf("%+v", res)
				}
			}
		})
	}
}

// chunked frames s as one HTTP/1.1 chunk.
func chunked(s string) string { return strconv.FormatInt(int64(len(s)), 16) + "\r\n" + s + "\r\n" }
