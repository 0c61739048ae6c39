package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
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
	logPath := filepath.Join(dir, "arrivals.csv")
	m := startMockCommand(t, "--arrival-log", logPath)
	const n = 3
	for range n {
		m.post(t, "/v1/completions", `{"model":"mock-model","prompt":"a b","max_tokens":2,"stream":true}`)
	}
	if resp, err := http.Get(m.url() + "/v1/models"); err == nil {
		resp.Body.Close()
	}
	m.stop(t)
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

// TestMockServerChunkLog: --pace exact --chunk-log writes one record per
// streamed request, complete once the server has stopped, no write before
// it is due (the first at the TTFT, the last at TTFT + 3 ITL);
// a bad --pace is a usage error.
func TestMockServerChunkLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "chunks.jsonl")
	m := startMockCommand(t, "--pace", "exact", "--ttft-ms", "20", "--itl-ms", "2", "--chunk-log", logPath)
	const n = 3
	for range n {
		m.post(t, "/v1/completions", `{"model":"mock-model","prompt":"a b","max_tokens":4,"ignore_eos":true,"stream":true}`)
	}
	m.stop(t)
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

// TestMockServerModelFlags: the reasoning, tool and schema flags reach the
// server (a reasoning chunk first, a tool call), and bad values are usage
// errors named together.
func TestMockServerModelFlags(t *testing.T) {
	wantUsage(t, []string{"mock-server", "--reasoning-tokens", "uniform:5:2", "--reasoning-field", "thinking", "--tool-call-share", "1.5", "--schema-invalid-share", "-1"},
		"--reasoning-tokens", "--reasoning-field", "--tool-call-share 1.5", "--schema-invalid-share -1")
	m := startMockCommand(t, "--reasoning-tokens", "2", "--tool-call-share", "1", "--seed", "4")
	if b := m.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":4,"stream":true}`); !strings.Contains(b, `"delta":{"reasoning":" think"}`) {
		t.Errorf("no reasoning chunk:\n%s", b)
	}
	if b := m.post(t, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":40,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`); !strings.Contains(b, `"finish_reason":"tool_calls"`) {
		t.Errorf("no tool call: %s", b)
	}
	m.stop(t)
	if !strings.Contains(m.stderr.String(), `reasoning model: 2 reasoning tokens per chat request, in "reasoning"`) {
		t.Errorf("stderr %q: want the reasoning model's line", m.stderr.String())
	}
}
