// Package agentic reads agentic traces — WEKA/AgentX conversations with
// subagents, TraceLab rounds, Bailian chat chains — into conversations of
// steps with prefix-block ids, and plans their closed-loop timing, purely.
package agentic

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Format is an agentic trace format.
type Format string

// The agentic formats (--trace-format).
const (
	Weka     Format = "weka"
	TraceLab Format = "tracelab"
	Bailian  Format = "bailian"
)

// ParseFormat returns the agentic format named s, and false when s names
// none (another replay format, or "" to detect).
func ParseFormat(s string) (Format, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "weka", "agentx", "kv-cache-tester":
		return Weka, true
	case "tracelab":
		return TraceLab, true
	case "bailian", "qwen-bailian":
		return Bailian, true
	}
	return "", false
}

// Conversation is one agentic conversation: its root branch of steps and
// what its ids mean.
type Conversation struct {
	// ID is the trace's name for it; Line the line (or row) it starts at.
	ID   string
	Line int
	// BlockSize is the tokens of one hash id's block.
	BlockSize int
	// Global: hash ids are shared with other conversations of the file
	// (Bailian; WEKA "hash_id_scope": "global"); else they are local to
	// the conversation and two replays of it share nothing.
	Global bool
	// Start is the conversation's start in trace time, when the trace
	// gives one (HasStart).
	Start    time.Duration
	HasStart bool
	Root     Branch
}

// Branch is a sequence of steps run one after another: the conversation
// itself or a subagent.
type Branch struct {
	// Agent names a subagent ("" for the root).
	Agent string
	Steps []Step
}

// Step is a request of a branch, or (Sub set) the spawn of a subagent.
type Step struct {
	// At is the step's time in the trace, from its branch's start.
	At time.Duration
	// Think is the client's gap since the previous response (tool time),
	// API this request's own time at the API in the trace; HasThink and
	// HasAPI tell whether the trace gave them.
	Think, API       time.Duration
	HasThink, HasAPI bool
	Model            string
	In, Out          int
	// Hash are the ids of the prompt's blocks, in order.
	Hash []uint64
	// Sub, when set, is a subagent spawned at this point: the parent's
	// next request waits for it.
	Sub *Branch
}

// Requests counts the requests of b and its subagents.
func (b *Branch) Requests() int {
	n := 0
	for i := range b.Steps {
		if s := &b.Steps[i]; s.Sub != nil {
			n += s.Sub.Requests()
		} else {
			n++
		}
	}
	return n
}

// eachRequest calls f with every request of b and its subagents in the
// trace's order: the branch it is in, its time (base plus its offset, a
// subagent's offsets counted from its spawn) and the step.
func (b *Branch) eachRequest(base time.Duration, f func(br *Branch, at time.Duration, s *Step)) {
	for i := range b.Steps {
		s := &b.Steps[i]
		if s.Sub != nil {
			s.Sub.eachRequest(base+s.At, f)
			continue
		}
		f(b, base+s.At, s)
	}
}

// Timing is how a later step's due time follows the previous one
// (--agent-timing), as kv-cache-tester names its strategies.
type Timing int

const (
	// Think: the step is due its think_time after the previous response's
	// last byte (kv-cache-tester's think-only, the default).
	Think Timing = iota
	// Original: the step is due the trace's gap between the two sends
	// after the previous send, never before the previous response ended.
	Original
	// APIScaled: due the previous request's api_time × APIScale plus the
	// think time after the previous send, never before its response ended.
	APIScaled
)

// ParseTiming parses --agent-timing.
func ParseTiming(s string) (Timing, error) {
	switch strings.ToLower(s) {
	case "", "think", "think-only":
		return Think, nil
	case "original":
		return Original, nil
	case "api-scaled", "api":
		return APIScaled, nil
	}
	return 0, fmt.Errorf("--agent-timing %q: want think, original or api-scaled", s)
}

func (t Timing) String() string {
	switch t {
	case Original:
		return "original"
	case APIScaled:
		return "api-scaled"
	}
	return "think"
}

// Clock turns a branch's trace times into replay delays: pure.
type Clock struct {
	Timing Timing
	// Scale divides every delay (--time-scale; 0 or 1: as recorded).
	Scale float64
	// APIScale multiplies api_time (APIScaled; 0: 1).
	APIScale float64
	// MaxThink caps every delay (--max-think-time; 0: no cap).
	MaxThink time.Duration
}

