package metrics

import (
	"encoding/json"
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
	st, err := run.State()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(st)
	var back SessionsState
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r1, err := SessionsFromState(&back)
	if err != nil {
		t.Fatal(err)
	}
	if got := r1.PerTurn.Turns(); !reflect.DeepEqual(got, turns) {
		t.Errorf("read back %+v\nwant %+v", got, turns)
	}
	r2, _ := SessionsFromState(&back)
	r1.Merge(r2)
	var m Summary
	r1.Set(&m)
	if m.Sessions.Started != 4 || m.Sessions.TurnsSent != 8 || m.PerTurn[1].Count != 4 || m.PerTurn[1].PromptTokensMean != 150 {
		t.Errorf("merged %+v %+v", m.Sessions, m.PerTurn)
	}
	back.Turns[0].OK = 7
	if _, err := SessionsFromState(&back); err == nil {
		t.Error("inconsistent turn counts read without an error")
	}
}
