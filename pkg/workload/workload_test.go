package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
)

// quiet discards the notes of a build.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Warnf(string, ...any) {}

// baseConfig is a seeded poisson workload with FineServe's defaults.
func baseConfig() Config {
	return Config{
		Spec: Spec{Mode: ModePoisson, RequestRate: 40, Burstiness: 1, NumPrompts: 100, NumPromptsSet: true,
			TimeScale: 1, RandomInputLen: 1024, RandomOutputLen: 128,
			Replay: DefaultReplayOptions(), Parametric: DefaultParametricOptions()},
		Seed: 42, API: api.VLLM, ShardCount: 1,
	}
}

// buildShard builds c as shard i of n, failing the test on an error, and
// returns the workload with the schedule CSV and the sessions plan CSV
// (empty without sessions) that its one pass wrote.
func buildShard(t *testing.T, c Config, i, n int64) (w *Workload, schedule, sessions string) {
	t.Helper()
	c.ShardIndex, c.ShardCount = i, n
	var sched, plan bytes.Buffer
	c.ScheduleOut, c.SessionsOut = &sched, &plan
	w, err := Build(c, quiet{})
	if err != nil {
		t.Fatal(err)
	}
	return w, sched.String(), plan.String()
}

// csvHash is the schedule hash of a whole schedule's CSV: "sha256:" and
// its SHA-256, as `sha256sum` prints it.
func csvHash(csv string) string {
	sum := sha256.Sum256([]byte(csv))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func tracePath(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("../replay/testdata", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s: %v", p, err)
	}
	return p
}

var modes = []struct {
	name string
	set  func(t *testing.T, c *Config)
}{
	{"poisson", func(t *testing.T, c *Config) {
		c.RequestRate, c.NumPrompts, c.Burstiness, c.RandomRangeRatio = 40, 500, 0.5, 0.5
	}},
	{"replay", func(t *testing.T, c *Config) {
		c.Mode = "replay"
		c.Replay.TracePath = tracePath(t, "burstgpt_models.csv")
		c.NumPromptsSet = false
		c.TimeScale = 20
	}},
	{"parametric", func(t *testing.T, c *Config) {
		c.Mode = "parametric"
		c.Parametric.ModelClass = "Dense_lt10B" // NB micro-bursts: shards split bursts
		c.NumPrompts = 2000
	}},
}

// TestOnePassMatchesTheSchedule: the facts measured in the one pass (the
// CSV written, the stats, the first arrival, the hash) are those of the
// schedule the dispatcher walks afterwards, in every mode and shard.
func TestOnePassMatchesTheSchedule(t *testing.T) {
	for _, m := range modes {
		for _, shard := range [][2]int64{{0, 1}, {1, 3}} {
			t.Run(m.name+"/"+strconv.FormatInt(shard[0], 10), func(t *testing.T) {
				c := baseConfig()
				m.set(t, &c)
				w, pass, _ := buildShard(t, c, shard[0], shard[1])
				var walk bytes.Buffer
				n, err := arrival.WriteCSV(&walk, w.Schedule)
				if err != nil {
					t.Fatal(err)
				}
				if pass != walk.String() {
					t.Errorf("the CSV of the pass (%d bytes) is not the schedule's (%d bytes)", len(pass), walk.Len())
				}
				if st := arrival.Summarize(w.Schedule); st != w.Stats || st.Count != n || n < 50 {
					t.Errorf("stats %+v, a walk gives %+v (%d rows)", w.Stats, st, n)
				}
				for a := range w.Schedule {
					if a.Index != w.First.Index || a.At != w.First.At || a.InputTokens != w.First.InputTokens {
						t.Errorf("first %+v, the schedule starts with %+v", w.First, a)
					}
					break
				}
				if shard[1] == 1 {
					if want := csvHash(walk.String()); w.Hash != want || w.Total != n {
						t.Errorf("hash %s over %d, want the CSV's %s over %d", w.Hash, w.Total, want, n)
					}
				}
			})
		}
	}
}

// TestShardsSplitTheScheduleInEveryMode builds the schedule of each mode
// whole and as three shards: every copy computes the same schedule hash —
// the SHA-256 of the unsharded schedule CSV — and the shards' CSV rows,
// put together, are the whole schedule's.
func TestShardsSplitTheScheduleInEveryMode(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			build := func(i, n int64) (rows []string, hash string, total int64) {
				c := baseConfig()
				m.set(t, &c)
				w, csv, _ := buildShard(t, c, i, n)
				lines := strings.Split(strings.TrimSuffix(csv, "\n"), "\n")
				if lines[0] != arrival.ScheduleHeader {
					t.Fatalf("header %q", lines[0])
				}
				return lines[1:], w.Hash, w.Total
			}
			whole, hash, total := build(0, 1)
			if len(whole) < 100 || total != int64(len(whole)) {
				t.Fatalf("%d arrivals, hash over %d", len(whole), total)
			}
			var union []string
			for i := range int64(3) {
				rows, h, n := build(i, 3)
				if h != hash || n != total {
					t.Errorf("shard %d/3: hash %s over %d, want %s over %d", i, h, n, hash, total)
				}
				for _, r := range rows {
					idx, _, _ := strings.Cut(r, ",")
					if k := atoi(t, idx); int64(k%3) != i {
						t.Fatalf("shard %d/3 holds arrival %d", i, k)
					}
				}
				union = append(union, rows...)
			}
			slices.SortStableFunc(union, func(a, b string) int { return atoi(t, strings.Split(a, ",")[0]) - atoi(t, strings.Split(b, ",")[0]) })
			if !slices.Equal(union, whole) {
				t.Errorf("the shards' union (%d rows) is not the schedule (%d rows)", len(union), len(whole))
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestScheduleOutFailureIsAWriteError: a schedule CSV that cannot be
// written is told apart from a problem of the input.
func TestScheduleOutFailureIsAWriteError(t *testing.T) {
	c := baseConfig()
	c.ScheduleOut = failWriter{}
	_, err := Build(c, quiet{})
	var we *WriteError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err %v, want a *WriteError", err)
	}
	c = baseConfig()
	c.RandomInputLen = -1
	if _, err := Build(c, quiet{}); err == nil || errors.As(err, &we) {
		t.Fatalf("bad lengths: err %v, want an input error", err)
	}
}

// TestBreakdownsAndReplayInfo: a replayed trace with model names calls for
// the per-model breakdown and describes itself; poisson calls for none.
func TestBreakdownsAndReplayInfo(t *testing.T) {
	c := baseConfig()
	w, err := Build(c, quiet{})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Breakdowns) != 0 || w.Replay != nil {
		t.Errorf("poisson: breakdowns %v, replay %v", w.Breakdowns, w.Replay)
	}
	c.Mode = "replay"
	c.Replay.TracePath = tracePath(t, "burstgpt_models.csv")
	c.NumPromptsSet = false
	if w, err = Build(c, quiet{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Breakdowns, []string{BreakdownModel}) || w.Replay == nil || w.Replay.Replayed != int(w.Stats.Count) {
		t.Errorf("replay: breakdowns %v, replay %+v, %d arrivals", w.Breakdowns, w.Replay, w.Stats.Count)
	}
}

// TestLine: one request, or all due at once, has no rate.
func TestLine(t *testing.T) {
	for _, tc := range []struct {
		st      arrival.Stats
		answers api.Measure
		want    string
	}{
		{arrival.Stats{Count: 1, Last: 0, Input: 8, Output: 4}, api.MeasureTokens, "schedule: 1 request at 0.000 s, 8 input and 4 output tokens"},
		{arrival.Stats{Count: 5, Last: 0, Input: 40, Output: 20}, api.MeasureTokens, "schedule: 5 requests, all due at the start, 40 input and 20 output tokens"},
		{arrival.Stats{Count: 11, Last: 2 * time.Second, Input: 1, Output: 1}, api.MeasureTokens, "schedule: 11 requests over 2.000 s (mean 5.00 req/s), 1 input and 1 output tokens"},
		// Embeddings and scores have no output tokens to schedule.
		{arrival.Stats{Count: 40, Last: 2 * time.Second, Input: 10240, Output: 5120}, api.MeasureVectors, "schedule: 40 requests over 2.000 s (mean 19.50 req/s), 10240 input tokens (answered with vectors, no output tokens)"},
		{arrival.Stats{Count: 2, Last: time.Second, Input: 64, Output: 32}, api.MeasureScores, "schedule: 2 requests over 1.000 s (mean 1.00 req/s), 64 input tokens (answered with scores, no output tokens)"},
	} {
		if got := (&Workload{Stats: tc.st, Answers: tc.answers}).Line(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
}

// BenchmarkBuild1M builds a 1 M-arrival poisson workload with its schedule
// CSV: the one pass keeps no arrival, so its memory does not grow with the
// schedule (B/op stays near the size of the buffers).
func BenchmarkBuild1M(b *testing.B) {
	c := baseConfig()
	c.NumPrompts, c.RequestRate = 1_000_000, 1000
	c.ScheduleOut = io.Discard
	b.ReportAllocs()
	for b.Loop() {
		w, err := Build(c, quiet{})
		if err != nil || w.Stats.Count != 1_000_000 {
			b.Fatal(err, w.Stats.Count)
		}
	}
}

// TestShardsOverEndpointsHashTheWholeRun: with several endpoints dealt
// round-robin, a sharded copy goes round the endpoints over its own
// arrivals, so its rows' endpoints differ from the whole run's; its
// schedule hash is still the whole run's (the SHA-256 of the unsharded
// dry run's CSV), so every way of splitting a run has one hash.
func TestShardsOverEndpointsHashTheWholeRun(t *testing.T) {
	c := baseConfig()
	modes[0].set(t, &c)
	c.Endpoints = EndpointOptions{Count: 2, Strategy: balance.RoundRobin}
	whole, csv, _ := buildShard(t, c, 0, 1)
	if want := csvHash(csv); whole.Hash != want {
		t.Fatalf("whole run: hash %s, its CSV's %s", whole.Hash, want)
	}
	moved := 0
	wholeRows := strings.Split(csv, "\n")
	for i := range int64(2) {
		w, rows, _ := buildShard(t, c, i, 2)
		if w.Hash != whole.Hash {
			t.Errorf("shard %d/2: hash %s, the whole run's %s", i, w.Hash, whole.Hash)
		}
		for _, r := range strings.Split(strings.TrimSpace(rows), "\n")[1:] {
			idx, _, _ := strings.Cut(r, ",")
			if r != wholeRows[atoi(t, idx)+1] {
				moved++
			}
		}
	}
	if moved == 0 {
		t.Error("no shard row differs from the whole run's: the test does not test the shard-aware round-robin")
	}
}

// A stopped run (a signal) ends the schedule's pass: --num-prompts
// 99999999999 was walked for hours with SIGTERM caught and ignored.
func TestBuildStops(t *testing.T) {
	c := baseConfig()
	c.NumPrompts, c.NumPromptsSet = 1_000_000_000, true
	stop := make(chan struct{})
	close(stop)
	c.Stop = stop
	start := time.Now()
	if _, err := Build(c, quiet{}); !errors.Is(err, ErrStopped) {
		t.Fatalf("error %v, want ErrStopped", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stopped after %v", d)
	}
}

// warnLog keeps the warnings of a build.
type warnLog struct{ warnings []string }

func (*warnLog) Infof(string, ...any) {}
func (l *warnLog) Warnf(format string, a ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, a...))
}

// TestImplausibleTraceUnit: a FineServe CSV whose renamed time column
// holds seconds is read in the format's µs, which puts a hundred rows in
// a few microseconds: the build warns and names --timestamp-unit; the
// same trace in µs, or given its unit, does not.
func TestImplausibleTraceUnit(t *testing.T) {
	write := func(scale float64) string {
		var b strings.Builder
		b.WriteString("ts,model,input_length,output_length\n")
		for i := range 100 {
			fmt.Fprintf(&b, "%g,m,10,5\n", float64(i)*0.13*scale)
		}
		return testenv.WriteFile(t, fmt.Sprintf("t%g.csv", scale), b.String())
	}
	for _, tc := range []struct {
		scale float64
		unit  string
		warn  bool
	}{{1, "", true}, {1e6, "", false}, {1, "s", false}} {
		c := baseConfig()
		c.Mode = "replay"
		c.NumPromptsSet = false
		c.Replay.TracePath = write(tc.scale)
		c.Replay.TimestampColumn = "ts"
		c.Replay.TimestampUnit = tc.unit
		var l warnLog
		if _, err := Build(c, &l); err != nil {
			t.Fatal(err)
		}
		warned := len(l.warnings) == 1 && strings.Contains(l.warnings[0], "reads its times in us; if this trace's are in another unit, give --timestamp-unit")
		if warned != tc.warn || !tc.warn && len(l.warnings) > 0 {
			t.Errorf("times ×%g, unit %q: warnings %q, want a unit warning: %v", tc.scale, tc.unit, l.warnings, tc.warn)
		}
	}
}

// TestTimeScaleInPoissonWarns: --time-scale with --mode poisson, which has
// no trace gaps to scale, is said to be ignored, naming what sets the load
// (it was silently ignored; an error would refuse FineServe's own command
// lines, which pass it); the default scale says nothing, and the schedule
// is the same either way.
func TestTimeScaleInPoissonWarns(t *testing.T) {
	c := baseConfig()
	var plain warnLog
	w1, err := Build(c, &plain)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.warnings) != 0 {
		t.Errorf("the default scale warns: %q", plain.warnings)
	}
	c.TimeScale = 100
	var scaled warnLog
	w2, err := Build(c, &scaled)
	if err != nil {
		t.Fatal(err)
	}
	if len(scaled.warnings) != 1 || !strings.Contains(scaled.warnings[0], "--time-scale 100 is ignored in --mode poisson") ||
		!strings.Contains(scaled.warnings[0], "set the load with --request-rate") {
		t.Errorf("warnings %q, want one saying --time-scale is ignored", scaled.warnings)
	}
	if w1.Stats != w2.Stats {
		t.Errorf("schedules differ: %+v vs %+v", w1.Stats, w2.Stats)
	}
}
