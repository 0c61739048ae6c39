package metrics

import (
	"encoding/json"
	"sort"
	"time"
)

// KeyAgents is the summary's agentic section (AgentsSummary).
const KeyAgents = "agents"

// MaxAgentConversations caps the conversations listed one by one in the
// summary (the distributions count every one), and MaxAgentSpans the
// steps each keeps for the report's swim-lanes.
const (
	MaxAgentConversations = 64
	MaxAgentSpans         = 256
)

// Agents accumulates the figures of agentic conversations
// (docs/AGENTS.md): per conversation its completion time (first send to
// last byte, subagents included), steps, subagents and tool time (the
// idle gaps of its branches); per step TTFT and tool wait; and the share
// of prompt tokens the server's prefix cache served against the share the
// trace's own infinite cache would (hash ids, in time order). It is a
// Part; a run without agentic steps writes none of its keys.
type Agents struct {
	Completion, Steps, Tool, StepTTFT, StepWait *Hist
	agentCounts
	live   map[int64]*agentConv
	list   []AgentConversation
	folded bool
}

// agentCounts are the agentic conversations' counts, declared once: Agents
// keeps them and its state (agentsState) writes them in place, in this
// order.
type agentCounts struct {
	Conversations, Subagents int64
	Requests, Failed         int64
	// PromptTokens, CachedTokens: the completed steps' server counts (of
	// those whose server reported cached tokens); Expected, Input: the
	// trace's infinite-cache hits and input of the same steps.
	PromptTokens, CachedTokens, Expected, Input int64
}

type agentConv struct {
	first, last                time.Duration
	steps, failed, maxBranch   int
	tool                       time.Duration
	cached, prompt, exp, input int64
	ttft                       []float64
	spans                      []AgentSpan
	// seq: the conversation's order of appearance (spans are kept for
	// the first MaxAgentConversations).
	seq int
}

// AgentSpan is one step of a conversation as the report's swim-lane draws
// it: its branch (0: the conversation, k: its k-th subagent), and when it
// was sent, its first token came (0: none) and it ended, in seconds from
// the run's start. It is written as an array [branch, sent, first, end].
type AgentSpan [4]float64

// AgentConversation is one conversation's line of the summary.
type AgentConversation struct {
	Session      int64   `json:"session"`
	Steps        int     `json:"steps"`
	Failed       int     `json:"failed,omitempty"`
	Subagents    int     `json:"subagents"`
	CompletionS  float64 `json:"completion_s"`
	ToolS        float64 `json:"tool_s"`
	TTFTP50MS    float64 `json:"ttft_p50_ms"`
	CachedShare  float64 `json:"cached_share"`
	ExpectedHit  float64 `json:"expected_hit_share"`
	StartS       float64 `json:"start_s"`
	PromptTokens int64   `json:"prompt_tokens"`
	// Spans are its first MaxAgentSpans steps (AgentSpan), in the order
	// they finished.
	Spans []AgentSpan `json:"spans,omitempty"`
}

// AgentsSummary is the summary's agents section.
type AgentsSummary struct {
	Conversations int64 `json:"conversations"`
	Requests      int64 `json:"requests"`
	Failed        int64 `json:"failed"`
	Subagents     int64 `json:"subagents"`
	// CachedShare is the server's cached share of the completed steps'
	// prompt tokens; ExpectedHitShare the trace's infinite-cache share of
	// their input.
	CachedShare      float64   `json:"cached_share"`
	ExpectedHitShare float64   `json:"expected_hit_share"`
	CompletionS      Quantiles `json:"completion_s"`
	Steps            Quantiles `json:"steps"`
	ToolS            Quantiles `json:"tool_s"`
	StepTTFTMS       Quantiles `json:"step_ttft_ms"`
	StepWaitMS       Quantiles `json:"step_wait_ms"`
	// List are the first MaxAgentConversations conversations by start.
	List []AgentConversation `json:"list,omitempty"`
}

// NewAgents returns an empty Agents.
func NewAgents() *Agents {
	return &Agents{Completion: NewHist(), Steps: NewHist(), Tool: NewHist(), StepTTFT: NewHist(), StepWait: NewHist(), live: map[int64]*agentConv{}}
}

// Key implements Part.
func (a *Agents) Key() string { return KeyAgents }

// Add implements Sink: agentic steps only.
func (a *Agents) Add(s *Sample) {
	if !s.Agent.On {
		return
	}
	c := a.live[s.Session]
	if c == nil {
		c = &agentConv{first: s.Sent, seq: len(a.live)}
		a.live[s.Session] = c
	}
	c.first = min(c.first, s.Sent)
	c.last = max(c.last, s.End)
	if len(c.spans) < MaxAgentSpans && c.seq < MaxAgentConversations {
		first := 0.0
		if s.FirstToken > 0 {
			first = s.FirstToken.Seconds()
		}
		c.spans = append(c.spans, AgentSpan{float64(s.Agent.Branch), s.Sent.Seconds(), first, s.End.Seconds()})
	}
	c.steps++
	c.maxBranch = max(c.maxBranch, s.Agent.Branch)
	a.Requests++
	if s.Agent.Waited >= 0 {
		c.tool += s.Agent.Waited
		a.StepWait.Record(s.Agent.Waited)
	}
	if !s.OK {
		c.failed++
		a.Failed++
		return
	}
	if s.HasTTFT {
		a.StepTTFT.Record(s.TTFT)
		c.ttft = append(c.ttft, float64(s.TTFT)/1e6)
	}
	if s.CachedTokens >= 0 && s.PromptTokens > 0 {
		c.cached += int64(s.CachedTokens)
		c.prompt += int64(s.PromptTokens)
		c.exp += int64(s.Agent.Expected)
		c.input += int64(s.InputLen)
	}
}

