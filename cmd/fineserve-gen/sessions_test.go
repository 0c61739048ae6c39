package main

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// readSessionRecords reads a run's records by session, each session's in
// turn order; every record must carry the session fields.
func readSessionRecords(t *testing.T, path string) map[int64][]resultRecord {
	t.Helper()
	out := map[int64][]resultRecord{}
	for i, r := range readRecords(t, path) {
		if !r.has("session") || !r.has("history_tokens") || r.Turn < 1 {
			t.Fatalf("%s: line %d: record without session fields: %+v", path, i+1, r)
		}
		out[r.Session] = append(out[r.Session], r)
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b resultRecord) int { return a.Turn - b.Turn })
	}
	return out
}

// readPlan reads --sessions-out: think time and sizes by session and turn.
func readPlan(t *testing.T, path string) map[int64][][3]float64 {
	t.Helper()
	col, rows := testenv.ReadCSV(t, path)
	header := []string{"session", "turn", "think_s", "input_len", "output_len"}
	for i, h := range header {
		if c, ok := col[h]; !ok || c != i || len(col) != len(header) {
			t.Fatalf("sessions header %v, want %v", col, header)
		}
	}
	out := map[int64][][3]float64{}
	for _, r := range rows {
		s, _ := strconv.ParseInt(r[0], 10, 64)
		th, _ := strconv.ParseFloat(r[2], 64)
		in, _ := strconv.ParseFloat(r[3], 64)
		o, _ := strconv.ParseFloat(r[4], 64)
		out[s] = append(out[s], [3]float64{th, in, o})
	}
	return out
}

// TestSessionsAgainstPrefixCache runs 5-turn sessions, chat and
// completions, against the built-in server with its prefix cache, and
// checks what the issue asks:
//   - the history's token count grows by exactly the previous turn's
//     prompt and output, and the server counts the new prompt as that
//     history plus the new message (so the received text was sent back);
//   - turns ≥ 2 find the whole previous history cached, within one cache
//     block (16 tokens);
//   - a later turn is due exactly at the previous turn's end plus its
//     planned think time, and is not sent before it;
//   - the summary's sessions and per_turn sections count what happened,
//     and the table prints the per-turn lines.
func TestSessionsAgainstPrefixCache(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 2 * time.Millisecond, ITL: 200 * time.Microsecond,
		PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 16}})
	for _, backend := range []string{"vllm", "openai-chat"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			plan := filepath.Join(dir, "sessions.csv")
			args := mockTarget(port, "--backend", backend,
				"--num-prompts", "6", "--request-rate", "50", "--random-input-len", "100", "--random-output-len", "20",
				"--seed", "3", "--warmup-requests", "0", "--turns", "5", "--think-time", "uniform:10ms:40ms",
				"--turn-input-len", "uniform:20:60", "--sessions-out", plan)
			r := mustRunTool(t, args...)
			recs := readSessionRecords(t, r.path("results.jsonl"))
			planned := readPlan(t, plan)
			if len(recs) != 6 || len(planned) != 6 {
				t.Fatalf("%d sessions recorded, %d planned; want 6", len(recs), len(planned))
			}
			for s, turns := range recs {
				if len(turns) != 5 || len(planned[s]) != 5 {
					t.Fatalf("session %d: %d turns recorded, %d planned", s, len(turns), len(planned[s]))
				}
				for k, tr := range turns {
					p := planned[s][k]
					if tr.ErrorClass != "" || tr.PromptTokens < 0 || tr.CachedTokens < 0 {
						t.Fatalf("session %d turn %d: %+v", s, k+1, tr)
					}
					if tr.Index != s || tr.Turn != k+1 {
						t.Errorf("session %d: record %d is index %d turn %d", s, k, tr.Index, tr.Turn)
					}
					if tr.PromptTokens != tr.HistoryTokens+int(p[1]) || tr.InputLen != tr.PromptTokens {
						t.Errorf("session %d turn %d: server counted %d prompt tokens, want history %d + message %g (input_len %d)",
							s, k+1, tr.PromptTokens, tr.HistoryTokens, p[1], tr.InputLen)
					}
					if k == 0 {
						if tr.HistoryTokens != 0 {
							t.Errorf("session %d: first turn carries history %d", s, tr.HistoryTokens)
						}
						continue
					}
					prev := turns[k-1]
					if want := prev.PromptTokens + prev.CompletionTokens; tr.HistoryTokens != want {
						t.Errorf("session %d turn %d: history %d, want the previous prompt %d + output %d",
							s, k+1, tr.HistoryTokens, prev.PromptTokens, prev.CompletionTokens)
					}
					if h := tr.HistoryTokens; tr.CachedTokens < h-16 || tr.CachedTokens > h {
						t.Errorf("session %d turn %d: %d tokens cached, want the history %d within one block", s, k+1, tr.CachedTokens, h)
					}
					due := prev.End.Seconds() + p[0]
					if math.Abs(tr.Scheduled.Seconds()-due) > 2e-6 {
						t.Errorf("session %d turn %d: due at %.6f s, want previous end + think %.6f s", s, k+1, tr.Scheduled.Seconds(), due)
					}
					if tr.Sent < tr.Scheduled {
						t.Errorf("session %d turn %d: sent at %.6f s before its due time %.6f s", s, k+1, tr.Sent.Seconds(), tr.Scheduled.Seconds())
					}
				}
			}
			sum := r.summary(t)
			ss := sum.Sessions
			if ss == nil || ss.Started != 6 || ss.Completed != 6 || ss.TurnsSent != 30 || ss.PlannedTurns != 30 || ss.Turns != "5" {
				t.Fatalf("sessions section %+v", ss)
			}
			// The observed think time is the planned one (10–40 ms) plus
			// the turn's send lag, which a busy machine makes as long as it
			// likes: compared with the run's own lags, not the wall clock.
			if ss.ThinkMS.P50 < 10 || ss.ThinkMS.Max > 40+ss.TurnLagMS.Max+1 {
				t.Errorf("observed think times %+v, planned 10–40 ms plus the turns' lag (max %.3f ms)", ss.ThinkMS, ss.TurnLagMS.Max)
			}
			if len(sum.PerTurn) != 5 {
				t.Fatalf("per_turn %+v", sum.PerTurn)
			}
			for i, pt := range sum.PerTurn {
				if pt.Turn != i+1 || pt.Count != 6 || pt.CacheHitShare == nil {
					t.Errorf("per_turn[%d] = %+v", i, pt)
				}
				if i > 0 && (pt.PromptTokensMean <= sum.PerTurn[i-1].PromptTokensMean || *pt.CacheHitShare < 0.5) {
					t.Errorf("turn %d: prompt %.1f (previous %.1f), cache share %.2f", i+1, pt.PromptTokensMean,
						sum.PerTurn[i-1].PromptTokensMean, *pt.CacheHitShare)
				}
			}
			if *sum.PerTurn[0].CacheHitShare > 0.2 {
				t.Errorf("first turns 'cached' %.2f of their prompts", *sum.PerTurn[0].CacheHitShare)
			}
		})
	}
}

