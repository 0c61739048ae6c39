package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/pkg/agentic"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// agenticSender runs one agentic conversation per arrival, on the session
// machinery (its request slots, in-flight count, stop and summary): the
// arrival is the conversation's start; each later step of a branch is due
// by the plan's clock after the previous response (closed loop); a
// subagent runs as a concurrent branch, and its parent's next request
// waits for it (join). Every prompt is rebuilt from the step's block ids.
type agenticSender struct {
	*sessionSender
	plan *agentic.Plan
	// cut is when the client cuts step n of conversation index (nil:
	// no cancellation); the first step's cut is its arrival's.
	cut func(index int64, n int) time.Duration
}

var _ arrival.Sender = (*agenticSender)(nil)

// conversation is a live conversation's shared state.
type conversation struct {
	a    arrival.Arrival
	conv *agentic.Conversation
	// failed: a step failed and the run does not continue on errors;
	// stopped: the run was stopped; cancelled: the client cut a step (the
	// user gave up: the conversation ends).
	// length: a step needs more tokens than the limit (the conversation
	// ends there, as a session at the context length).
	failed, stopped, cancelled, length atomic.Bool
	// offered: the conversation's first request went out, the one the
	// dispatcher offered as its arrival; each later one is offered by the
	// conversation (sessionSender.offered), so that offered and achieved
	// rates both count requests.
	offered   atomic.Bool
	mu        sync.Mutex
	firstSent time.Duration
	lastEnd   time.Duration
	sent      int64
}

// Send implements arrival.Sender: it runs a's whole conversation.
func (s *agenticSender) Send(ctx context.Context, a arrival.Arrival) {
	c := &conversation{a: a, conv: s.plan.Conversation(a.Index), firstSent: -1}
	s.branch(ctx, c, &c.conv.Root, 0, a.At)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Started++
	s.sum.TurnsSent += c.sent
	switch {
	case c.stopped.Load():
		s.sum.EndedInterrupt++
	case c.cancelled.Load():
		s.sum.EndedCancelled++
	case c.length.Load():
		s.sum.EndedLength++
	case c.failed.Load():
		s.sum.EndedError++
	default:
		s.sum.Completed++
	}
	if c.firstSent >= 0 {
		s.clock.Duration.Record(max(c.lastEnd-c.firstSent, 0))
	}
}

// branch runs b's steps from due on, and returns its last response's end.
func (s *agenticSender) branch(ctx context.Context, c *conversation, b *agentic.Branch, id int, due time.Duration) time.Duration {
	clock := &s.plan.Clock
	var prev *agentic.Step
	var prevSent, prevEnd time.Duration
	var wg sync.WaitGroup
	var joinMu sync.Mutex
	var joinEnd time.Duration
	pending := false
	join := func() {
		if pending {
			wg.Wait()
			pending = false
		}
	}
	defer join()
	var blocks []uint64
	for i := range b.Steps {
		st := &b.Steps[i]
		if c.failed.Load() || c.stopped.Load() || c.cancelled.Load() || c.length.Load() {
			return prevEnd
		}
		if st.Sub != nil {
			at := due
			if prev != nil {
				d, fromSent := clock.Spawn(prev, st)
				at = prevEnd + d
				if fromSent {
					at = max(prevSent+d, prevEnd)
				}
			} else {
				d, _ := clock.Spawn(nil, st)
				at = due + d
			}
			sub := s.plan.Branch(st.Sub)
			wg.Add(1)
			pending = true
			safe.Go(func() {
				defer wg.Done()
				end := s.branch(ctx, c, st.Sub, sub, at)
				joinMu.Lock()
				joinEnd = max(joinEnd, end)
				joinMu.Unlock()
			})
			continue
		}
		at := due
		waited := time.Duration(-1)
		if prev != nil {
			d, fromSent := clock.Delay(prev, st)
			at = prevEnd + d
			if fromSent {
				at = max(prevSent+d, prevEnd)
			}
			// The tool (or think) wait is the plan's delay, not the
			// wait for subagents joined below: their time is theirs.
			waited = at - prevEnd
		}
		if pending {
			join()
			joinMu.Lock()
			at = max(at, joinEnd)
			joinMu.Unlock()
		}
		if s.limit > 0 && st.In+st.Out > s.limit {
			c.length.Store(true) // after the join: the subagents ran to their end
			return prevEnd
		}
		if !s.waitUntil(at) {
			c.stopped.Store(true)
			return prevEnd
		}
		if !c.offered.CompareAndSwap(false, true) {
			s.offered(at)
		}
		res := s.step(ctx, c, st, id, at, waited, &blocks)
		prev, prevSent, prevEnd = st, res.sent, res.end
		if res.stopped {
			c.stopped.Store(true)
			return prevEnd
		}
		if res.cut {
			c.cancelled.Store(true)
			return prevEnd
		}
		if !res.ok && !s.continueOnError {
			c.failed.Store(true)
			return prevEnd
		}
	}
	return prevEnd
}

// stepResult is what a branch needs of a sent step.
type stepResult struct {
	sent, end        time.Duration
	ok, stopped, cut bool
}

// step sends one step of c, due at at, and hands its result on.
func (s *agenticSender) step(ctx context.Context, c *conversation, st *agentic.Step, branch int, at, waited time.Duration, blocks *[]uint64) stepResult {
	turn := s.plan.Number(st)
	*blocks = s.plan.Blocks(*blocks, c.conv, c.a.Index, st)
	a := arrival.Arrival{Index: c.a.Index ^ int64(turn)<<44, At: at, InputTokens: st.In, OutputTokens: st.Out,
		PrefixBlocks: *blocks, Endpoint: c.a.Endpoint, Model: c.a.Model}
	if turn == 1 {
		a.CancelAfter = c.a.CancelAfter
	} else if s.cut != nil {
		a.CancelAfter = s.cut(c.a.Index, turn)
	}
	if p := s.base.plan; p != nil {
		a.Endpoint = p.Turn(c.a.Endpoint, turn)
	}
	s.enter()
	res := resultPool.Get().(*client.Result)
	res.Reset()
	res.RequestID = s.base.endpoints.RequestID(c.a.Index, turn) // a's index is the step's, not the record's
	s.base.do(ctx, a, res)
	s.leave()
	res.Index, res.Session, res.Turn = c.a.Index, c.a.Index, turn
	if waited >= 0 {
		// As observed: the planned wait and this send's own lag (without
		// a join, the gap from the previous end to this send).
		waited = max(waited+res.Sent-at, 0)
	}
	res.Agent = client.AgentStep{On: true, Branch: branch, Waited: waited, Expected: s.plan.Expected(st)}
	out := stepResult{sent: res.Sent, end: res.End, ok: res.OK(), stopped: res.ErrorClass == record.ErrCanceled && !res.Cancelled, cut: res.Cancelled}
	c.mu.Lock()
	if c.firstSent < 0 || res.Sent < c.firstSent {
		c.firstSent = res.Sent
	}
	c.lastEnd = max(c.lastEnd, res.End)
	c.sent++
	c.mu.Unlock()
	if waited >= 0 {
		s.mu.Lock()
		s.clock.Think.Record(waited)
		s.mu.Unlock()
	}
	s.base.results <- res
	return out
}
