package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// shardRuns is one seeded schedule run twice against the built-in server:
// once whole, and as three copies (--shard 0/3 … 2/3, the same --start-at,
// run at the same time), whose summaries are merged by the merge command.
type shardRuns struct {
	single, merged *metrics.Summary
	shards         []*metrics.Summary
	shardJSON      [][]byte // the copies' summary files
	// records is built from the three copies' per-request records.
	records                *metrics.Summary
	singleCSV              []byte
	unionRows, singleRows  []string
	mergeOut, mergeErr     string
	codes                  []int
	singleCode, mergeCode  int
	singleErr, shardErrors string
}

const shardRequests = 240

var shardFixture = sync.OnceValues(func() (*shardRuns, error) {
	_, port, stop, err := mockserver.ServeNew(mockserver.Config{Models: []string{"mock-model"}, TTFT: 15 * time.Millisecond, ITL: 3 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "fineserve-gen-shards")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := func(name string) string { return filepath.Join(dir, name) }
	args := []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--model", "mock-model",
		"--request-rate", "100", "--num-prompts", strconv.Itoa(shardRequests), "--random-input-len", "32", "--random-output-len", "12",
		"--random-range-ratio", "0.5", "--seed", "9", "--warmup-requests", "1", "--disable-tqdm", "--quiet",
		"--window-seconds", "0.5", "--goodput", "ttft:40", "--report-interval", "0"}
	files := func(name string) []string {
		return []string{"--summary-json", path(name + ".json"), "--results-jsonl", path(name + ".jsonl"), "--schedule-out", path(name + ".csv")}
	}

	r := &shardRuns{}
	var errb bytes.Buffer
	r.singleCode = dispatch(context.Background(), append(slices.Clone(args), files("single")...), new(bytes.Buffer), &errb)
	r.singleErr = errb.String()

	// The copies start 1.5 s from now, whatever it takes each to get ready.
	startAt := time.Now().Add(1500 * time.Millisecond)
	at := fmt.Sprintf("%d.%09d", startAt.Unix(), startAt.Nanosecond())
	r.codes = make([]int, 3)
	errs := make([]bytes.Buffer, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := append(slices.Clone(args), "--shard", fmt.Sprintf("%d/3", i), "--start-at", at)
			r.codes[i] = dispatch(context.Background(), append(a, files(fmt.Sprintf("s%d", i))...), new(bytes.Buffer), &errs[i])
		}()
	}
	wg.Wait()
	for i := range errs {
		r.shardErrors += errs[i].String()
	}

	var out, merr bytes.Buffer
	r.mergeCode = dispatch(context.Background(), []string{"merge", path("s0.json"), path("s1.json"), path("s2.json"), "-o", path("merged.json")}, &out, &merr)
	r.mergeOut, r.mergeErr = out.String(), merr.String()

	read := func(name string) (*metrics.Summary, []byte, error) {
		b, err := os.ReadFile(path(name))
		if err != nil {
			return nil, nil, err
		}
		var s metrics.Summary
		return &s, b, json.Unmarshal(b, &s)
	}
	if r.single, _, err = read("single.json"); err != nil {
		return r, fmt.Errorf("single run (exit %d): %v\n%s", r.singleCode, err, r.singleErr)
	}
	for i := range 3 {
		s, b, err := read(fmt.Sprintf("s%d.json", i))
		if err != nil {
			return r, fmt.Errorf("shard %d (exit %d): %v\n%s", i, r.codes[i], err, r.shardErrors)
		}
		r.shards, r.shardJSON = append(r.shards, s), append(r.shardJSON, b)
	}
	if r.merged, _, err = read("merged.json"); err != nil {
		return r, fmt.Errorf("merge (exit %d): %v\n%s", r.mergeCode, err, r.mergeErr)
	}

	// The reference: every copy's per-request records in one collector.
	var jsonl []byte
	for i := range 3 {
		b, err := os.ReadFile(path(fmt.Sprintf("s%d.jsonl", i)))
		if err != nil {
			return r, err
		}
		jsonl = append(jsonl, b...)
	}
	d, err := report.FromRecords(bytes.NewReader(jsonl), report.LoadOptions{})
	if err != nil {
		return r, err
	}
	r.records = d.Summary

	rows := func(name string) ([]string, []byte, error) {
		b, err := os.ReadFile(path(name))
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		return lines[1:], b, err
	}
	if r.singleRows, r.singleCSV, err = rows("single.csv"); err != nil {
		return r, err
	}
	for i := range 3 {
		rs, _, err := rows(fmt.Sprintf("s%d.csv", i))
		if err != nil {
			return r, err
		}
		r.unionRows = append(r.unionRows, rs...)
	}
	index := func(row string) int { n, _ := strconv.Atoi(row[:strings.IndexByte(row, ',')]); return n }
	slices.SortStableFunc(r.unionRows, func(a, b string) int { return index(a) - index(b) })
	return r, nil
})