// TestSessionStartsAreTheSchedule: with sessions, the schedule (the
// session starts) is byte for byte the schedule of the same options
// without them, in each mode, and first turns are recorded at those times.
func TestSessionStartsAreTheSchedule(t *testing.T) {
	modes := map[string][]string{
		"poisson":    {"--request-rate", "5", "--num-prompts", "30"},
		"replay":     {"--mode", "replay", "--request-trace-csv", "testdata/fineserve_Dense_30to100B_head200.csv", "--num-prompts", "30", "--time-scale", "20"},
		"parametric": {"--mode", "parametric", "--model-class", "Dense_lt10B", "--num-prompts", "30", "--time-scale", "50"},
	}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sched := func(extra ...string) []byte {
				out := filepath.Join(dir, "s.csv")
				args := append([]string{"--dry-run", "--seed", "9", "--schedule-out", out}, mode...)
				mustRun(t, append(args, extra...)...)
				return testenv.ReadFile(t, out)
			}
			plain := sched()
			with := sched("--turns", "uniform:2:4", "--think-time", "exp:1s", "--sessions-out", filepath.Join(dir, "p.csv"))
			if !bytes.Equal(plain, with) {
				t.Errorf("session starts differ from the schedule without sessions")
			}
			plan := readPlan(t, filepath.Join(dir, "p.csv"))
			if len(plan) != 30 {
				t.Errorf("%d sessions planned, want 30", len(plan))
			}
		})
	}
}

