// Package record is the one record of a request: what was sent, when,
// what came back and each token's time (Request), with the error classes a
// failed one is put in. The client fills it, the figures are derived from
// it, and the records files are written from it and read back into it.
package record

import (
	"encoding/json"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// Request is what was observed of one request: what was sent, when, what
// came back and each token's time. The client fills it (pkg/client), the
// figures are derived from it (pkg/metrics), and its codecs write and read
// it. Times are offsets from the run's epoch, so they compare with
// scheduled offsets.
type Request struct {
	Index int64
	Model string
	// Scheduled is when the request was due; Sent when it was handed to the
	// transport; FirstToken when the first chunk carrying text arrived (0
	// if none did); End when the last byte arrived or the request failed.
	Scheduled, Sent, FirstToken, End time.Duration
	// RequestID is the X-Request-Id the request was sent with
	// (Config.RequestIDPrefix; "": none).
	RequestID string
	// TokenTimes holds the arrival time of every chunk that carried text.
	TokenTimes []time.Duration
	// InputLen and OutputLen are the target sizes; Images the input images.
	InputLen, OutputLen, Images int
	// Generate is the number of images an image-generation request asks
	// for (0: a text request, with tokens); Generated those the response
	// held. Image generations have no tokens: no TTFT, ITL or TPOT.
	Generate, Generated int
	// PromptTokens is the server's usage.prompt_tokens (-1 when not given);
	// CompletionTokens is usage.completion_tokens, else the chunks counted.
	PromptTokens, CompletionTokens int
	// OutputFrom says where CompletionTokens came from when the server
	// did not report it: OutputChunks, OutputText or OutputRequested (""
	// the server's count). Not written to the records: the summary counts
	// them (output_tokens_from).
	OutputFrom string
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (-1 when
	// not given): prompt tokens served from the server's prefix cache.
	CachedTokens int
	// Status is the HTTP status (0 when no response arrived).
	Status int
	// ErrorClass is empty for a successful request, else one of the Err*
	// classes; Error is the message (truncated, never holding secrets).
	ErrorClass string
	Error      string
	// Retries counts extra attempts made for this request.
	Retries int
	// CancelAfter is the request's planned cut (Request.CancelAfter; 0:
	// none). Cancelled tells the client cut it there before it ended: not
	// a failure (ErrorClass stays empty), and not a completion; what
	// arrived before the cut (FirstToken, TokenTimes, CompletionTokens)
	// is kept, End is the cut. A request that ended before its cut is a
	// normal completion (or failure). Compare ErrCanceled: the run was
	// stopped under the request.
	CancelAfter time.Duration
	Cancelled   bool
	// Session, Turn and HistoryTokens place a request in a multi-turn
	// session (Turn 0: no session): the session's index, the turn's
	// number from 1, and the tokens of the history the request carries.
	Session       int64
	Turn          int
	HistoryTokens int
	// Agent places a request in an agentic conversation (Session is the
	// conversation's start, Turn the step's number; On false: not one).
	Agent AgentStep
	// Endpoint is the number (from 1) of the endpoint the request went to
	// when the run has several (--base-url given more than once); 0 with
	// one. metrics.Sample.Endpoint is its index (from 0).
	Endpoint int
	// KeepText asks the client to keep the text received (set after Reset,
	// before Do: only session turns need it); Text is the answer's text,
	// Reasoning the reasoning's (each at most MaxKeptText bytes).
	KeepText  bool
	Text      []byte
	Reasoning []byte
	// FirstOutput is when the first chunk of the answer — content or a
	// tool call, not reasoning — arrived (0 if none): time to first
	// output token. Without reasoning it equals FirstToken.
	FirstOutput time.Duration
	// ReasoningChunks counts the chunks that carried reasoning only;
	// ReasoningTokens is the server's usage.completion_tokens_details.
	// reasoning_tokens when given, else those chunks. Reasoning tokens are
	// part of CompletionTokens.
	ReasoningChunks, ReasoningTokens int
	// Calls are the tool calls of the answer (at most MaxToolCalls, their
	// arguments at most MaxToolArgs bytes in all); ToolCalls counts them
	// and ToolArgsInvalid those whose arguments are not valid JSON (or were
	// cut at the bound). FirstToolCall is when the first tool-call chunk
	// arrived (0 if none).
	Calls                      []ToolCall
	ToolCalls, ToolArgsInvalid int
	FirstToolCall              time.Duration
	// Structured tells whether the answer was checked against the
	// response format (AnswerOptions.Check): 0 not checked, 1 valid, 2 not.
	Structured int8
	// HTTP is the last attempt's HTTP phases (Config.HTTPPhases).
	HTTP Phases
	// ResponseID is the Responses API's id of the answer (kept with the
	// text: a session chains its next turn to it).
	ResponseID string
	// Measure is what the request's backend row measures (set by Do):
	// token figures apply to MeasureTokens only.
	Measure api.Measure
	// Inputs is the inputs a batching row's request sent (Backend.Batch:
	// texts, or a query's documents); Returned the vectors or scores its
	// answer held, counted (never kept), and Dims the length of its first
	// vector (0 for scores).
	Inputs, Returned, Dims int
}

// ToolCall is one tool call of an answer.
type ToolCall struct {
	Index    int
	ID, Name string
	Args     []byte
	// Cut tells the arguments went past MaxToolArgs and were not kept whole.
	Cut bool
}

// Bounds of what a response may make the client keep.
const (
	MaxKeptText  = 4 << 20   // Text and Reasoning, each
	MaxToolCalls = 64        // tool calls of one answer
	MaxToolArgs  = 256 << 10 // their arguments, all together
)

// Reset clears r for reuse, keeping its storage.
func (r *Request) Reset() {
	tt, text, reasoning, calls := r.TokenTimes[:0], r.Text[:0], r.Reasoning[:0], r.Calls[:0]
	*r = Request{TokenTimes: tt, Text: text, Reasoning: reasoning, Calls: calls, PromptTokens: -1, CachedTokens: -1}
}

// AppendText appends answer text when the text is kept, up to MaxKeptText.
func (r *Request) AppendText(t []byte) {
	if r.KeepText && len(t) > 0 {
		r.Text = appendBounded(r.Text, t, MaxKeptText)
	}
}

// AppendReasoning appends reasoning text when the text is kept.
func (r *Request) AppendReasoning(t []byte) {
	if r.KeepText && len(t) > 0 {
		r.Reasoning = appendBounded(r.Reasoning, t, MaxKeptText)
	}
}

func appendBounded(b, t []byte, limit int) []byte {
	return append(b, t[:min(len(t), max(limit-len(b), 0))]...)
}

// ToolCallAt returns the call of index idx, starting it (with its id and
// name) when it is new; nil past MaxToolCalls.
func (r *Request) ToolCallAt(idx int, id, name []byte) *ToolCall {
	var call *ToolCall
	for i := range r.Calls {
		if r.Calls[i].Index == idx {
			call = &r.Calls[i]
		}
	}
	if call == nil {
		if len(r.Calls) >= MaxToolCalls {
			return nil
		}
		if len(r.Calls) < cap(r.Calls) {
			r.Calls = r.Calls[:len(r.Calls)+1]
			c := &r.Calls[len(r.Calls)-1]
			*c = ToolCall{Index: idx, Args: c.Args[:0]}
		} else {
			r.Calls = append(r.Calls, ToolCall{Index: idx})
		}
		call = &r.Calls[len(r.Calls)-1]
	}
	if len(id) > 0 && call.ID == "" {
		call.ID = string(id)
	}
	if len(name) > 0 && call.Name == "" {
		call.Name = string(name)
	}
	return call
}

// AddArgs appends an argument fragment to c, the answer's calls having
// args bytes of arguments so far; past MaxToolArgs the call is cut. It
// returns the new total.
func (c *ToolCall) AddArgs(a []byte, args int) int {
	if args+len(a) > MaxToolArgs {
		c.Cut = true
		return args
	}
	c.Args = append(c.Args, a...)
	return args + len(a)
}

// ToolArgsBytes is the bytes of arguments the answer's calls hold.
func (r *Request) ToolArgsBytes() int {
	n := 0
	for i := range r.Calls {
		n += len(r.Calls[i].Args)
	}
	return n
}

// CountReasoning sets the reasoning tokens of a whole answer whose usage
// gave none (or 0) to count(), the client's count of its reasoning text
// (called only then), at most the completion tokens when those are known:
// the reasoning is part of them.
func (r *Request) CountReasoning(count func() int) {
	if r.ReasoningTokens > 0 {
		return
	}
	counted := count()
	if counted <= 0 {
		return
	}
	if r.CompletionTokens > 0 {
		counted = min(counted, r.CompletionTokens)
	}
	r.ReasoningTokens = counted
}

// CountToolCalls counts the answer's tool calls and those whose arguments
// are not valid JSON.
func (r *Request) CountToolCalls() {
	r.ToolCalls, r.ToolArgsInvalid = len(r.Calls), 0
	for i := range r.Calls {
		if c := &r.Calls[i]; c.Cut || !json.Valid(c.Args) {
			r.ToolArgsInvalid++
		}
	}
}

// ClearAttempt forgets what a failed attempt observed before a retry,
// keeping the request's identity, its first send time and Retries.
func (r *Request) ClearAttempt() {
	r.FirstToken, r.End = 0, 0
	r.TokenTimes = r.TokenTimes[:0]
	r.Text, r.Reasoning, r.Calls = r.Text[:0], r.Reasoning[:0], r.Calls[:0]
	r.FirstOutput, r.FirstToolCall = 0, 0
	r.ReasoningChunks, r.ReasoningTokens, r.ToolCalls, r.ToolArgsInvalid, r.Structured = 0, 0, 0, 0, 0
	r.ResponseID = ""
	r.Returned, r.Dims = 0, 0
	r.PromptTokens, r.CompletionTokens, r.CachedTokens, r.OutputFrom = -1, 0, -1, ""
	r.Status, r.ErrorClass, r.Error = 0, "", ""
}

// OK reports whether the request succeeded: it did not fail and was not
// cancelled.
func (r *Request) OK() bool { return r.ErrorClass == "" && !r.Cancelled }

// TTFT is the time from send to the first chunk carrying text (for a
// non-streamed request, to the whole response).
func (r *Request) TTFT() time.Duration { return r.FirstToken - r.Sent }

// TTFO is the time from send to the first chunk of the answer — content or
// a tool call, after any reasoning (0 when none arrived).
func (r *Request) TTFO() time.Duration {
	if r.FirstOutput == 0 {
		return 0
	}
	return r.FirstOutput - r.Sent
}

// E2E is the time from send to the last byte.
func (r *Request) E2E() time.Duration { return r.End - r.Sent }

// Lag is how late the request was sent: send time minus scheduled time.
func (r *Request) Lag() time.Duration { return r.Sent - r.Scheduled }

// CountedOutput sets the output tokens to n, counted by the client (from:
// OutputChunks, OutputText or OutputRequested) as the server gave none.
func (r *Request) CountedOutput(n int, from string) { r.CompletionTokens, r.OutputFrom = n, from }

// OutputTokens is the number of generated tokens used for throughput and
// TPOT: the server's count when given, else the chunks counted.
func (r *Request) OutputTokens() int { return r.CompletionTokens }

// Where a request's output tokens were counted when the server gave no
// count (Request.OutputFrom).
const (
	OutputChunks    = "chunks"    // the stream's chunks that carried output
	OutputText      = "text"      // the answer's words, or --tokenizer's tokens
	OutputRequested = "requested" // a whole answer without a count: the length asked for
)

// Error classes of failed requests.
const (
	ErrConnect  = "connect"  // no connection, or closed by the server without a byte of response
	ErrTimeout  = "timeout"  // --request-timeout or --stall-timeout expired
	ErrHTTP4xx  = "http_4xx" // the server refused the request with a 4xx (not 429)
	ErrHTTP429  = "http_429" // the server asked to slow down
	ErrHTTP5xx  = "http_5xx" // the server failed (a 5xx, or a 5xx error object in a stream)
	ErrReset    = "reset"    // the connection broke after the response started
	ErrProtocol = "protocol" // not a valid OpenAI response or stream, or an unexpected status
	ErrCanceled = "canceled" // the run was stopped while the request was in flight (not Request.Cancelled: a planned cut)
	ErrInternal = "internal" // a bug in fineserve-gen: the request's work panicked (set by the runner)
)

// ErrorClasses lists every class, in report order.
var ErrorClasses = []string{ErrConnect, ErrTimeout, ErrHTTP4xx, ErrHTTP429, ErrHTTP5xx, ErrReset, ErrProtocol, ErrCanceled, ErrInternal}

// AgentStep is a request's place in an agentic conversation
// (docs/AGENTS.md).
type AgentStep struct {
	// On: the request is a step of an agentic conversation.
	On bool
	// Branch is 0 for the conversation's own steps, k for its k-th
	// subagent's (numbered as they are spawned).
	Branch int
	// Waited is the idle time before the step was sent, as observed: from
	// the branch's previous response's last byte to this send (the tool
	// time, its lag included); -1 for a branch's first step.
	Waited time.Duration
	// Expected is the prompt tokens the trace's infinite prefix cache
	// serves for this step.
	Expected int
}

// Phases is how one attempt's HTTP exchange went, as AIPerf's HTTP trace
// metrics split it (the client's --http-phases): connecting (the dial, name
// resolution included), the TLS handshake, writing the request, and
// waiting from the end of the write to the first byte of the response.
// On a pooled keep-alive connection (Reused) there was no connect and no
// handshake: both are 0. A phase the attempt never reached is 0 too.
type Phases struct {
	// Measured tells the phases were timed (the client's --http-phases): without
	// it the other fields mean nothing.
	Measured bool
	Reused   bool
	Connect  time.Duration
	TLS      time.Duration
	Write    time.Duration
	Wait     time.Duration
}
