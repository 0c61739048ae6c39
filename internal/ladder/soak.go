package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// rssMB reads a process's resident set size from /proc.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return -1
}

// runSoak sends n requests at rate against a mock and samples the
// client's RSS every second: memory must not grow with the number of
// requests.
func runSoak(bin string, n int64, rate float64, tokens, input int) error {
	m, err := startMock(bin)
	if err != nil {
		return err
	}
	defer m.stop()
	dir, err := os.MkdirTemp("", "soak")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sf := filepath.Join(dir, "s.json")
	cmd := exec.Command(bin, clientArgs(m.Port, sf,
		"--random-input-len", strconv.Itoa(input), "--random-output-len", strconv.Itoa(tokens),
		"--request-rate", strconv.FormatFloat(rate, 'g', -1, 64), "--num-prompts", strconv.FormatInt(n, 10),
		"--results-jsonl", filepath.Join(dir, "r.jsonl"))...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	fmt.Printf("soak: %d requests at %g req/s (%d input / %d output tokens, results streamed to a JSONL file)\n", n, rate, input, tokens)
	fmt.Printf("%8s %10s\n", "elapsed", "RSS MB")
	t0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var samples []float64
	for {
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%v: %s", err, stderr.String())
			}
			b, _ := os.ReadFile(sf)
			var s summary
			json.Unmarshal(b, &s)
			first, last := samples[min(5, len(samples)-1)], samples[len(samples)-1]
			peak := 0.0
			for _, v := range samples {
				peak = max(peak, v)
			}
			fmt.Printf("done: %d completed, %d failed, %.0f req/s; RSS after 5 s %.1f MB, at the end %.1f MB, peak %.1f MB\n",
				s.Completed, s.Failed, s.Throughput, first, last, peak)
			return nil
		case <-tick.C:
			r := rssMB(cmd.Process.Pid)
			samples = append(samples, r)
			if len(samples)%10 == 1 {
				fmt.Printf("%7.0fs %10.1f\n", time.Since(t0).Seconds(), r)
			}
		}
	}
}
