package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The signal tests run the command in a child process: the test binary
// itself, re-executed with cliEnv set, runs what main runs (signalContext,
// dispatch, os.Exit) on the arguments after "--". Nothing is built or
// downloaded.
const cliEnv = "FINESERVE_GEN_TEST_CLI"

// TestCLIProcess is the child process; as a test it does nothing.
func TestCLIProcess(t *testing.T) {
	if os.Getenv(cliEnv) != "1" {
		t.Skip("runs only as the child process of the signal tests")
	}
	args := os.Args[slices.Index(os.Args, "--")+1:]
	subcommands["test-panic"] = testPanicCommand
	trap, _ := safe.Arm()
	ctx, stop := signalContext(signalNotice(args))
	code := runTrapped(ctx, trap, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// testPanicCommand panics where its argument says: "main" on the command's
// own goroutine, "goroutine" on one it starts (as the monitor or a writer
// would be).
func testPanicCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "goroutine" {
		safe.Go(func() { panic("crafted panic on a goroutine") })
		<-ctx.Done() // a run that would go on forever
		return exitOK
	}
	panic("crafted panic on the command's goroutine")
}

// child is the command running in a child process.
type child struct {
	cmd            *exec.Cmd
	stdout, stderr *testenv.SyncBuffer
	done           chan struct{}
	code           int
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{stdout: &testenv.SyncBuffer{}, stderr: &testenv.SyncBuffer{}, done: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], append([]string{"-test.run=^TestCLIProcess$", "--"}, args...)...)
	c.cmd.Env = append(os.Environ(), cliEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := c.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
			c.code = 0
		case errors.As(err, &ee):
			c.code = ee.ExitCode()
		default:
			c.code = -1
		}
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child to exit, at most d.
func (c *child) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.code
	case <-time.After(d):
		c.cmd.Process.Kill()
		<-c.done
		t.Fatalf("the process did not exit within %v\nstderr:\n%s", d, c.stderr.String())
		return -1
	}
}

// signalArgs is a long run (2,000 requests over 20 s) against port, with
// its outputs in dir.
func signalArgs(port int, dir string, extra ...string) []string {
	return append(mockTarget(port, "--num-prompts", "2000", "--request-rate", "100", "--random-input-len", "8", "--random-output-len", "4",
		"--seed", "5", "--warmup-requests", "0", "--disable-tqdm",
		"--results-jsonl", filepath.Join(dir, "results.jsonl"), "--summary-json", filepath.Join(dir, "summary.json")), extra...)
}

// startStallingRun starts a child run (signalArgs with extra) against a
// server that stalls half the requests forever and answers the others in a
// few milliseconds, and returns once 40 requests have reached the server.
func startStallingRun(t *testing.T, dir string, extra ...string) (*mockserver.Server, *child) {
	t.Helper()
	srv, port := mocktest.Start(t, mockserver.Config{ITL: time.Millisecond, Faults: mockserver.FaultConfig{
		Seed: 2, Faults: []mockserver.Fault{{Kind: mockserver.FaultStall, Rate: 0.5}},
	}})
	c := startChild(t, signalArgs(port, dir, extra...)...)
	waitFor(t, 30*time.Second, "40 requests at the server", func() bool { return srv.Stats().Requests >= 40 })
	return srv, c
}

// recordsByClass counts recs by error class ("" for a success); two
// records of one request fail the test.
func recordsByClass(t *testing.T, recs []resultRecord) map[string]int64 {
	t.Helper()
	byClass := map[string]int64{}
	seen := map[int64]bool{}
	for _, r := range recs {
		if seen[r.Index] {
			t.Fatalf("two records for request %d", r.Index)
		}
		seen[r.Index] = true
		byClass[r.ErrorClass]++
	}
	return byClass
}

