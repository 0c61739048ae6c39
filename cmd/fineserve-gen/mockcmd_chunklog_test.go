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

// TestMockServerChunkLog: --pace exact --chunk-log writes one record per
// streamed request, complete once the server has stopped, no write before
// it is due (the first at the TTFT, the last at TTFT + 3 ITL);
// a bad --pace is a usage error.
func TestMockServerChunkLog(t *testing.T) {
	dir := t.TempDir()
	logPath, portFile := filepath.Join(dir, "chunks.jsonl"), filepath.Join(dir, "port")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &testenv.SyncBuffer{}
	done := make(chan int)
	go func() {
		done <- mockServerCommand(ctx, []string{"--port", "0", "--port-file", portFile, "--pace", "exact", "--ttft-ms", "20", "--itl-ms", "2",
			"--chunk-log", logPath}, io.Discard, stderr)
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
			strings.NewReader(`{"model":"mock-model","prompt":"a b","max_tokens":4,"ignore_eos":true,"stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	recs, err := mockserver.ReadChunkLog(testenv.Open(t, logPath))
	if err != nil || len(recs) != n {
		t.Fatalf("chunk log: %d records (%v), want %d", len(recs), err, n)
	}
	for _, r := range recs {
		if r.Writes != 4 || r.FirstWriteNS < int64(20*time.Millisecond) || r.LastWriteNS < int64(26*time.Millisecond) {
			t.Errorf("record %+v: want 4 writes, the first at ≥ 20 ms, the last at ≥ 26 ms", r)
		}
	}

	var errb strings.Builder
	if code := mockServerCommand(context.Background(), []string{"--port", "0", "--pace", "fast"}, io.Discard, &errb); code != exitUsage || !strings.Contains(errb.String(), "--pace") {
		t.Errorf("--pace fast: exit %d, stderr %q; want %d naming --pace", code, errb.String(), exitUsage)
	}
}
