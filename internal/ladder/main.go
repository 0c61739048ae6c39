// Command ladder measures fineserve-gen against a separate mock-server
// process at a ladder of request rates, and prints and plots how well the
// schedule is kept and what the client costs. `make bench` runs it.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// cost is what a run cost per request: the client's user + system CPU
// over the requests that reached the server (start and exit included),
// the mock server's CPU, and the client's peak RSS.
type cost struct {
	CPUPerRequestUS       float64 `json:"client_cpu_us_per_request"`
	RSSMB                 float64 `json:"client_max_rss_mb"`
	ServerCPUPerRequestUS float64 `json:"server_cpu_us_per_request"`
}

type step struct {
	Rate             float64 `json:"rate"`
	Requests         int64   `json:"requests"`
	Achieved         float64 `json:"achieved_rps"`
	Failed           int64   `json:"failed"`
	LagP50, LagP99   float64 `json:"-"`
	LagMax           float64 `json:"send_lag_max_ms"`
	TTFTP50, TTFTP99 float64 `json:"-"`
	cost
	ClientCores float64 `json:"client_cores"`
	MaxInFlight int64   `json:"max_in_flight"`
	Saturated   bool    `json:"client_saturated"`
	StartupMS   float64 `json:"first_request_after_start_ms"`
}

// MarshalJSON keeps the summary's key names for the lag and TTFT figures.
func (s step) MarshalJSON() ([]byte, error) {
	type plain step
	b, _ := json.Marshal(plain(s))
	extra := fmt.Sprintf(`,"send_lag_p50_ms":%g,"send_lag_p99_ms":%g,"median_ttft_ms":%g,"p99_ttft_ms":%g}`, s.LagP50, s.LagP99, s.TTFTP50, s.TTFTP99)
	return append(b[:len(b)-1], extra...), nil
}

type summary struct {
	Completed   int64   `json:"completed"`
	Failed      int64   `json:"failed"`
	Throughput  float64 `json:"request_throughput"`
	Duration    float64 `json:"duration"`
	LagP50      float64 `json:"send_lag_p50_ms"`
	LagP99      float64 `json:"send_lag_p99_ms"`
	LagMax      float64 `json:"send_lag_max_ms"`
	TTFTP50     float64 `json:"median_ttft_ms"`
	TTFTP99     float64 `json:"p99_ttft_ms"`
	MaxInFlight int64   `json:"max_in_flight"`
	StartedAt   string  `json:"started_at"`
	Saturated   bool    `json:"client_saturated"`
}

func main() {
	bin := flag.String("bin", "bin/fineserve-gen", "fineserve-gen binary")
	rates := flag.String("rates", "250,500,1000,2000,3000,4000,6000,8000", "request rates to try (req/s)")
	dur := flag.Duration("duration", 10*time.Second, "schedule length per rate")
	tokens := flag.Int("tokens", 16, "output tokens per request (streamed one per chunk)")
	input := flag.Int("input", 256, "input tokens per request")
	out := flag.String("out", "", "directory for ladder.json and the lag plot (default: print only)")
	extras := flag.Bool("extras", true, "also measure per-token CPU, 2,000 concurrent streams and start-up")
	soak := flag.Int64("soak", 0, "instead of the ladder: send this many requests at --soak-rate and sample the client's RSS")
	soakRate := flag.Float64("soak-rate", 5000, "request rate of --soak")
	replot := flag.String("replot", "", "instead of measuring: redraw the lag plot of this ladder.json into --out")
	side := flag.Bool("side-by-side", false, "run fineserve-gen and vegeta one after the other on the same constant-rate schedule at each rate, with the lag measured by the server (rates must be whole)")
	vegeta := flag.String("vegeta", "", "vegeta binary for -side-by-side (default: go install "+vegetaModule+" into a temporary directory)")
	installTimeout := flag.Duration("install-timeout", 5*time.Minute, "give up installing vegeta after this long")
	poisson := flag.Bool("poisson", false, "with -side-by-side: also run fineserve-gen on a Poisson schedule at each rate (lag at the server against its --schedule-out)")
	flag.Parse()
	var err error
	if *side {
		var rs []float64
		if rs, err = parseRates(*rates, true); err == nil {
			err = runSideBySide(sideConfig{bin: *bin, vegeta: *vegeta, rates: rs, dur: *dur, tokens: *tokens, input: *input,
				outDir: *out, installTimeout: *installTimeout, poisson: *poisson})
		}
	} else if *replot != "" {
		err = replotFile(*replot, *out)
	} else if *soak > 0 {
		err = runSoak(*bin, *soak, *soakRate, *tokens, *input)
	} else {
		err = run(*bin, *rates, *dur, *tokens, *input, *out, *extras)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ladder:", err)
		os.Exit(1)
	}
}

// mock is a mock-server process.
type mock struct{ *mockserver.Process }