// fold turns the conversations seen into the distributions, once.
func (a *Agents) fold() {
	if a.folded {
		return
	}
	a.folded = true
	ids := make([]int64, 0, len(a.live))
	for id := range a.live {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return a.live[ids[i]].first < a.live[ids[j]].first })
	for _, id := range ids {
		c := a.live[id]
		a.Conversations++
		a.Subagents += int64(c.maxBranch)
		a.Completion.Record(max(c.last-c.first, 0))
		a.Steps.Record(time.Duration(c.steps) * time.Millisecond) // a count, kept in ms units
		a.Tool.Record(c.tool)
		a.PromptTokens += c.prompt
		a.CachedTokens += c.cached
		a.Expected += c.exp
		a.Input += c.input
		if len(a.list) < MaxAgentConversations {
			sort.Float64s(c.ttft)
			p50 := 0.0
			if len(c.ttft) > 0 {
				p50 = c.ttft[(len(c.ttft)-1)/2]
			}
			a.list = append(a.list, AgentConversation{Session: id, Steps: c.steps, Failed: c.failed, Subagents: c.maxBranch,
				CompletionS: (c.last - c.first).Seconds(), ToolS: c.tool.Seconds(), TTFTP50MS: p50,
				CachedShare: share(c.cached, c.prompt), ExpectedHit: share(c.exp, c.input), StartS: c.first.Seconds(), PromptTokens: c.prompt, Spans: c.spans})
		}
	}
	a.live = map[int64]*agentConv{}
}

func share(n, of int64) float64 {
	if of <= 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Finish implements Part.
func (a *Agents) Finish(s *Summary, _ time.Duration) {
	a.fold()
	if a.Requests == 0 {
		return
	}
	s.Agents = &AgentsSummary{Conversations: a.Conversations, Requests: a.Requests, Failed: a.Failed, Subagents: a.Subagents,
		CachedShare: share(a.CachedTokens, a.PromptTokens), ExpectedHitShare: share(a.Expected, a.Input),
		CompletionS: quantiles(a.Completion, 1e3), Steps: quantiles(a.Steps, 1), ToolS: quantiles(a.Tool, 1e3),
		StepTTFTMS: quantiles(a.StepTTFT, 1), StepWaitMS: quantiles(a.StepWait, 1), List: a.list}
}

// agentsState is Agents in its mergeable form (a shard keeps whole
// conversations: a conversation is an arrival).
type agentsState struct {
	Completion, Steps, Tool, StepTTFT, StepWait HistState
	agentCounts
	List []AgentConversation
}

// hists pairs a's distributions with their places in st.
func (a *Agents) hists(st *agentsState) []histSlot {
	return []histSlot{{"completion", a.Completion, &st.Completion}, {"steps", a.Steps, &st.Steps}, {"tool", a.Tool, &st.Tool},
		{"step_ttft", a.StepTTFT, &st.StepTTFT}, {"step_wait", a.StepWait, &st.StepWait}}
}

// State returns the part's state (merge_state.parts): nil when a saw no agentic step.
func (a *Agents) State() (json.RawMessage, error) {
	a.fold()
	if a.Requests == 0 {
		return nil, nil
	}
	st := agentsState{agentCounts: a.agentCounts, List: a.list}
	return marshalState(&st, a.hists(&st))
}

// MergeState adds a state State returned.
func (a *Agents) MergeState(raw json.RawMessage) error {
	a.fold() // the part's own conversations are listed first
	st, err := mergePartState(raw, func(st *agentsState) error {
		return checkCounts(st.Failed > st.Requests || st.CachedTokens > st.PromptTokens,
			st.Conversations, st.Subagents, st.Requests, st.Failed, st.PromptTokens, st.CachedTokens, st.Expected, st.Input)
	}, a.hists)
	if err != nil {
		return err
	}
	a.Conversations += st.Conversations
	a.Subagents += st.Subagents
	a.Requests += st.Requests
	a.Failed += st.Failed
	a.PromptTokens += st.PromptTokens
	a.CachedTokens += st.CachedTokens
	a.Expected += st.Expected
	a.Input += st.Input
	for _, c := range st.List {
		if len(a.list) < MaxAgentConversations {
			a.list = append(a.list, c)
		}
	}
	return nil
}

// Save implements Part: the state under merge_state.parts.
func (a *Agents) Save(st *MergeState) error { return saveRaw(st, a.Key(), a.State) }

// Load implements Part.
func (a *Agents) Load(c *Copy) error { return loadRaw(c, a.Key(), a.MergeState) }
