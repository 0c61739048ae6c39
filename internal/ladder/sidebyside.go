package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// vegetaModule is the vegeta release the side-by-side ladder installs.
const vegetaModule = "github.com/tsenart/vegeta/v12@v12.13.0"

// constantBurstiness makes fineserve-gen's Gamma gaps constant: their
// relative spread is 1/√k, 3·10⁻⁸ of a gap, so even the sum of 10⁵ gaps
// stays far below the 1 µs the schedule CSV shows (checkConstant verifies
// it).
const constantBurstiness = "1e15"

// sideRun is one client's run at one rate, measured from the server's side.
type sideRun struct {
	serverLag
	// Scheduled is the number of requests the client was asked to send.
	Scheduled int64 `json:"scheduled"`
	// Failed counts requests without a 200 response, by the client's count.
	Failed int64 `json:"failed"`
	cost
	// OwnLagP99 is the client's own p99 send lag, where it reports one.
	OwnLagP99 *float64 `json:"own_send_lag_p99_ms,omitempty"`
	// OriginVsStart is the server-side schedule origin minus the start the
	// client reports (fineserve-gen's started_at), in ms.
	OriginVsStart *float64 `json:"origin_minus_started_at_ms,omitempty"`
}

// sideStep is one rate of the side-by-side ladder.
type sideStep struct {
	Rate   float64 `json:"rate"`
	Fine   sideRun `json:"fineserve_gen"`
	Vegeta sideRun `json:"vegeta"`
	// Poisson is fineserve-gen on a Poisson schedule of the same mean rate
	// (with -poisson).
	Poisson *sideRun `json:"fineserve_gen_poisson,omitempty"`
}

// sideConfig is what a side-by-side ladder runs.
type sideConfig struct {
	bin, vegeta    string // binaries
	rates          []float64
	dur            time.Duration
	tokens, input  int
	outDir         string
	installTimeout time.Duration
	poisson        bool // also run fineserve-gen on a Poisson schedule
}

// installVegeta installs vegetaModule into a temporary GOBIN under dir with
// `go install` from the Go module proxy and returns the binary's path.
func installVegeta(dir string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	gobin := filepath.Join(dir, "bin")
	cmd := exec.CommandContext(ctx, "go", "install", vegetaModule)
	cmd.Env = append(os.Environ(), "GOBIN="+gobin)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("no answer within %v", timeout)
	}
	if err != nil {
		return "", fmt.Errorf("installing vegeta (go install %s, which needs the Go module proxy or a module cache holding it): %v\n%s"+
			"give an installed vegeta with -vegeta PATH, or run the client-only ladder (without -side-by-side)", vegetaModule, err, indent(out))
	}
	return filepath.Join(gobin, "vegeta"), nil
}

// indent prefixes every line of b for an error message.
func indent(b []byte) string {
	var s strings.Builder
	for l := range strings.Lines(strings.TrimSpace(string(b))) {
		s.WriteString("    " + l)
	}
	if s.Len() > 0 {
		s.WriteString("\n")
	}
	return s.String()
}

