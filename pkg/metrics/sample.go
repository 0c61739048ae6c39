package metrics

import (
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Kinds of request, by what their prompt carries (the summary's per_kind).
const (
	KindText  = "text"
	KindImage = "image" // the prompt carries images
)

// Sample is one finished request's figures, derived once from the client's
// Result by From: every consumer of results (the Collector, breakdowns,
// windows, goodput, the timeline, Prometheus, the records file) reads them
// here and computes none itself. A figure that does not apply to the
// request is marked so here, once: HasLag, HasE2E, HasTTFT, HasTPOT.
//
// A Sample is filled in place and reused: TokenTimes and ITLTimes are views
// of the Result's storage, valid only during Sink.Add. Consumers must not
// keep them.
type Sample struct {
	Index int64
	Model string
	// Kind is KindImage when the prompt carried images, else KindText.
	Kind string
	// Generation marks an image generation (openai-images): it has no
	// tokens, so no TTFT, TPOT or ITL; end to end only.
	Generation bool
	// OK tells the request succeeded; otherwise ErrorClass (one of the
	// client's classes) and Error say how it failed — or Cancelled tells
	// the client cut it at its planned cut (CancelAfter, --cancel-share):
	// neither a completion nor a failure, so none of the completed
	// requests' distributions count it. Its FirstToken, TokenTimes and
	// OutputTokens are what arrived before the cut.
	OK                bool
	Cancelled         bool
	CancelAfter       time.Duration
	Status            int
	ErrorClass, Error string
	Retries           int

	// Times, as offsets from the run's start (see record.Request).
	Scheduled, Sent, FirstToken, End time.Duration
	// TokenTimes are the arrival times of the chunks that carried text, as
	// observed (the records file writes their gaps, failed or not).
	TokenTimes []time.Duration
	// ITLTimes are TokenTimes when the request's inter-token gaps count in
	// the distributions (a successful text request), else nil: its ITL
	// values are ITLTimes[i] − ITLTimes[i−1].
	ITLTimes []time.Duration

	// HasLag: the request was sent (or succeeded), so Lag applies.
	HasLag bool
	// Lag is send time minus scheduled time, at least 0.
	Lag time.Duration
	// HasE2E: E2E and E2EFromScheduled count (the request succeeded).
	HasE2E bool
	// E2E is send to the last byte (End − Sent, as observed even for a
	// failed request); E2EFromScheduled is measured from the due time.
	E2E, E2EFromScheduled time.Duration
	// HasTTFT: TTFT and TTFTFromScheduled count (a successful text
	// request).
	HasTTFT bool
	// TTFT is send to the first chunk carrying text (FirstToken − Sent,
	// as observed); TTFTFromScheduled is measured from the due time.
	TTFT, TTFTFromScheduled time.Duration
	// HasTTFO: TTFO counts (a successful text request whose answer's
	// content or tool call arrived). TTFO is send to the first chunk of the
	// answer — content or a tool call, after any reasoning; without
	// reasoning it equals TTFT.
	HasTTFO bool
	TTFO    time.Duration
	// ReasoningTokens are the answer's reasoning tokens (the server's
	// usage details, else the reasoning chunks counted; part of
	// OutputTokens).
	ReasoningTokens int
	// ToolCalls counts the answer's tool calls, ToolArgsInvalid those whose
	// arguments are not valid JSON. HasToolTTFT: ToolTTFT, send to the
	// first tool-call chunk, counts.
	ToolCalls, ToolArgsInvalid int
	HasToolTTFT                bool
	ToolTTFT                   time.Duration
	// Structured tells whether the answer was checked against
	// --response-format, and how it fared.
	Structured Structured
	// HasTTFTPer1k: TTFTPer1kPrompt counts (HasTTFT, and a prompt of at
	// least one token). TTFTPer1kPrompt is TTFT per thousand prompt tokens
	// (the server's usage when given, else the target): the prefill cost
	// compared across models.
	HasTTFTPer1k    bool
	TTFTPer1kPrompt time.Duration
	// HasTPOT: TPOT counts (HasTTFT, and more than one output token).
	HasTPOT bool
	// TPOT is the time per output token after the first, vLLM's
	// (E2E − TTFT) / (output tokens − 1).
	TPOT time.Duration

	// Tokens. InputLen and OutputLen are the schedule's targets;
	// PromptTokens and CachedTokens the server's usage (-1: not given);
	// CompletionTokens the server's usage, else the chunks counted.
	InputLen, OutputLen            int
	PromptTokens, CompletionTokens int
	CachedTokens                   int
	// OutputTokens is the output count used for throughput and TPOT.
	OutputTokens int
	// HasPromptError: the server reported prompt tokens; PromptError is
	// |prompt tokens − InputLen|, how far prompt sizing missed.
	HasPromptError bool
	PromptError    int64
	// Images are the prompt's images; Generate the images an image
	// generation asked for and Generated those it returned.
	Images, Generate, Generated int
	// Measure is what the request's backend row measures: the token
	// figures (TTFT, TPOT, ITL) apply to api.MeasureTokens only.
	// Inputs, Returned and Dims are a batch's inputs sent, the vectors or
	// scores returned and the first vector's length (record.Request).
	Measure                api.Measure
	Inputs, Returned, Dims int

	// Good: the run has an SLO (--goodput) and the request met every
	// target of it.
	Good bool

	// Session, Turn and HistoryTokens place the request in a multi-turn
	// session (Turn 0: not a session's turn; see record.Request). For a
	// later turn, Scheduled is the previous answer's end plus the think
	// time, so Lag is the turn's lag.
	Session       int64
	Turn          int
	HistoryTokens int
	// Agent places the request in an agentic conversation (record.Request).
	Agent record.AgentStep

	// Endpoint is the index of the endpoint the request went to when the
	// run has several (-1: one endpoint).
	Endpoint int

	// HTTP is the request's HTTP phases (record.Request.HTTP).
	HTTP record.Phases

	// RequestID is the X-Request-Id it was sent with ("": none;
	// record.Request.RequestID).
	RequestID string
}

// Structured is whether an answer was checked against --response-format
// (record.Request.Structured).
type Structured = int8

// The values of Structured.
const (
	StructuredUnchecked Structured = iota
	StructuredValid
	StructuredInvalid
)

// From fills s with r's figures and, when slo is set, whether r met it.
// It does not allocate; s keeps views of r's token times (see Sample).
func (s *Sample) From(r *record.Request, slo SLO) {
	ok := r.OK()
	// Token figures need a row that measures tokens and a first token: a
	// pooling answer, an image generation (and their records read back)
	// have none — absent, not zero.
	tokens := r.Measure.Tokens() && r.FirstToken > 0
	out := r.OutputTokens()
	kind := KindText
	if r.Images > 0 {
		kind = KindImage
	}
	*s = Sample{
		Index: r.Index, Model: r.Model, Kind: kind, Generation: r.Generate > 0,
		OK: ok, Status: r.Status, ErrorClass: r.ErrorClass, Error: r.Error, Retries: r.Retries,
		Cancelled: r.Cancelled, CancelAfter: r.CancelAfter,
		Scheduled: r.Scheduled, Sent: r.Sent, FirstToken: r.FirstToken, End: r.End,
		TokenTimes: r.TokenTimes,
		HasLag:     r.Sent > 0 || ok,
		Lag:        max(r.Sent-r.Scheduled, 0),
		HasE2E:     ok,
		E2E:        r.End - r.Sent, E2EFromScheduled: r.End - r.Scheduled,
		HasTTFT: ok && tokens,
		TTFT:    r.FirstToken - r.Sent, TTFTFromScheduled: r.FirstToken - r.Scheduled,
		InputLen: r.InputLen, OutputLen: r.OutputLen,
		PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, CachedTokens: r.CachedTokens,
		OutputTokens: out,
		Images:       r.Images, Generate: r.Generate, Generated: r.Generated,
		Measure: r.Measure, Inputs: r.Inputs, Returned: r.Returned, Dims: r.Dims,
		Session: r.Session, Turn: r.Turn, HistoryTokens: r.HistoryTokens, Agent: r.Agent,
		Endpoint: r.Endpoint - 1,
		HasTTFO:  ok && tokens && r.FirstOutput > 0, TTFO: r.TTFO(),
		ReasoningTokens: r.ReasoningTokens, ToolCalls: r.ToolCalls, ToolArgsInvalid: r.ToolArgsInvalid,
		HasToolTTFT: ok && r.FirstToolCall > 0, ToolTTFT: r.FirstToolCall - r.Sent,
		Structured: Structured(r.Structured),
		HTTP:       r.HTTP,
		RequestID:  r.RequestID,
	}
	if s.HasTTFT {
		prompt := r.InputLen
		if r.PromptTokens >= 0 {
			prompt = r.PromptTokens
		}
		if prompt > 0 {
			s.HasTTFTPer1k = true
			s.TTFTPer1kPrompt = time.Duration(float64(s.TTFT) * 1000 / float64(prompt))
		}
		s.ITLTimes = r.TokenTimes
		if out > 1 {
			s.HasTPOT = true
			s.TPOT = (s.E2E - s.TTFT) / time.Duration(out-1)
		}
	}
	if ok && r.PromptTokens >= 0 {
		s.HasPromptError = true
		s.PromptError = int64(r.PromptTokens - r.InputLen)
		if s.PromptError < 0 {
			s.PromptError = -s.PromptError
		}
	}
	if slo.Set() {
		s.Good = slo.met(s)
	}
}

// met reports whether s meets every target of slo: the request succeeded
// and each of its figures that applies is at most its target (a request of
// one output token has no TPOT, an image generation no TTFT, as in vLLM's
// benchmark).
func (slo SLO) met(s *Sample) bool {
	switch {
	case !s.OK:
		return false
	case s.HasTTFT && !math.IsNaN(slo.TTFT) && msOf(s.TTFT) > slo.TTFT:
		return false
	case !math.IsNaN(slo.E2EL) && msOf(s.E2E) > slo.E2EL:
		return false
	case s.HasTPOT && !math.IsNaN(slo.TPOT) && msOf(s.TPOT) > slo.TPOT:
		return false
	}
	return true
}

// Sink consumes the Sample of every finished request, on one goroutine.
// Add must not keep s or its views.
type Sink interface {
	Add(s *Sample)
}

// Fanout hands every Sample to each of its sinks, in order.
type Fanout []Sink

// Add implements Sink.
func (f Fanout) Add(s *Sample) {
	for _, k := range f {
		k.Add(s)
	}
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(*Sample)

// Add implements Sink.
func (f SinkFunc) Add(s *Sample) { f(s) }

var (
	_ Sink = (*Collector)(nil)
	_ Sink = (*Groups)(nil)
	_ Sink = (*WindowAcc)(nil)
	_ Sink = (*Goodput)(nil)
	_ Sink = (*Timeline)(nil)
	_ Sink = Fanout(nil)
)
