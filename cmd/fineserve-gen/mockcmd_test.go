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