// TestSessionsEnd: a session whose next turn would overflow the server's
// context ends there, counted as ended by length; a failed turn ends its
// session unless --continue-on-error, which sends every planned turn.
func TestSessionsEnd(t *testing.T) {
	base := func(port int, extra ...string) []string {
		return append(append(baseArgs(port, 4), "--random-input-len", "100", "--random-output-len", "20",
			"--turns", "5", "--turn-input-len", "40"), extra...)
	}
	t.Run("length", func(t *testing.T) {
		// Turns need 120, 180, 240, 300 and 360 tokens: the fifth is above 300.
		_, port := mocktest.Start(t, mockserver.Config{MaxModelLen: 300})
		r := mustRunTool(t, base(port)...)
		ss := r.summary(t).Sessions
		if ss == nil || ss.Started != 4 || ss.EndedLength != 4 || ss.Completed != 0 || ss.TurnsSent != 16 {
			t.Errorf("sessions %+v, want 4 ended by length after 4 turns each", ss)
		}
	})
	t.Run("error", func(t *testing.T) {
		faults := mockserver.FaultConfig{Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP500, Rate: 0.3}}, Seed: 5}
		_, port := mocktest.Start(t, mockserver.Config{Faults: faults})
		r := runTool(t, base(port, "--max-error-rate", "1")...)
		ss := r.summary(t).Sessions
		if r.code != exitOK || ss == nil || ss.EndedError == 0 || ss.Started != 4 || ss.Completed+ss.EndedError != 4 {
			t.Fatalf("exit %d, sessions %+v\n%s", r.code, ss, r.stderr)
		}
		recs := readSessionRecords(t, r.path("results.jsonl"))
		for s, turns := range recs {
			for k, tr := range turns {
				if tr.ErrorClass != "" && k != len(turns)-1 {
					t.Errorf("session %d went on after its failed turn %d", s, k+1)
				}
			}
		}
		_, port = mocktest.Start(t, mockserver.Config{Faults: faults})
		r = runTool(t, base(port, "--max-error-rate", "1", "--continue-on-error")...)
		ss = r.summary(t).Sessions
		if ss == nil || ss.TurnsSent != 20 || ss.Started != 4 || ss.EndedError != 0 {
			t.Errorf("--continue-on-error: sessions %+v, want every turn sent", ss)
		}
	})
}

// TestSessionsInEveryMode runs 3-turn sessions end to end in each mode
// (and with ShareGPT text, chat and completions): every session starts at
// its scheduled time, sends its turns, and every turn's prompt is exactly
// its history plus its new message as the server counts it.
func TestSessionsInEveryMode(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond, PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 14}})
	cases := map[string][]string{
		"poisson-chat":  {"--backend", "openai-chat", "--request-rate", "100", "--num-prompts", "8", "--random-input-len", "30", "--random-output-len", "6"},
		"replay":        {"--mode", "replay", "--request-trace-csv", "testdata/fineserve_Dense_30to100B_head200.csv", "--num-prompts", "8", "--time-scale", "200", "--max-model-len", "100000"},
		"parametric":    {"--mode", "parametric", "--model-class", "Dense_lt10B", "--num-prompts", "8", "--time-scale", "200"},
		"sharegpt-chat": {"--backend", "openai-chat", "--dataset-path", "testdata/sharegpt.json", "--request-rate", "100", "--num-prompts", "8"},
		"sharegpt_pre":  {"--dataset-name", "sharegpt_pre", "--dataset-path", "testdata/sharegpt_pre.json", "--request-rate", "100", "--num-prompts", "8"},
	}
	for name, mode := range cases {
		t.Run(name, func(t *testing.T) {
			args := append(mockTarget(port, "--seed", "4",
				"--warmup-requests", "0", "--quiet", "--turns", "3", "--think-time", "2ms", "--turn-input-len", "uniform:5:15",
				"--random-output-len", "8"), mode...)
			r := mustRunTool(t, args...)
			sum := r.summary(t)
			if ss := sum.Sessions; ss == nil || ss.Started != 8 || ss.Completed+ss.EndedLength != 8 || ss.TurnsSent < 16 {
				t.Fatalf("sessions %+v", ss)
			}
			for s, turns := range readSessionRecords(t, r.path("results.jsonl")) {
				for k, tr := range turns {
					if tr.ErrorClass != "" || tr.PromptTokens < 0 || tr.PromptTokens != tr.InputLen {
						t.Errorf("session %d turn %d: %+v (prompt %v)", s, k+1, tr, tr.PromptTokens)
					}
					if k > 0 && tr.HistoryTokens != turns[k-1].PromptTokens+turns[k-1].CompletionTokens {
						t.Errorf("session %d turn %d: history %d after a turn of %d + %d", s, k+1, tr.HistoryTokens,
							turns[k-1].PromptTokens, turns[k-1].CompletionTokens)
					}
				}
			}
		})
	}
}

