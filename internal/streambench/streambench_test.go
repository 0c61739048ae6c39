package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain runs the test binary as the floor client when the benchmark
// starts it so (floorEnv), as the streambench binary does.
func TestMain(m *testing.M) {
	if os.Getenv(floorEnv) != "" {
		os.Exit(floorMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestCompare: the errors are the client's figures less the truth's.
func TestCompare(t *testing.T) {
	truth := observed{ttft: []float64{50, 50, 50, 51}, gaps: []float64{10, 10, 10, 10}, events: 8}
	seen := observed{ttft: []float64{51, 51, 52, 60}, gaps: []float64{9, 11, 9, 11}}
	s := compare(seen, truth)
	if math.Abs(s.TTFTErrMean-3.25) > 1e-9 || s.TTFTErrP99 != 9 || math.Abs(s.ITLStdAdded-std([]float64{9, 11, 9, 11})) > 1e-9 || s.Events != 8 || s.Failed != 0 {
		t.Errorf("compare: %+v; want mean error 3.25, p99 error 9, the seen gaps' std added, 8 events", s)
	}
	if s := compare(observed{ttft: []float64{51}}, truth); s.Failed != 3 {
		t.Errorf("a client that saw 1 of 4 streams: %d failed, want 3", s.Failed)
	}
	// Matched by id, the error is each request's: errors 1, 1, 1 and 3,
	// p99 3, where the distributions' p99s differ by 2 (53 less 51).
	truth.byID = map[string]float64{"a": 50, "b": 50, "c": 50, "d": 51}
	seen = observed{ttft: []float64{52, 51, 51, 53}, ids: []string{"d", "a", "b", "c"}}
	s = compare(seen, truth)
	if !s.Matched || math.Abs(s.TTFTErrMean-1.5) > 1e-9 || s.TTFTErrP99 != 3 {
		t.Errorf("matched: %+v; want mean error 1.5 and p99 3", s)
	}
	seen.ids[0] = "z"
	if s := compare(seen, truth); s.Matched {
		t.Error("a request not in the truth: matched anyway")
	}
}

// TestParseRecords: fineserve-gen's records give their TTFTs and gaps; a
// failed request is counted, not measured.
func TestParseRecords(t *testing.T) {
	o, err := parseRecords(strings.NewReader(`{"index":0,"ttft_ms":50.5,"itl_ms":[10,10.5]}
{"index":1,"ttft_ms":null,"itl_ms":[],"error_class":"connect"}
`))
	if err != nil || len(o.ttft) != 1 || o.ttft[0] != 50.5 || len(o.gaps) != 2 || o.failed != 1 {
		t.Errorf("%+v, %v", o, err)
	}
}

// TestBenchStreamSmoke runs the whole benchmark tiny — 20 streams, 10
// tokens, two rounds (requests one after another on each stream), one run
// of each client against the exactly paced mock — and checks that both
// sides are measured: every event of every round counted, no stream
// failed, and TTFT errors that are no earlier than the truth (a client
// cannot see a token before the server wrote it) and well under a second;
// -keep keeps each run's files, with a profile -ours-flags asked for.
// It says nothing of speed: that is the benchmark's, on a quiet machine.
func TestBenchStreamSmoke(t *testing.T) {
	rows, out := benchRun(t, config{streams: []int{20}, runs: 1, tokens: 10, rounds: 2,
		ttft: 20 * time.Millisecond, itl: 5 * time.Millisecond, oursFlags: []string{"--cpu-profile", "{dir}/cpu.pprof"}})
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	for _, f := range []string{"20-1-fineserve-gen/cpu.pprof", "20-1-fineserve-gen/chunks.jsonl", "20-1-fineserve-gen/client.out", "20-1-floor/chunks.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, "runs", f)); err != nil {
			t.Errorf("-keep with -ours-flags: %v", err)
		}
	}
	var table strings.Builder
	printRows(&table, rows)
	t.Logf("\n%s", table.String())
	for name, s := range map[string]side{"fineserve-gen": rows[0].Ours, "floor": rows[0].Floor} {
		if s.Events != 400 || s.Failed != 0 || !s.Matched || !(s.TTFTErrMean > -0.5 && s.TTFTErrMean < 1000) || !(s.TTFTErrP99 < 1000) ||
			s.fixed.cpu <= 0 || !(s.RSSMB > 0) || math.IsNaN(s.ITLStdAdded) || math.IsNaN(s.CPUPerEvent) {
			t.Errorf("%s: %+v: want 400 events, none failed, every request matched by its id, a TTFT error in [0, 1 s), CPU and RSS measured", name, s)
		}
	}
	if !strings.Contains(table.String(), "ours / floor") || !strings.Contains(table.String(), "20 streams: latency and memory goals met in ") {
		t.Errorf("the table has no header:\n%s", table.String())
	}
}

// benchRun builds fineserve-gen into a temporary directory and runs the
// benchmark c asks, against it and this test binary (the floor client),
// within a minute and with -keep: it returns the rows and the output
// directory.
func benchRun(t *testing.T, c config) ([]row, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds fineserve-gen and runs the mock")
	}
	dir := t.TempDir()
	c.bin = filepath.Join(dir, "fineserve-gen")
	build := exec.Command("go", "build", "-o", c.bin, "github.com/fineserve-gen/fineserve-gen/cmd/fineserve-gen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c.self, c.timeout, c.keep, c.out = self, time.Minute, true, filepath.Join(dir, "out")
	rows, err := bench(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	return rows, c.out
}

// TestFloorVsFloor: -floor-vs-floor puts a second floor run in
// fineserve-gen's place (its own run directory, the floor's figures).
func TestFloorVsFloor(t *testing.T) {
	rows, out := benchRun(t, config{streams: []int{10}, runs: 1, tokens: 5,
		ttft: 10 * time.Millisecond, itl: 2 * time.Millisecond, floorVsFloor: true})
	if len(rows) != 1 || rows[0].Ours.Events != 50 || rows[0].Floor.Events != 50 {
		t.Fatalf("rows %+v, want one with 50 events a side", rows)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "10-1-floor-b", "client.out")); err != nil {
		t.Errorf("the second floor's run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, "runs", "10-1-fineserve-gen")); err == nil {
		t.Error("fineserve-gen ran under -floor-vs-floor")
	}
	// The floor's output is the floor's: its records are not fineserve-gen's JSON Lines.
	if b, err := os.ReadFile(filepath.Join(out, "runs", "10-1-floor-b", "client.out")); err != nil || strings.Contains(string(b), "\"ttft_ms\"") {
		t.Errorf("the second side's output is not the floor's (%v)", err)
	}
}

// TestPoolAndGoals: a stream count's CPU per event is its runs' net CPU
// over their net events together, not the mean of the runs' ratios; the
// latency goals are each run's.
func TestPoolAndGoals(t *testing.T) {
	run := func(n int, oursCPU float64, oursEv int64, floorCPU float64, floorEv int64, ttft float64) row {
		return row{Streams: n,
			Ours:  side{NetCPUUS: oursCPU, NetEvents: oursEv, TTFTErrMean: ttft, TTFTErrP99: ttft, RSSMB: 100},
			Floor: side{NetCPUUS: floorCPU, NetEvents: floorEv, TTFTErrMean: 10, TTFTErrP99: 10}}
	}
	rows := []row{
		run(100, 1000, 100, 1000, 100, 12), // 10 / 10 µs, TTFT 1.2×: met
		run(100, 3000, 100, 1000, 100, 13), // 30 / 10, TTFT 1.3×: missed
		run(500, 8000, 1000, 8000, 1000, 5),
	}
	p := pool(rows)
	if len(p) != 2 || p[0].streams != 100 || p[0].runs != 2 || p[0].met != 1 || p[1].met != 1 {
		t.Fatalf("pooled %+v", p)
	}
	if p[0].ours != 20 || p[0].floor != 10 || p[1].ours != 8 {
		t.Fatalf("pooled CPU %+v: want 20 and 10 µs per event at 100 streams (4000/200, 2000/200)", p)
	}
	if got := missedGoals(rows[1]); len(got) != 2 || got[0] != "TTFT mean" {
		t.Errorf("missed %v", got)
	}
	// Tens of microseconds: within the slack whatever the ratio, and not
	// beyond it.
	tiny := run(100, 1, 1, 1, 1, 0)
	tiny.Floor.TTFTErrMean, tiny.Floor.TTFTErrP99 = 0.01, 0.01
	tiny.Ours.TTFTErrMean, tiny.Ours.TTFTErrP99 = 0.05, 0.07
	if got := missedGoals(tiny); len(got) != 1 || got[0] != "TTFT p99" {
		t.Errorf("TTFT error 0.05 / 0.07 ms against the floor's 0.01: missed %v, want the p99 only (0.06 ms over)", got)
	}
	big := run(10000, 1, 1, 1, 1, 14)
	big.Ours.RSSMB = 251
	if got := missedGoals(big); len(got) != 1 || got[0] != "RSS" {
		t.Errorf("10,000 streams at 1.4× the floor's TTFT error and 251 MB: missed %v, want RSS only", got)
	}
	var b strings.Builder
	printRows(&b, rows)
	if !strings.Contains(b.String(), "100 streams: latency and memory goals met in 1 of 2 runs; CPU per event over the 2 runs 20.00 / 10.00 µs = 2.00× the floor's (goal ≤ 1.1×: not met)") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestReadTruthLateness: each token write's lateness is against the exact
// schedule (TTFT + k·ITL from the arrival); the TTFT counts from the
// kernel's receipt when every record has it.
func TestReadTruthLateness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chunks.jsonl")
	log := `{"id":1,"arrival_unix_ns":1000,"received_ns":-500000,"first_write_ns":51000000,"last_write_ns":73000000,"writes":3,"gaps_ns":[10000000,12000000]}` + "\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := readTruth(path, 50*time.Millisecond, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1, 1, 3}
	if len(o.late) != 3 || o.late[0] != want[0] || o.late[1] != want[1] || o.late[2] != want[2] {
		t.Errorf("late %v, want %v (writes at 51, 61, 73 ms against 50, 60, 70)", o.late, want)
	}
	if len(o.ttft) != 1 || o.ttft[0] != 51.5 || o.events != 3 {
		t.Errorf("ttft %v, events %d: want 51.5 ms from the receipt, 3 events", o.ttft, o.events)
	}
	s := compare(observed{ttft: []float64{52}}, o)
	if math.Abs(s.ServerLateMean-5.0/3) > 1e-9 || s.ServerLateP99 != 3 {
		t.Errorf("server late mean %v, p99 %v: want 5/3 and 3", s.ServerLateMean, s.ServerLateP99)
	}
}