// TestFirstSignalDrainsAndWritesEverything: SIGINT (and SIGTERM) mid-run
// stops sending, lets the requests in flight finish until --drain-timeout,
// cancels the rest, and leaves a record for every request sent and a
// summary marked interrupted; the exit code is 130.
func TestFirstSignalDrainsAndWritesEverything(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			// Half the requests stall forever: only the drain timeout
			// ends them.
			dir := t.TempDir()
			srv, c := startStallingRun(t, dir, "--drain-timeout", "300ms")
			c.cmd.Process.Signal(sig)
			if code := c.wait(t, 30*time.Second); code != exitInterrupted {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, c.stderr.String())
			}
			recs := readRecords(t, filepath.Join(dir, "results.jsonl"))
			sum := (&toolRun{dir: dir}).summary(t)
			st := srv.Stats()
			stalled := srv.FaultCounts()[mockserver.FaultStall]
			byClass := recordsByClass(t, recs)
			// Every request that reached the server has its record (and a
			// request sent but not yet arrived has one too).
			if int64(len(recs)) < st.Requests {
				t.Errorf("%d records for %d requests at the server", len(recs), st.Requests)
			}
			// The stalled requests were canceled after the drain; every
			// other request completed.
			if byClass[record.ErrCanceled] != stalled || byClass[""] != int64(len(recs))-stalled {
				t.Errorf("records by class %v; the server stalled %d", byClass, stalled)
			}
			if !sum.Interrupted || sum.Completed+sum.Failed != int64(len(recs)) || sum.NotSent == 0 ||
				sum.Scheduled != 2000 || sum.NotSent+int64(len(recs)) != sum.Scheduled {
				t.Errorf("summary: interrupted %v, completed %d + failed %d vs %d records, not sent %d of %d scheduled",
					sum.Interrupted, sum.Completed, sum.Failed, len(recs), sum.NotSent, sum.Scheduled)
			}
			if !strings.Contains(c.stderr.String(), "interrupted") {
				t.Errorf("stderr does not say the run was interrupted:\n%s", c.stderr.String())
			}
		})
	}
}

// TestSecondSignalCancelsAndWritesEverything: a second signal during a
// long drain cancels the requests in flight at once; they are recorded as
// canceled with the token that came before the cut, the summary and the
// HTML report are written, and the process exits with 130 within about a
// second (asserted with a 5× margin).
func TestSecondSignalCancelsAndWritesEverything(t *testing.T) {
	dir := t.TempDir()
	srv, c := startStallingRun(t, dir, "--drain-timeout", "10m", "--report-html", filepath.Join(dir, "report.html"),
		"--metrics-addr", "127.0.0.1:0")
	metricsURL := regexp.MustCompile(`metrics: serving (http://\S+)`).FindStringSubmatch(c.stderr.String())
	if metricsURL == nil {
		t.Fatalf("no metrics address on stderr:\n%s", c.stderr.String())
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, 30*time.Second, "the drain to start", func() bool { return strings.Contains(c.stderr.String(), "waiting up to") })
	// Wait until every request that does not stall has been answered: the
	// requests in flight are then the stalled ones. The server's counts
	// alone do not say so — a request sent just before the first signal
	// may not have reached it yet on a busy machine — so the client's own
	// count of requests in flight must be the stalled ones too.
	waitFor(t, 30*time.Second, "the answered requests to settle", func() bool {
		st := srv.Stats()
		stalled := srv.FaultCounts()[mockserver.FaultStall]
		return st.Completed+stalled == st.Requests && clientInFlight(t, metricsURL[1]) == stalled
	})
	st := srv.Stats()
	stalled := srv.FaultCounts()[mockserver.FaultStall]
	sent := time.Now()
	c.cmd.Process.Signal(syscall.SIGINT)
	// The drain would last 10 minutes: exiting means the second signal
	// was obeyed.
	code := c.wait(t, 30*time.Second)
	took := time.Since(sent)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, c.stderr.String())
	}
	if took > 5*time.Second {
		t.Errorf("the process exited %v after the second signal, want about a second", took)
	}
	t.Logf("exit %v after the second signal", took)
	recs := readRecords(t, filepath.Join(dir, "results.jsonl"))
	byClass := recordsByClass(t, recs)
	for _, r := range recs {
		if r.ErrorClass == record.ErrCanceled && (r.FirstToken == 0 || r.TTFT() <= 0) {
			t.Errorf("canceled record %d (ttft %v): want the TTFT of the token that came before the cut", r.Index, r.TTFT())
		}
	}
	if int64(len(recs)) != st.Requests || byClass[record.ErrCanceled] != stalled || byClass[""] != st.Completed {
		t.Errorf("%d records by class %v; the server had %d requests, completed %d and stalled %d", len(recs), byClass, st.Requests, st.Completed, stalled)
	}
	sum := (&toolRun{dir: dir}).summary(t)
	if !sum.Interrupted || sum.Failed != stalled || sum.ErrorsByClass[record.ErrCanceled] != stalled || sum.Completed != st.Completed {
		t.Errorf("summary: interrupted %v, completed %d, failed %d, by class %v; want %d canceled, %d completed",
			sum.Interrupted, sum.Completed, sum.Failed, sum.ErrorsByClass, stalled, st.Completed)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil || !strings.Contains(string(b), "canceled") {
		t.Errorf("HTML report: %v", err)
	}
	if e := c.stderr.String(); !strings.Contains(e, "second signal") || strings.Contains(e, "exiting now") {
		t.Errorf("stderr:\n%s", e)
	}
}

