package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
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
	// conv gives later turns' user messages with --multi-turn (nil:
	// synthetic text).
	conv *prompt.Conversations

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
		conv: wl.Conversations, limit: cfg.TokenLimit,
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

// message is one message of a session's history: a user message (rebuilt
// from its arrival, or exchange-1 of the session's dataset conversation,
// when sent again) or an answer's text as received.
type message struct {
	user     arrival.Arrival
	exchange int
	// reply marks an answer, answer its text (possibly empty).
	reply  bool
	answer []byte
}

// history is a live session's conversation so far.
type history struct {
	msgs   []message
	tokens int // the user messages' target sizes plus the answers' completion tokens
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
		}
		if s.slots != nil {
			s.slots <- struct{}{}
		}
		n := s.inFlight.Add(1)
		for m := s.maxIn.Load(); n > m && !s.maxIn.CompareAndSwap(m, n); m = s.maxIn.Load() {
		}
		res := resultPool.Get().(*client.Result)
		res.Reset()
		res.KeepText = true
		s.do(ctx, &a, &user, &h, t, due, k+1, res)
		s.inFlight.Add(-1)
		if s.slots != nil {
			<-s.slots
		}
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
			h.msgs = append(h.msgs, user, message{reply: true, answer: append([]byte(nil), res.Text...)})
			h.tokens += t.Input + res.OutputTokens()
		}
		// res belongs to the results' reader once sent (it goes back to
		// the pool): read what the session needs of it first.
		cut, stopped := res.Cancelled, res.ErrorClass == client.ErrCanceled
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
	req := client.Request{Model: a.Model, MaxTokens: max(t.Output, 1), Chat: a.Images > 0, CancelAfter: t.CancelAfter}
	w := userWriter{p: s.base.prompts, conv: s.conv, session: a.Index}
	if s.chat || a.Images > 0 {
		req.AppendMessages = func(dst []byte) []byte { return appendMessages(&w, dst, h, user) }
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
// from their arrival, or a dataset conversation's later message.
type userWriter struct {
	p       *prompt.Builder
	conv    *prompt.Conversations
	session int64
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

// appendMessages writes a chat request's messages: the history, then the
// new user message.
func appendMessages(w *userWriter, dst []byte, h *history, user *message) []byte {
	dst = append(dst, '[')
	for i := range h.msgs {
		m := &h.msgs[i]
		if m.reply {
			dst = append(dst, `{"role":"assistant","content":"`...)
			dst = prompt.AppendEscaped(dst, m.answer)
			dst = append(dst, `"},`...)
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

// run returns the run's sessions: the counts and distributions of the
// sessions section and per_turn (from per, the turns' sink).
func (s *sessionSender) run(per *metrics.PerTurn) *metrics.SessionsRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &metrics.SessionsRun{Summary: s.sum, Clock: s.clock, PerTurn: per}
}
