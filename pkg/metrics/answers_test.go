package metrics

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// answersSamples: 4 completed requests — two with reasoning (one also
// calling a tool with broken arguments), one calling two tools, one plain
// checked against a format and found invalid — and one failed request,
// which counts nowhere.
func answersSamples() []Sample {
	ms := time.Millisecond
	return []Sample{
		{Request: record.Request{ReasoningTokens: 6}, OK: true, OutputTokens: 10, HasTTFO: true, TTFO: 50 * ms},
		{Request: record.Request{ReasoningTokens: 4, ToolCalls: 1, ToolArgsInvalid: 1}, OK: true, OutputTokens: 10, HasTTFO: true, TTFO: 70 * ms, HasToolTTFT: true, ToolTTFT: 70 * ms},
		{Request: record.Request{ToolCalls: 2, Structured: StructuredValid}, OK: true, OutputTokens: 20, HasTTFO: true, TTFO: 10 * ms, HasToolTTFT: true, ToolTTFT: 10 * ms},
		{Request: record.Request{Structured: StructuredInvalid}, OK: true, OutputTokens: 10, HasTTFO: true, TTFO: 5 * ms},
		{Request: record.Request{ReasoningTokens: 100, ToolCalls: 9}, OK: false},
	}
}

// TestAnswersFigures: the shares, counts and distributions of the answers,
// and their summary keys.
func TestAnswersFigures(t *testing.T) {
	a := NewAnswers()
	for _, s := range answersSamples() {
		a.Add(&s)
	}
	var s Summary
	a.Finish(&s, time.Second)
	got := s.Answers
	if got == nil || got.ReasoningRequests != 2 || got.ReasoningTokens != 10 || got.ReasoningShare != 10.0/50 ||
		got.ToolRequests != 2 || got.ToolCallShare != 0.5 || got.ToolCalls != 3 || *got.ToolArgsValidShare != 2.0/3 ||
		got.StructuredChecked != 2 || *got.StructuredValidShare != 0.5 {
		t.Fatalf("answers %+v", got)
	}
	if s.TTFO.Count != 4 || s.TTFO.Max != 70 || s.ToolTTFT.Count != 2 {
		t.Errorf("TTFO %+v, tool-call TTFT %+v", s.TTFO, s.ToolTTFT)
	}
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"mean_ttfo_ms":`, `"p99_tool_call_ttft_ms":`, `"reasoning_share":0.2`, `"tool_call_share":0.5`, `"structured_valid_share":0.5`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("summary lacks %s: %s", k, b)
		}
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil || back.Answers == nil || *back.Answers.ToolArgsValidShare != *got.ToolArgsValidShare || back.TTFO.Mean != s.TTFO.Mean {
		t.Errorf("read back: %v %+v", err, back.Answers)
	}
}

// TestAnswersAbsentWhenNothingSeen: a run of plain answers writes no key
// of its own (TTFO equals TTFT then) and no merge state.
func TestAnswersAbsentWhenNothingSeen(t *testing.T) {
	a := NewAnswers()
	a.Add(&Sample{OK: true, OutputTokens: 5, HasTTFO: true, TTFO: time.Millisecond})
	var s Summary
	a.Finish(&s, time.Second)
	st, err := a.State()
	b, _ := json.Marshal(&s)
	if s.Answers != nil || st != nil || err != nil || bytes.Contains(b, []byte("ttfo")) {
		t.Errorf("answers %+v, state %s %v, summary %s", s.Answers, st, err, b)
	}
}

// TestAnswersMergeExactly: the parts of two copies merged through their
// states give the figures of one part that saw every sample; a state that
// contradicts itself is refused.
func TestAnswersMergeExactly(t *testing.T) {
	all, x, y := NewAnswers(), NewAnswers(), NewAnswers()
	for i, s := range answersSamples() {
		all.Add(&s)
		part := x
		if i%2 == 1 {
			part = y
		}
		part.Add(&s)
	}
	merged := NewParts(PartsConfig{SLO: NoSLO})
	for _, p := range []*Answers{x, y} {
		var st MergeState
		if err := SaveParts([]Part{p}, &st); err != nil {
			t.Fatal(err)
		}
		if err := MergeParts(merged, &Copy{Name: "copy", State: &st}); err != nil {
			t.Fatal(err)
		}
	}
	var want, got Summary
	FinishParts(NewParts(PartsConfig{SLO: NoSLO}), &want, time.Second) // the other parts', empty
	all.Finish(&want, time.Second)
	FinishParts(merged, &got, time.Second)
	wb, _ := json.Marshal(&want)
	gb, _ := json.Marshal(&got)
	if !bytes.Equal(wb, gb) {
		t.Errorf("merged\n%s\nwant\n%s", gb, wb)
	}
	bad := map[string]json.RawMessage{"answers": json.RawMessage(`{"ToolCalls":1,"ToolArgsInvalid":2,"ttfo":{"count":0},"tool_call_ttft":{"count":0}}`)}
	if err := MergeParts(NewParts(PartsConfig{SLO: NoSLO}), &Copy{State: &MergeState{Parts: bad}}); err == nil {
		t.Error("a state with more invalid tool calls than calls was merged")
	}
	if err := MergeParts(NewParts(PartsConfig{SLO: NoSLO}), &Copy{State: &MergeState{Parts: map[string]json.RawMessage{"future": nil}}}); err == nil {
		t.Error("an unknown part was merged")
	}
}

// TestPartStatesCheckTheirCounts: the agents' and the answers' states
// refuse a negative count and counts that contradict each other.
func TestPartStatesCheckTheirCounts(t *testing.T) {
	bad := map[string][2]string{ // a negative count; counts that contradict each other
		"agents":  {`{"Requests":-1}`, `{"Requests":1,"Failed":2}`},
		"answers": {`{"ReasoningTokens":-5}`, `{"Completed":1,"ToolRequests":2}`},
	}
	for name, part := range map[string]stateMerger{"agents": NewAgents(), "answers": NewAnswers()} {
		for i, want := range []string{"a negative count", "counts that contradict each other"} {
			if err := part.MergeState(json.RawMessage(bad[name][i])); err == nil || err.Error() != want {
				t.Errorf("%s: %s merged with error %v, want %q", name, bad[name][i], err, want)
			}
		}
	}
}
