package metrics

import (
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Kinds of request, by what their prompt carries (the summary's per_kind).
const (
	KindText  = "text"
	KindImage = "image" // the prompt carries images
)

// Sample is one finished request: its record (record.Request, embedded:
// what was sent, when, what came back) and the figures derived from it
// once by From. Every consumer of results (the Collector, breakdowns,
// windows, goodput, the timeline, Prometheus, the records file) reads them
// here and computes none itself. A figure that does not apply to the
// request is marked so here, once: HasLag, HasE2E, HasTTFT, HasTPOT.
//
// A Sample is filled in place and reused: the record's TokenTimes (and
// ITLTimes) are views of the client's storage, valid only during
// Sink.Add. Consumers must not keep them.
type Sample struct {
	record.Request

	// Kind is KindImage when the prompt carried images, else KindText.
	Kind string
	// Generation marks an image generation (openai-images): it has no
	// tokens, so no TTFT, TPOT or ITL; end to end only.
	Generation bool
	// OK tells the request succeeded; otherwise ErrorClass (one of the
	// record's classes) and Error say how it failed — or Cancelled tells
	// the client cut it at its planned cut (CancelAfter, --cancel-share):
	// neither a completion nor a failure, so none of the completed
	// requests' distributions count it. Its FirstToken, TokenTimes and
	// OutputTokens are what arrived before the cut.
	OK bool

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
	// HasToolTTFT: ToolTTFT, send to the first tool-call chunk, counts.
	HasToolTTFT bool
	ToolTTFT    time.Duration
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

	// OutputTokens is the output count used for throughput and TPOT.
	OutputTokens int
	// HasPromptError: the server reported prompt tokens; PromptError is
	// |prompt tokens − InputLen|, how far prompt sizing missed.
	HasPromptError bool
	PromptError    int64

	// Good: the run has an SLO (--goodput) and the request met every
	// target of it.
	Good bool

	// Endpoint is the index of the endpoint the request went to when the
	// run has several (-1: one endpoint); the record's Endpoint numbers it
	// from 1.
	Endpoint int
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
		Request: *r,
		Kind:    kind, Generation: r.Generate > 0,
		OK:     ok,
		HasLag: r.Sent > 0 || ok,
		Lag:    max(r.Sent-r.Scheduled, 0),
		HasE2E: ok,
		E2E:    r.End - r.Sent, E2EFromScheduled: r.End - r.Scheduled,
		HasTTFT: ok && tokens,
		TTFT:    r.FirstToken - r.Sent, TTFTFromScheduled: r.FirstToken - r.Scheduled,
		OutputTokens: out,
		Endpoint:     r.Endpoint - 1,
		HasTTFO:      ok && tokens && r.FirstOutput > 0, TTFO: r.TTFO(),
		HasToolTTFT: ok && r.FirstToolCall > 0, ToolTTFT: r.FirstToolCall - r.Sent,
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
