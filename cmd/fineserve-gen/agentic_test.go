package main

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

const agenticSamples = "../../pkg/agentic/testdata/"

// TestAgenticCachedShareMatchesTrace replays every sample trace against
// the built-in server's prefix cache: the share of prompt tokens it
// serves equals the trace's own infinite-cache hit rate (from its hash
// ids in time order) within ±3 points, request by request summed; every
// request is sent with the trace's size, and the summary's agents
// section and table say the same.
func TestAgenticCachedShareMatchesTrace(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond,
		PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 20}})
	cases := []struct {
		file     string
		requests int
		extra    []string
	}{
		{"weka/trace_0012.json", 14, nil},
		{"weka/trace_0022.json", 7, nil},
		{"weka/trace_0026.json", 3, nil},
		{"weka/trace_0277.json", 53, nil},
		{"weka/trace_0291.json", 32, nil},
		{"tracelab/session_workload_example.csv", 11, nil},
		{"tracelab/round_trace.sanitized.jsonl", 19, []string{"--target-rate", "100", "--time-scale", "1"}},
		{"bailian.jsonl", 4, nil},
		// Scaled: four drawn conversations, Poisson starts.
		{"weka/trace_0026.json", 12, []string{"--conversations", "4", "--request-rate", "50"}},
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.file, "/", "_")+strconv.Itoa(len(tc.extra)), func(t *testing.T) {
			args := mockTarget(port, "--mode", "replay", "--trace", agenticSamples+tc.file, "--time-scale", "1000",
				"--max-think-time", "2ms", "--warmup-requests", "0", "--seed", "1", "--max-model-len", "200000")
			args = append(args, tc.extra...)
			r := mustRunTool(t, args...)
			recs := readRecords(t, r.path("results.jsonl"))
			if len(recs) != tc.requests {
				t.Fatalf("%d records, want %d\n%s", len(recs), tc.requests, r.stderr)
			}
			var cached, prompt, exp, in int64
			for _, rec := range recs {
				if rec.ErrorClass != "" || rec.CachedTokens < 0 || rec.PromptTokens < 0 || !rec.Agent.On {
					t.Fatalf("record %+v", rec.Request)
				}
				if rec.PromptTokens != rec.InputLen {
					t.Errorf("turn %d: prompt %d tokens, trace %d", rec.Turn, rec.PromptTokens, rec.InputLen)
				}
				cached += int64(rec.CachedTokens)
				prompt += int64(rec.PromptTokens)
				exp += int64(rec.Agent.Expected)
				in += int64(rec.InputLen)
			}
			got, want := float64(cached)/float64(prompt), float64(exp)/float64(in)
			t.Logf("%s: %d requests, cached %.2f %%, trace %.2f %%", tc.file, len(recs), 100*got, 100*want)
			if math.Abs(got-want) > 0.03 {
				t.Errorf("cached share %.4f, trace's infinite-cache hit rate %.4f", got, want)
			}
			ag := r.summary(t).Agents
			if ag == nil || ag.Requests != int64(tc.requests) || math.Abs(ag.CachedShare-got) > 1e-9 || math.Abs(ag.ExpectedHitShare-want) > 1e-9 {
				t.Errorf("agents section %+v", ag)
			}
			if !strings.Contains(r.stdout, "Agentic conversations") || !strings.Contains(r.stdout, "Trace's infinite-cache hit rate:") {
				t.Errorf("table:\n%s", r.stdout)
			}
		})
	}
}

