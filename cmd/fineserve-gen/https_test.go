package main

import (
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// TestHTTPSThroughGateway: an https:// target is reached over HTTP/2 with
// --ca-cert, the Host header follows --host-header, every connection is
// closed when the run ends, and bad TLS and transport flags are usage errors.
func TestHTTPSThroughGateway(t *testing.T) {
	srv := mocktest.New(t, mockserver.Config{})
	var mu sync.Mutex
	protos := map[int]int{}
	hosts := map[string]int{}
	open := map[net.Conn]bool{}
	inner := srv.Handler()
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protos[r.ProtoMajor]++
		hosts[r.Host]++
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	hs.Config.ErrorLog = log.New(io.Discard, "", 0)
	hs.Config.ConnState = func(c net.Conn, st http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if st == http.StateNew {
			open[c] = true
		} else if st == http.StateClosed {
			delete(open, c)
		}
	}
	hs.EnableHTTP2 = true
	hs.StartTLS()
	defer hs.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hs.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--base-url", hs.URL, "--model", "mock-model", "--num-prompts", "6", "--max-concurrency", "3",
		"--random-input-len", "4", "--random-output-len", "2", "--ca-cert", ca, "--host-header", "example.com"}
	r := mustRunTool(t, args...)
	if s := r.summary(t); s.Completed != 6 {
		t.Errorf("completed %d, want 6", s.Completed)
	}
	mu.Lock()
	if protos[1] != 0 || protos[2] < 6 || len(hosts) != 1 || hosts["example.com"] != protos[2] { // 6 and the warm-up's
		t.Errorf("requests by HTTP version %v, by Host %v; want all over HTTP/2 to example.com", protos, hosts)
	}
	mu.Unlock()
	waitFor(t, 10*time.Second, "the run's connections to close", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(open) == 0
	})

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--http-transport", "lean"}, "plain HTTP only"},
		{[]string{"--http-transport", "spdy"}, "want auto, lean, net/http, h2 or http1"},
		{[]string{"--insecure"}, "choose one"},
		{[]string{"--host-header", "a b"}, "--host-header"},
	} {
		r := runTool(t, append(args, tc.args...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d saying %q\n%s", tc.args, r.code, exitUsage, tc.want, r.stderr)
		}
	}
	r = runTool(t, "--base-url", hs.URL, "--model", "mock-model", "--num-prompts", "1", "--ca-cert", filepath.Join(t.TempDir(), "none.pem"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "--ca-cert") {
		t.Errorf("missing --ca-cert file: exit %d\n%s", r.code, r.stderr)
	}
}
