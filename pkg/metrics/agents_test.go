package metrics

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// agentSample is a completed agentic step of conversation session.
func agentSample(session int64, branch int, sent, ttft, end, waited time.Duration, prompt, cached, expected int) *Sample {
	return &Sample{Request: record.Request{Sent: sent, FirstToken: sent + ttft, End: end, Session: session, Turn: 1, InputLen: prompt, PromptTokens: prompt, CachedTokens: cached, Agent: record.AgentStep{On: true, Branch: branch, Waited: waited, Expected: expected}}, OK: true, HasTTFT: true, TTFT: ttft}
}

// TestAgentsPart: a conversation's completion runs from its first send to
// its last byte, subagents included; tool time sums its branches' waits;
// the cached share is the server's over the trace's; a copy's state merges
// into the same figures; other requests are not counted.
func TestAgentsPart(t *testing.T) {
	ms := time.Millisecond
	steps := []*Sample{
		agentSample(0, 0, 0, 10*ms, 100*ms, -1, 1000, 0, 0),
		agentSample(0, 1, 120*ms, 5*ms, 200*ms, -1, 500, 0, 0),
		agentSample(0, 1, 250*ms, 5*ms, 300*ms, 50*ms, 600, 480, 480),
		agentSample(0, 0, 400*ms, 8*ms, 500*ms, 300*ms, 1200, 960, 1000),
		agentSample(7, 0, 50*ms, 12*ms, 150*ms, -1, 800, 0, 0),
	}
	whole := NewAgents()
	a, b := NewAgents(), NewAgents()
	for _, s := range steps {
		whole.Add(s)
		if s.Session == 0 {
			a.Add(s)
		} else {
			b.Add(s)
		}
	}
	whole.Add(&Sample{Request: record.Request{Session: 3}, OK: true}) // not an agentic step
	var sw Summary
	whole.Finish(&sw, time.Second)
	ag := sw.Agents
	if ag == nil || ag.Conversations != 2 || ag.Requests != 5 || ag.Subagents != 1 {
		t.Fatalf("agents %+v", ag)
	}
	if ag.CompletionS.Max != 0.5 || ag.ToolS.Max != 0.35 || ag.Steps.Max != 4 {
		t.Errorf("completion %+v, tool %+v, steps %+v", ag.CompletionS, ag.ToolS, ag.Steps)
	}
	if want := 1440.0 / 4100; math.Abs(ag.CachedShare-want) > 1e-12 || math.Abs(ag.ExpectedHitShare-1480.0/4100) > 1e-12 {
		t.Errorf("cached %v expected %v", ag.CachedShare, ag.ExpectedHitShare)
	}
	if len(ag.List) != 2 || ag.List[0].Session != 0 || len(ag.List[0].Spans) != 4 || ag.List[0].Spans[1] != (AgentSpan{1, 0.12, 0.125, 0.2}) {
		t.Errorf("list %+v", ag.List)
	}
	// Merge two copies' states into a fresh part: the same figures.
	m := NewAgents()
	for _, p := range []*Agents{a, b} {
		var s Summary
		p.Finish(&s, time.Second)
	}
	mergeStates(t, m, a, b)
	var sm Summary
	m.Finish(&sm, time.Second)
	got, _ := json.Marshal(sm.Agents)
	want, _ := json.Marshal(sw.Agents)
	if string(got) != string(want) {
		t.Errorf("merged:\n%s\nwhole:\n%s", got, want)
	}
	if err := m.MergeState(json.RawMessage(`{"Requests":1,"Failed":2}`)); err == nil {
		t.Error("a state with more failures than requests merged")
	}
	var none Summary
	NewAgents().Finish(&none, time.Second)
	if none.Agents != nil {
		t.Error("a run without agentic steps has an agents section")
	}
}
