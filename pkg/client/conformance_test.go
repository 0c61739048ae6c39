package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The conformance table: server behaviours a gateway or a server may show,
// each served by the built-in server behind a wrapper, against every
// transport that applies (the lean one speaks plain HTTP only). Every
// request must give the same record, whatever the framing and protocol.

// behaviour is one way of answering, wrapped around the built-in server.
type behaviour struct {
	name string
	wrap func(http.Handler) http.Handler
	// closes: the server closes the connection after every response, so
	// every request comes on a new connection.
	closes bool
	// tlsOnly: the behaviour exists over TLS only.
	tlsOnly bool
	// fails: the error class every request gets ("": none).
	fails string
}

var behaviours = []behaviour{
	{name: "content-length", wrap: withContentLength},
	{name: "chunked", wrap: withChunked},
	{name: "connection-close", wrap: withHeader("Connection", "close"), closes: true},
	{name: "100-continue", wrap: withInterim(http.StatusContinue)},
	{name: "103-early-hints", wrap: withInterim(http.StatusEarlyHints)},
	// TLS 1.3 session tickets: every connection is closed after its
	// response, and every one after the first resumes the session.
	{name: "tls13-resumption", wrap: withHeader("Connection", "close"), closes: true, tlsOnly: true},
	// An overloaded server's refusal, in the OpenAI error format.
	{name: "503-overloaded", wrap: withStatus(http.StatusServiceUnavailable), fails: record.ErrHTTP5xx},
}

// withStatus answers every request with code and an OpenAI error object.
func withStatus(code int) func(http.Handler) http.Handler {
	return func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			io.WriteString(w, `{"error":{"message":"the server is overloaded","type":"ServiceUnavailable","code":503}}`)
		})
	}
}

// withContentLength buffers the whole response (a stream too) and sends it
// with a Content-Length.
func withContentLength(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &bufferedWriter{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(bw, r)
		for k, v := range bw.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(bw.body.Len()))
		w.WriteHeader(bw.code)
		w.Write(bw.body.Bytes())
	})
}

type bufferedWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header         { return b.header }
func (b *bufferedWriter) WriteHeader(code int)        { b.code = code }
func (b *bufferedWriter) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedWriter) Flush()                      {}

// withChunked sends the head before any byte of the body, so an HTTP/1.1
// response has no length and is chunked (a whole JSON answer too).
func withChunked(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&flushingWriter{ResponseWriter: w}, r)
	})
}

type flushingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (f *flushingWriter) WriteHeader(code int) {
	f.wrote = true
	f.ResponseWriter.WriteHeader(code)
	http.NewResponseController(f.ResponseWriter).Flush()
}

func (f *flushingWriter) Write(p []byte) (int, error) {
	if !f.wrote {
		f.WriteHeader(http.StatusOK)
	}
	return f.ResponseWriter.Write(p)
}

func (f *flushingWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

func withHeader(k, v string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(k, v)
			h.ServeHTTP(w, r)
		})
	}
}

// withInterim sends an interim response (with a header, as 103 Early Hints
// carries Link) before the response.
func withInterim(code int) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", "</hint>; rel=preload")
			w.WriteHeader(code)
			w.Header().Del("Link")
			h.ServeHTTP(w, r)
		})
	}
}

// serverMode is how the test server speaks: plain HTTP/1.1, plain HTTP/2
// with prior knowledge (h2c), or TLS offering h2 and HTTP/1.1.
type serverMode string

const (
	plainHTTP1 serverMode = "http"
	plainH2C   serverMode = "h2c"
	overTLS    serverMode = "https"
)

// transportsFor lists the transports that apply to a server mode, with the
// HTTP major version each must end up speaking.
func transportsFor(m serverMode) map[string]int {
	switch m {
	case plainHTTP1:
		return map[string]int{api.TransportAuto: 1, api.TransportLean: 1, api.TransportNetHTTP: 1, api.TransportHTTP1: 1}
	case plainH2C:
		return map[string]int{api.TransportH2: 2}
	}
	return map[string]int{api.TransportAuto: 2, api.TransportNetHTTP: 2, api.TransportH2: 2, api.TransportHTTP1: 1}
}

