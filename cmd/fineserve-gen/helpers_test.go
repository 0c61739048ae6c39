package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// runCmd runs the command in process with args and returns its exit code
// and what it wrote to stdout and stderr.
func runCmd(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs the command in process with args and fails the test unless
// it exits 0; it returns what the command wrote to stdout and stderr.
func mustRun(t testing.TB, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCmd(args...)
	if code != exitOK {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	return stdout, stderr
}

// wantUsage runs the command in process with args and fails the test
// unless it exits with a usage error (2) whose message holds every one of
// want.
func wantUsage(t *testing.T, args []string, want ...string) {
	t.Helper()
	code, _, errb := runCmd(args...)
	if code != exitUsage || errb == "" {
		t.Errorf("%v: exit %d, want %d with a message (stderr %q)", args, code, exitUsage, errb)
	}
	for _, w := range want {
		if !strings.Contains(errb, w) {
			t.Errorf("%v: message %q, want %q", args, errb, w)
		}
	}
}

// toolRun is one in-process run of the command and what it wrote.
type toolRun struct {
	code           int
	stdout, stderr string
	dir            string
}

func (r *toolRun) path(name string) string { return filepath.Join(r.dir, name) }

// runTool runs the command with args plus outputs in a fresh directory
// (results.jsonl, summary.json); the exit code is the caller's to check.
func runTool(t *testing.T, args ...string) *toolRun {
	t.Helper()
	return runToolCtx(t, context.Background(), args...)
}

// runToolFor is runTool stopped after d, as an interrupt stops a run.
func runToolFor(t *testing.T, d time.Duration, args ...string) *toolRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return runToolCtx(t, ctx, args...)
}

// runInterrupted is a run stopped after 1 s that must end as interrupted,
// within 30 s: without waiting for what it had yet to send.
func runInterrupted(t *testing.T, args ...string) *toolRun {
	t.Helper()
	began := time.Now()
	r := runToolFor(t, time.Second, args...)
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("the stopped run took %v: it waited for a think time", took)
	}
	if r.code != exitInterrupted {
		t.Errorf("exit %d, want %d\n%s", r.code, exitInterrupted, r.stderr)
	}
	return r
}

func runToolCtx(t *testing.T, ctx context.Context, args ...string) *toolRun {
	t.Helper()
	r := &toolRun{dir: t.TempDir()}
	args = append(args, "--results-jsonl", r.path("results.jsonl"), "--summary-json", r.path("summary.json"), "--disable-tqdm")
	var out, errb bytes.Buffer
	r.code = dispatch(ctx, args, &out, &errb)
	r.stdout, r.stderr = out.String(), errb.String()
	return r
}

// mustRunTool is runTool that fails the test unless the run exits 0.
func mustRunTool(t *testing.T, args ...string) *toolRun {
	t.Helper()
	r := runTool(t, args...)
	if r.code != exitOK {
		t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r
}

// summary reads the run's summary.json.
func (r *toolRun) summary(t *testing.T) *metrics.Summary {
	t.Helper()
	if _, err := os.Stat(r.path("summary.json")); err != nil {
		t.Fatalf("summary: %v\nstderr:\n%s", err, r.stderr)
	}
	s := testenv.ReadJSON[metrics.Summary](t, r.path("summary.json"))
	return &s
}

// resultRecord is one --results-jsonl record read back into the request's
// record by the reader the report and merge use (report.ParseRecord), with
// its JSON kept for the tests that check which keys a record holds.
type resultRecord struct {
	record.Request
	json *fastjson.Value
}

// UnmarshalJSON reads a record line (testenv.ReadJSONL calls it).
func (r *resultRecord) UnmarshalJSON(b []byte) error {
	v, err := fastjson.Parse(string(b)) // a copy: the line's buffer is reused
	if err != nil {
		return err
	}
	r.json = v
	return report.ParseRecord(v, &r.Request)
}

// has reports whether the record holds key (null counts as held).
func (r *resultRecord) has(key string) bool { return r.json.Exists(key) }

// itlMS is the record's itl_ms: the gaps between its tokens, in ms.
func (r *resultRecord) itlMS() []float64 {
	var gaps []float64
	for i := 1; i < len(r.TokenTimes); i++ {
		gaps = append(gaps, inMS(r.TokenTimes[i]-r.TokenTimes[i-1]))
	}
	return gaps
}

// inMS is d in milliseconds, as the records and summaries give times.
func inMS(d time.Duration) float64 { return float64(d) / 1e6 }

// readRecords reads a results file, failing on any partial line or a line
// that is not a per-request record.
func readRecords(t testing.TB, path string) []resultRecord {
	t.Helper()
	return testenv.ReadJSONL[resultRecord](t, path)
}

// mockTarget is the target flags of a run against the built-in server on
// port (loopback) and its default model, followed by more.
func mockTarget(port int, more ...string) []string {
	return append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--model", "mock-model"}, more...)
}

// baseArgs is a short run against the mock on port: n requests at once,
// no warm-up.
func baseArgs(port, n int) []string {
	return mockTarget(port, "--num-prompts", strconv.Itoa(n), "--request-rate", "inf", "--random-input-len", "8", "--random-output-len", "4",
		"--seed", "1", "--warmup-requests", "0", "--quiet")
}

// mockCommand is `fineserve-gen mock-server` running in process.
type mockCommand struct {
	port    int
	stderr  *testenv.SyncBuffer
	cancel  context.CancelFunc
	done    chan int
	code    int
	stopped bool
}

// startMockCommand runs `fineserve-gen mock-server` with args on a free
// loopback port (--port 0, --port-file) and waits for its port; it runs
// until stop or the end of the test.
func startMockCommand(t *testing.T, args ...string) *mockCommand {
	t.Helper()
	portFile := filepath.Join(t.TempDir(), "port")
	ctx, cancel := context.WithCancel(context.Background())
	m := &mockCommand{stderr: &testenv.SyncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	args = append([]string{"--port", "0", "--port-file", portFile}, args...)
	go func() { m.done <- mockServerCommand(ctx, args, io.Discard, m.stderr) }()
	t.Cleanup(func() { m.wait() })
	waitFor(t, 10*time.Second, "the mock's port file", func() bool {
		select {
		case m.code = <-m.done: // it stopped before it served: bad flags
			m.stopped = true
			t.Fatalf("mock-server %v: exit %d before it served\n%s", args, m.code, m.stderr.String())
		default:
		}
		b, err := os.ReadFile(portFile)
		m.port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && m.port > 0
	})
	return m
}

func (m *mockCommand) url() string { return "http://127.0.0.1:" + strconv.Itoa(m.port) }

// wait stops the server as an interrupt does and returns its exit code.
func (m *mockCommand) wait() int {
	m.cancel()
	if !m.stopped {
		m.code, m.stopped = <-m.done, true
	}
	return m.code
}

// stop stops the server and fails the test unless it exited 0.
func (m *mockCommand) stop(t *testing.T) {
	t.Helper()
	if code := m.wait(); code != exitOK {
		t.Fatalf("mock-server: exit %d\n%s", code, m.stderr.String())
	}
}

// post sends the JSON body to the server's path and returns its answer.
func (m *mockCommand) post(t *testing.T, path, body string) string {
	t.Helper()
	resp, err := http.Post(m.url()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// waitFor polls cond until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// urlOf is the base URL of a loopback port.
func urlOf(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }
