package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestServeGenSchedule: --mode parametric --servegen writes its schedule
// like every mode — the same seed, the same bytes; two shards are the whole
// schedule; the composed clients' rate is theirs (chat 40 req/s in 6
// windows, batch 10 req/s in 3: 6·(24000−1) + 3·(6000−1) arrivals in one
// pass of 3,600 s), idle windows silent with --servegen-skip-idle left out.
func TestServeGenSchedule(t *testing.T) {
	dir := t.TempDir()
	sched := func(name string, extra ...string) ([]string, map[string]int, [][]string) {
		path := filepath.Join(dir, name)
		args := append([]string{"--mode", "parametric", "--servegen", "testdata/servegen", "--seed", "5", "--dry-run", "--schedule-out", path, "--disable-tqdm"}, extra...)
		_, stderr := mustRun(t, args...)
		col, rows := testenv.ReadCSV(t, path)
		return strings.Split(stderr, "\n"), col, rows
	}
	log, col, rows := sched("a.csv")
	if want := 6*(24000-1) + 3*(6000-1); len(rows) != want {
		t.Fatalf("%d arrivals, want %d", len(rows), want)
	}
	last, _ := strconv.ParseFloat(rows[len(rows)-1][col["time_s"]], 64)
	if last < 3599 || last >= 3600 {
		t.Errorf("last arrival at %g s", last)
	}
	if !slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, "2 of 2 clients (all): batch, chat") }) {
		t.Errorf("log:\n%s", strings.Join(log, "\n"))
	}
	// Lengths from the datasets: chat's inputs 8, 12 or 16, batch's 20 or 24.
	for _, r := range rows[:2000] {
		if in := r[col["input_len"]]; !slices.Contains([]string{"8", "12", "16", "20", "24"}, in) {
			t.Fatalf("input length %s", in)
		}
	}
	again := testenv.ReadFile(t, filepath.Join(dir, "a.csv"))
	sched("b.csv")
	if !bytes.Equal(again, testenv.ReadFile(t, filepath.Join(dir, "b.csv"))) {
		t.Error("same seed, different schedule")
	}
	_, _, s0 := sched("s0.csv", "--shard", "0/2")
	_, _, s1 := sched("s1.csv", "--shard", "1/2")
	if len(s0)+len(s1) != len(rows) || s0[0][0] != "0" || s1[0][0] != "1" {
		t.Errorf("shards %d + %d of %d", len(s0), len(s1), len(rows))
	}
	// One client chosen with the seed, at twice the speed, for 60 s.
	log, col, rows = sched("c.csv", "--num-clients", "1", "--time-scale", "2", "--duration", "60s")
	one := slices.ContainsFunc(log, func(l string) bool { return strings.Contains(l, "1 of 2 clients (1 chosen with the seed)") })
	last, _ = strconv.ParseFloat(rows[len(rows)-1][col["time_s"]], 64)
	if !one || last >= 60 || len(rows) < 1000 {
		t.Errorf("one client: %d rows, last %g s\n%s", len(rows), last, strings.Join(log, "\n"))
	}
}

func TestServeGenErrors(t *testing.T) {
	base := []string{"--mode", "parametric", "--dry-run"}
	wantUsage(t, append(base, "--servegen", "testdata/servegen", "--gamma-params-csv", "x.csv"), "--servegen and --gamma-params-csv: choose one")
	wantUsage(t, append(base, "--servegen", "testdata/servegen", "--num-clients", "3"), "--num-clients 3: only 2 clients")
	wantUsage(t, append(base, "--servegen", "testdata"), "no client files")
	wantUsage(t, append(base, "--model-class", "Dense_lt10B", "--num-clients", "2"), "--num-clients and --servegen-skip-idle: for --servegen DIR")
}
