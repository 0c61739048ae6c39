package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"

	"github.com/fineserve-gen/fineserve-gen/pkg/agentic"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// AgenticOptions configure the replay of an agentic trace (WEKA/AgentX,
// TraceLab, Bailian: docs/AGENTS.md).
type AgenticOptions struct {
	// Timing is --agent-timing (think, original, api-scaled); APIScale
	// multiplies api_time with api-scaled (--api-time-scale).
	Timing   string
	APIScale float64
	// MaxThink caps every idle gap (--max-think-time; 0: no cap).
	MaxThink time.Duration
	// Conversations, when > 0, makes that many Poisson starts at
	// --request-rate, each replaying a conversation drawn by the seed.
	Conversations int64
}

// Agentic is an agentic workload's plan (nil for any other).
type Agentic struct {
	*agentic.Plan
	Path      string
	TimeScale float64
	// BlockSize is the tokens of one hash id's block (one for the trace).
	BlockSize int
	// Cancel, when set, is when the client cuts request n of the
	// conversation that start index replays (--cancel-share): a cut step
	// ends its conversation, as a user who gave up.
	Cancel func(index int64, n int) time.Duration
}

// ReplaysAgentic reports whether c replays an agentic trace (its conversations
// are the sessions).
func (c *Config) ReplaysAgentic() bool {
	_, ok := c.agenticFormat()
	return ok
}

// agenticFormat returns the agentic format of c's trace, if it is one.
func (c *Config) agenticFormat() (agentic.Format, bool) {
	r := &c.Replay
	if f, ok := agentic.ParseFormat(r.TraceFormat); ok {
		return f, true
	}
	if r.TraceFormat != "" && r.TraceFormat != "auto" || r.TracePath == "" {
		return "", false
	}
	return agentic.Detect(r.TracePath)
}