// parseRates parses a comma-separated list of request rates.
func parseRates(list string, whole bool) ([]float64, error) {
	var rates []float64
	for _, f := range strings.Split(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("rate %q: want a number > 0", f)
		}
		if whole && r != math.Trunc(r) {
			return nil, fmt.Errorf("rate %q: vegeta takes whole requests per second", f)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// runSideBySide runs, at each rate, fineserve-gen and then vegeta on the
// same constant-rate schedule against a fresh mock-server process that logs
// when each request arrives, and prints the send lag of both as the server
// saw it.
func runSideBySide(c sideConfig) error {
	dir, err := os.MkdirTemp("", "ladder-vegeta")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if c.vegeta == "" {
		fmt.Printf("installing vegeta: go install %s\n", vegetaModule)
		if c.vegeta, err = installVegeta(dir, c.installTimeout); err != nil {
			return err
		}
	}
	body, err := captureBody(c)
	if err != nil {
		return fmt.Errorf("capturing fineserve-gen's request body: %w", err)
	}
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, body, 0o644); err != nil {
		return err
	}
	for _, r := range c.rates {
		if err := checkConstant(c.bin, r, int64(r*c.dur.Seconds()), dir); err != nil {
			return err
		}
	}
	fmt.Printf("\nside by side with vegeta: a constant-rate schedule, %d input / %d streamed output tokens, %v per rate, %s\n",
		c.input, c.tokens, c.dur, machine())
	fmt.Println("lag = arrival at the server (mock-server --arrival-log) minus the schedule, matched by order; CPU and RSS of each client from rusage")
	var steps []sideStep
	printSideHeader(os.Stdout)
	for _, r := range c.rates {
		st := sideStep{Rate: r}
		if st.Fine, err = runFineserve(c, r, dir, false); err != nil {
			return fmt.Errorf("rate %g: fineserve-gen: %w", r, err)
		}
		if st.Vegeta, err = runVegeta(c, r, dir, bodyFile); err != nil {
			return fmt.Errorf("rate %g: vegeta: %w", r, err)
		}
		if c.poisson {
			p, err := runFineserve(c, r, dir, true)
			if err != nil {
				return fmt.Errorf("rate %g: fineserve-gen, Poisson: %w", r, err)
			}
			st.Poisson = &p
		}
		steps = append(steps, st)
		printSideRow(os.Stdout, st)
	}
	if c.poisson {
		fmt.Println()
		printPoisson(os.Stdout, steps)
	}
	fmt.Println()
	printSideMarkdown(os.Stdout, steps)
	if c.outDir == "" {
		return nil
	}
	if err := os.MkdirAll(c.outDir, 0o755); err != nil {
		return err
	}
	res := map[string]any{"steps": steps, "input_tokens": c.input, "output_tokens": c.tokens, "duration_s": c.dur.Seconds(),
		"machine": machine(), "vegeta": vegetaModule, "chunk_decode_ns": calibrate()}
	b, _ := json.MarshalIndent(res, "", "  ")
	jsonPath, svgPath := filepath.Join(c.outDir, "side-by-side.json"), filepath.Join(c.outDir, "lag-side-by-side.svg")
	if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := plotSideBySide(steps, svgPath); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", jsonPath, svgPath)
	return nil
}

// captureBody runs fineserve-gen for one request against an in-process
// mock and returns the body it sent, which vegeta then sends every time.
func captureBody(c sideConfig) ([]byte, error) {
	got := make(chan []byte, 1)
	_, port, stop, err := mockserver.ServeNew(mockserver.Config{Models: []string{"mock-model"}, OnRequest: func(path string, body []byte) {
		if path == "/v1/completions" {
			select {
			case got <- bytes.Clone(body):
			default:
			}
		}
	}})
	if err != nil {
		return nil, err
	}
	defer stop()
	if _, _, _, _, err := client(c.bin, port, "--random-input-len", strconv.Itoa(c.input),
		"--random-output-len", strconv.Itoa(c.tokens), "--num-prompts", "1"); err != nil {
		return nil, err
	}
	select {
	case b := <-got:
		return b, nil
	default:
		return nil, errors.New("no completion request reached the server")
	}
}

// checkConstant verifies that fineserve-gen's schedule at rate is constant:
// every due time within 2 µs of i/rate (the schedule CSV's precision is
// 1 µs).
func checkConstant(bin string, rate float64, n int64, dir string) error {
	path := filepath.Join(dir, "schedule.csv")
	out, err := exec.Command(bin, "--seed", "1", "--quiet", "--dry-run", "--random-input-len", "1", "--random-output-len", "1",
		"--request-rate", strconv.FormatFloat(rate, 'g', -1, 64), "--burstiness", constantBurstiness,
		"--num-prompts", strconv.FormatInt(n, 10), "--schedule-out", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("constant schedule at %g req/s: %v: %s", rate, err, out)
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	worst, err := maxScheduleDeviation(f, rate)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if worst > 2e-6 {
		return fmt.Errorf("fineserve-gen's schedule at %g req/s with --burstiness %s is %.1f µs from constant: the side-by-side comparison needs a constant rate",
			rate, constantBurstiness, worst*1e6)
	}
	return nil
}

// maxScheduleDeviation reads a schedule CSV and returns the largest
// |time_s − index/rate| in seconds.
func maxScheduleDeviation(r io.Reader, rate float64) (float64, error) {
	due, err := readSchedule(r)
	if err != nil {
		return 0, err
	}
	worst := 0.0
	for i, d := range due {
		worst = max(worst, math.Abs(d.Seconds()-float64(i)/rate))
	}
	return worst, nil
}

// loggingMock starts a mock-server that logs arrivals to logPath.
func loggingMock(bin, logPath string) (*mock, error) {
	return startMock(bin, "--arrival-log", logPath)
}

// finish stops a logging mock and returns its CPU time and arrivals.
func (m *mock) finish(logPath string) (time.Duration, []int64, error) {
	if err := m.Stop(); err != nil {
		return 0, nil, err
	}
	cpu := m.Cmd.ProcessState.UserTime() + m.Cmd.ProcessState.SystemTime()
	a, err := readArrivals(logPath)
	return cpu, a, err
}

// runFineserve runs fineserve-gen at rate on a constant schedule, or on a
// Poisson one (whose due times it writes with --schedule-out).
func runFineserve(c sideConfig, rate float64, dir string, poisson bool) (sideRun, error) {
	name, burstiness := "fineserve-gen", constantBurstiness
	if poisson {
		name, burstiness = "fineserve-gen-poisson", "1"
	}
	logPath := filepath.Join(dir, fmt.Sprintf("%s-%g.csv", name, rate))
	schedPath := filepath.Join(dir, fmt.Sprintf("%s-%g-schedule.csv", name, rate))
	m, err := loggingMock(c.bin, logPath)
	if err != nil {
		return sideRun{}, err
	}
	n := int64(rate * c.dur.Seconds())
	args := []string{"--random-input-len", strconv.Itoa(c.input), "--random-output-len", strconv.Itoa(c.tokens),
		"--request-rate", strconv.FormatFloat(rate, 'g', -1, 64), "--burstiness", burstiness, "--num-prompts", strconv.FormatInt(n, 10)}
	if poisson {
		args = append(args, "--schedule-out", schedPath)
	}
	s, cpu, rss, _, err := client(c.bin, m.Port, args...)
	if err != nil {
		m.stop()
		return sideRun{}, err
	}
	srvCPU, arrivals, err := m.finish(logPath)
	if err != nil {
		return sideRun{}, err
	}
	var lag serverLag
	if poisson {
		f, err := os.Open(schedPath)
		if err != nil {
			return sideRun{}, err
		}
		due, err := readSchedule(f)
		f.Close()
		if err != nil {
			return sideRun{}, fmt.Errorf("%s: %w", schedPath, err)
		}
		lag, err = lagFromSchedule(arrivals, due)
		if err != nil {
			return sideRun{}, err
		}
	} else if lag, err = lagFromArrivals(arrivals, rate); err != nil {
		return sideRun{}, err
	}
	run := measured(lag, n, cpu, srvCPU, rss)
	run.Failed = s.Failed
	own := s.LagP99
	run.OwnLagP99 = &own
	if at, err := time.Parse(time.RFC3339Nano, s.StartedAt); err == nil {
		d := float64(run.Origin-at.UnixNano()) / 1e6
		run.OriginVsStart = &d
	}
	return run, nil
}

// runVegeta runs vegeta attack at rate with bodyFile as every request's body.
func runVegeta(c sideConfig, rate float64, dir, bodyFile string) (sideRun, error) {
	logPath := filepath.Join(dir, fmt.Sprintf("vegeta-%g.csv", rate))
	m, err := loggingMock(c.bin, logPath)
	if err != nil {
		return sideRun{}, err
	}
	targets := filepath.Join(dir, "targets.txt")
	t := fmt.Sprintf("POST http://127.0.0.1:%d/v1/completions\nContent-Type: application/json\n@%s\n", m.Port, bodyFile)
	if err := os.WriteFile(targets, []byte(t), 0o644); err != nil {
		m.stop()
		return sideRun{}, err
	}
	results := filepath.Join(dir, "vegeta.bin")
	// -max-body 0: vegeta reads every response to its end but keeps none
	// of it in its results (its cheapest setting).
	cmd := exec.Command(c.vegeta, "attack", "-rate", fmt.Sprintf("%.0f/1s", rate), "-duration", c.dur.String(),
		"-targets", targets, "-max-body", "0", "-timeout", "30s", "-output", results)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = runBounded(cmd, 3*c.dur+time.Minute)
	if err != nil {
		m.stop()
		return sideRun{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	rss := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	srvCPU, arrivals, err := m.finish(logPath)
	if err != nil {
		return sideRun{}, err
	}
	lag, err := lagFromArrivals(arrivals, rate)
	if err != nil {
		return sideRun{}, err
	}
	run := measured(lag, int64(rate*c.dur.Seconds()), cpu, srvCPU, rss)
	out, err := exec.Command(c.vegeta, "report", "-type", "json", results).Output()
	if err != nil {
		return run, fmt.Errorf("vegeta report: %w", err)
	}
	var rep struct {
		Requests    int64            `json:"requests"`
		StatusCodes map[string]int64 `json:"status_codes"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return run, fmt.Errorf("vegeta report: %w", err)
	}
	run.Failed = rep.Requests - rep.StatusCodes["200"]
	return run, nil
}

// runBounded runs cmd and kills it if it runs longer than limit.
func runBounded(cmd *exec.Cmd, limit time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("still running after %v: killed", limit)
	}
}

// measured fills a run's server-side figures.
func measured(lag serverLag, scheduled int64, cpu, srvCPU time.Duration, rss float64) sideRun {
	n := float64(max(lag.Arrived, 1))
	return sideRun{serverLag: lag, Scheduled: scheduled, cost: cost{CPUPerRequestUS: float64(cpu) / 1e3 / n,
		ServerCPUPerRequestUS: float64(srvCPU) / 1e3 / n, RSSMB: rss}}
}

const sideRowFormat = "%8s │ %9s %8s %8s %8s %8s %7s %6s │ %9s %8s %8s %8s %8s %7s %6s │ %-13s\n"

func printSideHeader(w io.Writer) {
	fmt.Fprintf(w, "%8s │ %-60s │ %-60s │\n", "", "fineserve-gen", "vegeta")
	fmt.Fprintf(w, sideRowFormat, "rate", "achieved", "lag p50", "lag p99", "lag max", "client", "mock", "rss",
		"achieved", "lag p50", "lag p99", "lag max", "client", "mock", "rss", "p99 lag")
	fmt.Fprintf(w, sideRowFormat, "req/s", "req/s", "ms", "ms", "ms", "µs/req", "µs/req", "MB",
		"req/s", "ms", "ms", "ms", "µs/req", "µs/req", "MB", "lower")
}

// printSideRow prints one rate of the side-by-side table.
func printSideRow(w io.Writer, st sideStep) {
	cells := func(r sideRun) []any {
		return []any{fmt.Sprintf("%.0f", r.Achieved), fmt.Sprintf("%.3f", r.P50), fmt.Sprintf("%.3f", r.P99), fmt.Sprintf("%.3f", r.Max),
			fmt.Sprintf("%.1f", r.CPUPerRequestUS), fmt.Sprintf("%.1f", r.ServerCPUPerRequestUS), fmt.Sprintf("%.1f", r.RSSMB)}
	}
	args := append([]any{fmt.Sprintf("%.0f", st.Rate)}, cells(st.Fine)...)
	args = append(args, cells(st.Vegeta)...)
	args = append(args, lower(st))
	fmt.Fprintf(w, sideRowFormat, args...)
	for _, r := range []struct {
		name string
		run  sideRun
	}{{"fineserve-gen", st.Fine}, {"vegeta", st.Vegeta}} {
		if r.run.Failed > 0 || r.run.Arrived < r.run.Scheduled {
			fmt.Fprintf(w, "%8s   %s: %d of %d scheduled requests reached the server, %d failed\n", "", r.name, r.run.Arrived, r.run.Scheduled, r.run.Failed)
		}
	}
}

// lower names the client with the lower p99 server-side lag.
func lower(st sideStep) string {
	switch {
	case st.Fine.P99 < st.Vegeta.P99:
		return "fineserve-gen"
	case st.Vegeta.P99 < st.Fine.P99:
		return "vegeta"
	}
	return "equal"
}

// printPoisson prints fineserve-gen's runs on Poisson schedules.
func printPoisson(w io.Writer, steps []sideStep) {
	fmt.Fprintln(w, "fineserve-gen on a Poisson schedule of the same mean rate (lag against its --schedule-out, matched by order):")
	f := "%8s %9s %8s %8s %8s %8s %7s %6s\n"
	fmt.Fprintf(w, f, "rate", "achieved", "lag p50", "lag p99", "lag max", "client", "mock", "rss")
	fmt.Fprintf(w, f, "req/s", "req/s", "ms", "ms", "ms", "µs/req", "µs/req", "MB")
	for _, st := range steps {
		if p := st.Poisson; p != nil {
			fmt.Fprintf(w, "%8.0f %9.0f %8.3f %8.3f %8.3f %8.1f %7.1f %6.1f\n", st.Rate, p.Achieved, p.P50, p.P99, p.Max,
				p.CPUPerRequestUS, p.ServerCPUPerRequestUS, p.RSSMB)
		}
	}
}

// printSideMarkdown prints the ladder as the Markdown table of
// docs/PERFORMANCE.md.
func printSideMarkdown(w io.Writer, steps []sideStep) {
	fmt.Fprintln(w, "| req/s | fineserve-gen achieved | p50 lag ms | p99 lag ms | max lag ms | CPU µs/req | vegeta achieved | p50 lag ms | p99 lag ms | max lag ms | CPU µs/req |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, st := range steps {
		fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %.0f | %s | %.3f | %.3f | %.3f | %.0f |\n",
			thousands(st.Rate), thousands(st.Fine.Achieved), st.Fine.P50, st.Fine.P99, st.Fine.Max, st.Fine.CPUPerRequestUS,
			thousands(st.Vegeta.Achieved), st.Vegeta.P50, st.Vegeta.P99, st.Vegeta.Max, st.Vegeta.CPUPerRequestUS)
	}
}

// thousands formats a rate rounded to a whole number with thousands
// separators ("12,000").
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
