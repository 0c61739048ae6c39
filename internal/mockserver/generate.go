package mockserver

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 32<<10); return &b }}

// maxPooledBody is the largest body buffer kept for reuse: a rare large
// body does not stay in memory.
const maxPooledBody = 1 << 20

// putBody returns a body buffer to the pool, unless it is large.
func putBody(bp *[]byte) {
	if cap(*bp) <= maxPooledBody {
		bodyPool.Put(bp)
	}
}

// DefaultMaxBodyBytes is the largest request body the server reads when
// Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 32 << 20

// maxBody returns the largest request body the server reads.
func (s *Server) maxBody() int64 {
	if s.cfg.MaxBodyBytes > 0 {
		return s.cfg.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

// errBodyTooLarge is a body beyond maxBody.
type errBodyTooLarge int64

func (e errBodyTooLarge) Error() string {
	return "request body larger than " + strconv.FormatInt(int64(e), 10) + " bytes"
}

// readBody reads a request body of at most limit bytes into a pooled
// buffer (a larger one, or a Content-Length that claims one, is
// errBodyTooLarge before it is read).
func readBody(r *http.Request, bp *[]byte, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errBodyTooLarge(limit)
	}
	b := (*bp)[:0]
	if r.ContentLength > 0 && int(r.ContentLength) > cap(b) {
		b = make([]byte, 0, r.ContentLength)
	}
	lr := io.LimitReader(r.Body, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		*bp = b
		if int64(len(b)) > limit {
			return nil, errBodyTooLarge(limit)
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// maxValues returns how many JSON values a request body may hold: enough
// for a prompt of token ids as long as the context (twice, and some), so
// that parsing a body costs memory in proportion to what it can ask.
func (s *Server) maxValues() int {
	if s.cfg.MaxModelLen > 0 {
		return 2*s.cfg.MaxModelLen + 1<<12
	}
	return 1 << 21
}

// countValues counts the JSON values of body, at most limit+1 (arrays'
// and objects' items: its commas, brackets and braces outside strings),
// without parsing it.
func countValues(body []byte, limit int) int {
	n, inString := 0, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ',', '[', '{':
			if n++; n > limit {
				return n
			}
		}
	}
	return n
}

// receive logs a request's arrival (Config.Arrivals), reads its body into
// bp, shows it to Config.OnRequest and applies the fault drawn for it when
// that fault answers before a response. It reports false when the request
// has been answered.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, bp *[]byte) (body []byte, fault string, ok bool) {
	return s.receiveValues(w, r, bp, s.maxValues())
}

// receiveValues is receive with a body of at most limit JSON values (-1:
// not counted: a body that is not JSON).
func (s *Server) receiveValues(w http.ResponseWriter, r *http.Request, bp *[]byte, limit int) (body []byte, fault string, ok bool) {
	if s.cfg.Arrivals != nil {
		s.cfg.Arrivals.Record()
	}
	s.requests.Add(1)
	body, err := readBody(r, bp, s.maxBody())
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "reading body: "+err.Error())
		return nil, "", false
	}
	if limit >= 0 && countValues(body, limit) > limit {
		writeError(w, http.StatusBadRequest, "BadRequestError", "request body holds more than "+strconv.Itoa(limit)+
			" JSON values: more than a prompt within the maximum context length of "+strconv.Itoa(s.cfg.MaxModelLen)+" tokens can hold")
		return nil, "", false
	}
	if s.cfg.OnRequest != nil {
		s.cfg.OnRequest(r.URL.Path, body)
	}
	fault = s.faults.next()
	if fault != "" && s.faultBeforeResponse(w, r, fault) {
		return nil, "", false
	}
	return body, fault, true
}

// accepted answers a request that could not be parsed (err) with a 400,
// and one for a model the server does not serve with vLLM's 404. It
// reports whether the request is to be served.
func (s *Server) accepted(w http.ResponseWriter, model string, err error) bool {
	if ae, ok := err.(*apiError); ok {
		writeAPIError(w, ae)
		return false
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return false
	}
	if !s.models[model] {
		writeError(w, http.StatusNotFound, "NotFoundError", "The model `"+model+"` does not exist.")
		return false
	}
	return true
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	s.serveGeneration(w, r, generationAPI{chat: chat, plan: chat,
		parse: func(body []byte) (request, error) { return s.parse(body, chat) },
		writer: func(g *generation, fault string, first time.Time) answerWriter {
			if faultWritesBody(fault, g.req.stream) {
				s.faultBody(r.Context(), w, fault, g, first)
				return nil
			}
			return g
		},
		completed: func(g *generation) {
			s.countCompleted(g)
			s.countSpec(g.id, g.out)
			s.model.count(g)
		}})
}