// agenticSchedule reads an agentic trace and returns its conversation
// starts; w.Agentic keeps the plan the runner replays them with.
func agenticSchedule(c *Config, f agentic.Format, log Logger, w *Workload) (arrival.Schedule, error) {
	r := &c.Replay
	a := &c.Agentic
	timing, err := agentic.ParseTiming(a.Timing)
	if err != nil {
		return nil, err
	}
	var errs []error
	if a.MaxThink < 0 {
		errs = append(errs, fmt.Errorf("--max-think-time %v: want ≥ 0", a.MaxThink))
	}
	if a.APIScale < 0 {
		errs = append(errs, fmt.Errorf("--api-time-scale %g: want > 0", a.APIScale))
	}
	if a.Conversations < 0 {
		errs = append(errs, fmt.Errorf("--conversations %d: want ≥ 0", a.Conversations))
	}
	if b := c.API; b != nil && !b.Has(api.Sessions) {
		errs = append(errs, fmt.Errorf("an agentic trace: --backend %s has no conversation; its conversations need a text backend", b.Name))
	}
	if r.TraceBusiest {
		errs = append(errs, errors.New("--trace-start busiest: not for an agentic trace (give a time)"))
	}
	if c.Sessions.On() || c.MultiTurn {
		errs = append(errs, errors.New("--turns/--multi-turn: an agentic trace's conversations are its sessions; leave them out"))
	}
	if c.Media.On() {
		errs = append(errs, errors.New("--images-per-request/--audio-seconds: an agentic trace's prompts are its hash ids (token blocks); media go in chat prompts of the other modes"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	tr, err := agentic.Load(r.TracePath, f)
	if err != nil {
		return nil, err
	}
	if tr.SkippedCount > 0 {
		if r.Strict {
			return nil, fmt.Errorf("replay: %s: %w", r.TracePath, tr.FirstSkip())
		}
		log.Warnf("trace %s: skipped %d unusable entr(ies); first: %v; --strict makes this an error", r.TracePath, tr.SkippedCount, tr.FirstSkip())
	}
	for _, cv := range tr.Conversations {
		if cv.BlockSize != tr.Conversations[0].BlockSize {
			return nil, fmt.Errorf("replay: %s: line %d: block_size %d: the trace's first conversation has %d (one block size a run)",
				r.TracePath, cv.Line, cv.BlockSize, tr.Conversations[0].BlockSize)
		}
	}
	limit, from := c.tokenLimit()
	clock := agentic.Clock{Timing: timing, Scale: c.TimeScale, APIScale: a.APIScale, MaxThink: a.MaxThink}
	plan := agentic.NewPlan(tr, clock, c.Seed, a.Conversations > 0)
	share := 0.0
	if plan.In > 0 {
		share = float64(plan.Hit) / float64(plan.In)
	}
	log.Infof("trace %s: %s format, %d conversation(s), %d request(s); infinite-cache hit rate %.1f %% of prompt tokens; timing %s; token limit %d (%s)",
		r.TracePath, f, len(tr.Conversations), tr.Requests, 100*share, timing, limit, from)
	over := 0
	for _, cv := range tr.Conversations {
		for _, st := range cv.Requests() {
			if st.In+st.Out > limit {
				over++
			}
		}
	}
	if over > 0 {
		log.Warnf("trace %s: %d request(s) above the token limit %d (%s): a conversation ends before such a step (sessions.ended_length); --max-model-len sets the limit",
			r.TracePath, over, limit, from)
	}
	o := agentic.StartOptions{Count: a.Conversations, Rate: c.RequestRate, TimeScale: c.TimeScale, TargetRate: r.TargetRate,
		Start: r.TraceStart, Span: r.TraceDuration, Duration: c.Duration}
	if c.NumPromptsSet && a.Conversations == 0 {
		o.Limit = c.NumPrompts
	}
	if r.TargetRate > 0 {
		o.TimeScale = 0 // the starts' scale; --time-scale still scales the think times
	}
	s, scale := plan.Starts(o)
	s = capStarts(s, limit)
	w.Agentic = &Agentic{Plan: plan, Path: r.TracePath, TimeScale: scale, BlockSize: tr.Conversations[0].BlockSize}
	w.Replay = &ReplayInfo{Trace: r.TracePath, Format: string(f), RowsRead: tr.Requests + tr.SkippedCount, RowsUsable: tr.Requests,
		TimeScale: scale, TargetRate: r.TargetRate, TraceStartS: r.TraceStart.Seconds(), TraceDuration: r.TraceDuration.Seconds(), Replayed: tr.Requests}
	w.Replay.Skipped.Rows = tr.SkippedCount
	for _, k := range tr.Skips {
		w.Replay.Skipped.Lines = append(w.Replay.Skipped.Lines, k.Line)
	}
	if e := tr.FirstSkip(); e != nil {
		w.Replay.Skipped.First = e.Error()
	}
	return s, nil
}

// agenticSessions is the sessions entry of an agentic workload: a
// conversation is a session, its requests (subagents' included) its
// turns. whole is the unsharded schedule: the plan's hash is the whole
// plan's; c.SessionsOut, when set, receives this shard's rows.
func (w *Workload) agenticSessions(c *Config, whole arrival.Schedule) error {
	if w.Agentic == nil {
		return nil
	}
	if w.Cancel.On() {
		w.Agentic.Cancel = w.Cancel.Cut
	}
	d := sha256.New()
	d.Write([]byte(agentic.PlanHeader + "\n"))
	var out *csvOut
	if c.SessionsOut != nil {
		out = newCSVOut(c.SessionsOut, agentic.PlanHeader)
	}
	s := &Sessions{Note: fmt.Sprintf("sessions: agentic conversations (--agent-timing %s)", w.Agentic.Clock.Timing)}
	var rows []byte
	for a := range whole {
		rows = w.Agentic.AppendPlanRows(rows[:0], a.Index)
		d.Write(rows)
		if c.ShardCount > 1 && a.Index%c.ShardCount != c.ShardIndex {
			continue
		}
		s.Sessions++
		s.Turns += int64(w.Agentic.Conversation(a.Index).Root.Requests())
		out.write(rows)
	}
	s.Hash = "sha256:" + hex.EncodeToString(d.Sum(nil))
	w.Sessions = s
	if err := out.close(); err != nil {
		return &WriteError{fmt.Errorf("the sessions file: %w", err)}
	}
	return nil
}

// capStarts sizes a start above the token limit within it: the start is
// the warm-up's shape, and its first step, above the limit, is never sent
// (the conversation ends there).
func capStarts(s arrival.Schedule, limit int) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for a := range s {
			if a.InputTokens+a.OutputTokens > limit {
				a.OutputTokens = min(a.OutputTokens, max(limit/2, 1))
				a.InputTokens = max(limit-a.OutputTokens, 1)
			}
			if !yield(a) {
				return
			}
		}
	}
}
