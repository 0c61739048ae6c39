package metrics

import (
	"encoding/json"
	"time"
)

// Answers accumulates what the answers held beyond their timing, for
// reasoning models, tool calls and structured output: time to first output
// token (TTFO: the first content or tool-call token, after any reasoning),
// reasoning tokens, tool calls and whether their arguments parse, time to
// the first tool-call token, and structured outputs that validate. It is a
// Part; a run that saw none of these writes none of its keys.
type Answers struct {
	TTFO, ToolTTFT *Hist
	answerCounts
}

// answerCounts are the answers' counts, declared once: Answers keeps them
// and its state (answersState) writes them in place, in this order.
type answerCounts struct {
	// Completed counts the completed requests; OutputTokens their output
	// tokens (reasoning included, as servers count them).
	Completed, OutputTokens int64
	// ReasoningRequests are the completed requests with reasoning tokens;
	// ReasoningTokens those tokens.
	ReasoningRequests, ReasoningTokens int64
	// ToolRequests are the completed requests that called a tool;
	// ToolCalls their calls, ToolArgsInvalid those whose arguments did not
	// parse as JSON.
	ToolRequests, ToolCalls, ToolArgsInvalid int64
	// StructuredChecked are the completed requests whose answer was checked
	// against --response-format; StructuredInvalid those that failed.
	StructuredChecked, StructuredInvalid int64
}

// AnswersSummary is the summary's view of Answers: flat keys, each absent
// when its part of the answers was not seen (see Summary.Answers).
type AnswersSummary struct {
	ReasoningRequests int64   `json:"reasoning_requests,omitempty"`
	ReasoningTokens   int64   `json:"total_reasoning_tokens,omitempty"`
	ReasoningShare    float64 `json:"reasoning_share,omitempty"`
	ToolRequests      int64   `json:"tool_call_requests,omitempty"`
	ToolCallShare     float64 `json:"tool_call_share,omitempty"`
	ToolCalls         int64   `json:"tool_calls,omitempty"`
	// ToolArgsValidShare is written whenever a tool was called (0 is a
	// figure then), as StructuredValidShare is whenever answers were
	// checked.
	ToolArgsValidShare   *float64 `json:"tool_args_valid_share,omitempty"`
	StructuredChecked    int64    `json:"structured_checked,omitempty"`
	StructuredValidShare *float64 `json:"structured_valid_share,omitempty"`
}

// NewAnswers returns an empty Answers.
func NewAnswers() *Answers { return &Answers{TTFO: NewHist(), ToolTTFT: NewHist()} }

// Key implements Part.
func (a *Answers) Key() string { return "answers" }

// Add implements Sink: completed requests only.
func (a *Answers) Add(s *Sample) {
	if !s.OK {
		return
	}
	a.Completed++
	a.OutputTokens += int64(s.OutputTokens)
	if s.ReasoningTokens > 0 {
		a.ReasoningRequests++
		a.ReasoningTokens += int64(s.ReasoningTokens)
	}
	if s.HasTTFO {
		a.TTFO.Record(s.TTFO)
	}
	if s.ToolCalls > 0 {
		a.ToolRequests++
		a.ToolCalls += int64(s.ToolCalls)
		a.ToolArgsInvalid += int64(s.ToolArgsInvalid)
		if s.HasToolTTFT {
			a.ToolTTFT.Record(s.ToolTTFT)
		}
	}
	if s.Structured != StructuredUnchecked {
		a.StructuredChecked++
		if s.Structured == StructuredInvalid {
			a.StructuredInvalid++
		}
	}
}

// seen reports whether a saw anything of its own: reasoning, a tool call
// or a checked structured answer. TTFO alone equals TTFT: not written.
func (a *Answers) seen() bool {
	return a.ReasoningRequests > 0 || a.ToolRequests > 0 || a.StructuredChecked > 0
}

// Finish implements Part.
func (a *Answers) Finish(s *Summary, _ time.Duration) {
	if !a.seen() {
		return
	}
	share := func(n, of int64) float64 {
		if of <= 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	as := &AnswersSummary{ReasoningRequests: a.ReasoningRequests, ReasoningTokens: a.ReasoningTokens,
		ReasoningShare: share(a.ReasoningTokens, a.OutputTokens), ToolRequests: a.ToolRequests,
		ToolCallShare: share(a.ToolRequests, a.Completed), ToolCalls: a.ToolCalls, StructuredChecked: a.StructuredChecked}
	if a.ToolCalls > 0 {
		v := share(a.ToolCalls-a.ToolArgsInvalid, a.ToolCalls)
		as.ToolArgsValidShare = &v
	}
	if a.StructuredChecked > 0 {
		v := share(a.StructuredChecked-a.StructuredInvalid, a.StructuredChecked)
		as.StructuredValidShare = &v
	}
	s.Answers = as
	s.TTFO, s.ToolTTFT = a.TTFO.Dist(), a.ToolTTFT.Dist()
	if a.ReasoningRequests > 0 || a.ToolRequests > 0 { // TTFO differs from TTFT: plotted
		if cdf := CDF(a.TTFO); cdf != nil {
			if s.LatencyCDFs == nil {
				s.LatencyCDFs = map[string][][2]float64{}
			}
			s.LatencyCDFs["ttfo"] = cdf
		}
	}
}

// answersState is Answers in its mergeable form.
type answersState struct {
	TTFO     HistState `json:"ttfo"`
	ToolTTFT HistState `json:"tool_call_ttft"`
	answerCounts
}

// hists pairs a's distributions with their places in st.
func (a *Answers) hists(st *answersState) []histSlot {
	return []histSlot{{"ttfo", a.TTFO, &st.TTFO}, {"tool_call_ttft", a.ToolTTFT, &st.ToolTTFT}}
}

// State returns the part's state (merge_state.parts): nil when a saw nothing of its own.
func (a *Answers) State() (json.RawMessage, error) {
	if !a.seen() {
		return nil, nil
	}
	st := answersState{answerCounts: a.answerCounts}
	return marshalState(&st, a.hists(&st))
}

// MergeState adds a state State returned.
func (a *Answers) MergeState(raw json.RawMessage) error {
	st, err := mergePartState(raw, func(st *answersState) error {
		contradict := st.ToolArgsInvalid > st.ToolCalls || st.StructuredInvalid > st.StructuredChecked ||
			st.ReasoningRequests > st.Completed || st.ToolRequests > st.Completed
		return checkCounts(contradict, st.Completed, st.OutputTokens, st.ReasoningRequests, st.ReasoningTokens, st.ToolRequests,
			st.ToolCalls, st.ToolArgsInvalid, st.StructuredChecked, st.StructuredInvalid)
	}, a.hists)
	if err != nil {
		return err
	}
	a.Completed += st.Completed
	a.OutputTokens += st.OutputTokens
	a.ReasoningRequests += st.ReasoningRequests
	a.ReasoningTokens += st.ReasoningTokens
	a.ToolRequests += st.ToolRequests
	a.ToolCalls += st.ToolCalls
	a.ToolArgsInvalid += st.ToolArgsInvalid
	a.StructuredChecked += st.StructuredChecked
	a.StructuredInvalid += st.StructuredInvalid
	return nil
}

// Save implements Part: the state under merge_state.parts.
func (a *Answers) Save(st *MergeState) error { return saveRaw(st, a.Key(), a.State) }

// Load implements Part.
func (a *Answers) Load(c *Copy) error { return loadRaw(c, a.Key(), a.MergeState) }
