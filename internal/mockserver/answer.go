package mockserver

import (
	"context"
	"net/http"
	"time"
)

// generationAPI is one generation API's side of serving a request
// (serveGeneration).
type generationAPI struct {
	// chat and plan are admit's.
	chat, plan bool
	parse      func(body []byte) (request, error)
	// writer returns the writer of the admitted request's answer, its
	// first token due at first; nil when the fault receive drew has
	// answered it.
	writer func(g *generation, fault string, first time.Time) answerWriter
	// completed counts an answer written to its end.
	completed func(g *generation)
}

// serveGeneration serves a generation request of api. It answers a
// request that could not be parsed or that the server does not serve
// (accepted, withinContext); else it admits it (admit) and writes its
// answer (answer), its first token due the TTFT and the prefill of the
// prompt's uncached tokens after it started (got its slot), or after it
// arrived with PaceExact.
func (s *Server) serveGeneration(w http.ResponseWriter, r *http.Request, api generationAPI) {
	arrival := time.Now()
	bp := bodyPool.Get().(*[]byte)
	defer putBody(bp)
	body, fault, ok := s.receive(w, r, bp)
	if !ok {
		return
	}
	req, err := api.parse(body)
	if !s.accepted(w, req.model, err) || !s.withinContext(w, req) {
		return
	}
	g, done, ok := s.admit(r.Context(), req, api.chat, api.plan)
	if !ok {
		return
	}
	defer done()
	g.reqID = requestID(r)
	ttft := s.ttft(g.id) // spread by TTFTJitter
	start := time.Now()
	if s.cfg.Pace == PaceExact {
		start = arrival
	}
	first := start.Add(ttft + time.Duration(req.promptTokens-g.cached)*s.cfg.PrefillPerToken)
	if aw := api.writer(&g, fault, first); aw != nil && s.answer(w, r, arrival, &g, aw, first) {
		api.completed(&g)
	}
}

// lastDue returns when g's last token is due, its first being due at
// first: first + (out−1)·ITL, the gaps spread by ITLJitter.
func (g *generation) lastDue(first time.Time) time.Time {
	return g.s.tokenDue(first, g.id, g.out-1)
}

// appendParts appends a finished answer's parts (a message's content
// blocks, a response's output items), comma-separated: the reasoning's,
// when there is any, then the tool call's or the text's, when there are
// answer tokens.
func (g *generation) appendParts(b []byte, reasoning, call, text func(b []byte) []byte) []byte {
	if g.reasoning > 0 {
		b = reasoning(b)
	}
	if g.out > g.reasoning {
		if g.reasoning > 0 {
			b = append(b, ',')
		}
		if g.tool != nil {
			b = call(b)
		} else {
			b = text(b)
		}
	}
	return b
}

// answerWriter writes one API's answer to a generation: its event stream
// (it reports false if the client left) or its whole response.
type answerWriter interface {
	stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool
	writeWhole(w http.ResponseWriter)
}

// answer writes g's answer with aw: its event stream, the first token due
// at first (timed in the chunk log), or its whole response when its last
// token is due. A client that goes away (a cancelled request) stops it,
// counted aborted: answer reports false, and the handler returns at once,
// releasing the request's slot.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, arrival time.Time, g *generation, aw answerWriter, first time.Time) bool {
	ctx := r.Context()
	if g.req.stream {
		g.trace = s.cfg.Chunks.start(arrival, received(r), requestID(r))
		defer func() { s.cfg.Chunks.finish(g.trace, g.id) }()
		if aw.stream(ctx, w, first) {
			return true
		}
	} else if sleepUntil(ctx, g.lastDue(first)) {
		aw.writeWhole(w)
		return true
	}
	s.aborted.Add(1)
	return false
}

// countCompleted counts a request answered, its prompt and output tokens.
func (s *Server) countCompleted(g *generation) {
	s.completed.Add(1)
	s.promptTokens.Add(int64(g.req.promptTokens))
	s.genTokens.Add(int64(g.out))
}

// eventStream writes a server-sent event stream: a token's events go out
// in one write, flushed when the token is due and timed in the chunk log
// (chunklog.go).
type eventStream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	trace *chunkTrace
	pace  pacer
}

// openEventStream sets w's event-stream headers. The caller defers
// es.pace.stop().
func openEventStream(w http.ResponseWriter, trace *chunkTrace) eventStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	return eventStream{w: w, rc: http.NewResponseController(w), trace: trace}
}

// begin sends the headers and b, the events before the first token; it
// reports false if the client left.
func (es *eventStream) begin(b []byte) bool {
	es.w.WriteHeader(http.StatusOK)
	if len(b) > 0 {
		if _, err := es.w.Write(b); err != nil {
			return false
		}
	}
	es.rc.Flush()
	return true
}

// send writes b and flushes it: one timed write. It reports false if the
// client left.
func (es *eventStream) send(b []byte) bool {
	if _, err := es.w.Write(b); err != nil || es.rc.Flush() != nil {
		return false
	}
	es.trace.wrote()
	return true
}

// end writes the stream's last events, b. When the write is timed or the
// pace is exact, they are flushed now, not when the handler returns. It
// reports false if the client left.
func (es *eventStream) end(b []byte, exact bool) bool {
	_, err := es.w.Write(b)
	if err == nil && (es.trace != nil || exact) {
		err = es.rc.Flush()
		es.trace.wrote()
	}
	return err == nil
}

// tokenEvents are an API's events for streamTokens.
type tokenEvents struct {
	start func(b []byte) []byte        // before the first token (nil: none)
	token func(b []byte, k int) []byte // output token k's
	end   func(b []byte) []byte        // after the last token
	// fail, when set, breaks the stream after its first token: its events
	// replace the rest (an injected fault).
	fail func(b []byte) []byte
}

// streamTokens writes g's event stream: ev.start at once, token k at
// first + its k gaps (ITL each, spread by ITLJitter) in its own flushed
// write (without ITL all in one), ev.end after the last token. It reports false if the client left.
func (g *generation) streamTokens(ctx context.Context, w http.ResponseWriter, first time.Time, ev tokenEvents) bool {
	es := openEventStream(w, g.trace)
	defer es.pace.stop()
	var b []byte
	if ev.start != nil {
		b = ev.start(b)
	}
	if !es.begin(b) || !es.pace.until(ctx, first) {
		return false
	}
	b = b[:0]
	due := first // token k's: first + its gaps, spread by ITLJitter
	for k := range g.out {
		if k > 0 && (g.s.cfg.ITL > 0 || ev.fail != nil) {
			if !es.send(b) {
				return false
			}
			b = b[:0]
			if ev.fail != nil {
				break
			}
			due = due.Add(g.s.gap(g.id, k))
			if !es.pace.until(ctx, due) {
				return false
			}
		}
		b = ev.token(b, k)
	}
	if ev.fail != nil {
		_, err := w.Write(ev.fail(b))
		return err == nil
	}
	return es.end(ev.end(b), g.s.cfg.Pace == PaceExact)
}