func startMock(bin string, args ...string) (*mock, error) {
	dir, err := os.MkdirTemp("", "ladder")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	p, err := mockserver.StartProcess(bin, dir, args...)
	if err != nil {
		return nil, err
	}
	return &mock{p}, nil
}

// stop stops the mock, whatever its exit.
func (m *mock) stop() { m.Stop() }

// cpu returns the process's user+system CPU time so far, from /proc.
func (m *mock) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", m.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// clientArgs is the command line of a quiet, seeded run against the mock
// on port, without warm-up, writing its summary to summaryFile; args follow.
func clientArgs(port int, summaryFile string, args ...string) []string {
	return append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--seed", "1",
		"--disable-tqdm", "--quiet", "--warmup-requests", "0", "--summary-json", summaryFile}, args...)
}

// client runs fineserve-gen once and returns its summary and resources.
func client(bin string, port int, args ...string) (summary, time.Duration, float64, time.Time, error) {
	dir, err := os.MkdirTemp("", "ladder")
	if err != nil {
		return summary{}, 0, 0, time.Time{}, err
	}
	defer os.RemoveAll(dir)
	sf := filepath.Join(dir, "s.json")
	cmd := exec.Command(bin, clientArgs(port, sf, args...)...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t0 := time.Now()
	err = cmd.Run()
	if cmd.ProcessState == nil {
		return summary{}, 0, 0, t0, err
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	var s summary
	b, rerr := os.ReadFile(sf)
	if rerr != nil {
		return s, cpu, rss, t0, fmt.Errorf("%v: %s", err, stderr.String())
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, cpu, rss, t0, err
	}
	return s, cpu, rss, t0, nil
}

func run(bin, rateList string, dur time.Duration, tokens, input int, outDir string, extras bool) error {
	m, err := startMock(bin)
	if err != nil {
		return err
	}
	defer m.stop()
	size := []string{"--random-input-len", strconv.Itoa(input), "--random-output-len", strconv.Itoa(tokens)}

	// Fixed cost of a run (start-up, one request, exit), subtracted below.
	_, base, _, _, err := client(bin, m.Port, append(size, "--num-prompts", "1")...)
	if err != nil {
		return fmt.Errorf("baseline run: %w", err)
	}
	before := calibrate()
	fmt.Printf("fineserve-gen rate ladder: mock-server in its own process (TTFT 0, ITL 0), %d input / %d streamed output tokens, %v per rate, %s\n",
		input, tokens, dur, machine())
	fmt.Printf("machine speed: one stream chunk decodes in %.0f ns (fastjson; lower is faster)\n", before)
	fmt.Printf("fixed cost of a run (start, 1 request, exit): %.1f ms CPU\n\n", float64(base)/1e6)
	fmt.Printf("%8s %9s %7s %9s %9s %9s %9s %9s %10s %10s %7s %7s %4s\n",
		"rate", "achieved", "failed", "lag p50", "lag p99", "lag max", "ttft p50", "ttft p99", "client", "server", "cores", "rss", "sat")
	fmt.Printf("%8s %9s %7s %9s %9s %9s %9s %9s %10s %10s %7s %7s %4s\n",
		"req/s", "req/s", "", "ms", "ms", "ms", "ms", "ms", "µs/req", "µs/req", "", "MB", "")
	var steps []step
	for _, f := range strings.Split(rateList, ",") {
		rate, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			return fmt.Errorf("rate %q: %w", f, err)
		}
		n := int64(rate * dur.Seconds())
		before := m.cpu()
		s, cpu, rss, _, err := client(bin, m.Port, append(size, "--request-rate", f, "--num-prompts", strconv.FormatInt(n, 10))...)
		if err != nil {
			return fmt.Errorf("rate %g: %w", rate, err)
		}
		srv := m.cpu() - before
		st := step{Rate: rate, Requests: n, Achieved: s.Throughput, Failed: s.Failed,
			LagP50: s.LagP50, LagP99: s.LagP99, LagMax: s.LagMax, TTFTP50: s.TTFTP50, TTFTP99: s.TTFTP99,
			cost: cost{CPUPerRequestUS: float64(cpu-base) / 1e3 / float64(max(n-1, 1)),
				ServerCPUPerRequestUS: float64(srv) / 1e3 / float64(max(n, 1)), RSSMB: rss},
			ClientCores: cpu.Seconds() / max(s.Duration, 1e-9),
			MaxInFlight: s.MaxInFlight, Saturated: s.Saturated}
		steps = append(steps, st)
		sat := ""
		if st.Saturated {
			sat = "yes"
		}
		fmt.Printf("%8.0f %9.0f %7d %9.3f %9.3f %9.3f %9.3f %9.3f %10.1f %10.1f %7.2f %7.1f %4s\n",
			rate, st.Achieved, st.Failed, st.LagP50, st.LagP99, st.LagMax, st.TTFTP50, st.TTFTP99,
			st.CPUPerRequestUS, st.ServerCPUPerRequestUS, st.ClientCores, st.RSSMB, sat)
	}
	after := calibrate()
	fmt.Printf("machine speed after the ladder: %.0f ns per chunk decode\n", after)
	res := map[string]any{"steps": steps, "input_tokens": input, "output_tokens": tokens, "duration_s": dur.Seconds(), "machine": machine(),
		"chunk_decode_ns_before": before, "chunk_decode_ns_after": after}
	if extras {
		ex, err := measureExtras(bin, m, input)
		if err != nil {
			return err
		}
		res["extras"] = ex
	}
	if outDir == "" {
		return nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(outDir, "ladder.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := plotLag(steps, filepath.Join(outDir, "lag-vs-rate.svg")); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(outDir, "ladder.json"), filepath.Join(outDir, "lag-vs-rate.svg"))
	return nil
}

// measureExtras measures the per-token CPU cost, memory with 2,000
// concurrent streams, and start-up.
func measureExtras(bin string, m *mock, input int) (map[string]any, error) {
	ex := map[string]any{}
	const rate, secs = 1000, 10
	n := strconv.Itoa(rate * secs)
	cost := func(tokens int) (time.Duration, error) {
		_, cpu, _, _, err := client(bin, m.Port, "--random-input-len", strconv.Itoa(input), "--random-output-len", strconv.Itoa(tokens),
			"--request-rate", strconv.Itoa(rate), "--num-prompts", n)
		return cpu, err
	}
	c16, err := cost(16)
	if err != nil {
		return nil, err
	}
	c256, err := cost(256)
	if err != nil {
		return nil, err
	}
	perToken := float64(c256-c16) / 1e3 / float64(rate*secs*(256-16))
	ex["client_cpu_us_per_token"] = perToken
	fmt.Printf("\nCPU per streamed token: %.3f µs (1,000 req/s for 10 s, 256 vs 16 tokens per request)\n", perToken)

	// 2,000 concurrent streams: 1,000 req/s of requests that each stream
	// for about 2 s (16 tokens, 125 ms apart).
	slow, err := startMock(bin, "--itl-ms", "125")
	if err != nil {
		return nil, err
	}
	s, _, rss, _, err := client(bin, slow.Port, "--random-input-len", strconv.Itoa(input), "--random-output-len", "16",
		"--request-rate", "1000", "--num-prompts", "20000")
	slow.stop()
	if err != nil {
		return nil, err
	}
	ex["streams_max_in_flight"] = s.MaxInFlight
	ex["streams_max_rss_mb"] = rss
	ex["streams_failed"] = s.Failed
	fmt.Printf("concurrent streams: %d in flight at most, max RSS %.1f MB, %d failed (1,000 req/s × ~2 s streams)\n", s.MaxInFlight, rss, s.Failed)

	// Start-up: a 1 M-arrival schedule built and walked (what the runner
	// does before the first send), then exec to the first request's send.
	t0 := time.Now()
	dry := exec.Command(bin, "--seed", "1", "--quiet", "--random-input-len", "16", "--random-output-len", "1",
		"--request-rate", "1000", "--num-prompts", "1000000", "--dry-run")
	if out, err := dry.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("1 M schedule: %v: %s", err, out)
	}
	ready := float64(time.Since(t0)) / 1e6
	ex["schedule_1m_ready_ms"] = ready
	fmt.Printf("a 1,000,000-arrival schedule built and walked: %.0f ms from exec to exit (--dry-run)\n", ready)
	s, _, _, t0, err = client(bin, m.Port, "--random-input-len", "256", "--random-output-len", "16", "--request-rate", "100", "--num-prompts", "100")
	if err != nil {
		return nil, err
	}
	if at, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
		ms := float64(at.Sub(t0)) / 1e6
		ex["first_request_after_exec_ms"] = ms
		fmt.Printf("first request due %.1f ms after exec, sent %.3f ms later (p50 lag)\n", ms, s.LagP50)
	}
	return ex, nil
}

func machine() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	model := ""
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			model = strings.TrimSpace(l[strings.IndexByte(l, ':')+1:])
			break
		}
	}
	return fmt.Sprintf("%d CPUs (%s)", runtime.NumCPU(), model)
}

// replotFile redraws the lag plot from a saved ladder.json.
func replotFile(path, outDir string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var saved struct {
		Steps []struct {
			Rate   float64 `json:"rate"`
			LagP50 float64 `json:"send_lag_p50_ms"`
			LagP99 float64 `json:"send_lag_p99_ms"`
			LagMax float64 `json:"send_lag_max_ms"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var steps []step
	for _, m := range saved.Steps {
		steps = append(steps, step{Rate: m.Rate, LagP50: m.LagP50, LagP99: m.LagP99, LagMax: m.LagMax})
	}
	if len(steps) == 0 {
		return fmt.Errorf("%s: no steps", path)
	}
	return plotLag(steps, filepath.Join(outDir, "lag-vs-rate.svg"))
}
