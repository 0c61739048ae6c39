package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestTransportSelection: which transport names are accepted for which
// scheme, and which transport an accepted name builds: lean (no GetBody
// rewinding needed) or net/http.
func TestTransportSelection(t *testing.T) {
	t.Setenv("HTTP_PROXY", "")
	t.Setenv("HTTPS_PROXY", "")
	t.Setenv("NO_PROXY", "")
	for _, tc := range []struct {
		name, url string
		ok, lean  bool
	}{
		{"", "http://127.0.0.1:8000", true, true},
		{"", "https://gw.example.com", true, false},
		{api.TransportAuto, "http://127.0.0.1:8000", true, true},
		{api.TransportAuto, "https://127.0.0.1:8000", true, false},
		{api.TransportLean, "http://127.0.0.1:8000", true, true},
		{api.TransportLean, "https://gw.example.com", false, false},
		{api.TransportLean, "HTTPS://gw.example.com", false, false},
		{api.TransportNetHTTP, "http://127.0.0.1:8000", true, false},
		{api.TransportNetHTTP, "https://gw.example.com", true, false},
		{"std", "http://127.0.0.1:8000", true, false},
		{api.TransportH2, "http://127.0.0.1:8000", true, false},
		{api.TransportHTTP1, "http://127.0.0.1:8000", true, false},
		{api.TransportHTTP1, "https://gw.example.com", true, false},
		{"http2", "https://gw.example.com", false, false},
	} {
		if err := api.CheckTransport(tc.name, tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckTransport(%q, %q) = %v, want ok %v", tc.name, tc.url, err, tc.ok)
		}
		c, err := New(Config{BaseURL: tc.url, API: api.VLLM, HTTPTransport: tc.name})
		if !tc.ok {
			if err == nil {
				t.Errorf("New with %q for %s: no error", tc.name, tc.url)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, lean := c.http.Transport.(*leanTransport); lean != tc.lean || c.rewind == lean {
			t.Errorf("%q for %s: lean %v (GetBody set %v), want lean %v", tc.name, tc.url, lean, c.rewind, tc.lean)
		}
	}
	if _, err := New(Config{BaseURL: "https://x", API: api.VLLM, HTTPTransport: api.TransportLean}); err == nil || !strings.Contains(err.Error(), "plain HTTP only") {
		t.Errorf("New with lean for https: %v", err)
	}
}

// tlsClient is a client of srv trusting its certificate through --ca-cert.
func tlsClient(t *testing.T, srv *httptest.Server, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL, cfg.API, cfg.Model, cfg.Epoch = srv.URL, api.VLLM, "m", time.Now()
	if cfg.CACert == "" && !cfg.Insecure && srv.TLS != nil {
		cfg.CACert = writeCA(t, srv)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func doOne(c *Client) *Result {
	res := &Result{}
	res.Reset()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.Do(ctx, &Request{MaxTokens: 3, Prompt: []byte("[1,2]")}, res)
	return res
}

// everyTransport is each transport with a server it speaks to: plain
// HTTP/1.1 (lean and net/http's), h2c, and TLS (negotiated and HTTP/1.1).
var everyTransport = []struct {
	mode      serverMode
	transport string
}{
	{plainHTTP1, api.TransportLean},
	{plainHTTP1, api.TransportNetHTTP},
	{plainH2C, api.TransportH2},
	{overTLS, api.TransportAuto},
	{overTLS, api.TransportHTTP1},
}

// TestHostOverride: Config.Host is the Host header (the :authority of
// HTTP/2) in every transport, for generation and for listing models, and
// over TLS the server name the certificate is checked against.
func TestHostOverride(t *testing.T) {
	for _, tc := range everyTransport {
		t.Run(string(tc.mode)+"/"+tc.transport, func(t *testing.T) {
			var mu sync.Mutex
			var hosts, names []string
			ts := startServer(t, tc.mode, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					hosts = append(hosts, r.Host)
					if r.TLS != nil {
						names = append(names, r.TLS.ServerName)
					}
					mu.Unlock()
					h.ServeHTTP(w, r)
				})
			})
			// The test certificate is for example.com (and 127.0.0.1).
			c, err := New(Config{BaseURL: ts.URL, API: api.VLLM, Model: "m", Epoch: time.Now(),
				HTTPTransport: tc.transport, CACert: ts.caFile, Host: "example.com:8443"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			if res := doOne(c); !res.OK() {
				t.Fatalf("request: %s %s", res.ErrorClass, res.Error)
			}
			if _, err := c.ListModels(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, h := range hosts {
				if h != "example.com:8443" {
					t.Errorf("request %d: Host %q, want the override", i, h)
				}
			}
			if len(hosts) != 2 {
				t.Errorf("%d requests seen, want 2", len(hosts))
			}
			for _, n := range names {
				if n != "example.com" {
					t.Errorf("TLS server name %q, want example.com", n)
				}
			}
		})
	}
}

// TestH2Required: --http-transport h2 fails, as a connect error that says
// why, against a TLS server that does not speak HTTP/2.
func TestH2Required(t *testing.T) {
	for _, tc := range []struct {
		name       string
		nextProtos []string
		want       string
	}{
		{"http1-only", []string{"http/1.1"}, "no application protocol"},
		{"no-alpn", []string{}, "did not negotiate HTTP/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0)
			srv.TLS = &tls.Config{NextProtos: tc.nextProtos}
			srv.StartTLS()
			defer srv.Close()
			res := doOne(tlsClient(t, srv, Config{HTTPTransport: api.TransportH2}))
			if res.ErrorClass != record.ErrConnect || !strings.Contains(res.Error, tc.want) {
				t.Errorf("got %s %q, want connect saying %q", res.ErrorClass, res.Error, tc.want)
			}
			// The same server through auto is reached over HTTP/1.1.
			if res := doOne(tlsClient(t, srv, Config{})); res.Status != 200 {
				t.Errorf("auto: status %d %s %s", res.Status, res.ErrorClass, res.Error)
			}
		})
	}
}

// TestCACert: --ca-cert trusts the certificates in the file, and only
// those; a file without one is refused when the client is made.
func TestCACert(t *testing.T) {
	ts := startServer(t, overTLS, nil)
	if res := doOne(tlsClient(t, ts.Server, Config{CACert: ts.caFile})); !res.OK() {
		t.Errorf("trusted CA: %s %s", res.ErrorClass, res.Error)
	}
	for name, ca := range map[string]string{"another CA": writeSelfSigned(t), "the system's roots": ""} {
		c, err := New(Config{BaseURL: ts.URL, API: api.VLLM, Model: "m", Epoch: time.Now(), CACert: ca})
		if err != nil {
			t.Fatal(err)
		}
		if res := doOne(c); res.ErrorClass != record.ErrConnect || !strings.Contains(res.Error, "certificate") {
			t.Errorf("%s: %s %q, want a connect error about the certificate", name, res.ErrorClass, res.Error)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a certificate\n"), 0o600)
	for _, path := range []string{bad, filepath.Join(t.TempDir(), "missing.pem")} {
		if _, err := New(Config{BaseURL: ts.URL, API: api.VLLM, CACert: path}); err == nil || !strings.Contains(err.Error(), "--ca-cert") {
			t.Errorf("CACert %s: %v, want a --ca-cert error", path, err)
		}
	}
}

// writeSelfSigned writes a fresh self-signed CA certificate (PEM) for
// example.com and returns its path.
func writeSelfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		DNSNames: []string{"example.com"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "other.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCloseIdleConnections: after CloseIdleConnections the server sees
// every connection of the client closed, whatever the transport.
func TestCloseIdleConnections(t *testing.T) {
	for _, tc := range everyTransport {
		t.Run(string(tc.mode)+"/"+tc.transport, func(t *testing.T) {
			open := map[net.Conn]bool{}
			allClosed := make(chan struct{}, 1) // the server saw its last open connection close
			ts := startServer(t, tc.mode, nil)
			mu := &ts.mu
			mu.Lock()
			ts.onConn = func(c net.Conn, st http.ConnState) {
				switch st {
				case http.StateNew:
					open[c] = true
				case http.StateClosed, http.StateHijacked:
					delete(open, c)
					if len(open) == 0 {
						select {
						case allClosed <- struct{}{}:
						default:
						}
					}
				}
			}
			mu.Unlock()
			c := tlsClient(t, ts.Server, Config{HTTPTransport: tc.transport, CACert: ts.caFile})
			var wg sync.WaitGroup
			for range 3 { // concurrent: more than one connection
				wg.Go(func() {
					if res := doOne(c); !res.OK() {
						t.Errorf("%s %s", res.ErrorClass, res.Error)
					}
				})
			}
			wg.Wait()
			mu.Lock()
			n := len(open)
			mu.Unlock()
			if n == 0 {
				t.Fatal("no connection open after the requests")
			}
			select { // a close during the requests is not the one awaited
			case <-allClosed:
			default:
			}
			// A connection goes back to the idle pool on its own goroutine
			// once its answer is read, so one may not be idle yet when the
			// requests return: CloseIdleConnections closes the idle ones and
			// is called again until none is left open.
			c.CloseIdleConnections()
			timeout := time.NewTimer(10 * time.Second)
			defer timeout.Stop()
			again := time.NewTicker(20 * time.Millisecond)
			defer again.Stop()
			for {
				mu.Lock()
				n = len(open)
				mu.Unlock()
				if n == 0 {
					break
				}
				select {
				case <-allClosed:
				case <-again.C:
					c.CloseIdleConnections()
				case <-timeout.C:
					t.Fatalf("%d connections still open 10 s after CloseIdleConnections", n)
				}
			}
		})
	}
}

// TestLeanTransportBoundsInterimResponses: a server that sends 1xx
// responses without end fails the request instead of holding it.
func TestLeanTransportBoundsInterimResponses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		for range max1xx + 1 {
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n")
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
	}()
	_, err = leanGet(t, newLeanTransport(1), context.Background(), "http://"+ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "interim") {
		t.Errorf("got %v, want an error about too many interim responses", err)
	}
}

// TestH2RefusedStreamIsSentAgain: an HTTP/2 server that refuses a stream
// unprocessed (REFUSED_STREAM, as a draining gateway does) gets the request
// again, and the request succeeds: net/http can re-read its body.
func TestH2RefusedStreamIsSentAgain(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	addr := serveConns(t, func(c net.Conn) {
		serveRefusingH2(c, func(b string) int {
			mu.Lock()
			defer mu.Unlock()
			bodies = append(bodies, b)
			return len(bodies)
		})
	})
	c, err := New(Config{BaseURL: "http://" + addr, API: api.VLLM, Model: "m", Epoch: time.Now(), HTTPTransport: api.TransportH2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseIdleConnections()
	res := doOne(c)
	if !res.OK() || res.CompletionTokens != 2 {
		t.Errorf("got %s %q, %d tokens; want a success with 2", res.ErrorClass, res.Error, res.CompletionTokens)
	}
	if res.Retries != 0 {
		t.Errorf("Retries %d: a refused stream is not a --retries retry", res.Retries)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != bodies[1] || bodies[0] == "" {
		t.Errorf("the server saw bodies %q, want the refused request's then the same again", bodies)
	}
}

// serveRefusingH2 speaks HTTP/2 with prior knowledge on c: it refuses
// every stream whose request is the first the server has seen (attempt
// returns the number of requests seen so far, counting this one), and
// answers others with a whole completion.
func serveRefusingH2(c net.Conn, attempt func(body string) int) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	if fr.WriteSettings() != nil {
		return
	}
	bodies := map[uint32]*bytes.Buffer{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			bodies[f.StreamID] = &bytes.Buffer{}
		case *http2.DataFrame:
			b := bodies[f.StreamID]
			if b == nil {
				continue
			}
			b.Write(f.Data())
			if !f.StreamEnded() {
				continue
			}
			delete(bodies, f.StreamID)
			if attempt(b.String()) == 1 {
				fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
				continue
			}
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
			enc.WriteField(hpack.HeaderField{Name: "content-type", Value: "application/json"})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true})
			fr.WriteData(f.StreamID, true, []byte(`{"choices":[{"text":"hi","finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}`))
		}
	}
}

// TestRequestIDHeader: with Config.RequestIDPrefix every attempt of a
// request — the first and its retries — carries X-Request-Id: the prefix,
// the request's index and its session turn, on every transport;
// Result.RequestID keeps it. Without a prefix no X-Request-Id is sent.
func TestRequestIDHeader(t *testing.T) {
	for _, tc := range everyTransport {
		t.Run(string(tc.mode)+"/"+tc.transport, func(t *testing.T) {
			var mu sync.Mutex
			var ids []string
			failFirst := true
			ts := startServer(t, tc.mode, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					ids = append(ids, r.Header.Get("X-Request-Id"))
					fail := failFirst
					failFirst = false
					mu.Unlock()
					if fail {
						http.Error(w, "busy", http.StatusServiceUnavailable)
						return
					}
					h.ServeHTTP(w, r)
				})
			})
			for _, prefix := range []string{"run7-", ""} {
				mu.Lock()
				ids, failFirst = nil, true
				mu.Unlock()
				c, err := New(Config{BaseURL: ts.URL, API: api.VLLM, Model: "m", Epoch: time.Now(), Stream: true,
					HTTPTransport: tc.transport, CACert: ts.caFile, Retries: 1, RequestIDPrefix: prefix})
				if err != nil {
					t.Fatal(err)
				}
				res := &Result{}
				res.Reset()
				res.Index, res.Turn = 42, 2 // a session's second turn
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				c.Do(ctx, &Request{MaxTokens: 3, Prompt: []byte("[1,2]")}, res)
				cancel()
				c.CloseIdleConnections()
				if !res.OK() || res.Retries != 1 {
					t.Fatalf("prefix %q: %s %s, %d retries; want success after one retry", prefix, res.ErrorClass, res.Error, res.Retries)
				}
				want := ""
				if prefix != "" {
					want = "run7-42-2"
				}
				mu.Lock()
				if len(ids) != 2 || ids[0] != want || ids[1] != want {
					t.Errorf("prefix %q: X-Request-Id of the attempts %q, want %q twice", prefix, ids, want)
				}
				mu.Unlock()
				if res.RequestID != want {
					t.Errorf("prefix %q: Result.RequestID %q, want %q", prefix, res.RequestID, want)
				}
			}
		})
	}
}