// admit numbers req, takes a slot for it (waiting while every one is
// busy) and builds its generation: its cached prefix, its output (planned
// — reasoning, tool calls, a format — when plan), its generated blocks
// kept in the prefix cache and its tokens held in the KV cache. done,
// which the handler defers, gives the KV cache and the slot back; ok is
// false when the request went away while it waited.
func (s *Server) admit(ctx context.Context, req request, chat, plan bool) (g generation, done func(), ok bool) {
	id := s.seq.Add(1)
	if !s.acquire(ctx) {
		return generation{}, nil, false
	}
	cached := 0
	if s.prefix != nil {
		cached = s.prefix.admit(req.prefix.blocks, req.promptTokens)
	}
	g = generation{s: s, req: req, chat: chat, out: s.outputTokens(req, id), id: id, created: time.Now().Unix(), cached: cached}
	if plan {
		g.plan()
	}
	if s.prefix != nil {
		s.prefix.keep(g.generatedBlocks())
	}
	free := s.kv.hold(req.promptTokens + g.out)
	return g, func() { free(); s.release() }, true
}

// withinContext answers a request whose prompt and max_tokens exceed the
// context length with vLLM's 400; it reports whether the request fits.
func (s *Server) withinContext(w http.ResponseWriter, req request) bool {
	if s.cfg.MaxModelLen <= 0 && req.maxTokens > maxOutputTokens {
		writeError(w, http.StatusBadRequest, "BadRequestError", "max_tokens "+strconv.Itoa(req.maxTokens)+
			" is more than the "+strconv.Itoa(maxOutputTokens)+" output tokens this server generates for a request")
		return false
	}
	// Written so that no sum overflows: max_tokens can be any int64.
	if s.cfg.MaxModelLen > 0 && (req.promptTokens > s.cfg.MaxModelLen || req.maxTokens > s.cfg.MaxModelLen-req.promptTokens) {
		writeError(w, http.StatusBadRequest, "BadRequestError",
			"This model's maximum context length is "+strconv.Itoa(s.cfg.MaxModelLen)+" tokens. However, you requested "+
				strconv.FormatUint(uint64(req.promptTokens)+uint64(req.maxTokens), 10)+" tokens ("+strconv.Itoa(req.promptTokens)+" in the messages, "+
				strconv.Itoa(req.maxTokens)+" in the completion). Please reduce the length of the messages or completion.")
		return false
	}
	return true
}

// sleepUntil waits for t; it reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	var p pacer
	defer p.stop()
	return p.until(ctx, t)
}

// pacer waits for a stream's due times, one after another, on one timer:
// a timer per token allocated a timer and its channel each (at 10,000
// streams the server's RSS was 720 MB with them, 530 MB with one timer a
// stream). stop releases it.
type pacer struct{ t *time.Timer }

// until waits for t; it reports false if ctx ended first.
func (p *pacer) until(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d) // a stopped or fired timer's channel is empty after Reset (Go 1.23 timers)
	}
	select {
	case <-p.t.C:
		return true
	case <-ctx.Done():
		p.t.Stop()
		return false
	}
}

func (p *pacer) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// generation writes one request's response.
type generation struct {
	s    *Server
	req  request
	chat bool
	out  int // output tokens: the reasoning tokens, then the answer's
	id   int64
	// reqID is the request's X-Request-Id (requestID): the response's id
	// is built on it, as vLLM's, when it is set, else on id.
	reqID   string
	created int64
	cached  int
	// reasoning is how many of the first output tokens are reasoning.
	reasoning int
	// full writes vLLM's whole chunk and message shapes (token_ids,
	// stop_reason, prompt_token_ids, the message's null fields): requests
	// to a reasoning model or with tools or a response format. Others keep
	// the server's historical subset of them, byte for byte.
	full bool
	// answer, when set, is the answer's text (a tool call's arguments, a
	// structured output), answer token j being answer[cuts[j]:cuts[j+1]];
	// otherwise each answer token is tokenText.
	answer        []byte
	cuts          []int
	tool          *toolCall
	invalidAnswer bool // the structured answer is the invalid instance
	// trace, when set, times the token writes (chunklog.go).
	trace *chunkTrace
}

