package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// busyEnv makes the test binary a busy process (TestBusyProcess).
const busyEnv = "FINESERVE_GEN_TEST_BUSY"

// TestBusyProcess spins on a core until it is killed (at most a minute);
// as a test it does nothing.
func TestBusyProcess(t *testing.T) {
	if os.Getenv(busyEnv) != "1" {
		t.Skip("runs only as a busy process beside another test")
	}
	for end := time.Now().Add(time.Minute); time.Now().Before(end); {
	}
}

// busyProcesses starts n processes that each keep a core busy until the
// test ends.
func busyProcesses(t *testing.T, n int) {
	t.Helper()
	for range n {
		c := exec.Command(os.Args[0], "-test.run=^TestBusyProcess$")
		c.Env = append(os.Environ(), busyEnv+"=1")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
}

// TestLightRunIsNotSaturated: a light run (40 requests at 20 req/s against
// the built-in server on 127.0.0.1, windows of 20 sends) beside four busy
// processes is never flagged as a saturated client, nor is its send rate
// said to fall short: the client uses a few percent of a core and has no
// backlog. Send lag from the busy machine may be noted, as such, once.
func TestLightRunIsNotSaturated(t *testing.T) {
	busyProcesses(t, 4)
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	r := mustRunTool(t, mockTarget(port, "--num-prompts", "40", "--request-rate", "20", "--random-input-len", "8",
		"--random-output-len", "4", "--seed", "3", "--warmup-requests", "0", "--window-seconds", "1",
		"--report-interval", "1", "--request-timeout", "30s")...)
	s := r.summary(t)
	if s.Completed != 40 {
		t.Fatalf("completed %d of 40\n%s", s.Completed, r.stderr)
	}
	if len(s.Windows) < 2 {
		t.Fatalf("%d windows: the run should span several", len(s.Windows))
	}
	if s.Saturation == nil || s.Saturation.Saturated {
		t.Fatalf("a light run flagged as a saturated client: %+v\n%s", s.Saturation, r.stderr)
	}
	if strings.Contains(r.stderr, "SATURATED") || strings.Contains(r.stderr, "fell behind") || strings.Contains(r.stderr, "warning:") {
		t.Errorf("stderr flags the client:\n%s", r.stderr)
	}
	if s.Saturation.SendRate != nil || strings.Contains(r.stdout, "send rate") {
		t.Errorf("the send rate is said to fall short: %+v\n%s", s.Saturation.SendRate, r.stdout)
	}
	for _, w := range s.Windows {
		if w.Saturated || w.Behind >= float64(metrics.SaturationBehind)/1e6 {
			t.Errorf("window %d: saturated %v %v, behind %v ms", w.Index, w.Saturated, w.Reasons, w.Behind)
		}
	}
	// Lag from a busy machine is said once, after the table, if at all.
	if n := strings.Count(r.stderr, "the machine is busy"); n > 1 || (n == 1) != s.Saturation.MachineBusy {
		t.Errorf("the busy machine's note %d times, client_machine_busy %v:\n%s", n, s.Saturation.MachineBusy, r.stderr)
	}
	t.Logf("send lag p99 %.2f ms, client_machine_busy %v, %d windows", s.SendLag.P99, s.Saturation.MachineBusy, len(s.Windows))
}