func loadShardRuns(t *testing.T) *shardRuns {
	t.Helper()
	r, err := shardFixture()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestShardedRunMergesLikeOneRun runs a seeded schedule of 240 requests
// whole and as three copies (--shard I/3, one --start-at) and merges the
// copies' summaries with the merge command:
//
//   - the copies' schedules (--schedule-out), put together, are the whole
//     schedule row for row, and every copy reports the whole schedule's
//     hash, which is the SHA-256 of the whole schedule's CSV;
//   - the merged summary counts the same requests and tokens as the whole
//     run, exactly;
//   - its distributions are those of the copies' per-request records put
//     in one histogram: the same number of values, and every percentile
//     within the histogram's precision (3 significant digits: 0.1 %) plus
//     the records' rounding to the microsecond. Comparing with the records
//     of the same requests tests the merge; the whole run's latencies are
//     another measurement (see TestTimingShardedLatenciesMatchOneRun).
func TestShardedRunMergesLikeOneRun(t *testing.T) {
	r := loadShardRuns(t)
	if r.singleCode != exitOK || r.mergeCode != exitOK || slices.Max(r.codes) != exitOK || slices.Min(r.codes) != exitOK {
		t.Fatalf("exit codes: single %d, shards %v, merge %d\n%s\n%s\n%s", r.singleCode, r.codes, r.mergeCode, r.singleErr, r.shardErrors, r.mergeErr)
	}

	// The schedule.
	if !slices.Equal(r.unionRows, r.singleRows) || len(r.singleRows) != shardRequests {
		t.Errorf("the copies' schedules (%d rows) are not the whole schedule (%d rows)", len(r.unionRows), len(r.singleRows))
	}
	sum := sha256.Sum256(r.singleCSV)
	wantHash := "sha256:" + hex.EncodeToString(sum[:])
	for i, s := range append([]*metrics.Summary{r.single, r.merged}, r.shards...) {
		if h := s.ScheduleHash; h != wantHash {
			t.Errorf("summary %d: schedule hash %q, want %q", i, h, wantHash)
		}
	}
	if shard := r.merged.Shard; shard == nil || shard.String() != "{0,1,2}/3" {
		t.Errorf("merged shards %v", shard)
	}
	if strings.Contains(r.mergeErr, "warning") {
		t.Errorf("merge warned:\n%s", r.mergeErr)
	}
	if !strings.Contains(r.mergeOut, "Serving Benchmark Result") || !strings.Contains(r.mergeOut, "Successful requests:                     240") {
		t.Errorf("merge printed:\n%s", r.mergeOut)
	}

	// Counts and tokens.
	m, s := r.merged, r.single
	if m.Completed != shardRequests || m.Completed != s.Completed || m.Failed != 0 || m.Scheduled != s.Scheduled ||
		m.TotalInputTokens != s.TotalInputTokens || m.TotalOutputTokens != s.TotalOutputTokens {
		t.Errorf("merged: %d completed, %d failed, %d scheduled, %d/%d tokens; whole run: %d, %d, %d, %d/%d",
			m.Completed, m.Failed, m.Scheduled, m.TotalInputTokens, m.TotalOutputTokens,
			s.Completed, s.Failed, s.Scheduled, s.TotalInputTokens, s.TotalOutputTokens)
	}
	var sumIn, sumOut, sumCompleted int64
	for _, sh := range r.shards {
		sumIn, sumOut, sumCompleted = sumIn+sh.TotalInputTokens, sumOut+sh.TotalOutputTokens, sumCompleted+sh.Completed
	}
	if sumIn != m.TotalInputTokens || sumOut != m.TotalOutputTokens || sumCompleted != m.Completed {
		t.Errorf("the copies' totals %d/%d/%d are not the merged ones", sumCompleted, sumIn, sumOut)
	}
	// Throughput is over the union's duration: the copies share their
	// start, so it is the longest copy's.
	longest := 0.0
	for _, sh := range r.shards {
		longest = max(longest, sh.Duration)
	}
	if math.Abs(m.Duration-longest) > 1e-6 || math.Abs(m.RequestThroughput-float64(m.Completed)/m.Duration) > 1e-9 {
		t.Errorf("duration %g (longest copy %g), throughput %g", m.Duration, longest, m.RequestThroughput)
	}

	// Distributions against the copies' records.
	if m.MergeState == nil {
		t.Fatal("no merge state")
	}
	st := *m.MergeState
	rec := r.records
	for _, c := range []struct {
		name      string
		got, want metrics.Dist
		count     int64
	}{
		{"ttft", m.TTFT, rec.TTFT, st.Collector.Hists["ttft"].Count},
		{"tpot", m.TPOT, rec.TPOT, st.Collector.Hists["tpot"].Count},
		{"itl", m.ITL, rec.ITL, st.Collector.Hists["itl"].Count},
		{"e2e", m.E2E, rec.E2E, st.Collector.Hists["e2e"].Count},
		{"send_lag", m.SendLag, rec.SendLag, st.Collector.Hists["send_lag"].Count},
		{"ttft_from_scheduled", m.TTFTFromScheduled, rec.TTFTFromScheduled, st.Collector.Hists["ttft_from_scheduled"].Count},
		{"e2e_from_scheduled", m.E2EFromScheduled, rec.E2EFromScheduled, st.Collector.Hists["e2e_from_scheduled"].Count},
	} {
		if c.count != c.want.Count {
			t.Errorf("%s: %d values merged, the records hold %d", c.name, c.count, c.want.Count)
		}
		// Records keep microseconds, rounded; histograms truncate: a value
		// may move by 1 µs, 2 µs for figures of two timestamps.
		within := func(a, b float64) bool { return math.Abs(a-b) <= 1e-3*math.Max(a, b)+0.003 }
		for _, f := range []struct {
			what      string
			got, want float64
		}{
			{"mean", c.got.Mean, c.want.Mean}, {"median", c.got.Median, c.want.Median}, {"p90", c.got.P90, c.want.P90},
			{"p95", c.got.P95, c.want.P95}, {"p99", c.got.P99, c.want.P99}, {"p999", c.got.P999, c.want.P999},
			{"max", c.got.Max, c.want.Max}, {"std", c.got.Std, c.want.Std},
		} {
			if !within(f.got, f.want) {
				t.Errorf("%s %s: merged %.4f ms, records %.4f ms", c.name, f.what, f.got, f.want)
			}
		}
	}

	// Windows: every request ends in one window of one copy.
	ws := m.Windows
	if len(ws) < 3 {
		t.Fatalf("%d windows", len(ws))
	}
	var offered, completed, good int64
	for _, w := range ws {
		offered, completed = offered+w.Offered, completed+w.Completed
		if w.Goodput != nil {
			good += *w.Goodput
		}
	}
	if m.Goodput == nil {
		t.Fatal("no goodput")
	}
	goodAll := m.Goodput.Requests
	if offered != shardRequests || completed != shardRequests || good != goodAll {
		t.Errorf("windows: %d offered, %d completed, %d good; want %d, %d, %d", offered, completed, good, shardRequests, shardRequests, goodAll)
	}
}

// TestTimingShardedLatenciesMatchOneRun compares the merged copies with
// the whole run: two separate measurements of the same schedule against
// the same server, whose latencies differ by measurement noise only.
func TestTimingShardedLatenciesMatchOneRun(t *testing.T) {
	testenv.SkipUnderRace(t)
	r := loadShardRuns(t)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"median TTFT", r.merged.TTFT.Median, r.single.TTFT.Median},
		{"median ITL", r.merged.ITL.Median, r.single.ITL.Median},
		{"median TPOT", r.merged.TPOT.Median, r.single.TPOT.Median},
		{"median E2E", r.merged.E2E.Median, r.single.E2E.Median},
		{"mean E2E", r.merged.E2E.Mean, r.single.E2E.Mean},
	} {
		if math.Abs(c.got-c.want) > 0.15*c.want+2 {
			t.Errorf("%s: merged copies %.2f ms, whole run %.2f ms", c.name, c.got, c.want)
		}
	}
}