const (
	tokenText     = " tok"
	reasoningText = " think"
)

// plan decides a chat (or Responses) request's reasoning tokens, tool call
// and structured answer. The reasoning comes before the answer's own
// length (outputTokens), within max_tokens.
func (g *generation) plan() {
	s, req := g.s, &g.req
	g.full = s.cfg.Reasoning.enabled() || len(req.tools) > 0 || req.format != nil
	if s.cfg.Reasoning.enabled() {
		r := s.cfg.Reasoning.Tokens.draw(s.cfg.Seed, g.id)
		g.out = min(req.maxTokens, g.out+r)
		g.reasoning = min(r, g.out)
	}
	budget := g.out - g.reasoning
	if budget <= 0 {
		return
	}
	if g.tool = s.pickTool(req, g.id); g.tool != nil {
		// A call is as long as its arguments: a token per 4 bytes or so.
		g.answer = g.tool.arguments()
		g.cuts = splitTokens(g.answer, min(budget, (len(g.answer)+3)/4))
		g.out = g.reasoning + len(g.cuts) - 1
		return
	}
	if f := req.format; f != nil {
		in := f.valid
		if g.invalidAnswer = uniform(s.cfg.Seed, g.id, streamSchemaInvalid) < s.cfg.Structured.InvalidShare; g.invalidAnswer {
			in = f.invalid
		}
		g.answer = in.padded(4 * budget)
		g.cuts = splitTokens(g.answer, budget)
		g.out = g.reasoning + len(g.cuts) - 1
	}
}

// generatedBlocks returns the prefix-cache blocks the answer completes (the
// reasoning is not part of the next turn's prompt).
func (g *generation) generatedBlocks() []uint64 {
	if g.answer == nil {
		return g.req.prefix.generated(g.out - g.reasoning)
	}
	n0 := len(g.req.prefix.blocks)
	g.req.prefix.words(g.answer)
	return g.req.prefix.blocks[n0:]
}

// head appends the common start of a chunk or response object.
func (g *generation) head(b []byte, chunk bool) []byte {
	b = append(b, `{"id":"`...)
	if g.chat {
		b = append(b, "chatcmpl-"...)
	} else {
		b = append(b, "cmpl-"...)
	}
	if g.reqID != "" {
		b = append(b, g.reqID...)
	} else {
		b = strconv.AppendInt(b, g.id, 10)
	}
	b = append(b, `","object":"`...)
	switch {
	case g.chat && chunk:
		b = append(b, "chat.completion.chunk"...)
	case g.chat:
		b = append(b, "chat.completion"...)
	default:
		b = append(b, "text_completion"...)
	}
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = strconv.AppendQuote(b, g.req.model)
	return b
}

func (g *generation) finishReason() string {
	switch {
	case g.tool != nil && g.tool.named:
		return `"stop"`
	case g.tool != nil:
		return `"tool_calls"`
	case g.out < g.req.maxTokens:
		return `"stop"`
	}
	return `"length"`
}

// sent reports whether token k is sent (include_reasoning false hides the
// reasoning tokens).
func (g *generation) sent(k int) bool { return k >= g.reasoning || !g.req.hideReasoning }

// fragment returns answer token j's text.
func (g *generation) fragment(j int) []byte { return g.answer[g.cuts[j]:g.cuts[j+1]] }

// reasoningFields returns the names the reasoning is sent under.
func (g *generation) reasoningFields() []string {
	switch g.s.cfg.Reasoning.Field {
	case ReasoningFieldContent:
		return []string{"reasoning_content"}
	case ReasoningFieldBoth:
		return []string{"reasoning", "reasoning_content"}
	}
	return []string{"reasoning"}
}

