package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestMockServerArrivalLog: --arrival-log writes one line per generation
// request, complete once the server has stopped; a path that cannot be
// created fails before serving.
func TestMockServerArrivalLog(t *testing.T) {
	dir := t.TempDir()
	logPath, portFile := filepath.Join(dir, "arrivals.csv"), filepath.Join(dir, "port")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.SyncBuffer{}
	done := make(chan int)
	go func() {
		done <- mockServerCommand(ctx, []string{"--port", "0", "--port-file", portFile, "--arrival-log", logPath}, io.Discard, stderr)
	}()
	var port int
	waitFor(t, 10*time.Second, "the mock's port file", func() bool {
		b, err := os.ReadFile(portFile)
		port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && port > 0
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	const n = 3
	for range n {
		resp, err := http.Post(url+"/v1/completions", "application/json",
			strings.NewReader(`{"model":"mock-model","prompt":"a b","max_tokens":2,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if resp, err := http.Get(url + "/v1/models"); err == nil {
		resp.Body.Close()
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	got, err := mockserver.ReadArrivalLog(testenv.Open(t, logPath))
	if err != nil || len(got) != n {
		t.Errorf("arrival log: %d arrivals (%v), want %d", len(got), err, n)
	}

	var errb strings.Builder
	code := mockServerCommand(context.Background(), []string{"--port", "0", "--arrival-log", filepath.Join(dir, "missing", "a.csv")}, io.Discard, &errb)
	if code != exitFailure || !strings.Contains(errb.String(), "--arrival-log") {
		t.Errorf("unwritable log: exit %d, stderr %q; want %d naming --arrival-log", code, errb.String(), exitFailure)
	}
}

// TestMockServerModelFlags: the reasoning, tool and schema flags reach the
// server (a reasoning chunk first, a tool call), and bad values are usage
// errors named together.
func TestMockServerModelFlags(t *testing.T) {
	wantUsage(t, []string{"mock-server", "--reasoning-tokens", "uniform:5:2", "--reasoning-field", "thinking", "--tool-call-share", "1.5", "--schema-invalid-share", "-1"},
		"--reasoning-tokens", "--reasoning-field", "--tool-call-share 1.5", "--schema-invalid-share -1")
	portFile := filepath.Join(t.TempDir(), "port")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.SyncBuffer{}
	done := make(chan int)
	go func() {
		done <- mockServerCommand(ctx, []string{"--port", "0", "--port-file", portFile, "--reasoning-tokens", "2", "--tool-call-share", "1", "--seed", "4"}, io.Discard, stderr)
	}()
	var port int
	waitFor(t, 10*time.Second, "the mock's port file", func() bool {
		b, err := os.ReadFile(portFile)
		port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && port > 0
	})
	get := func(body string) string {
		resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if b := get(`{"messages":[{"role":"user","content":"a"}],"max_tokens":4,"stream":true}`); !strings.Contains(b, `"delta":{"reasoning":" think"}`) {
		t.Errorf("no reasoning chunk:\n%s", b)
	}
	if b := get(`{"messages":[{"role":"user","content":"a"}],"max_tokens":40,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`); !strings.Contains(b, `"finish_reason":"tool_calls"`) {
		t.Errorf("no tool call: %s", b)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), `reasoning model: 2 reasoning tokens per chat request, in "reasoning"`) {
		t.Errorf("stderr %q: want the reasoning model's line", stderr.String())
	}
}