// writeTrace writes a WEKA conversation for a test.
func writeTrace(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAgenticThinkGaps: at --time-scale 1, each step of a conversation
// is sent its think_time after the previous response's last byte: the
// median miss within 5 ms, and none late by more than 25 ms (5× margin on
// a shared 2-core machine) nor early.
func TestAgenticThinkGaps(t *testing.T) {
	testenv.SkipUnderRace(t)
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 2 * time.Millisecond, ITL: 200 * time.Microsecond})
	thinks := []float64{0, 0.05, 0.12, 0.03, 0.08}
	var b strings.Builder
	b.WriteString(`{"id":"gaps","block_size":64,"requests":[`)
	for i, th := range thinks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"t":` + strconv.Itoa(i) + `,"type":"s","in":200,"out":8,"hash_ids":[1,2,3],"think_time":` + strconv.FormatFloat(th, 'f', -1, 64) + `}`)
	}
	b.WriteString(`]}`)
	r := mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", writeTrace(t, b.String()), "--warmup-requests", "0")...)
	recs := readRecords(t, r.path("results.jsonl"))
	sort.Slice(recs, func(i, j int) bool { return recs[i].Turn < recs[j].Turn })
	if len(recs) != len(thinks) {
		t.Fatalf("%d records", len(recs))
	}
	var misses []float64
	for k := 1; k < len(recs); k++ {
		gap := (recs[k].Sent - recs[k-1].End).Seconds()
		d := gap - thinks[k]
		misses = append(misses, d)
		t.Logf("step %d: sent %.4f s after the previous end, think_time %.3f s", k+1, gap, thinks[k])
		if d < -0.0005 || d > 0.025 {
			t.Errorf("step %d: sent %.4f s after the previous end, think_time %.3f s", k+1, gap, thinks[k])
		}
		if w := recs[k].Agent.Waited; !recs[k].has("tool_wait_ms") || w < 0 || math.Abs(inMS(w)-1e3*gap) > 0.01 {
			t.Errorf("step %d: tool_wait_ms %v, want the gap %.3f ms", k+1, w, 1e3*gap)
		}
	}
	sort.Float64s(misses)
	if m := misses[len(misses)/2]; m > 0.005 {
		t.Errorf("median miss %.4f s, want ≤ 5 ms: %v", m, misses)
	}
}

// TestAgenticSubagentsJoin: two subagents spawned after the parent's
// first response run concurrently with each other while the parent
// waits; the parent's next request is sent only after both ended
// (join), its think time counted from its own previous response.
func TestAgenticSubagentsJoin(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	sub := func(id string) string {
		return `{"t":1,"type":"subagent","agent_id":"` + id + `","requests":[` +
			`{"t":0,"in":100,"out":10,"hash_ids":[50],"think_time":0},` +
			`{"t":1,"in":150,"out":10,"hash_ids":[50,51],"think_time":0.03},` +
			`{"t":2,"in":200,"out":10,"hash_ids":[50,51,52],"think_time":0.03}]}`
	}
	doc := `{"id":"join","block_size":64,"requests":[` +
		`{"t":0,"in":300,"out":10,"hash_ids":[1,2,3,4],"think_time":0},` + sub("a") + `,` + sub("b") + `,` +
		`{"t":9,"in":400,"out":10,"hash_ids":[1,2,3,4,5,6],"think_time":0.01}]}`
	r := mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", writeTrace(t, doc), "--warmup-requests", "0")...)
	recs := readRecords(t, r.path("results.jsonl"))
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	var parent []resultRecord
	subs := map[int][]resultRecord{}
	for _, rec := range recs {
		if rec.Agent.Branch == 0 {
			parent = append(parent, rec)
		} else {
			subs[rec.Agent.Branch] = append(subs[rec.Agent.Branch], rec)
		}
	}
	sort.Slice(parent, func(i, j int) bool { return parent[i].Sent < parent[j].Sent })
	if len(parent) != 2 || len(subs) != 2 {
		t.Fatalf("parent %d, subagents %d", len(parent), len(subs))
	}
	var lastSubEnd time.Duration
	var spans [][2]time.Duration
	for b, rs := range subs {
		if len(rs) != 3 {
			t.Fatalf("subagent %d: %d requests", b, len(rs))
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Sent < rs[j].Sent })
		for _, rec := range rs {
			// In flight during the parent's wait.
			if rec.Sent < parent[0].End || rec.End > parent[1].Sent {
				t.Errorf("subagent %d request [%.4f, %.4f] outside the parent's wait [%.4f, %.4f]", b, rec.Sent.Seconds(), rec.End.Seconds(), parent[0].End.Seconds(), parent[1].Sent.Seconds())
			}
			lastSubEnd = max(lastSubEnd, rec.End)
		}
		spans = append(spans, [2]time.Duration{rs[0].Sent, rs[2].End})
	}
	if spans[0][0] > spans[1][1] || spans[1][0] > spans[0][1] {
		t.Errorf("the two subagents did not run at the same time: %v", spans)
	}
	if parent[1].Sent < lastSubEnd {
		t.Errorf("the parent's next request at %.4f before the subagents ended at %.4f", parent[1].Sent.Seconds(), lastSubEnd.Seconds())
	}
	// The parent's tool wait is its think time (10 ms) and its send's lag,
	// not its wait for the subagents (over 60 ms): theirs is their own.
	if w, lag := inMS(parent[1].Agent.Waited), inMS(parent[1].Sent-parent[1].Scheduled); !parent[1].has("tool_wait_ms") || w < 0 {
		t.Errorf("the parent's step after the join has no tool wait")
	} else if math.Abs(w-(10+lag)) > 1 {
		t.Errorf("the parent's tool wait after the join %.2f ms, want its think time 10 ms + its lag %.2f ms", w, lag)
	}
	sum := r.summary(t)
	ag := sum.Agents
	if ag == nil || ag.Conversations != 1 || ag.Subagents != 2 || ag.Requests != 8 {
		t.Errorf("agents %+v", ag)
	}
	// Offered counts requests, as achieved does: every step, not only the
	// conversation's start.
	var offered, completed int64
	for _, w := range sum.Windows {
		offered, completed = offered+w.Offered, completed+w.Completed
	}
	if offered != 8 || completed != 8 {
		t.Errorf("the windows count %d offered and %d completed, want 8 and 8", offered, completed)
	}

	// A step above the token limit ends its conversation there.
	r = mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", writeTrace(t, doc), "--warmup-requests", "0", "--max-model-len", "320")...)
	if ss := r.summary(t).Sessions; ss == nil || ss.EndedLength != 1 || ss.TurnsSent != 7 || !strings.Contains(r.stderr, "1 request(s) above the token limit 320") {
		t.Errorf("sessions %+v\n%s", ss, r.stderr)
	}
}

// TestAgenticBadInput: unusable entries are counted with line and field,
// or exit 2 under --strict.
func TestAgenticBadInput(t *testing.T) {
	doc := `{"id":"bad","block_size":64,"requests":[{"t":0,"in":100,"out":4,"hash_ids":[1]},{"t":1,"out":4,"hash_ids":[1]},` +
		`{"t":2,"type":"subagent","requests":[]},{"t":3,"in":100,"out":4,"hash_ids":[1,2,3,4]}]}`
	path := writeTrace(t, doc)
	wantUsage(t, []string{"--mode", "replay", "--trace", path, "--strict", "--dry-run"}, "line 1: requests[1].in: missing")
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond})
	r := mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", path, "--warmup-requests", "0")...)
	if !strings.Contains(r.stderr, "skipped 3 unusable") || !strings.Contains(r.stderr, "requests[1].in: missing") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if rp := r.summary(t).Replay; rp == nil || rp.Skipped.Rows != 3 || rp.Replayed != 1 {
		t.Errorf("replay %+v", rp)
	}
}

// TestAgenticTimingModes: with --agent-timing original a step is sent the
// trace's gap after the previous send; with api-scaled, the previous
// api_time × --api-time-scale plus its think time after it — never before
// the previous response ended (median miss within 5 ms, none late by
// more than 25 ms).
func TestAgenticTimingModes(t *testing.T) {
	testenv.SkipUnderRace(t)
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 2 * time.Millisecond, ITL: 200 * time.Microsecond})
	doc := `{"id":"modes","block_size":64,"requests":[` +
		`{"t":0,"in":200,"out":8,"hash_ids":[1,2,3],"api_time":0.05,"think_time":0},` +
		`{"t":0.1,"in":200,"out":8,"hash_ids":[1,2,3],"api_time":0.03,"think_time":0.02},` +
		`{"t":0.25,"in":200,"out":8,"hash_ids":[1,2,3],"api_time":0.01,"think_time":0.04},` +
		`{"t":0.3,"in":200,"out":8,"hash_ids":[1,2,3],"api_time":0.01,"think_time":0.01}]}`
	path := writeTrace(t, doc)
	for _, tc := range []struct {
		timing string
		gaps   []float64 // send to send
	}{
		{"original", []float64{0.1, 0.15, 0.05}},
		{"api-scaled", []float64{2*0.05 + 0.02, 2*0.03 + 0.04, 2*0.01 + 0.01}},
	} {
		t.Run(tc.timing, func(t *testing.T) {
			r := mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", path, "--warmup-requests", "0",
				"--agent-timing", tc.timing, "--api-time-scale", "2")...)
			recs := readRecords(t, r.path("results.jsonl"))
			sort.Slice(recs, func(i, j int) bool { return recs[i].Turn < recs[j].Turn })
			if len(recs) != 4 {
				t.Fatalf("%d records", len(recs))
			}
			var misses []float64
			for k := 1; k < len(recs); k++ {
				gap := (recs[k].Sent - recs[k-1].Sent).Seconds()
				d := gap - tc.gaps[k-1]
				misses = append(misses, d)
				if d < -0.0005 || d > 0.025 || recs[k].Sent < recs[k-1].End {
					t.Errorf("step %d: sent %.4f s after the previous send, want %.3f s", k+1, gap, tc.gaps[k-1])
				}
			}
			sort.Float64s(misses)
			if m := misses[len(misses)/2]; m > 0.005 {
				t.Errorf("median miss %.4f s: %v", m, misses)
			}
		})
	}
}

// TestAgenticPlanOut: --dry-run --sessions-out writes every request of
// every conversation started (subagents' with their branch), the same
// bytes for the same seed.
func TestAgenticPlanOut(t *testing.T) {
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"--mode", "replay", "--trace", agenticSamples + "weka/trace_0277.json", "--conversations", "3", "--request-rate", "1",
			"--seed", "5", "--dry-run", "--sessions-out", filepath.Join(dir, out), "--quiet"}
	}
	mustRun(t, args("a.csv")...)
	mustRun(t, args("b.csv")...)
	a, b := testenv.ReadFile(t, filepath.Join(dir, "a.csv")), testenv.ReadFile(t, filepath.Join(dir, "b.csv"))
	if string(a) != string(b) {
		t.Fatal("two dry runs wrote different plans")
	}
	lines := strings.Split(strings.TrimSpace(string(a)), "\n")
	if lines[0] != "session,turn,branch,at_s,think_s,api_s,input_len,output_len,expected_cached" || len(lines) != 1+3*53 {
		t.Fatalf("plan: %d lines, header %q", len(lines), lines[0])
	}
	branches := map[string]bool{}
	for _, l := range lines[1:] {
		branches[strings.Split(l, ",")[2]] = true
	}
	if len(branches) != 5 {
		t.Errorf("branches %v, want 0 to 4", branches)
	}
}

// TestAgenticInterrupted: a run stopped while a conversation's parent
// waits for its subagents, and the subagents think, sends no further
// step: the conversation ends as interrupted, every finished step keeps
// its record, and the run waits neither for the think times nor for the
// join. The first steps take a few ms; the stop comes at 1 s, the think
// times are 60 s.
func TestAgenticInterrupted(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond})
	doc := `{"id":"stop","block_size":64,"requests":[` +
		`{"t":0,"in":100,"out":4,"hash_ids":[1],"think_time":0},` +
		`{"t":1,"type":"subagent","requests":[{"t":0,"in":100,"out":4,"hash_ids":[9]},{"t":60,"in":100,"out":4,"hash_ids":[9],"think_time":60}]},` +
		`{"t":120,"in":200,"out":4,"hash_ids":[1,2,3],"think_time":60}]}`
	r := runInterruptedSessions(t, 1, 2, mockTarget(port, "--mode", "replay", "--trace", writeTrace(t, doc), "--warmup-requests", "0")...)
	recs := readRecords(t, r.path("results.jsonl"))
	if len(recs) != 2 {
		t.Errorf("%d records, want 2", len(recs))
	}
}