// appendChunk appends the SSE event of token k (k = -1: the chat role chunk).
func (g *generation) appendChunk(b []byte, k int) []byte {
	b = append(b, "data: "...)
	b = g.head(b, true)
	b = append(b, `,"choices":[{"index":0,`...)
	switch {
	case k < 0:
		b = append(b, `"delta":{"role":"assistant","content":""`...)
		if g.full && g.s.cfg.Reasoning.enabled() && g.s.cfg.Reasoning.Field == ReasoningFieldBoth {
			b = append(b, `,"reasoning_content":null`...) // as 0.11.1–0.15 sent it
		}
		b = append(b, '}')
	case k < g.reasoning:
		b = append(b, `"delta":{`...)
		for i, f := range g.reasoningFields() {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `"`+f+`":"`+reasoningText+`"`...)
		}
		b = append(b, '}')
	case !g.chat:
		b = append(b, `"text":"`+tokenText+`"`...)
	case g.tool != nil:
		j := k - g.reasoning
		b = append(b, `"delta":{"content":null,"tool_calls":[`...)
		if j == 0 {
			b = append(b, `{"id":"`...)
			b = append(b, g.tool.id...)
			b = append(b, `","type":"function","index":0,"function":{"name":`...)
			b = appendJSONString(b, g.tool.spec.name)
			b = append(b, "}},"...)
		}
		b = append(b, `{"index":0,"function":{"arguments":`...)
		b = appendJSONString(b, g.fragment(j))
		b = append(b, "}}]}"...)
	case g.s.cfg.ContentParts:
		b = append(b, `"delta":{"content":[{"type":"text","text":`...)
		if g.answer != nil {
			b = appendJSONString(b, g.fragment(k-g.reasoning))
		} else {
			b = append(b, `"`+tokenText+`"`...)
		}
		b = append(b, "}]}"...)
	case g.answer != nil:
		b = append(b, `"delta":{"content":`...)
		b = appendJSONString(b, g.fragment(k-g.reasoning))
		b = append(b, '}')
	default:
		b = append(b, `"delta":{"content":"`+tokenText+`"}`...)
	}
	return g.appendChoiceEnd(b, k, k == g.out-1 && g.tool == nil)
}

// appendChoiceEnd closes a chunk's choice and the chunk.
func (g *generation) appendChoiceEnd(b []byte, k int, last bool) []byte {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if last {
		b = append(b, g.finishReason()...)
		if g.full {
			b = append(b, `,"stop_reason":null`...)
		}
	} else {
		b = append(b, "null"...)
	}
	if g.full && k >= 0 {
		b = append(b, `,"token_ids":null`...)
	}
	b = append(b, "}]"...)
	if g.full && k < 0 {
		b = append(b, `,"prompt_token_ids":null`...)
	}
	return append(b, "}\n\n"...)
}

// appendFinishChunk appends a chunk with an empty delta and the finish
// reason: after a tool call's last argument fragment, as vLLM sends it, and
// after hidden reasoning that took every token.
func (g *generation) appendFinishChunk(b []byte) []byte {
	b = append(b, "data: "...)
	b = g.head(b, true)
	b = append(b, `,"choices":[{"index":0,"delta":{}`...)
	return g.appendChoiceEnd(b, g.out-1, true)
}