// TestSessionsMultiTurnShareGPT: with --multi-turn, sessions are the
// dataset's conversations: as many turns as the conversation has
// exchanges (a last question without a reply is left out), each later
// turn sends the conversation's next user message, word for word, after
// the history, and asks for its reply's length.
func TestSessionsMultiTurnShareGPT(t *testing.T) {
	const path = "testdata/sharegpt_multiturn.json"
	convs := testenv.ReadJSON[[]struct {
		Conversations []struct{ From, Value string } `json:"conversations"`
	}](t, path)
	var mu sync.Mutex
	var bodies []string
	_, port := mocktest.Start(t, mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 12},
		OnRequest: func(_ string, body []byte) { mu.Lock(); bodies = append(bodies, string(body)); mu.Unlock() }})
	for _, backend := range []string{"vllm", "openai-chat"} {
		t.Run(backend, func(t *testing.T) {
			mu.Lock()
			bodies = nil
			mu.Unlock()
			r := mustRunTool(t, mockTarget(port, "--backend", backend, "--dataset-path", path, "--multi-turn", "--num-prompts", "8", "--request-rate", "100",
				"--seed", "2", "--warmup-requests", "0", "--quiet", "--think-time", "1ms")...)
			recs := readSessionRecords(t, r.path("results.jsonl"))
			if len(recs) != len(convs) {
				t.Fatalf("%d sessions, want %d", len(recs), len(convs))
			}
			mu.Lock()
			all := strings.Join(bodies, "\n")
			mu.Unlock()
			for s, turns := range recs {
				conv := convs[s%int64(len(convs))].Conversations
				if want := len(conv) / 2; len(turns) != want {
					t.Errorf("session %d: %d turns, the conversation has %d exchanges", s, len(turns), want)
					continue
				}
				for k, tr := range turns {
					if tr.ErrorClass != "" || tr.PromptTokens < 0 || tr.PromptTokens != tr.InputLen {
						t.Fatalf("session %d turn %d: %+v", s, k+1, tr)
					}
					msg := len(strings.Fields(conv[2*k].Value))
					if k > 0 && tr.InputLen-tr.HistoryTokens != msg {
						t.Errorf("session %d turn %d: new message of %d tokens, the conversation's has %d words", s, k+1, tr.InputLen-tr.HistoryTokens, msg)
					}
					if reply := len(strings.Fields(conv[2*k+1].Value)); tr.CompletionTokens != reply {
						t.Errorf("session %d turn %d: %d completion tokens, the reply has %d words", s, k+1, tr.CompletionTokens, reply)
					}
					if k > 0 && !strings.Contains(all, conv[2*k].Value) {
						t.Errorf("session %d turn %d: no request carried the conversation's message %q", s, k+1, conv[2*k].Value)
					}
				}
			}
			if ss := r.summary(t).Sessions; ss == nil || ss.Completed != int64(len(convs)) {
				t.Errorf("sessions %+v", ss)
			}
		})
	}
}

// runInterruptedSessions runs args until the interrupt (runInterrupted)
// and checks the summary: started sessions (or conversations), every one
// ended by the interrupt, after sent turns in all.
func runInterruptedSessions(t *testing.T, started, sent int64, args ...string) *toolRun {
	t.Helper()
	r := runInterrupted(t, args...)
	if ss := r.summary(t).Sessions; ss == nil || ss.Started != started || ss.EndedInterrupt != started || ss.TurnsSent != sent {
		t.Errorf("sessions %+v, want %d interrupted after %d turns in all", ss, started, sent)
	}
	return r
}

// TestSessionsInterrupted: a run stopped while its sessions think sends
// no further turn: every session ends as interrupted, every finished
// turn keeps its record, and the run does not wait for the think time.
// The first turns take a few ms; the stop comes at 1 s, the think time is
// 60 s.
func TestSessionsInterrupted(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond})
	r := runInterruptedSessions(t, 4, 4, append(baseArgs(port, 4), "--turns", "3", "--think-time", "60s")...)
	recs := readSessionRecords(t, r.path("results.jsonl"))
	if len(recs) != 4 {
		t.Errorf("%d sessions recorded, want 4", len(recs))
	}
	for s, turns := range recs {
		if len(turns) != 1 || turns[0].ErrorClass != "" {
			t.Errorf("session %d: %+v", s, turns)
		}
	}
}

