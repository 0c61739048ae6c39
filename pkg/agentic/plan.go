package agentic

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Plan is an agentic run's plan: which conversation each start replays,
// each step's block ids and expected cache hits, and the closed loop's
// clock. It is pure: the same trace, options and seed give the same plan.
type Plan struct {
	Trace *Trace
	Clock Clock
	Seed  uint64
	// Draws: each start draws its conversation from the seed
	// (--conversations N); else start i replays conversation i.
	Draws bool
	// hits are each request's tokens an infinite cache serves (local
	// scope: within its conversation; global: over the whole trace).
	hits map[*Step]int
	// number is each request's number in its conversation, from 1, in
	// the trace's order (a subagent's requests where it is spawned).
	number map[*Step]int
	// branch is each subagent's number in its conversation, from 1, in
	// the trace's order.
	branch map[*Branch]int
	// Hit and In total the expected hits and input of one replay of every
	// conversation.
	Hit, In int64
}

// NewPlan returns the plan of t.
func NewPlan(t *Trace, c Clock, seed uint64, draws bool) *Plan {
	p := &Plan{Trace: t, Clock: c, Seed: seed, Draws: draws, hits: map[*Step]int{}, number: map[*Step]int{}, branch: map[*Branch]int{}}
	// Start i is conversation i in start order (file order for equal or
	// unknown starts).
	sort.SliceStable(t.Conversations, func(i, j int) bool { return t.Conversations[i].Start < t.Conversations[j].Start })
	global := NewCache()
	type at struct {
		t time.Duration
		c *Conversation
		s *Step
	}
	var all []at
	for _, c := range t.Conversations {
		n, nb := 0, 0
		var walk func(b *Branch)
		walk = func(b *Branch) {
			for i := range b.Steps {
				if s := &b.Steps[i]; s.Sub != nil {
					nb++
					p.branch[s.Sub] = nb
					walk(s.Sub)
				} else {
					n++
					p.number[s] = n
				}
			}
		}
		walk(&c.Root)
		if !c.Global {
			h, hit, in := c.HitTokens()
			for s, v := range h {
				p.hits[s] = v
			}
			p.Hit += hit
			p.In += in
			continue
		}
		for _, s := range c.Requests() {
			all = append(all, at{c.Start + s.At, c, s})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].t < all[j].t })
	for _, a := range all {
		h := global.Hit(a.s.Hash, a.s.In, a.c.BlockSize)
		p.hits[a.s] = h
		p.Hit += int64(h)
		p.In += int64(a.s.In)
	}
	return p
}

// Conversation returns the conversation start i replays.
func (p *Plan) Conversation(i int64) *Conversation {
	return p.Trace.Pick(i, p.Seed, p.Draws)
}

// Number returns request s's number in its conversation (from 1, in the
// trace's order, a subagent's requests where it is spawned): the same in
// every run, whatever order concurrent branches send in.
func (p *Plan) Number(s *Step) int { return p.number[s] }

// Branch returns subagent b's number in its conversation (from 1, in the
// trace's order; 0 for the conversation's root).
func (p *Plan) Branch(b *Branch) int { return p.branch[b] }

// Expected returns the tokens of s an infinite cache serves.
func (p *Plan) Expected(s *Step) int { return p.hits[s] }

// Blocks returns the prompt block ids of step s of the replay of c that
// start i makes: a conversation's local ids are made its own (two replays
// share nothing, as two conversations of the trace did not), global ids
// are kept.
func (p *Plan) Blocks(dst []uint64, c *Conversation, i int64, s *Step) []uint64 {
	dst = dst[:0]
	for _, id := range s.Hash {
		if !c.Global {
			id = mixID(uint64(i), id)
		}
		dst = append(dst, id)
	}
	return dst
}