func (g *generation) appendUsage(b []byte) []byte {
	p, c := g.req.promptTokens, g.out
	b = append(b, `"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(p+c), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(c), 10)
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = strconv.AppendInt(b, int64(g.cached), 10)
	b = append(b, '}')
	if g.chat && g.s.cfg.Reasoning.enabled() && !g.s.cfg.Reasoning.NoUsageDetails {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, int64(g.reasoning), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendUsageChunk appends the SSE event that carries the usage, after the
// last token.
func (g *generation) appendUsageChunk(b []byte) []byte {
	b = append(b, "data: "...)
	b = g.head(b, true)
	b = append(b, `,"choices":[],`...)
	b = g.appendUsage(b)
	return append(b, "}\n\n"...)
}

// streamBuffer is how much of a stream without pauses (ITL 0) is
// buffered before it is written.
const streamBuffer = 64 << 10

// stream writes the event stream; it reports false if the client left.
// Output token k is due at first + k·ITL (each gap spread by ITLJitter:
// jitter.go), whether it is sent or not.
func (g *generation) stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool {
	es := openEventStream(w, g.trace)
	defer es.pace.stop()
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	b := (*bp)[:0]
	defer func() { *bp = b[:0] }()
	itl := g.s.cfg.ITL
	if g.chat {
		b = g.appendChunk(b, -1)
	}
	if time.Until(first) > 0 {
		// Send the headers (and the role chunk) before the first token, as
		// vLLM does, so the time to first token is the server's.
		if !es.begin(b) || !es.pace.until(ctx, first) {
			return false
		}
		b = b[:0]
	}
	due := first // token k's due time: first + its gaps (jitter.go)
	for k := range g.out {
		if itl <= 0 && len(b) >= streamBuffer {
			// Back to back: written out in pieces, so the buffer stays
			// small and a client gone or a server stopping is seen.
			if _, err := w.Write(b); err != nil || ctx.Err() != nil {
				return false
			}
			b = b[:0]
		}
		if itl > 0 && k > 0 {
			if len(b) > 0 {
				if !es.send(b) {
					return false
				}
				b = b[:0]
			}
			due = due.Add(g.s.gap(g.id, k))
			if !es.pace.until(ctx, due) {
				return false
			}
		}
		switch {
		case g.sent(k):
			b = g.appendChunk(b, k)
		case k == g.out-1:
			b = g.appendFinishChunk(b)
		}
	}
	if g.tool != nil {
		b = g.appendFinishChunk(b)
	}
	if g.req.usage {
		b = g.appendUsageChunk(b)
	}
	b = append(b, "data: [DONE]\n\n"...)
	return es.end(b, g.s.cfg.Pace == PaceExact)
}

// writeWhole writes the non-streamed response.
func (g *generation) writeWhole(w http.ResponseWriter) { writeJSON(w, g.whole()) }

// answerText returns the answer's whole text.
func (g *generation) answerText() []byte {
	if g.answer != nil {
		return g.answer
	}
	n := g.out - g.reasoning
	text := make([]byte, 0, n*len(tokenText))
	for range n {
		text = append(text, tokenText...)
	}
	return text
}

// whole returns a non-streamed response.
func (g *generation) whole() []byte {
	if g.full {
		return g.wholeFull()
	}
	b := g.head(nil, false)
	b = append(b, `,"choices":[{"index":0,`...)
	text := g.answerText()
	if g.chat {
		b = append(b, `"message":{"role":"assistant","content":`...)
		if g.s.cfg.ContentParts {
			b = append(b, `[{"type":"text","text":`...)
			b = strconv.AppendQuote(b, string(text))
			b = append(b, "}]"...)
		} else {
			b = strconv.AppendQuote(b, string(text))
		}
		b = append(b, '}')
	} else {
		b = append(b, `"text":`...)
		b = strconv.AppendQuote(b, string(text))
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = append(b, g.finishReason()...)
	b = append(b, "}],"...)
	b = g.appendUsage(b)
	return append(b, '}')
}

// wholeFull returns a non-streamed chat response in vLLM's whole shape
// (ChatCompletionResponse, ChatMessage: nulls included, tool_calls only
// when there is one).
func (g *generation) wholeFull() []byte {
	b := g.head(nil, false)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	switch {
	case g.tool != nil, g.out == g.reasoning:
		b = append(b, "null"...)
	case g.s.cfg.ContentParts:
		b = append(b, `[{"type":"text","text":`...)
		b = appendJSONString(b, g.answerText())
		b = append(b, "}]"...)
	default:
		b = appendJSONString(b, g.answerText())
	}
	b = append(b, `,"refusal":null,"annotations":null,"audio":null,"function_call":null`...)
	if g.tool != nil {
		b = append(b, `,"tool_calls":[{"id":"`...)
		b = append(b, g.tool.id...)
		b = append(b, `","type":"function","function":{"name":`...)
		b = appendJSONString(b, g.tool.spec.name)
		b = append(b, `,"arguments":`...)
		b = appendJSONString(b, g.answer)
		b = append(b, "}}]"...)
	}
	if g.s.cfg.Reasoning.enabled() {
		for _, f := range g.reasoningFields() {
			b = append(b, `,"`+f+`":`...)
			if g.reasoning == 0 || g.req.hideReasoning {
				b = append(b, "null"...)
				continue
			}
			b = append(b, '"')
			for range g.reasoning {
				b = append(b, reasoningText...)
			}
			b = append(b, '"')
		}
	} else {
		b = append(b, `,"reasoning":null`...)
	}
	b = append(b, `},"logprobs":null,"finish_reason":`...)
	b = append(b, g.finishReason()...)
	b = append(b, `,"stop_reason":null,"token_ids":null}],"service_tier":null,"system_fingerprint":null,`...)
	b = g.appendUsage(b)
	return append(b, `,"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}`...)
}
