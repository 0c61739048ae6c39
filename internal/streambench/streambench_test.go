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
// tokens, one run of each client against the exactly paced mock — and
// checks that both sides are measured: every event counted, no stream
// failed, and TTFT errors that are no earlier than the truth (a client
// cannot see a token before the server wrote it) and well under a second;
// -keep keeps each run's files, with a profile -ours-flags asked for.
// It says nothing of speed: that is the benchmark's, on a quiet machine.
func TestBenchStreamSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fineserve-gen")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "fineserve-gen")
	build := exec.Command("go", "build", "-o", bin, "github.com/fineserve-gen/fineserve-gen/cmd/fineserve-gen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := filepath.Join(dir, "out")
	rows, err := bench(ctx, config{bin: bin, self: self, streams: []int{20}, runs: 1, tokens: 10,
		ttft: 20 * time.Millisecond, itl: 5 * time.Millisecond, timeout: time.Minute,
		oursFlags: []string{"--cpu-profile", "{dir}/cpu.pprof"}, keep: true, out: out})
	if err != nil {
		t.Fatal(err)
	}
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
		if s.Events != 200 || s.Failed != 0 || !(s.TTFTErrMean > -0.5 && s.TTFTErrMean < 1000) || !(s.TTFTErrP99 < 1000) ||
			s.fixed.cpu <= 0 || !(s.RSSMB > 0) || math.IsNaN(s.ITLStdAdded) || math.IsNaN(s.CPUPerEvent) {
			t.Errorf("%s: %+v: want 200 events, none failed, a TTFT error in [0, 1 s), CPU and RSS measured", name, s)
		}
	}
	if !strings.Contains(table.String(), "ours / floor") || !strings.Contains(table.String(), "20 streams: goals met in ") {
		t.Errorf("the table has no header:\n%s", table.String())
	}
}