// TestMergeCommandInputs: a copy's summary is read from its summary file,
// from a log holding its summary line (kubectl logs of a copy run with
// --output-file /dev/stdout), or through a pattern; any of them merges to
// the same figures. Bad input is an error naming the file.
func TestMergeCommandInputs(t *testing.T) {
	r := loadShardRuns(t)
	dir := t.TempDir()
	for i, b := range r.shardJSON {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("shard-%d.json", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var line bytes.Buffer
	if err := json.Compact(&line, r.shardJSON[1]); err != nil {
		t.Fatal(err)
	}
	log := "schedule: 80 requests\n\n=== Serving Benchmark Result ===\n" + line.String() + "\nRequest goodput (req/s): 1\n"
	logPath := filepath.Join(dir, "pod-1.log")
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	merge := func(args ...string) (int, *metrics.Summary, string) {
		out := filepath.Join(t.TempDir(), "m.json")
		code, _, stderr := runCmd(append(append([]string{"merge"}, args...), "-o", out)...)
		var s metrics.Summary
		if b, err := os.ReadFile(out); err == nil {
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
		}
		return code, &s, stderr
	}
	for _, args := range [][]string{
		{filepath.Join(dir, "shard-*.json")},
		{filepath.Join(dir, "shard-0.json"), logPath, filepath.Join(dir, "shard-2.json")},
	} {
		code, s, errs := merge(args...)
		if code != exitOK || s.Completed != r.merged.Completed || s.TTFT != r.merged.TTFT || s.ITL != r.merged.ITL {
			t.Errorf("merge %v: exit %d, %d completed, TTFT %+v; want %d, %+v\n%s", args, code, s.Completed, s.TTFT, r.merged.Completed, r.merged.TTFT, errs)
		}
	}
	// Missing and repeated shards warn; --strict refuses them.
	if code, _, errs := merge(filepath.Join(dir, "shard-0.json"), filepath.Join(dir, "shard-0.json")); code != exitOK ||
		!strings.Contains(errs, "shard 0/3 is in") || !strings.Contains(errs, "2 of the 3 shards missing") {
		t.Errorf("exit %d:\n%s", code, errs)
	}
	if code, _, errs := merge("--strict", filepath.Join(dir, "shard-0.json")); code != exitUsage || !strings.Contains(errs, "--strict") {
		t.Errorf("--strict: exit %d:\n%s", code, errs)
	}
	// Bad input.
	bad := filepath.Join(dir, "records.jsonl")
	os.WriteFile(bad, []byte(`{"index":0,"scheduled_s":0}`+"\n"), 0o644)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{bad}, "records.jsonl: no merge_state"},
		{[]string{filepath.Join(dir, "nothing-*.json")}, "no file matches"},
		{[]string{filepath.Join(dir, "absent.json")}, "absent.json"},
		{nil, "no summary given"},
	} {
		code, _, errs := merge(c.args...)
		if code != exitUsage || !strings.Contains(errs, c.says) {
			t.Errorf("merge %v: exit %d, stderr does not say %q:\n%s", c.args, code, c.says, errs)
		}
	}
}

// TestScaleOutFlags: --shard needs an explicit seed, and --start-at must
// be a time not more than a second past.
func TestScaleOutFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--shard", "1/3", "--dry-run"}, "--shard 1/3 needs an explicit --seed"},
		{[]string{"--start-at", "tomorrow", "--dry-run"}, `--start-at "tomorrow": want an RFC 3339 time`},
		{[]string{"--start-at", strconv.FormatInt(time.Now().Add(-time.Minute).Unix(), 10), "--port", "1", "--seed", "1"}, "s ago at launch"},
	} {
		wantUsage(t, c.args, c.says)
	}
}