// clientInFlight reads the generator's requests in flight from its
// metrics page (-1 when it cannot be read).
func clientInFlight(t *testing.T, url string) int64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^fineserve_gen_requests_in_flight(?:\{[^}]*\})? ([0-9.e+]+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no fineserve_gen_requests_in_flight on the metrics page:\n%s", b)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(v)
}

// TestAnalyzeAndSynthesizeStopOnFirstSignal: analyze and synthesize stop
// on the first SIGINT with exit code 130, while a trace is being read (a
// pipe fed without end: the reading sees the signal) or while the read
// waits for input (a pipe with nothing more to read); both ran on and
// exited 0.
func TestAnalyzeAndSynthesizeStopOnFirstSignal(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(trace, dir string) []string
		feed bool
		want string
	}{
		{"analyze", func(tr, _ string) []string { return []string{"analyze", tr, "--trace-format", "bailian"} }, true, "analyze: interrupted while reading"},
		{"analyze-waiting", func(tr, _ string) []string { return []string{"analyze", tr, "--trace-format", "bailian"} }, false, "analyze: interrupted: nothing written"},
		{"synthesize", func(tr, dir string) []string {
			return []string{"synthesize", tr, "--trace-format", "bailian", "-o", filepath.Join(dir, "out.jsonl")}
		}, true, "synthesize: interrupted while reading"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			trace := filepath.Join(dir, "chain.jsonl")
			if err := syscall.Mkfifo(trace, 0o600); err != nil {
				t.Skip("no named pipes:", err)
			}
			c := startChild(t, tc.args(trace, dir)...)
			w, err := os.OpenFile(trace, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// A Bailian chain: each chat the parent of the next.
			row := func(i int) []byte {
				return fmt.Appendf(nil, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %d, "input_length": 16, "output_length": 4, "hash_ids": [%d]}`+"\n", i, i-1, i, i)
			}
			var buf []byte
			for i := range 20000 {
				buf = append(buf, row(i)...)
			}
			if _, err := w.Write(buf); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			if tc.feed {
				go func() {
					for i := 20000; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := w.Write(row(i)); err != nil {
							return
						}
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // reading
			c.cmd.Process.Signal(os.Interrupt)
			if code := c.wait(t, 20*time.Second); code != exitInterrupted {
				t.Errorf("exit %d, want %d\n%s", code, exitInterrupted, c.stderr.String())
			}
			if !strings.Contains(c.stderr.String(), tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, c.stderr.String())
			}
			if strings.Contains(c.stderr.String(), "requests in flight") { // it sends none
				t.Errorf("stderr speaks of requests in flight:\n%s", c.stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); err == nil {
				t.Error("a part of the synthesized trace is left behind")
			}
		})
	}
}

// TestSignalNotice: the first signal's notice speaks of requests in flight
// only for a command that sends them; the mock server says nothing.
func TestSignalNotice(t *testing.T) {
	for args, inFlight := range map[string]bool{"": true, "--request-rate 5": true, "run": true, "sweep": true, "plan": true,
		"analyze t.jsonl": false, "synthesize t.jsonl": false, "fit": false, "report s.json": false, "merge": false, "config": false, "compare": false} {
		n := signalNotice(strings.Fields(args))
		if n.first == "" || n.second == "" || strings.Contains(n.first+n.second, "requests in flight") != inFlight {
			t.Errorf("%q: %+v, want a notice that speaks of requests in flight: %v", args, n, inFlight)
		}
	}
	if n := signalNotice([]string{"mock-server"}); n != (signalNotices{}) {
		t.Errorf("mock-server: %+v, want none", n)
	}
}
