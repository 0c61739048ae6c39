package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// sessionSender runs one multi-turn session per arrival on the
// dispatcher's worker: the arrival is the session's first turn, due at its
// scheduled time; each later turn is due at the previous answer's last
// byte plus its think time (closed loop), and carries the history: every
// earlier user message and the answer's text as received.
type sessionSender struct {
	base *sender
	plan session.Config
	// start is the run's epoch; stop ends the run (no new turn is sent
	// once it is done).
	start time.Time
	stop  context.Context
	// slots bounds the requests in flight (--max-concurrency; nil: no
	// bound): the dispatcher's own limit bounds live sessions.
	slots chan struct{}
	// limit is the most tokens (history, new message and completion) a
	// turn may have; a turn above it ends its session.
	limit           int
	continueOnError bool
	chat            bool
	// items: tool calls and results go back as input items (the
	// Responses API); turns: what the history carries besides messages.
	items bool
	// blocks: answers and tool results go back as Anthropic's content
	// blocks.
	blocks bool
	turns  TurnOptions
	// conv gives later turns' user messages with --multi-turn (nil:
	// synthetic text).
	conv *prompt.Conversations
	// offer is told of each later turn when it is due (the monitor's
	// Offer; nil: none).
	offer func(*arrival.Arrival)

	// inFlight and maxIn count the requests in flight (the dispatcher's
	// own count is of live sessions).
	inFlight, maxIn atomic.Int64

	mu    sync.Mutex
	sum   metrics.SessionsSummary
	clock *metrics.SessionClock
}

var _ arrival.Sender = (*sessionSender)(nil)

func newSessionSender(base *sender, wl *workload.Workload, cfg *Config, start time.Time, stop context.Context) *sessionSender {
	s := &sessionSender{
		base: base, plan: wl.Sessions.Config, start: start, stop: stop,
		continueOnError: cfg.ContinueOnError, chat: base.endpoints.First().Chat(), clock: metrics.NewSessionClock(),
		conv: wl.Conversations, limit: cfg.TokenLimit, items: base.endpoints.First().Kind().Has(api.HistoryItems), turns: cfg.Turns,
		blocks: base.endpoints.First().Kind().Has(api.ContentBlocks),
	}
	if cfg.MaxConcurrency > 0 {
		s.slots = make(chan struct{}, cfg.MaxConcurrency)
	}
	c := &wl.Sessions.Config
	s.sum = metrics.SessionsSummary{
		Turns: c.Turns.String(), ThinkTime: c.Think.String(), TurnInputLen: c.TurnInput.String(),
		PlanHash: wl.Sessions.Hash, PlannedTurns: wl.Sessions.Turns,
	}
	return s
}

// TurnOptions say what a session's history carries besides its user
// messages and the answers' text.
type TurnOptions struct {
	// KeepReasoning sends each answer's reasoning back with it (the
	// assistant message's "reasoning"; --keep-reasoning-in-history).
	KeepReasoning bool
	// ToolResultLen is the tokens of the tool message answering each tool
	// call an answer made, sent before the next user message
	// (--tool-result-len).
	ToolResultLen int
	// Chain sends later turns with the previous answer's response id and
	// only the messages after it (--responses-chain).
	Chain bool
}

// message is one message of a session's history: a user message (rebuilt
// from its arrival, or exchange-1 of the session's dataset conversation,
// when sent again) or an answer as received: its text, its reasoning when
// kept, its tool calls (each answered by a tool message of result's
// size).
type message struct {
	user     arrival.Arrival
	exchange int
	// reply marks an answer, answer its text (possibly empty).
	reply     bool
	answer    []byte
	reasoning []byte
	calls     []toolCall
	result    arrival.Arrival
}

// toolCall is an answer's tool call as the history sends it back.
type toolCall struct {
	id, name string
	args     []byte
}

// history is a live session's conversation so far.
type history struct {
	msgs []message
	// tokens are the user messages' target sizes plus the answers'
	// completion tokens (less reasoning not sent back) and the tool
	// results'.
	tokens int
	// responseID is the last answer's (Responses API), chained to with
	// --responses-chain; the history after it is sent from msgs[chained].
	responseID string
	chained    int
}

// reply records a successful turn's answer in h: its text, reasoning
// (when kept) and tool calls with their results; it returns the tokens
// the history grew by besides the user message.
func (h *history) reply(res *client.Result, turns TurnOptions, result arrival.Arrival) int {
	m := message{reply: true, answer: append([]byte(nil), res.Text...), result: result}
	// The reasoning is not counted: it is not sent back, or when it is
	// (KeepReasoning), reasoning models' chat templates drop earlier
	// turns' reasoning from the prompt.
	grew := res.OutputTokens() - min(res.ReasoningTokens, res.OutputTokens())
	if turns.KeepReasoning {
		m.reasoning = append([]byte(nil), res.Reasoning...)
	}
	for _, c := range res.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", c.Index)
		}
		m.calls = append(m.calls, toolCall{id: id, name: c.Name, args: append([]byte(nil), c.Args...)})
		grew += turns.ToolResultLen
	}
	h.msgs = append(h.msgs, m)
	if turns.Chain && res.ResponseID != "" {
		h.responseID, h.chained = res.ResponseID, len(h.msgs)
	}
	return grew
}

