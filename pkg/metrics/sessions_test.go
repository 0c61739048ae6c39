package metrics

import (
	"reflect"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestPerTurnAndItsMergeState: per_turn counts each turn number's samples
// (a failed turn counted, not averaged), the lags go to start or turn lag
// by turn, and the merge state read back (through JSON) and merged with
// itself doubles every count and keeps every mean.
func TestPerTurnAndItsMergeState(t *testing.T) {
	p := NewPerTurn()
	add := func(turn, prompt, history, cached int, ok bool, lag time.Duration) {
		s := Sample{Request: record.Request{Turn: turn, PromptTokens: prompt, HistoryTokens: history, CachedTokens: cached}, OK: ok, HasLag: true, Lag: lag, HasTTFT: ok, TTFT: time.Duration(turn) * time.Millisecond, HasE2E: ok, E2E: 10 * time.Millisecond}
		p.Add(&s)
	}
	add(1, 100, 0, 0, true, 2*time.Millisecond)
	add(1, 100, 0, 0, true, 4*time.Millisecond)
	add(2, 150, 120, 112, true, time.Millisecond)
	add(2, 0, 0, -1, false, time.Millisecond)
	p.Add(&Sample{Request: record.Request{Turn: 0}, OK: true}) // not a session's turn
	turns := p.Turns()
	if len(turns) != 2 || turns[0].Count != 2 || turns[1].Count != 2 || turns[1].Failed != 1 {
		t.Fatalf("turns %+v", turns)
	}
	if turns[1].PromptTokensMean != 150 || *turns[1].CachedTokensMean != 112 || *turns[1].CacheHitShare != 112.0/150 || turns[1].TTFTP50 != 2 {
		t.Errorf("turn 2: %+v", turns[1])
	}
	run := &SessionsRun{Summary: SessionsSummary{Turns: "2", Started: 2, Completed: 1, EndedError: 1, TurnsSent: 4}, Clock: NewSessionClock(), PerTurn: p}
	run.Clock.Duration.Record(time.Second)
	var s Summary
	run.Set(&s)
	if s.Sessions.StartLagMS.Max != 4 || s.Sessions.TurnLagMS.Max != 1 || s.Sessions.DurationS.P50 != 1 {
		t.Errorf("lags %+v %+v, duration %+v", s.Sessions.StartLagMS, s.Sessions.TurnLagMS, s.Sessions.DurationS)
	}
	r1 := throughState(t, run.State, SessionsFromState)
	if got := r1.PerTurn.Turns(); !reflect.DeepEqual(got, turns) {
		t.Errorf("read back %+v\nwant %+v", got, turns)
	}
	r1.Merge(throughState(t, run.State, SessionsFromState))
	var m Summary
	r1.Set(&m)
	if m.Sessions.Started != 4 || m.Sessions.TurnsSent != 8 || m.PerTurn[1].Count != 4 || m.PerTurn[1].PromptTokensMean != 150 {
		t.Errorf("merged %+v %+v", m.Sessions, m.PerTurn)
	}
	st, err := run.State()
	must(t, err)
	st.Turns[0].OK = 7
	if _, err := SessionsFromState(st); err == nil {
		t.Error("inconsistent turn counts read without an error")
	}
}

// TestPerTurnBounded: a conversation of many turns keeps TurnsSingly turn
// numbers of their own and then one accumulator per doubling range
// (33–64, 65–128, …), so memory grows with the logarithm of the turn
// count: a 200,000-step agentic replay held a histogram pair per turn
// (≈ 480 KB a turn: 2.55 GB at turn 5,273). Each turn's samples land in
// its range, and the ranges survive the merge state, as do the states of
// single turns past TurnsSingly written before the ranges.
func TestPerTurnBounded(t *testing.T) {
	p := NewPerTurn()
	const n = 300
	for turn := 1; turn <= n; turn++ {
		p.Add(&Sample{Request: record.Request{Turn: turn, PromptTokens: turn}, OK: true, HasTTFT: true, TTFT: time.Duration(turn) * time.Millisecond})
	}
	// 32 single turns, then 33–64, 65–128, 129–256, 257–512.
	if len(p.turns) != TurnsSingly+4 {
		t.Fatalf("%d accumulators for %d turns, want %d", len(p.turns), n, TurnsSingly+4)
	}
	turns := p.Turns()
	for i, want := range []struct{ first, last int }{{32, 0}, {33, 64}, {65, 128}, {129, 256}, {257, 512}} {
		ts := turns[TurnsSingly-1+i]
		if ts.Turn != want.first || ts.TurnLast != want.last {
			t.Errorf("row %d: turns %d–%d, want %d–%d", TurnsSingly+i, ts.Turn, ts.TurnLast, want.first, want.last)
		}
	}
	// 65–128: 64 turns, prompts 65…128 (mean 96.5).
	if r := turns[TurnsSingly+1]; r.Count != 64 || r.PromptTokensMean != 96.5 {
		t.Errorf("65–128: %+v", r)
	}
	// 257–512 holds the turns up to 300 only.
	if r := turns[TurnsSingly+3]; r.Count != n-256 {
		t.Errorf("257–512: count %d, want %d", r.Count, n-256)
	}
	run := &SessionsRun{Clock: NewSessionClock(), PerTurn: p}
	st, err := run.State()
	if err != nil {
		t.Fatal(err)
	}
	back, err := SessionsFromState(st)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.PerTurn.Turns(); !reflect.DeepEqual(got, turns) {
		t.Errorf("read back %+v\nwant %+v", got[TurnsSingly:], turns[TurnsSingly:])
	}
	// A state of one entry a turn (as written before the ranges) goes into
	// the ranges.
	old := &SessionsState{Duration: st.Duration, Think: st.Think, StartLag: st.StartLag, TurnLag: st.TurnLag}
	for range 100 {
		old.Turns = append(old.Turns, st.Turns[0])
	}
	r, err := SessionsFromState(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.PerTurn.Turns(); len(got) != TurnsSingly+2 || got[TurnsSingly].Count != 32 || got[TurnsSingly+1].Count != 36 {
		t.Errorf("an old state of 100 turns: %d rows, %+v", len(got), got[TurnsSingly:])
	}
}
