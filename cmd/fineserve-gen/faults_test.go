package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestRunAgainstEveryFault runs the tool against the built-in server
// injecting each fault kind into every request: the run completes, every
// request has a record of the expected class, the summary counts them by
// class, and the exit code says the error budget was exceeded.
func TestRunAgainstEveryFault(t *testing.T) {
	const n = 40
	for _, tc := range []struct {
		kind  string
		class string
		args  []string
	}{
		{mockserver.FaultRefuse, record.ErrConnect, nil},
		{mockserver.FaultReset, record.ErrReset, nil},
		{mockserver.FaultHTTP429, record.ErrHTTP429, nil},
		{mockserver.FaultHTTP500, record.ErrHTTP5xx, nil},
		{mockserver.FaultHTTP503, record.ErrHTTP5xx, []string{"--disable-stream"}},
		{mockserver.FaultSlowHeaders, record.ErrTimeout, []string{"--stall-timeout", "0.2"}},
		{mockserver.FaultGarbageSSE, record.ErrProtocol, nil},
		{mockserver.FaultTruncatedJSON, record.ErrProtocol, nil},
		{mockserver.FaultNoDone, record.ErrProtocol, nil},
		{mockserver.FaultStall, record.ErrTimeout, []string{"--stall-timeout", "200ms"}},
		// A runaway stream ends at max_tokens plus the margin, with no
		// timeout given; not streamed, the request timeout ends it.
		{mockserver.FaultEndless, record.ErrProtocol, nil},
		{mockserver.FaultEndless, record.ErrTimeout, []string{"--disable-stream", "--request-timeout", "300ms"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{ITL: time.Millisecond, Faults: mockserver.FaultConfig{
				Faults: []mockserver.Fault{{Kind: tc.kind, Rate: 1}}, Delay: 5 * time.Second,
			}})
			r := runTool(t, append(baseArgs(port, n), tc.args...)...)
			if r.code != exitBudget {
				t.Errorf("exit %d, want %d (error budget)\nstderr:\n%s", r.code, exitBudget, r.stderr)
			}
			if !strings.Contains(r.stderr, "error budget exceeded") || !strings.Contains(r.stderr, tc.class+" "+strconv.Itoa(n)) {
				t.Errorf("stderr does not explain the exit code:\n%s", r.stderr)
			}
			s := r.summary(t)
			if s.Failed != n || s.Completed != 0 || s.ErrorsByClass[tc.class] != n || s.ErrorRate != 1 || s.Interrupted {
				t.Errorf("summary: failed %d completed %d by class %v rate %v interrupted %v; want %d %s",
					s.Failed, s.Completed, s.ErrorsByClass, s.ErrorRate, s.Interrupted, n, tc.class)
			}
			recs := readRecords(t, r.path("results.jsonl"))
			seen := map[int64]bool{}
			for _, rec := range recs {
				if rec.ErrorClass != tc.class || rec.Error == "" || seen[rec.Index] {
					t.Fatalf("record %+v: want class %s with a message, once per index", rec, tc.class)
				}
				seen[rec.Index] = true
			}
			if len(recs) != n {
				t.Errorf("%d records, want %d", len(recs), n)
			}
			if got := srv.FaultCounts()[tc.kind]; got != n {
				t.Errorf("the server injected %d faults, want %d", got, n)
			}
			if !strings.Contains(r.stdout, "Errors by Class") {
				t.Errorf("the table has no errors by class:\n%s", r.stdout)
			}
		})
	}
}

// TestErrorBudget: with a share of requests faulted (exactly the ones the
// seed picks), --max-error-rate decides between exit 0 and 3, and the
// counts are exact.
func TestErrorBudget(t *testing.T) {
	const n = 200
	faults := mockserver.FaultConfig{Seed: 3, Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP503, Rate: 0.1}, {Kind: mockserver.FaultReset, Rate: 0.05}}}
	want := map[string]int64{}
	for i := int64(1); i <= n; i++ {
		switch faults.FaultFor(i) {
		case mockserver.FaultHTTP503:
			want[record.ErrHTTP5xx]++
		case mockserver.FaultReset:
			want[record.ErrReset]++
		}
	}
	failed := want[record.ErrHTTP5xx] + want[record.ErrReset]
	if failed == 0 || failed == n {
		t.Fatalf("seed picks %d of %d requests: pick another", failed, n)
	}
	rate := float64(failed) / n
	for _, tc := range []struct {
		budget string
		code   int
	}{
		{"0", exitBudget}, // the default: any failure fails the run
		{strconv.FormatFloat(rate, 'f', -1, 64), exitOK}, // exactly at the budget passes
		{strconv.FormatFloat(rate-0.001, 'f', -1, 64), exitBudget},
		{"1", exitOK},
	} {
		t.Run("max-error-rate "+tc.budget, func(t *testing.T) {
			_, port := mocktest.Start(t, mockserver.Config{Faults: faults})
			r := runTool(t, append(baseArgs(port, n), "--max-error-rate", tc.budget, "--max-concurrency", "16")...)
			if r.code != tc.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tc.code, r.stderr)
			}
			s := r.summary(t)
			if s.Failed != failed || s.Completed != n-failed || s.ErrorsByClass[record.ErrHTTP5xx] != want[record.ErrHTTP5xx] || s.ErrorsByClass[record.ErrReset] != want[record.ErrReset] {
				t.Errorf("failed %d completed %d by class %v, want %d failed: %v", s.Failed, s.Completed, s.ErrorsByClass, failed, want)
			}
		})
	}
}