// userArrival is the arrival a later turn's user message is built from:
// an index of its own, so its text differs from every other message's.
func userArrival(a *arrival.Arrival, turn int, t session.Turn) arrival.Arrival {
	return arrival.Arrival{Index: a.Index ^ int64(turn)<<44, InputTokens: t.Input, OutputTokens: t.Output, Model: a.Model}
}

// Send implements arrival.Sender: it runs a's whole session.
func (s *sessionSender) Send(ctx context.Context, a arrival.Arrival) {
	turns := s.plan.Plan(nil, &a)
	var h history
	var firstSent, prevEnd time.Duration
	ended := "completed"
	sent := 0
	for k, t := range turns {
		due := a.At
		user := message{user: a}
		if k > 0 {
			user = message{user: userArrival(&a, k+1, t)}
			if s.conv != nil {
				user.exchange = k
			}
			if h.tokens+t.Input+t.Output > s.limit {
				ended = "length"
				break
			}
			due = prevEnd + t.Think
			if !s.waitUntil(due) {
				ended = "interrupt"
				break
			}
			s.offered(due)
		}
		s.enter()
		res := resultPool.Get().(*client.Result)
		res.Reset()
		res.KeepText = true
		s.do(ctx, &a, &user, &h, t, due, k+1, res)
		s.leave()
		sent++
		if k == 0 {
			firstSent = res.Sent
		} else {
			s.mu.Lock()
			s.clock.Think.Record(max(res.Sent-prevEnd, 0))
			s.mu.Unlock()
		}
		prevEnd = res.End
		ok := res.OK()
		if ok {
			h.msgs = append(h.msgs, user)
			result := arrival.Arrival{Index: a.Index ^ int64(k+1)<<44 ^ 1<<43, InputTokens: max(s.turns.ToolResultLen, 1)}
			h.tokens += t.Input + h.reply(res, s.turns, result)
		} else if res.Status == http.StatusNotFound && h.responseID != "" {
			res.Error = fmt.Sprintf("%s (previous_response_id %s: the server keeps no responses — vLLM keeps them with VLLM_ENABLE_RESPONSES_API_STORE=1; without --responses-chain every turn sends the whole history)",
				res.Error, h.responseID)
		}
		// res belongs to the results' reader once sent (it goes back to
		// the pool): read what the session needs of it first.
		cut, stopped := res.Cancelled, res.ErrorClass == record.ErrCanceled
		s.base.results <- res
		if cut {
			ended = "cancelled" // the user gave up: the session ends
			break
		}
		if !ok && !s.continueOnError {
			ended = "error"
			if stopped {
				ended = "interrupt"
			}
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sum.Started++
	s.sum.TurnsSent += int64(sent)
	switch ended {
	case "completed":
		s.sum.Completed++
	case "length":
		s.sum.EndedLength++
	case "interrupt":
		s.sum.EndedInterrupt++
	case "cancelled":
		s.sum.EndedCancelled++
	default:
		s.sum.EndedError++
	}
	s.clock.Duration.Record(max(prevEnd-firstSent, 0))
}

// InFlight returns the number of requests being sent now.
func (s *sessionSender) InFlight() int64 { return s.inFlight.Load() }

// enter takes a slot for a request (waiting for one under
// --max-concurrency) and counts it in flight; leave gives both back.
func (s *sessionSender) enter() {
	if s.slots != nil {
		s.slots <- struct{}{}
	}
	n := s.inFlight.Add(1)
	for m := s.maxIn.Load(); n > m && !s.maxIn.CompareAndSwap(m, n); m = s.maxIn.Load() {
	}
}

func (s *sessionSender) leave() {
	s.inFlight.Add(-1)
	if s.slots != nil {
		<-s.slots
	}
}

// offered tells the monitor of a later turn due at offset due, as the
// dispatcher tells it of each session's first: the offered rate then counts
// requests, as the achieved rate does.
func (s *sessionSender) offered(due time.Duration) {
	if s.offer != nil {
		s.offer(&arrival.Arrival{At: due})
	}
}

// waitUntil waits for offset due, and reports false when the run was
// stopped first.
func (s *sessionSender) waitUntil(due time.Duration) bool {
	if s.stop.Err() != nil {
		return false
	}
	wait := time.Until(s.start.Add(due))
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.stop.Done():
		return false
	}
}

// do sends one turn of session a into res; a panic makes it res's failure.
func (s *sessionSender) do(ctx context.Context, a *arrival.Arrival, user *message, h *history, t session.Turn, due time.Duration, turn int, res *client.Result) {
	defer s.base.panics.recoverInto(res)
	res.Index, res.Scheduled = a.Index, due
	res.Session, res.Turn, res.HistoryTokens = a.Index, turn, h.tokens
	res.InputLen, res.OutputLen, res.Images = h.tokens+t.Input, t.Output, a.Images
	res.Model = a.Model
	if res.Model == "" {
		res.Model = s.base.model
	}
	media := s.base.prompts.Multimodal(a)
	req := client.Request{Model: a.Model, MaxTokens: max(t.Output, 1), Chat: media, CancelAfter: t.CancelAfter}
	w := userWriter{p: s.base.prompts, conv: s.conv, session: a.Index, items: s.items, blocks: s.blocks, results: s.turns.ToolResultLen > 0}
	if s.chat || media {
		from := 0
		if s.turns.Chain && h.responseID != "" {
			req.PreviousResponseID, from = h.responseID, h.chained-1 // the answer itself is the server's: its tool results are sent
		}
		req.AppendMessages = func(dst []byte) []byte { return appendMessages(&w, dst, h, from, user) }
	} else {
		req.AppendPrompt = func(dst []byte) []byte { return appendConversation(&w, dst, h, user) }
	}
	planned := a.Endpoint
	if p := s.base.plan; p != nil {
		planned = p.Turn(a.Endpoint, turn)
	}
	cli := s.base.endpoints.Acquire(planned, res)
	defer s.base.endpoints.Release(res)
	cli.Do(ctx, &req, res)
}

// userWriter writes a session's user messages: synthetic or dataset text
// from their arrival, or a dataset conversation's later message; and the
// answers' tool calls, as chat messages or as input items (items).
type userWriter struct {
	p       *prompt.Builder
	conv    *prompt.Conversations
	session int64
	items   bool
	// blocks: answers as Anthropic's assistant content blocks (text,
	// tool_use), tool results as tool_result blocks of a user message.
	blocks bool
	// results: tool results have text (--tool-result-len > 0).
	results bool
}

// content appends m's chat content (a JSON value).
func (w *userWriter) content(dst []byte, m *message) []byte {
	if m.exchange == 0 {
		return appendPrompt(w.p, dst, &m.user)
	}
	dst = append(dst, '"')
	dst = w.text(dst, m)
	return append(dst, '"')
}

// text appends m's text, escaped, without quotes.
func (w *userWriter) text(dst []byte, m *message) []byte {
	if m.exchange == 0 {
		return w.p.AppendText(dst, &m.user)
	}
	return w.conv.AppendConversationText(dst, w.session, m.exchange-1, max(m.user.InputTokens, 1))
}

// appendMessages writes a chat request's messages: the history from
// msgs[from], then the new user message. A reply at from is the answer a
// chained request continues (the server has it): only its tool results
// are written.
func appendMessages(w *userWriter, dst []byte, h *history, from int, user *message) []byte {
	dst = append(dst, '[')
	for i := max(from, 0); i < len(h.msgs); i++ {
		m := &h.msgs[i]
		if m.reply {
			if i != from || from == 0 {
				dst = w.answer(dst, m)
			}
			dst = w.toolResults(dst, m)
			continue
		}
		dst = append(dst, `{"role":"user","content":`...)
		dst = w.content(dst, m)
		dst = append(dst, `},`...)
	}
	dst = append(dst, `{"role":"user","content":`...)
	dst = w.content(dst, user)
	return append(dst, `}]`...)
}

// answer appends an answer of the history: an assistant message with its
// text, its reasoning when kept and its tool calls — or, as input items,
// the message and a function_call item per call.
func (w *userWriter) answer(dst []byte, m *message) []byte {
	if w.blocks {
		return w.answerBlocks(dst, m)
	}
	if len(m.answer) > 0 || len(m.calls) == 0 || !w.items {
		dst = append(dst, `{"role":"assistant","content":"`...)
		dst = prompt.AppendEscaped(dst, m.answer)
		dst = append(dst, '"')
		if len(m.reasoning) > 0 && !w.items {
			dst = append(dst, `,"reasoning":"`...)
			dst = prompt.AppendEscaped(dst, m.reasoning)
			dst = append(dst, '"')
		}
		if len(m.calls) > 0 && !w.items {
			dst = append(dst, `,"tool_calls":[`...)
			for i, c := range m.calls {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"id":`...)
				dst = appendJSONString(dst, c.id)
				dst = append(dst, `,"type":"function","function":{"name":`...)
				dst = appendJSONString(dst, c.name)
				dst = append(dst, `,"arguments":"`...)
				dst = prompt.AppendEscaped(dst, c.args)
				dst = append(dst, `"}}`...)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, `},`...)
	}
	if w.items {
		for _, c := range m.calls {
			dst = append(dst, `{"type":"function_call","call_id":`...)
			dst = appendJSONString(dst, c.id)
			dst = append(dst, `,"name":`...)
			dst = appendJSONString(dst, c.name)
			dst = append(dst, `,"arguments":"`...)
			dst = prompt.AppendEscaped(dst, c.args)
			dst = append(dst, `"},`...)
		}
	}
	return dst
}

// toolResults appends the tool message (or function_call_output item)
// answering each of an answer's tool calls: text of --tool-result-len
// tokens, each call's its own.
func (w *userWriter) toolResults(dst []byte, m *message) []byte {
	if w.blocks {
		return w.resultBlocks(dst, m)
	}
	for i := range m.calls {
		if w.items {
			dst = append(dst, `{"type":"function_call_output","call_id":`...)
			dst = w.result(dst, m, i, `,"output":"`)
		} else {
			dst = append(dst, `{"role":"tool","tool_call_id":`...)
			dst = w.result(dst, m, i, `,"content":"`)
		}
		dst = append(dst, ',')
	}
	return dst
}

// result appends the rest of the result of an answer's call i after its
// opening: the call's id, key (the text's field) and the text of
// --tool-result-len tokens, each call's its own, ending the object.
func (w *userWriter) result(dst []byte, m *message, i int, key string) []byte {
	dst = appendJSONString(dst, m.calls[i].id)
	dst = append(dst, key...)
	if w.results {
		r := m.result
		r.Index ^= int64(i) << 40
		dst = w.p.AppendText(dst, &r)
	}
	return append(dst, `"}`...)
}

// answerBlocks appends an answer as Anthropic's assistant message: a text
// block (when it has text) and a tool_use block per call, whose input is
// the call's arguments when they are a JSON object, else {} (the API takes
// an object). The reasoning is left out, as chat leaves it out.
func (w *userWriter) answerBlocks(dst []byte, m *message) []byte {
	dst = append(dst, `{"role":"assistant","content":`...)
	if len(m.answer) == 0 && len(m.calls) == 0 {
		return append(dst, `""},`...)
	}
	dst = append(dst, '[')
	if len(m.answer) > 0 {
		dst = append(dst, `{"type":"text","text":"`...)
		dst = prompt.AppendEscaped(dst, m.answer)
		dst = append(dst, `"}`...)
	}
	for i, c := range m.calls {
		if i > 0 || len(m.answer) > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"tool_use","id":`...)
		dst = appendJSONString(dst, c.id)
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, c.name)
		dst = append(dst, `,"input":`...)
		if args := bytes.TrimSpace(c.args); len(args) > 0 && args[0] == '{' && json.Valid(args) {
			dst = append(dst, args...)
		} else {
			dst = append(dst, "{}"...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]},"...)
}

// resultBlocks appends the user message of tool_result blocks answering
// an answer's tool calls (none: nothing).
func (w *userWriter) resultBlocks(dst []byte, m *message) []byte {
	if len(m.calls) == 0 {
		return dst
	}
	dst = append(dst, `{"role":"user","content":[`...)
	for i := range m.calls {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"tool_result","tool_use_id":`...)
		dst = w.result(dst, m, i, `,"content":"`)
	}
	return append(dst, "]},"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// appendConversation writes a completion's prompt: the text of every
// message in order, as one string. Parts are joined with a space unless
// one already ends or starts with white space, so the prompt of a turn
// starts with exactly the previous turn's prompt and answer.
func appendConversation(w *userWriter, dst []byte, h *history, user *message) []byte {
	dst = append(dst, '"')
	start := len(dst)
	join := func(next byte) {
		if len(dst) > start && !isSpace(dst[len(dst)-1]) && !isSpace(next) {
			dst = append(dst, ' ')
		}
	}
	for i := range h.msgs {
		m := &h.msgs[i]
		if m.reply {
			if len(m.answer) > 0 {
				join(m.answer[0])
				dst = prompt.AppendEscaped(dst, m.answer)
			}
			continue
		}
		join('x')
		dst = w.text(dst, m)
	}
	join('x')
	dst = w.text(dst, user)
	return append(dst, '"')
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// finish hands the sessions' own figures — the counts and distributions
// of the sessions section — to the run's sessions part.
func (s *sessionSender) finish(parts []metrics.Part) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := metrics.PartOf[*metrics.Sessions](parts); ok {
		p.SetRun(s.sum, s.clock)
	}
}