// seen is what the server observed of one request.
type seen struct {
	proto   int
	host    string
	resumed bool
}

// testServer serves the built-in server wrapped in b and records what it
// saw of every request and how many connections were opened.
type testServer struct {
	*httptest.Server
	caFile string // the server certificate, PEM (TLS only)

	mu     sync.Mutex
	conns  int
	seen   []seen
	onConn func(net.Conn, http.ConnState) // called under mu when set
}

func startServer(t *testing.T, mode serverMode, wrap func(http.Handler) http.Handler) *testServer {
	t.Helper()
	mock, err := mockserver.New(mockserver.Config{Models: []string{"m"}, ITL: 100 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{}
	inner := mock.Handler()
	if wrap != nil {
		inner = wrap(inner)
	}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{proto: r.ProtoMajor, host: r.Host}
		if r.TLS != nil {
			s.resumed = r.TLS.DidResume
		}
		ts.mu.Lock()
		ts.seen = append(ts.seen, s)
		ts.mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes of the negative tests
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if st == http.StateNew {
			ts.conns++
		}
		if ts.onConn != nil {
			ts.onConn(c, st)
		}
	}
	switch mode {
	case plainHTTP1:
		ts.Start()
	case plainH2C:
		ts.Config.Protocols = new(http.Protocols)
		ts.Config.Protocols.SetHTTP1(true)
		ts.Config.Protocols.SetUnencryptedHTTP2(true)
		ts.Start()
	case overTLS:
		ts.EnableHTTP2 = true
		ts.TLS = &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
		ts.StartTLS()
		ts.caFile = writeCA(t, ts.Server)
	}
	t.Cleanup(ts.Close)
	return ts
}

// writeCA writes the server's certificate as a PEM file for Config.CACert.
func writeCA(t *testing.T, s *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (ts *testServer) observed() (int, []seen) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.conns, slices.Clone(ts.seen)
}

// observed is what the table compares of a Result.
type observed struct {
	Status                   int
	ErrorClass, Error        string
	PromptTokens, Completion int
	TokenTimes               int
	TTFT                     bool // a first-token time after the send time
}

func recordOf(r *Result) observed {
	return observed{
		Status: r.Status, ErrorClass: r.ErrorClass, Error: r.Error,
		PromptTokens: r.PromptTokens, Completion: r.CompletionTokens,
		TokenTimes: len(r.TokenTimes), TTFT: r.FirstToken > 0 && r.FirstToken >= r.Sent,
	}
}

// tableRequests are the requests of every row: a completion and a chat
// completion, twice each, one after the other.
var tableRequests = []Request{
	{MaxTokens: 5, Prompt: []byte("[1,2,3,4]")},
	{MaxTokens: 5, Prompt: []byte(`"four words of prompt"`), Chat: true},
	{MaxTokens: 5, Prompt: []byte("[1,2,3,4]")},
	{MaxTokens: 5, Prompt: []byte(`"four words of prompt"`), Chat: true},
}

// TestTransportConformance runs the table: every behaviour, server mode and
// transport, streamed and not; every row must give the reference records
// (the first row's with the same outcome: success or an error class), speak the protocol expected of the transport, reuse or
// open connections as the server asks, send the URL's host as Host, and
// over TLS resume sessions on new connections.
func TestTransportConformance(t *testing.T) {
	for _, stream := range []bool{true, false} {
		refs := map[string][]observed{} // by error class: the first row's records
		for _, b := range behaviours {
			for _, mode := range []serverMode{plainHTTP1, plainH2C, overTLS} {
				if b.tlsOnly && mode != overTLS {
					continue
				}
				transports := transportsFor(mode)
				for _, name := range slices.Sorted(maps.Keys(transports)) {
					rowName := fmt.Sprintf("stream=%v/%s/%s/%s", stream, b.name, mode, name)
					t.Run(rowName, func(t *testing.T) {
						got := runRow(t, b, mode, name, stream, transports[name])
						ref, ok := refs[b.fails]
						if !ok {
							ref = got
							refs[b.fails] = ref
							for i, r := range got {
								if b.fails == "" && (r.Status != 200 || r.ErrorClass != "" || r.Completion != 5 || r.PromptTokens != 4 || !r.TTFT) {
									t.Fatalf("reference request %d: %+v, want status 200, 4 prompt and 5 completion tokens, a TTFT", i, r)
								}
								if b.fails != "" && (r.ErrorClass != b.fails || r.TTFT || !strings.Contains(r.Error, "overloaded")) {
									t.Fatalf("reference request %d: %+v, want %s with the server's message and no TTFT", i, r, b.fails)
								}
							}
						}
						if !slices.Equal(got, ref) {
							t.Errorf("records\n%+v\nwant (the first row's)\n%+v", got, ref)
						}
					})
				}
			}
		}
	}
}

// runRow sends tableRequests to a fresh server and checks what the server
// and the client observed; it returns the records.
func runRow(t *testing.T, b behaviour, mode serverMode, transport string, stream bool, wantProto int) []observed {
	ts := startServer(t, mode, b.wrap)
	c, err := New(Config{
		BaseURL: ts.URL, API: api.VLLM, Model: "m", Stream: stream, IgnoreEOS: true,
		HTTPTransport: transport, CACert: ts.caFile, Epoch: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	framing := observeFraming(c)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []observed
	for i := range tableRequests {
		res := &Result{}
		res.Reset()
		c.Do(ctx, &tableRequests[i], res)
		got = append(got, recordOf(res))
	}
	if wantProto == 1 {
		want := map[string]string{"content-length": "length", "chunked": "chunked"}[b.name]
		for i, f := range framing.got() {
			if want != "" && f != want {
				t.Errorf("response %d: framed by %s, want %s", i, f, want)
			}
		}
	}
	conns, srv := ts.observed()
	if len(srv) != len(tableRequests) {
		t.Errorf("the server saw %d requests, want %d", len(srv), len(tableRequests))
	}
	wantConns := 1
	if b.closes {
		wantConns = len(tableRequests)
	}
	// When the server closes every connection, net/http may dial the next
	// request's connection while the last one is still being torn down and
	// then use another: one spare connection is its behaviour, not a
	// request sharing or skipping one.
	spare := 0
	if b.closes && transport != api.TransportLean {
		spare = 1
	}
	if conns < wantConns || conns > wantConns+spare {
		t.Errorf("%d connections for %d requests, want %d", conns, len(tableRequests), wantConns)
	}
	host := strings.TrimPrefix(strings.TrimPrefix(ts.URL, "http://"), "https://")
	for i, s := range srv {
		if s.proto != wantProto {
			t.Errorf("request %d: HTTP/%d, want HTTP/%d", i, s.proto, wantProto)
		}
		if s.host != host {
			t.Errorf("request %d: Host %q, want the URL's %q", i, s.host, host)
		}
		if mode == overTLS && b.closes && s.resumed != (i > 0) {
			t.Errorf("request %d on a new connection: TLS session resumed %v, want %v", i, s.resumed, i > 0)
		}
	}
	return got
}

// framingObserver records how each response's body was framed: "chunked",
// "length" (a Content-Length) or "close" (to the end of the connection).
type framingObserver struct {
	rt http.RoundTripper
	mu sync.Mutex
	fr []string
}

// observeFraming wraps the transport c (and its chat twin) use.
func observeFraming(c *Client) *framingObserver {
	o := &framingObserver{rt: c.http.Transport}
	c.http.Transport = o
	if c.chatTwin != nil {
		c.chatTwin.http.Transport = o
	}
	return o
}

func (o *framingObserver) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := o.rt.RoundTrip(req)
	if err == nil {
		f := "close"
		switch {
		case slices.Contains(resp.TransferEncoding, "chunked"):
			f = "chunked"
		case resp.ContentLength >= 0:
			f = "length"
		}
		o.mu.Lock()
		o.fr = append(o.fr, f)
		o.mu.Unlock()
	}
	return resp, err
}

func (o *framingObserver) CloseIdleConnections() {
	if ci, ok := o.rt.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

func (o *framingObserver) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.fr)
}
