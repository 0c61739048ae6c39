package launch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// mockProcessEnv makes the test binary a mock-server process (see
// TestMockServerProcess): the client's benchmarks measure the client's CPU
// alone, with the server in a process of its own, as in a real run.
const mockProcessEnv = "FINESERVE_GEN_BENCH_MOCK"

// TestMockServerProcess is not a test: run by BenchmarkRunCPU in a child
// process (with mockProcessEnv set), it serves the built-in server (instant,
// TTFT 0 and ITL 0) on 127.0.0.1, prints its port, and exits when its
// standard input is closed — at the latest when the benchmark's process ends.
func TestMockServerProcess(t *testing.T) {
	if os.Getenv(mockProcessEnv) != "1" {
		t.Skip("helper process of BenchmarkRunCPU")
	}
	port := startMock(t, mockserver.Config{})
	fmt.Printf("port %d\n", port)
	io.Copy(io.Discard, os.Stdin)
}

// mockProcess is the built-in server in a child process.
type mockProcess struct {
	cmd   *exec.Cmd
	stdin io.Closer
	port  int
}

func startMockProcess(b *testing.B) *mockProcess {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestMockServerProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), mockProcessEnv+"=1", "GOMAXPROCS=2")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	m := &mockProcess{cmd: cmd, stdin: stdin}
	b.Cleanup(func() { m.stdin.Close(); m.cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if p, ok := strings.CutPrefix(strings.TrimSpace(line), "port "); ok {
		m.port, err = strconv.Atoi(p)
	}
	if m.port == 0 {
		b.Fatalf("mock process: %q %v %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	return m
}

// cpu is the child's user + system CPU time so far, from /proc (clock ticks
// of 10 ms: read it over runs of thousands of requests).
func (m *mockProcess) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRunCPU runs the whole client path — schedule, dispatcher,
// client, stream decoding, the collector and its sinks — at a constant rate
// against the built-in server in a child process (256 prompt tokens, 16
// streamed tokens per request), one benchmark operation per request. It
// reports what the goals are about: the client's CPU per request
// (user + system, from rusage: the process is the client alone), its
// allocations per request, the server's CPU per request, and the client's
// own p99 send lag; at 8,000 req/s also with --http-phases, whose cost is
// the difference. ns/op is the schedule's gap, not a cost. Use
// -benchtime 40000x (5 s at 8,000 req/s) for stable figures:
//
//	go test -run '^$' -bench RunCPU -benchtime 40000x ./pkg/options
func BenchmarkRunCPU(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the server's CPU from /proc")
	}
	m := startMockProcess(b)
	if p, err := strconv.Atoi(os.Getenv("FINESERVE_GEN_BENCH_PORT")); err == nil {
		m.port = p // a server of one's own (to trace the client's system calls alone)
	}
	for _, tc := range []struct {
		rate   float64
		phases bool // --http-phases: what timing them costs
	}{{2000, false}, {8000, false}, {8000, true}} {
		name := fmt.Sprintf("rate=%g", tc.rate)
		if tc.phases {
			name += ",http-phases"
		}
		b.Run(name, func(b *testing.B) {
			o := testOptions(m.port)
			o.RequestRate, o.Burstiness = tc.rate, 1e15
			o.HTTPPhases = tc.phases
			o.NumPrompts, o.NumPromptsSet = int64(b.N), true
			o.RandomInputLen, o.RandomOutputLen = 256, 16
			benchRun(b, o, func() float64 { return float64(m.cpu().Microseconds()) }, "mock-cpu-µs/req")
		})
	}
}

// benchRun runs o's b.N requests, the benchmark's timer on for the run
// alone, and reports per request the client's CPU (rusage), allocations
// and bytes allocated, with the run's garbage collections, its p50 and p99
// send lag, and what count grew by over the run per request, as unit.
func benchRun(b *testing.B, o options.Options, count func() float64, unit string) {
	b.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	cpu0, count0 := selfCPU(), count()
	b.ResetTimer()
	sum, err := Run(context.Background(), o, runner.IO{Out: io.Discard, Err: io.Discard})
	b.StopTimer()
	cpu, counted := selfCPU()-cpu0, count()-count0
	runtime.ReadMemStats(&after)
	if err != nil {
		b.Fatal(err)
	}
	if sum.Completed != int64(b.N) {
		b.Fatalf("%d of %d requests completed", sum.Completed, b.N)
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/req")
	b.ReportMetric(counted/n, unit)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/req")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/req")
	b.ReportMetric(float64(after.NumGC-before.NumGC), "GCs")
	b.ReportMetric(sum.SendLag.Median, "lag-p50-ms")
	b.ReportMetric(sum.SendLag.P99, "lag-p99-ms")
}
