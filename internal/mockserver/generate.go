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

// readBody reads a request body into a pooled buffer.
func readBody(r *http.Request, bp *[]byte) ([]byte, error) {
	b := (*bp)[:0]
	if r.ContentLength > 0 && int(r.ContentLength) > cap(b) {
		b = make([]byte, 0, r.ContentLength)
	}
	lr := io.LimitReader(r.Body, 256<<20)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*bp = b
			return b, nil
		}
		if err != nil {
			*bp = b
			return b, err
		}
	}
}

// receive logs a request's arrival (Config.Arrivals), reads its body into
// bp, shows it to Config.OnRequest and applies the fault drawn for it when
// that fault answers before a response. It reports false when the request
// has been answered.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, bp *[]byte) (body []byte, fault string, ok bool) {
	if s.cfg.Arrivals != nil {
		s.cfg.Arrivals.Record()
	}
	s.requests.Add(1)
	body, err := readBody(r, bp)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "reading body: "+err.Error())
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
	bp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(bp)
	body, fault, ok := s.receive(w, r, bp)
	if !ok {
		return
	}
	req, err := s.parse(body, chat)
	if !s.accepted(w, req.model, err) {
		return
	}
	if s.cfg.MaxModelLen > 0 && req.promptTokens+req.maxTokens > s.cfg.MaxModelLen {
		writeError(w, http.StatusBadRequest, "BadRequestError",
			"This model's maximum context length is "+strconv.Itoa(s.cfg.MaxModelLen)+" tokens. However, you requested "+
				strconv.Itoa(req.promptTokens+req.maxTokens)+" tokens ("+strconv.Itoa(req.promptTokens)+" in the messages, "+
				strconv.Itoa(req.maxTokens)+" in the completion). Please reduce the length of the messages or completion.")
		return
	}
	id := s.seq.Add(1)
	ctx := r.Context()
	if !s.acquire(ctx) {
		return
	}
	defer s.release()
	cached := 0
	if s.prefix != nil {
		cached = s.prefix.admit(req.prefix.blocks, req.promptTokens)
	}
	out := s.outputTokens(req, id)
	if s.prefix != nil {
		s.prefix.keep(req.prefix.generated(out))
	}
	defer s.kv.hold(req.promptTokens + out)()
	first := time.Now().Add(s.cfg.TTFT + time.Duration(req.promptTokens-cached)*s.cfg.PrefillPerToken)

	g := generation{s: s, req: req, chat: chat, out: out, id: id, created: time.Now().Unix(), cached: cached}
	if faultWritesBody(fault, req.stream) {
		s.faultBody(ctx, w, fault, &g, first)
		return
	}
	// A client that goes away (a cancelled request) stops the generation:
	// its slot is released on return, at once.
	if req.stream {
		if !g.stream(ctx, w, first) {
			s.aborted.Add(1)
			return
		}
	} else {
		if !sleepUntil(ctx, first.Add(time.Duration(max(out-1, 0))*s.cfg.ITL)) {
			s.aborted.Add(1)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(g.whole())
	}
	s.completed.Add(1)
	s.promptTokens.Add(int64(req.promptTokens))
	s.genTokens.Add(int64(out))
}

// sleepUntil waits for t; it reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// generation writes one request's response.
type generation struct {
	s       *Server
	req     request
	chat    bool
	out     int
	id      int64
	created int64
	cached  int
}

const tokenText = " tok"

// head appends the common start of a chunk or response object.
func (g *generation) head(b []byte, chunk bool) []byte {
	b = append(b, `{"id":"`...)
	if g.chat {
		b = append(b, "chatcmpl-"...)
	} else {
		b = append(b, "cmpl-"...)
	}
	b = strconv.AppendInt(b, g.id, 10)
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
	if g.out < g.req.maxTokens {
		return `"stop"`
	}
	return `"length"`
}

// appendChunk appends the SSE event of token k (k = -1: the chat role chunk).
func (g *generation) appendChunk(b []byte, k int) []byte {
	b = append(b, "data: "...)
	b = g.head(b, true)
	b = append(b, `,"choices":[{"index":0,`...)
	switch {
	case k < 0:
		b = append(b, `"delta":{"role":"assistant","content":""}`...)
	case g.chat:
		b = append(b, `"delta":{"content":"`+tokenText+`"}`...)
	default:
		b = append(b, `"text":"`+tokenText+`"`...)
	}
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if k == g.out-1 {
		b = append(b, g.finishReason()...)
	} else {
		b = append(b, "null"...)
	}
	return append(b, "}]}\n\n"...)
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
	return append(b, "}}"...)
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

// stream writes the event stream; it reports false if the client left.
func (g *generation) stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	bp := bodyPool.Get().(*[]byte)
	defer bodyPool.Put(bp)
	b := (*bp)[:0]
	defer func() { *bp = b[:0] }()
	itl := g.s.cfg.ITL
	if g.chat {
		b = g.appendChunk(b, -1)
	}
	if time.Until(first) > 0 {
		// Send the headers (and the role chunk) before the first token, as
		// vLLM does, so the time to first token is the server's.
		w.WriteHeader(http.StatusOK)
		if len(b) > 0 {
			w.Write(b)
			b = b[:0]
		}
		rc.Flush()
		if !sleepUntil(ctx, first) {
			return false
		}
	}
	for k := range g.out {
		if itl > 0 && k > 0 {
			if len(b) > 0 {
				if _, err := w.Write(b); err != nil {
					return false
				}
				b = b[:0]
				if rc.Flush() != nil {
					return false
				}
			}
			if !sleepUntil(ctx, first.Add(time.Duration(k)*itl)) {
				return false
			}
		}
		b = g.appendChunk(b, k)
	}
	if g.req.usage {
		b = g.appendUsageChunk(b)
	}
	b = append(b, "data: [DONE]\n\n"...)
	_, err := w.Write(b)
	return err == nil
}

// whole returns a non-streamed response.
func (g *generation) whole() []byte {
	b := g.head(nil, false)
	b = append(b, `,"choices":[{"index":0,`...)
	text := make([]byte, 0, g.out*len(tokenText))
	for range g.out {
		text = append(text, tokenText...)
	}
	if g.chat {
		b = append(b, `"message":{"role":"assistant","content":`...)
		b = strconv.AppendQuote(b, string(text))
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