// TestRetriesEndToEnd: with --retries, requests answered 503 are sent
// again and the retries are counted apart; every request ends with one
// record.
func TestRetriesEndToEnd(t *testing.T) {
	const n = 50
	faults := mockserver.FaultConfig{Seed: 11, Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP503, Rate: 0.3}}}
	srv, port := mocktest.Start(t, mockserver.Config{Faults: faults})
	r := runTool(t, append(baseArgs(port, n), "--retries", "8")...)
	s := r.summary(t)
	// Every 503 made one retry: the server saw each request once more per
	// 503 it answered.
	served := srv.FaultCounts()[mockserver.FaultHTTP503]
	if served == 0 || s.Retries != served || srv.Stats().Requests != n+served {
		t.Errorf("summary retries %d, 503s served %d, server requests %d (want %d + 503s)", s.Retries, served, srv.Stats().Requests, n)
	}
	recs := readRecords(t, r.path("results.jsonl"))
	var retried int
	for _, rec := range recs {
		retried += rec.Retries
	}
	if int64(retried) != s.Retries || len(recs) != n {
		t.Errorf("%d records counting %d retries, summary %d", len(recs), retried, s.Retries)
	}
	if s.Failed != 0 || r.code != exitOK {
		t.Errorf("exit %d with %d failed: 8 retries should get every request through", r.code, s.Failed)
	}
	if !strings.Contains(r.stdout, "Retries") && s.Retries > 0 {
		t.Logf("note: the table does not show retries")
	}
}