func mixID(a, b uint64) uint64 {
	z := a*0x9e3779b97f4a7c15 ^ bits.RotateLeft64(b, 29) ^ 0x6a09e667f3bcc909
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// First returns the first request of c (the start's size).
func (c *Conversation) First() *Step {
	b := &c.Root
	for {
		s := &b.Steps[0]
		if s.Sub == nil {
			return s
		}
		b = s.Sub
	}
}

// StartOptions place the conversations' starts.
type StartOptions struct {
	// Count: --conversations N (Poisson starts over drawn conversations at
	// Rate); 0: the trace's conversations at their own starts.
	Count int64
	Rate  float64
	// TimeScale divides the trace's gaps; TargetRate (> 0) sets it from
	// the starts' mean rate. Start and Span cut the trace (trace time).
	TimeScale, TargetRate float64
	Start, Span           time.Duration
	// Limit and Duration cut the schedule (--num-prompts, --duration).
	Limit    int64
	Duration time.Duration
}

// Starts returns the schedule of conversation starts: an arrival per
// start, sized as its conversation's first request, and the time scale
// used.
func (p *Plan) Starts(o StartOptions) (arrival.Schedule, float64) {
	if o.Count > 0 {
		rate := o.Rate
		if !(rate > 0) {
			rate = math.Inf(1)
		}
		s := arrival.Poisson(arrival.PoissonConfig{Rate: rate, Burstiness: 1, Count: o.Count, Duration: o.Duration, Seed: p.Seed, Lengths: firstLengths{p}})
		return s, 1
	}
	var idx []int
	var first time.Duration = -1
	for i, c := range p.Trace.Conversations {
		if c.Start < o.Start || o.Span > 0 && c.Start >= o.Start+o.Span {
			continue
		}
		idx = append(idx, i)
		if first < 0 || c.Start < first {
			first = c.Start
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.Trace.Conversations[idx[a]].Start < p.Trace.Conversations[idx[b]].Start })
	scale := o.TimeScale
	if scale <= 0 {
		scale = 1
	}
	if o.TargetRate > 0 && len(idx) > 1 {
		span := p.Trace.Conversations[idx[len(idx)-1]].Start - first
		if span > 0 {
			scale = o.TargetRate / (float64(len(idx)-1) / span.Seconds())
		}
	}
	sched := func(yield func(arrival.Arrival) bool) {
		for n, i := range idx {
			if o.Limit > 0 && int64(n) >= o.Limit {
				return
			}
			c := p.Trace.Conversations[i]
			at := time.Duration(float64(c.Start-first) / scale)
			if o.Duration > 0 && at >= o.Duration {
				return
			}
			f := c.First()
			if !yield(arrival.Arrival{Index: int64(i), At: at, InputTokens: f.In, OutputTokens: f.Out, Burst: int64(i)}) {
				return
			}
		}
	}
	return sched, scale
}

// firstLengths sizes a drawn start as its conversation's first request.
type firstLengths struct{ p *Plan }

func (l firstLengths) Draw(_ *rand.Rand, i int64) (int, int) {
	f := l.p.Conversation(i).First()
	return f.In, f.Out
}

// PlanHeader is the header of an agentic run's --sessions-out: a row per
// request of every conversation started, in the trace's order.
const PlanHeader = "session,turn,branch,at_s,think_s,api_s,input_len,output_len,expected_cached"

// AppendPlanRows appends the rows of the conversation start i replays.
func (p *Plan) AppendPlanRows(b []byte, i int64) []byte {
	c := p.Conversation(i)
	c.Root.eachRequest(0, func(br *Branch, at time.Duration, s *Step) {
		b = strconv.AppendInt(b, i, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(p.number[s]), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(p.branch[br]), 10)
		for _, d := range []time.Duration{at, s.Think, s.API} {
			b = append(b, ',')
			b = strconv.AppendFloat(b, d.Seconds(), 'f', 6, 64)
		}
		for _, n := range []int{s.In, s.Out, p.hits[s]} {
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(n), 10)
		}
		b = append(b, '\n')
	})
	return b
}