// Delay returns how long after the previous request step prev the step
// cur is due, and whether that is counted from prev's send (fromSent) or
// from its response's last byte. A step due from its send is never sent
// before the previous response ended (the loop is closed). Traces without
// think or API times fall back to the original gaps, as kv-cache-tester's.
func (c *Clock) Delay(prev, cur *Step) (d time.Duration, fromSent bool) {
	switch {
	case c.Timing == Think && cur.HasThink:
		d = cur.Think
	case c.Timing == APIScaled && prev.HasAPI:
		s := c.APIScale
		if s <= 0 {
			s = 1
		}
		d, fromSent = time.Duration(float64(prev.API)*s)+cur.Think, true
	default:
		d, fromSent = max(cur.At-prev.At, 0), true
	}
	return c.scale(d), fromSent
}

// Spawn returns how long after the previous request's last byte (or, for
// Original, after its send) a subagent at step cur is spawned.
func (c *Clock) Spawn(prev, cur *Step) (d time.Duration, fromSent bool) {
	if prev == nil {
		return c.scale(cur.At), true
	}
	if c.Timing == Original {
		return c.scale(max(cur.At-prev.At, 0)), true
	}
	return 0, false
}

func (c *Clock) scale(d time.Duration) time.Duration {
	if c.Scale > 0 && c.Scale != 1 {
		d = time.Duration(float64(d) / c.Scale)
	}
	if c.MaxThink > 0 && d > c.MaxThink {
		d = c.MaxThink
	}
	return d
}

// Cache is an infinite prefix cache over hash ids, as a server's: it
// holds full blocks only (a request's last id, when its input is not a
// multiple of the block size, names a partial block, which a server does
// not cache), and a request hits the leading run of its blocks already
// held (ids are chained: an id stands for its whole prefix).
type Cache struct {
	seen map[uint64]struct{}
}

// NewCache returns an empty infinite cache.
func NewCache() *Cache { return &Cache{seen: map[uint64]struct{}{}} }

// Hit returns the tokens of a request of in tokens with blocks ids that
// the cache serves, and adds its full blocks.
func (c *Cache) Hit(ids []uint64, in, block int) int {
	hit := 0
	lead := true
	for j, id := range ids {
		size := min(block, in-j*block)
		if size <= 0 {
			break
		}
		if _, ok := c.seen[id]; ok && lead {
			hit += size
		} else {
			lead = false
		}
		if size == block {
			c.seen[id] = struct{}{}
		}
	}
	// At least the last prompt token is computed, as in vLLM.
	return max(min(hit, in-1), 0)
}

// Requests lists the conversation's requests in trace time order (the
// subagents' at their spawn plus their own offsets): the order the
// infinite-cache hit rate is computed in.
func (c *Conversation) Requests() []*Step {
	type at struct {
		t time.Duration
		s *Step
	}
	var out []at
	c.Root.eachRequest(0, func(_ *Branch, t time.Duration, s *Step) { out = append(out, at{t, s}) })
	// Stable insertion by time (conversations are small).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].t < out[j-1].t; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	steps := make([]*Step, len(out))
	for i := range out {
		steps[i] = out[i].s
	}
	return steps
}

// HitTokens returns, for each request of Requests(), the tokens an
// infinite prefix cache holding every earlier request of the conversation
// serves, and their sum and the input tokens' sum.
func (c *Conversation) HitTokens() (hits map[*Step]int, hit, in int64) {
	cache := NewCache()
	hits = map[*Step]int{}
	for _, s := range c.Requests() {
		h := cache.Hit(s.Hash, s.In, c.BlockSize)
		hits[s] = h
		hit += int64(h)
		in += int64(s.In)
	}
	return hits, hit, in
}

// Skip is an unusable entry of a trace: where and why.
type Skip struct {
	Line  int
	Field string
	Err   string
}

func (s Skip) Error() string { return fmt.Sprintf("line %d: %s: %s", s.Line, s.Field, s.Err) }

// Trace is what a reader made of a file: its conversations and the
// entries it skipped.
type Trace struct {
	Format        Format
	Conversations []*Conversation
	Skips         []Skip
	SkippedCount  int
	// Requests counts the usable requests.
	Requests int
}

const maxSkipsKept = 16

func (t *Trace) skip(line int, field, why string) {
	t.SkippedCount++
	if len(t.Skips) < maxSkipsKept {
		t.Skips = append(t.Skips, Skip{Line: line, Field: field, Err: why})
	}
}

// FirstSkip returns the first skip as an error (nil when none).
func (t *Trace) FirstSkip() error {
	if len(t.Skips) == 0 {
		return nil
	}
	return t.Skips[0]
}

// ErrEmpty is a trace with no usable conversation.
var ErrEmpty = errors.New("no usable conversation")

// Pick returns which conversation the start of index i replays: with
// draws, one drawn by the seed (each start its own draw); else i itself.
func (t *Trace) Pick(i int64, seed uint64, draws bool) *Conversation {
	n := int64(len(t.Conversations))
	if !draws {
		return t.Conversations[i%n]
	}
	r := rand.New(rand.NewPCG(seed^0xa6e47, uint64(i)))
	return t.Conversations[r.Int64N(n)]
}
