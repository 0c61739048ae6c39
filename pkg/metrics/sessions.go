package metrics

import (
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Section keys of multi-turn sessions (docs/SESSIONS.md).
const (
	KeySessions = "sessions" // SessionsSummary
	KeyPerTurn  = "per_turn" // []TurnSummary, by turn number
)

// SessionsSummary is the summary's sessions section: how the run's
// multi-turn sessions went.
type SessionsSummary struct {
	// Turns, ThinkTime and TurnInputLen are the options that planned the
	// sessions; PlanHash the SHA-256 of the whole plan's CSV
	// (--sessions-out); PlannedTurns this shard's planned turns.
	Turns        string `json:"turns"`
	ThinkTime    string `json:"think_time,omitempty"`
	TurnInputLen string `json:"turn_input_len,omitempty"`
	PlanHash     string `json:"plan_hash"`
	PlannedTurns int64  `json:"planned_turns"`
	// Started sessions sent their first turn; Completed sent every planned
	// turn, each successfully; the others ended early: on a failed turn
	// (EndedError), because the next turn would overflow the model's
	// context (EndedLength), because the run was stopped
	// (EndedInterrupt), or because the client cancelled a turn
	// (EndedCancelled, --cancel-share: the user gave up).
	Started        int64 `json:"started"`
	Completed      int64 `json:"completed"`
	EndedError     int64 `json:"ended_error"`
	EndedLength    int64 `json:"ended_length"`
	EndedInterrupt int64 `json:"ended_interrupt"`
	EndedCancelled int64 `json:"ended_cancelled,omitempty"`
	// TurnsSent counts the turns sent (first turns included).
	TurnsSent int64 `json:"turns_sent"`
	// DurationS is the time from a session's first send to its last
	// turn's end, in seconds (ended sessions of every kind).
	DurationS Quantiles `json:"duration_s"`
	// StartLagMS is the send lag of first turns, measured from the
	// schedule; TurnLagMS that of later turns, measured from the previous
	// answer's end plus the think time (ms).
	StartLagMS Quantiles `json:"start_lag_ms"`
	TurnLagMS  Quantiles `json:"turn_lag_ms"`
	// ThinkMS is the think time observed: from a turn's last byte to the
	// next turn's send (ms), lag included.
	ThinkMS Quantiles `json:"think_ms"`
}

// Quantiles are a distribution's mean, p50, p90, p99 and maximum.
type Quantiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// quantiles summarises h, dividing its millisecond figures by div.
func quantiles(h *Hist, div float64) Quantiles {
	d := h.Dist()
	return Quantiles{Mean: d.Mean / div, P50: d.Median / div, P90: d.P90 / div, P99: d.P99 / div, Max: d.Max / div}
}

// TurnSummary is one turn number's figures over every session, or past
// the first TurnsSingly turns those of a range of turn numbers.
type TurnSummary struct {
	Turn int `json:"turn"`
	// TurnLast is the last turn number of a range (Turn is its first);
	// 0 for a single turn number.
	TurnLast int `json:"turn_last,omitempty"`
	// Count is the turns of this number that finished; Failed those that
	// failed.
	Count  int64 `json:"count"`
	Failed int64 `json:"failed"`
	// PromptTokensMean is the server's prompt tokens (else the target) of
	// the successful turns; HistoryTokensMean the history they carried;
	// CachedTokensMean the server's cached prompt tokens (null when the
	// server reported none), and CacheHitShare their share of the prompt
	// tokens.
	PromptTokensMean  float64  `json:"prompt_tokens_mean"`
	HistoryTokensMean float64  `json:"history_tokens_mean"`
	CachedTokensMean  *float64 `json:"cached_tokens_mean"`
	CacheHitShare     *float64 `json:"cache_hit_share"`
	TTFTP50           float64  `json:"ttft_p50_ms"`
	TTFTP99           float64  `json:"ttft_p99_ms"`
	E2EP50            float64  `json:"e2e_p50_ms"`
	E2EP99            float64  `json:"e2e_p99_ms"`
}

// TurnsSingly is how many turn numbers have figures of their own; past
// them turns are counted in ranges that double: 33–64, 65–128, 129–256, …
const TurnsSingly = 32

// turnIndex is the accumulator of turn number t (≥ 1): t − 1 up to
// TurnsSingly, then one a power-of-two range.
func turnIndex(t int) int {
	if t <= TurnsSingly {
		return t - 1
	}
	return TurnsSingly + bits.Len(uint(t-1)) - 1 - singlyBits
}

// singlyBits is log2(TurnsSingly).
var singlyBits = bits.Len(TurnsSingly) - 1

// turnRange is the turn numbers of accumulator i: first and last (equal
// for a single turn number).
func turnRange(i int) (first, last int) {
	if i < TurnsSingly {
		return i + 1, i + 1
	}
	j := uint(i - TurnsSingly + singlyBits)
	if j >= 62 {
		return 1<<j + 1, math.MaxInt
	}
	return 1<<j + 1, 1 << (j + 1)
}

// PerTurn accumulates the per-turn figures and the lags of a run's
// sessions from their turns' samples. Memory grows with the logarithm of
// the largest turn number (TurnsSingly turn numbers, then ranges), not
// with the requests.
type PerTurn struct {
	turns             []*turnAcc
	startLag, turnLag *Hist
	sessionsWithTurns int64
}

type turnAcc struct {
	turnCounts
	ttft, e2e *Hist
}

// turnCounts are one turn number's counts (or a range's), declared once:
// turnAcc keeps them and TurnState writes them in place under these keys.
// Count is the turns that finished, Failed and OK those that failed and
// succeeded; Prompt and History the prompt and history tokens of the
// successful ones, Cached the server's cached prompt tokens of the CacheN
// that reported them.
type turnCounts struct {
	Count   int64 `json:"count"`
	Failed  int64 `json:"failed"`
	OK      int64 `json:"ok"`
	Prompt  int64 `json:"prompt_tokens"`
	History int64 `json:"history_tokens"`
	Cached  int64 `json:"cached_tokens"`
	CacheN  int64 `json:"cached_reported"`
}

// NewPerTurn returns an empty accumulator.
func NewPerTurn() *PerTurn { return &PerTurn{startLag: NewHist(), turnLag: NewHist()} }

// Add implements Sink; samples that are not a session's turn are ignored.
func (p *PerTurn) Add(s *Sample) {
	if s.Turn <= 0 {
		return
	}
	t := p.acc(turnIndex(s.Turn))
	if s.HasLag {
		if s.Turn == 1 {
			p.startLag.Record(s.Lag)
		} else {
			p.turnLag.Record(s.Lag)
		}
	}
	if s.Cancelled {
		return // a turn's figures are of completed and failed turns
	}
	t.Count++
	if !s.OK {
		t.Failed++
		return
	}
	t.OK++
	prompt := s.PromptTokens
	if prompt < 0 {
		prompt = s.InputLen + s.HistoryTokens
	}
	t.Prompt += int64(prompt)
	t.History += int64(s.HistoryTokens)
	if s.CachedTokens >= 0 {
		t.Cached += int64(s.CachedTokens)
		t.CacheN++
	}
	if s.HasTTFT {
		t.ttft.Record(s.TTFT)
	}
	if s.HasE2E {
		t.e2e.Record(s.E2E)
	}
}

// acc returns accumulator i, adding those up to it.
func (p *PerTurn) acc(i int) *turnAcc {
	for len(p.turns) <= i {
		p.turns = append(p.turns, &turnAcc{ttft: NewHist(), e2e: NewHist()})
	}
	return p.turns[i]
}

// Turns returns the per-turn summary, by turn number (ranges of them past
// TurnsSingly).
func (p *PerTurn) Turns() []TurnSummary {
	out := make([]TurnSummary, 0, len(p.turns))
	for i, t := range p.turns {
		ts := TurnSummary{Turn: i + 1, Count: t.Count, Failed: t.Failed}
		if first, last := turnRange(i); last != first {
			ts.Turn, ts.TurnLast = first, last
		}
		if t.OK > 0 {
			ts.PromptTokensMean = float64(t.Prompt) / float64(t.OK)
			ts.HistoryTokensMean = float64(t.History) / float64(t.OK)
		}
		if t.CacheN > 0 {
			m := float64(t.Cached) / float64(t.CacheN)
			ts.CachedTokensMean = &m
			if t.Prompt > 0 {
				share := float64(t.Cached) / float64(t.Prompt)
				ts.CacheHitShare = &share
			}
		}
		ts.TTFTP50, ts.TTFTP99 = t.ttft.Quantile(0.5), t.ttft.Quantile(0.99)
		ts.E2EP50, ts.E2EP99 = t.e2e.Quantile(0.5), t.e2e.Quantile(0.99)
		out = append(out, ts)
	}
	return out
}

// Lags sets the start and turn lags of sum.
func (p *PerTurn) Lags(sum *SessionsSummary) {
	sum.StartLagMS = quantiles(p.startLag, 1)
	sum.TurnLagMS = quantiles(p.turnLag, 1)
}

// SessionClock accumulates what the sessions themselves report: their
// durations and observed think times. It is not safe for concurrent use.
type SessionClock struct {
	Duration, Think *Hist
}

// NewSessionClock returns empty distributions.
func NewSessionClock() *SessionClock { return &SessionClock{Duration: NewHist(), Think: NewHist()} }

// Set writes the durations and think times into sum.
func (c *SessionClock) Set(sum *SessionsSummary) {
	sum.DurationS = quantiles(c.Duration, 1000)
	sum.ThinkMS = quantiles(c.Think, 1)
}

var _ Sink = (*PerTurn)(nil)

// SessionsRun is a run's sessions as accumulated: the counts (Summary's
// count fields and options), the session clock and the per-turn figures.
// Its state (State, SessionsFromState) is what the merge state carries and
// merging combines.
type SessionsRun struct {
	Summary SessionsSummary
	Clock   *SessionClock
	PerTurn *PerTurn
}

// Set writes r's sessions and per_turn sections into s.
func (r *SessionsRun) Set(s *Summary) {
	sum := r.Summary
	r.Clock.Set(&sum)
	r.PerTurn.Lags(&sum)
	s.Sessions, s.PerTurn = &sum, r.PerTurn.Turns()
}

// SessionsState is merge_state.sessions: a run's sessions in a form that
// merges exactly.
type SessionsState struct {
	// Summary holds the options, the plan's hash and the counts (its
	// distributions are recomputed from the states below).
	Summary  SessionsSummary `json:"summary"`
	Duration HistState       `json:"duration"`
	Think    HistState       `json:"think"`
	StartLag HistState       `json:"start_lag"`
	TurnLag  HistState       `json:"turn_lag"`
	Turns    []TurnState     `json:"turns"`
}

// TurnState is one turn number's accumulated figures, or a range's.
type TurnState struct {
	// LastTurn is the last turn number of a range of them (past
	// TurnsSingly); without it, the state's place in the list is its
	// turn number (as states written before the ranges have it).
	LastTurn int `json:"last_turn,omitempty"`
	turnCounts
	TTFT HistState `json:"ttft"`
	E2E  HistState `json:"e2e"`
}

// State encodes r.
func (r *SessionsRun) State() (*SessionsState, error) {
	st := &SessionsState{Summary: r.Summary}
	st.Summary.DurationS, st.Summary.StartLagMS, st.Summary.TurnLagMS, st.Summary.ThinkMS = Quantiles{}, Quantiles{}, Quantiles{}, Quantiles{}
	if err := saveHists(histSlot{"duration", r.Clock.Duration, &st.Duration}, histSlot{"think", r.Clock.Think, &st.Think},
		histSlot{"start_lag", r.PerTurn.startLag, &st.StartLag}, histSlot{"turn_lag", r.PerTurn.turnLag, &st.TurnLag}); err != nil {
		return nil, err
	}
	for i, t := range r.PerTurn.turns {
		ts := TurnState{turnCounts: t.turnCounts}
		if first, last := turnRange(i); last != first {
			ts.LastTurn = last
		}
		if err := saveHists(histSlot{"ttft", t.ttft, &ts.TTFT}, histSlot{"e2e", t.e2e, &ts.E2E}); err != nil {
			return nil, err
		}
		st.Turns = append(st.Turns, ts)
	}
	return st, nil
}

// SessionsFromState rebuilds a run's sessions from st.
func SessionsFromState(st *SessionsState) (*SessionsRun, error) {
	r := &SessionsRun{Summary: st.Summary, Clock: NewSessionClock(), PerTurn: NewPerTurn()}
	var err error
	for _, h := range []struct {
		dst **Hist
		st  HistState
	}{{&r.Clock.Duration, st.Duration}, {&r.Clock.Think, st.Think}, {&r.PerTurn.startLag, st.StartLag}, {&r.PerTurn.turnLag, st.TurnLag}} {
		if *h.dst, err = histFromState(h.st, histSigFigs); err != nil {
			return nil, err
		}
	}
	for i, ts := range st.Turns {
		if ts.Count < 0 || ts.Failed < 0 || ts.OK < 0 || ts.Failed+ts.OK != ts.Count || ts.CacheN < 0 {
			return nil, fmt.Errorf("turn %d: inconsistent counts", i+1)
		}
		t := &turnAcc{turnCounts: ts.turnCounts}
		if t.ttft, err = histFromState(ts.TTFT, histSigFigs); err != nil {
			return nil, fmt.Errorf("turn %d: ttft: %w", i+1, err)
		}
		if t.e2e, err = histFromState(ts.E2E, histSigFigs); err != nil {
			return nil, fmt.Errorf("turn %d: e2e: %w", i+1, err)
		}
		// A range's state, or a single turn's (written before the ranges:
		// one a turn number, however many) goes where that turn counts.
		turn := i + 1
		if ts.LastTurn > 0 {
			turn = ts.LastTurn
		}
		if turn < 1 {
			return nil, fmt.Errorf("turn %d: last turn %d out of range", i+1, ts.LastTurn)
		}
		r.PerTurn.acc(turnIndex(turn)).add(t)
	}
	return r, nil
}

// add adds o's figures to t.
func (t *turnAcc) add(o *turnAcc) {
	t.Count += o.Count
	t.Failed += o.Failed
	t.OK += o.OK
	t.Prompt += o.Prompt
	t.History += o.History
	t.Cached += o.Cached
	t.CacheN += o.CacheN
	t.ttft.Merge(o.ttft)
	t.e2e.Merge(o.e2e)
}

// Merge adds o's sessions to r (shards of one run).
func (r *SessionsRun) Merge(o *SessionsRun) {
	a, b := &r.Summary, &o.Summary
	a.PlannedTurns += b.PlannedTurns
	a.Started += b.Started
	a.Completed += b.Completed
	a.EndedError += b.EndedError
	a.EndedLength += b.EndedLength
	a.EndedInterrupt += b.EndedInterrupt
	a.EndedCancelled += b.EndedCancelled
	a.TurnsSent += b.TurnsSent
	r.Clock.Duration.Merge(o.Clock.Duration)
	r.Clock.Think.Merge(o.Clock.Think)
	r.PerTurn.startLag.Merge(o.PerTurn.startLag)
	r.PerTurn.turnLag.Merge(o.PerTurn.turnLag)
	for i, t := range o.PerTurn.turns {
		r.PerTurn.acc(i).add(t)
	}
}

// Sessions is a run's multi-turn sessions as a Part: it keeps the turns'
// figures (PerTurn) from the samples; the run adds what only its sessions
// know — counts, durations, think times — with SetRun. It writes the
// summary's sessions and per_turn (per_turn alone when no run was set:
// records read back), and its state is merge_state.sessions.
type Sessions struct {
	on  bool
	per *PerTurn
	run *SessionsRun // nil until SetRun or a copy's state
	// some and none: copies with and without sessions were merged (warned
	// about with warnf when finishing).
	some, none bool
	warnf      func(format string, a ...any)
}

var _ Part = (*Sessions)(nil)

// NewSessions returns an empty part that keeps the turns' figures when on
// (a run of sessions, records read back).
func NewSessions(on bool) *Sessions { return &Sessions{on: on, per: NewPerTurn()} }

// SetRun adds the run's own sessions figures: sum's options and counts and
// clock's distributions.
func (p *Sessions) SetRun(sum SessionsSummary, clock *SessionClock) {
	p.run = &SessionsRun{Summary: sum, Clock: clock, PerTurn: p.per}
}

// Add implements Sink.
func (p *Sessions) Add(s *Sample) {
	if p.on {
		p.per.Add(s)
	}
}

// Key implements Part.
func (p *Sessions) Key() string { return KeySessions }

// Finish implements Part.
func (p *Sessions) Finish(s *Summary, _ time.Duration) {
	if p.some && p.none && p.warnf != nil {
		p.warnf("sessions are in some summaries only: the merged sessions and per_turn cover those")
	}
	switch {
	case p.run != nil:
		p.run.Set(s)
	case p.on:
		if turns := p.per.Turns(); len(turns) > 0 {
			s.PerTurn = turns
		}
	}
}

// Save implements Part.
func (p *Sessions) Save(st *MergeState) error {
	if p.run == nil {
		return nil
	}
	var err error
	st.Sessions, err = p.run.State()
	return err
}

// Load implements Part: the copies' counts add up and their distributions
// merge; copies planned with different options, or some without sessions,
// are warned about.
func (p *Sessions) Load(c *Copy) error {
	p.warnf = c.Warnf
	if c.State.Sessions == nil {
		has := c.Summary != nil && c.Summary.Sessions != nil
		p.none = p.none || !has
		if has {
			c.Warnf("%s: %s has no merge state: it is left out of the merged summary", c.Name, KeySessions)
		}
		return nil
	}
	x, err := SessionsFromState(c.State.Sessions)
	if err != nil {
		return fmt.Errorf("%s.sessions: %w", KeyMergeState, err)
	}
	p.some = true
	if p.run == nil {
		p.run = x
		return nil
	}
	if a, b := p.run.Summary, x.Summary; a.Turns != b.Turns || a.ThinkTime != b.ThinkTime || a.TurnInputLen != b.TurnInputLen || a.PlanHash != b.PlanHash {
		c.Warnf("%s: sessions planned differently (%s, plan %s) from the first summary's (%s, plan %s)", c.Name, b.Turns, b.PlanHash, a.Turns, a.PlanHash)
	}
	p.run.Merge(x)
	return nil
}
