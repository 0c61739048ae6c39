package metrics

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
	// context (EndedLength), or because the run was stopped
	// (EndedInterrupt).
	Started        int64 `json:"started"`
	Completed      int64 `json:"completed"`
	EndedError     int64 `json:"ended_error"`
	EndedLength    int64 `json:"ended_length"`
	EndedInterrupt int64 `json:"ended_interrupt"`
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

// TurnSummary is one turn number's figures over every session.
type TurnSummary struct {
	Turn int `json:"turn"`
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

// PerTurn accumulates the per-turn figures and the lags of a run's
// sessions from their turns' samples. Memory grows with the largest turn
// number (at most the plan's cap), not with the requests.
type PerTurn struct {
	turns             []*turnAcc
	startLag, turnLag *Hist
	sessionsWithTurns int64
}

type turnAcc struct {
	count, failed                   int64
	ok                              int64
	prompt, history, cached, cacheN int64
	ttft, e2e                       *Hist
}

// NewPerTurn returns an empty accumulator.
func NewPerTurn() *PerTurn { return &PerTurn{startLag: NewHist(), turnLag: NewHist()} }

// Add implements Sink; samples that are not a session's turn are ignored.
func (p *PerTurn) Add(s *Sample) {
	if s.Turn <= 0 {
		return
	}
	for len(p.turns) < s.Turn {
		p.turns = append(p.turns, &turnAcc{ttft: NewHist(), e2e: NewHist()})
	}
	t := p.turns[s.Turn-1]
	t.count++
	if s.HasLag {
		if s.Turn == 1 {
			p.startLag.Record(s.Lag)
		} else {
			p.turnLag.Record(s.Lag)
		}
	}
	if !s.OK {
		t.failed++
		return
	}
	t.ok++
	prompt := s.PromptTokens
	if prompt < 0 {
		prompt = s.InputLen + s.HistoryTokens
	}
	t.prompt += int64(prompt)
	t.history += int64(s.HistoryTokens)
	if s.CachedTokens >= 0 {
		t.cached += int64(s.CachedTokens)
		t.cacheN++
	}
	if s.HasTTFT {
		t.ttft.Record(s.TTFT)
	}
	if s.HasE2E {
		t.e2e.Record(s.E2E)
	}
}

// Turns returns the per-turn summary, by turn number.
func (p *PerTurn) Turns() []TurnSummary {
	out := make([]TurnSummary, 0, len(p.turns))
	for i, t := range p.turns {
		ts := TurnSummary{Turn: i + 1, Count: t.count, Failed: t.failed}
		if t.ok > 0 {
			ts.PromptTokensMean = float64(t.prompt) / float64(t.ok)
			ts.HistoryTokensMean = float64(t.history) / float64(t.ok)
		}
		if t.cacheN > 0 {
			m := float64(t.cached) / float64(t.cacheN)
			ts.CachedTokensMean = &m
			if t.prompt > 0 {
				share := float64(t.cached) / float64(t.prompt)
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