// TestSessionsShardsMergeExactly: two shards of a run with sessions split
// whole sessions, and their merged summary counts the same sessions and
// turns as the unsharded run, with the same per-turn prompt sizes; the
// per-turn counts of the merge are the sums of the shards'.
func TestSessionsShardsMergeExactly(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 14}})
	args := append(baseArgs(port, 10), "--turns", "uniform:1:4", "--turn-input-len", "uniform:3:9", "--think-time", "1ms")
	whole := mustRunTool(t, args...)
	s0 := mustRunTool(t, append(args, "--shard", "0/2")...)
	s1 := mustRunTool(t, append(args, "--shard", "1/2")...)
	merged := filepath.Join(t.TempDir(), "merged.json")
	mustRun(t, "merge", s0.path("summary.json"), s1.path("summary.json"), "-o", merged)
	m := testenv.ReadJSON[metrics.Summary](t, merged)
	w, a, c := whole.summary(t), s0.summary(t), s1.summary(t)
	if m.Sessions == nil || w.Sessions == nil {
		t.Fatalf("sessions: merged %+v, whole %+v", m.Sessions, w.Sessions)
	}
	ms, ws := *m.Sessions, *w.Sessions
	// Offered counts turns, as achieved does (not only session starts).
	var offered int64
	for _, win := range w.Windows {
		offered += win.Offered
	}
	if offered != ws.TurnsSent || ws.TurnsSent <= ws.Started {
		t.Errorf("the windows offered %d requests; %d turns were sent in %d sessions", offered, ws.TurnsSent, ws.Started)
	}
	if ms.Started != ws.Started || ms.TurnsSent != ws.TurnsSent || ms.PlannedTurns != ws.PlannedTurns || ms.Completed != ws.Completed || ms.PlanHash != ws.PlanHash {
		t.Errorf("merged sessions %+v\nwhole %+v", ms, ws)
	}
	if a.Sessions.Started+c.Sessions.Started != ws.Started || a.Sessions.Started == 0 || c.Sessions.Started == 0 {
		t.Errorf("shards started %d and %d sessions, the whole run %d", a.Sessions.Started, c.Sessions.Started, ws.Started)
	}
	if len(m.PerTurn) != len(w.PerTurn) {
		t.Fatalf("per_turn: merged %d turns, whole %d", len(m.PerTurn), len(w.PerTurn))
	}
	for i := range m.PerTurn {
		mt, wt := m.PerTurn[i], w.PerTurn[i]
		if mt.Count != wt.Count || math.Abs(mt.PromptTokensMean-wt.PromptTokensMean) > 1e-9 || math.Abs(mt.HistoryTokensMean-wt.HistoryTokensMean) > 1e-9 {
			t.Errorf("turn %d: merged %+v, whole %+v", i+1, mt, wt)
		}
	}
}

// TestTimingSessionThinkTime: the think time measured from a turn's last
// byte to the next turn's send follows the plan: each is its planned think
// time plus a turn lag under 25 ms (5× the 5 ms the client needs on a
// loaded machine), and their mean is the planned mean within that lag.
func TestTimingSessionThinkTime(t *testing.T) {
	testenv.SkipUnderRace(t)
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond})
	plan := filepath.Join(t.TempDir(), "plan.csv")
	r := mustRunTool(t, append(baseArgs(port, 20), "--request-rate", "200", "--turns", "5",
		"--think-time", "exp:20ms", "--sessions-out", plan)...)
	planned := readPlan(t, plan)
	var sumPlanned, sumSeen float64
	n := 0
	for s, turns := range readSessionRecords(t, r.path("results.jsonl")) {
		for k := 1; k < len(turns); k++ {
			prev, tr := turns[k-1], turns[k]
			seen := (tr.Sent - prev.End).Seconds()
			want := planned[s][k][0]
			if seen < want-2e-6 || seen > want+0.025 {
				t.Errorf("session %d turn %d: think %.6f s, planned %.6f s", s, k+1, seen, want)
			}
			sumPlanned, sumSeen, n = sumPlanned+want, sumSeen+seen, n+1
		}
	}
	if n != 80 {
		t.Fatalf("%d later turns, want 80", n)
	}
	if d := (sumSeen - sumPlanned) / float64(n); d < 0 || d > 0.025 {
		t.Errorf("mean think %.6f s, planned %.6f s", sumSeen/float64(n), sumPlanned/float64(n))
	}
}

// TestSessionsMaxSessions: --max-sessions bounds live sessions: of six
// sessions due at once, two start and four wait (counted as queued), and
// the waiting ones start late, which their start lag shows.
func TestSessionsMaxSessions(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: time.Millisecond})
	r := mustRunTool(t, append(baseArgs(port, 6), "--turns", "3", "--think-time", "20ms", "--max-sessions", "2")...)
	sum := r.summary(t)
	if sum.Queued != 4 || sum.Sessions == nil || sum.Sessions.Completed != 6 {
		t.Fatalf("queued %d, sessions %+v", sum.Queued, sum.Sessions)
	}
	// A waiting session starts after a whole session: two think times.
	if sum.Sessions.StartLagMS.Max < 40 {
		t.Errorf("start lag max %.3f ms, want at least two think times (40 ms)", sum.Sessions.StartLagMS.Max)
	}
}