// TestExitCodes runs the command for each exit code of the table in docs/EXIT_CODES.md
// (4 is TestPanicExitsWithItsOwnCode's, in a process of its own).
func TestExitCodes(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{})
	t.Run("0: a clean run", func(t *testing.T) {
		mustRunTool(t, baseArgs(port, 20)...)
	})
	t.Run("1: the server cannot be reached", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		dead := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		for _, warmup := range []string{"0", "1"} {
			args := append(baseArgs(dead, 5), "--warmup-requests", warmup)
			r := runTool(t, args...)
			if says := fmt.Sprintf("cannot reach the server at 127.0.0.1:%d: is the server up?", dead); r.code != exitFailure || !strings.Contains(r.stderr, says) {
				t.Errorf("--warmup-requests %s: exit %d, want %d saying %q\n%s", warmup, r.code, exitFailure, says, r.stderr)
			}
		}
	})
	t.Run("1: --model is not served", func(t *testing.T) {
		var requests atomic.Int64
		_, port := mocktest.Start(t, mockserver.Config{Models: []string{"a", "b"}, OnRequest: func(string, []byte) { requests.Add(1) }})
		for _, warmup := range []string{"0", "1"} {
			args := append(baseArgs(port, 5), "--warmup-requests", warmup)
			r := runTool(t, args...)
			if r.code != exitFailure || !strings.Contains(r.stderr, "--model mock-model is not served at") || !strings.Contains(r.stderr, "it serves a, b") {
				t.Errorf("--warmup-requests %s: exit %d, want %d naming the served models\n%s", warmup, r.code, exitFailure, r.stderr)
			}
		}
		if n := requests.Load(); n != 0 {
			t.Errorf("%d requests were sent", n)
		}
	})
	t.Run("2: usage", func(t *testing.T) {
		r := runTool(t, append(baseArgs(port, 5), "--request-rat", "5")...)
		if r.code != exitUsage {
			t.Errorf("exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
		}
	})
	t.Run("3: error budget", func(t *testing.T) {
		_, port := mocktest.Start(t, mockserver.Config{Faults: mockserver.FaultConfig{
			Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP500, Rate: 1}}}})
		r := runTool(t, baseArgs(port, 5)...)
		if r.code != exitBudget || !strings.Contains(r.stderr, "error budget exceeded") {
			t.Errorf("exit %d, want %d\n%s", r.code, exitBudget, r.stderr)
		}
		// Every request failed: no latency, shown as such and re-read as such.
		if !strings.Contains(r.stdout, "n/a") {
			t.Errorf("the table shows no n/a:\n%s", r.stdout)
		}
		raw, _ := os.ReadFile(r.path("summary.json"))
		if !strings.Contains(string(raw), `"mean_ttft_ms": null`) {
			t.Errorf("summary without null latencies:\n%s", raw)
		}
		for _, args := range [][]string{
			{"report", r.path("summary.json"), "-o", r.path("report.html")},
			{"report", r.path("results.jsonl"), "--summary", r.path("summary.json"), "-o", r.path("report2.html")},
			{"merge", r.path("summary.json"), "-o", r.path("merged.json")},
		} {
			mustRun(t, args...)
		}
		merged, _ := os.ReadFile(r.path("merged.json"))
		if !strings.Contains(string(merged), `"p99_ttft_ms": null`) {
			t.Errorf("merged summary without null latencies:\n%.2000s", merged)
		}
	})
	t.Run("130: stopped while sending", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		// Stop the run once requests are in flight: the server says when
		// its fifth has arrived.
		var arrived atomic.Int64
		inFlight := make(chan struct{})
		_, port := mocktest.Start(t, mockserver.Config{ITL: time.Millisecond, Faults: mockserver.FaultConfig{
			Faults: []mockserver.Fault{{Kind: mockserver.FaultStall, Rate: 1}}},
			OnRequest: func(string, []byte) {
				if arrived.Add(1) == 5 {
					close(inFlight)
				}
			}})
		go func() {
			<-inFlight
			cancel()
		}()
		args := append(baseArgs(port, 1000), "--request-rate", "200", "--drain-timeout", "50ms")
		r := runToolCtx(t, ctx, args...)
		if r.code != exitInterrupted {
			t.Errorf("exit %d, want %d\n%s", r.code, exitInterrupted, r.stderr)
		}
		s := r.summary(t)
		recs := readRecords(t, r.path("results.jsonl"))
		if !s.Interrupted || s.NotSent == 0 || int64(len(recs)) != s.Completed+s.Failed || s.ErrorsByClass[record.ErrCanceled] != int64(len(recs)) {
			t.Errorf("interrupted %v, not sent %d, %d records, summary %d+%d, by class %v", s.Interrupted, s.NotSent, len(recs), s.Completed, s.Failed, s.ErrorsByClass)
		}
	})
}

// TestBadArgumentsAreReportedTogether: flag syntax errors, bad values and
// semantic problems come in one message, with exit 2, before anything is
// sent.
func TestBadArgumentsAreReportedTogether(t *testing.T) {
	var requests atomic.Int64
	_, port := mocktest.Start(t, mockserver.Config{OnRequest: func(string, []byte) { requests.Add(1) }})
	r := runTool(t, append(baseArgs(port, 5),
		"--request-rate", "fast", "--port", "http", "--stall-timeout", "-3", "--max-error-rate", "2",
		"--extra-request-body", `{"top_k": 5`, "--backend", "nope", "--retries", "-1")...)
	if r.code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", r.code, exitUsage, r.stderr)
	}
	for _, want := range []string{
		`--request-rate "fast"`, `--port "http": want a value of type int`, `--stall-timeout "-3"`,
		"--max-error-rate 2", "--extra-request-body", "--backend \"nope\"", "--retries -1", "problems:",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not report %q:\n%s", want, r.stderr)
		}
	}
	t.Run("a bad extra body alone is caught before any request", func(t *testing.T) {
		r := runTool(t, append(baseArgs(port, 5), "--warmup-requests", "1", "--extra-request-body", `{"top_k": 5} x`)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "--extra-request-body: trailing data") {
			t.Errorf("exit %d\n%s", r.code, r.stderr)
		}
	})
	t.Run("unknown flag with bad values", func(t *testing.T) {
		r := runTool(t, "--request-rate", "x", "--no-such-flag")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--request-rate") || !strings.Contains(r.stderr, "no-such-flag") {
			t.Errorf("exit %d\n%s", r.code, r.stderr)
		}
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}
