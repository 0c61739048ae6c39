// Package client speaks the OpenAI-compatible wire protocol (completions,
// chat completions, streaming SSE) and turns every request, successful or
// not, into a timestamped Result.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/internal/wait"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Config configures a Client. The zero value is not usable: BaseURL and
// Backend are required.
type Config struct {
	// BaseURL is the server root, e.g. http://127.0.0.1:8000 (no /v1).
	BaseURL string
	// API is the API kind: a row of pkg/api's table, its wire format
	// backend.go's.
	API *api.Kind
	// Endpoint overrides the path derived from Backend.
	Endpoint string
	// Model is the default model of requests that name none.
	Model string
	// APIKey is sent as a bearer token; it is never logged or recorded.
	APIKey string
	// Stream asks for a server-sent event stream (FineServe's default).
	Stream bool
	// IgnoreEOS forces the output length: ignore_eos and min_tokens =
	// max_tokens are sent with every request.
	IgnoreEOS bool
	// ExtraBody is a JSON object whose members are merged into every
	// request body, overriding the defaults of the same name.
	ExtraBody []byte
	// MaxConns sizes the connection pool (0: unbounded). Idle connections
	// are kept for up to MaxConns, so concurrency is never throttled by the
	// transport's default of two idle connections per host.
	MaxConns int
	// RequestTimeout bounds a whole request; StallTimeout bounds the time
	// without a byte from the server. Zero disables either.
	RequestTimeout, StallTimeout time.Duration
	// Retries is how many times a request that failed before its first
	// token with a connect, http_429 or http_5xx error is sent again (0:
	// never; retries change what a benchmark measures). See Do.
	Retries int
	// Insecure skips TLS certificate verification.
	Insecure bool
	// CACert is a PEM file of the certificate authorities that server
	// certificates are verified against, instead of the system's.
	CACert string
	// Host, when set, is sent as the Host header instead of the base URL's
	// host[:port], and is the TLS server name (SNI) certificates are
	// checked against: a gateway's virtual host reached by address.
	Host string
	// Epoch is the instant Result offsets are measured from.
	Epoch time.Time
	// Now reads the clock every Result offset, stall check and Retry-After
	// date is taken from (default time.Now). Waits (timeouts, the stall
	// watch's timer, retry back-off) are the runtime's timers: a test fakes
	// both at once with testing/synctest.
	Now func() time.Time
	// Transport replaces the default transport (tests).
	Transport http.RoundTripper
	// HTTPTransport selects the transport (api.TransportAuto when empty; see
	// httptransport.go): the lean HTTP/1.1 one for plain HTTP, net/http's
	// with HTTP/2 over TLS.
	HTTPTransport string
	// ImageSize is the size ("WxH") of generated images (openai-images;
	// "" sends none: the server's default).
	ImageSize string
	// Answer is what requests ask of the answer: reasoning knobs, tools,
	// a response format (answer.go).
	Answer AnswerOptions
	// BatchSize is the inputs of a request of a row that batches
	// (Backend.Batch; 0: 1): texts to embed, or a query's documents.
	BatchSize int
	// AudioSeconds is the length of the synthetic WAV a row with Audio
	// sends (0: DefaultAudioSeconds); AudioSeed makes its samples.
	AudioSeconds float64
	AudioSeed    uint64
	// HTTPPhases times each attempt's connect, TLS handshake, request
	// write and wait for the first response byte into Result.HTTP
	// (phases.go).
	HTTPPhases bool
	// RequestIDPrefix, when set, sends every request with an
	// X-Request-Id header of the prefix and its record's index, and turn
	// in a session (RequestID; Result.RequestID):
	// vLLM takes it as the request's id, so its logs, traces and the
	// response's id name the request as the client's record does.
	// Retries send the same id.
	RequestIDPrefix string
	// CountTokens counts an answer's tokens when the server reports no
	// count and the answer is not a stream of tokens (a kserve-generate
	// whole answer, an anthropic-messages whole answer's thinking):
	// --tokenizer's count; nil counts its words.
	CountTokens func(text []byte) int
	// Secrets hides credentials in the messages of failed requests (nil:
	// the API key and the user and password of BaseURL). URL credentials
	// are always hidden.
	Secrets *secret.Redactor
}

// Client sends requests to one server. It is safe for concurrent use.
type Client struct {
	cfg Config
	// parents watches the context most attempts are made under, for all
	// of them (watchParent).
	parents atomic.Pointer[parentWatch]
	url     string
	// base is the server root, path the endpoint's path before its model
	// is filled in (api.ExpandPath): url is both, for the default model.
	base, path string
	secrets    *secret.Redactor
	kind       *api.Kind
	wire       *wire
	chat       bool // kind.Has(api.Messages)
	// responses holds the answer options in the Responses API's forms
	// (responses.go).
	responses responsesAnswer
	// anthropic holds them in the Messages API's (anthropic.go).
	anthropic anthropicAnswer
	http      *http.Client
	rewind    bool // set GetBody: net/http re-sends requests a server refused unprocessed
	header    http.Header
	extra     []byte // ",k:v,…" members of ExtraBody
	omit      map[string]bool
	buffers   sync.Pool
	decode    sync.Pool
	// chatTwin sends Request.Chat requests of a completions client: the
	// same configuration as an openai-chat client, sharing the transport.
	chatTwin *Client
	// lean, when the transport is the lean one, is called directly with
	// post, the request every attempt sends (read-only; its body is each
	// attempt's), instead of through net/http's Client: no request, header
	// copy or context is made per attempt. headerErr is post's header
	// check, done once.
	lean      *leanTransport
	post      *http.Request
	headerErr error
	// unwritten counts the requests being sent whose first attempt has
	// not been written yet (Unwritten).
	unwritten atomic.Int64
	// audio is the synthetic WAV an Audio row sends (audio.go), and
	// form the multipart fields --extra-request-body adds.
	audio       []byte
	audioTokens int
	form        [][2]string
}

// Unwritten returns the number of requests that Do has begun and not yet
// written to a connection: a client short of CPU has many (the dispatcher
// stops handing out arrivals past a bound). Only the lean transport's
// requests are counted: net/http's writes out of sight.
func (c *Client) Unwritten() int64 {
	n := c.unwritten.Load()
	if c.chatTwin != nil {
		n += c.chatTwin.unwritten.Load()
	}
	return n
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Client{cfg: cfg, secrets: cfg.Secrets}
	if c.secrets == nil {
		c.secrets = secret.New(cfg.APIKey)
		c.secrets.AddURL(cfg.BaseURL)
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("client: base URL %q must start with http:// or https://", secret.URL(cfg.BaseURL))
	}
	b := cfg.API
	w, ok := wires[b]
	if !ok {
		return nil, fmt.Errorf("client: no API kind (want %s)", api.Names())
	}
	c.kind, c.wire, c.chat = b, w, b.Has(api.Messages)
	if w.prepare != nil {
		if err := w.prepare(c); err != nil {
			return nil, fmt.Errorf("client: %s: %w", b.Name, err)
		}
	}
	path := cfg.Endpoint
	if path == "" {
		path = b.Path
	}
	if cfg.Stream && !strings.HasSuffix(path, w.streamSuffix) { // --endpoint may name the streaming path itself
		path += w.streamSuffix
	}
	c.base, c.path = base, path
	c.url = base + api.ExpandPath(path, cfg.Model)
	extra, omit, err := api.ParseExtraBody(cfg.ExtraBody)
	if err != nil {
		return nil, fmt.Errorf("client: extra request body: %w", err)
	}
	c.extra, c.omit = extra, omit

	tr := cfg.Transport
	if tr == nil {
		idle := cfg.MaxConns
		if idle <= 0 {
			idle = 1 << 16
		}
		if tr, err = newTransport(&cfg, base, idle); err != nil {
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	c.http = &http.Client{Transport: tr}
	lean, _ := tr.(*leanTransport)
	c.rewind = lean == nil
	contentType := "application/json"
	if w.contentType != "" {
		contentType = w.contentType
	}
	c.header = http.Header{"Content-Type": {contentType}, "User-Agent": {"fineserve-gen"}}
	switch {
	case cfg.APIKey == "":
	case w.keyHeader != "":
		c.header.Set(w.keyHeader, cfg.APIKey)
	default:
		c.header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	for k, v := range w.header {
		c.header.Set(k, v)
	}
	if lean != nil && strings.HasPrefix(c.url, "http://") {
		if c.post, err = http.NewRequest(http.MethodPost, c.url, nil); err == nil {
			c.lean = lean
			c.post.Header, c.post.Host = c.header, cfg.Host
			c.headerErr = checkHeader(c.header)
		}
	}
	c.buffers.New = func() any { b := make([]byte, 0, 512); return &b } // grows to the bodies it carries
	c.decode.New = func() any { return new(decoder) }
	if b.Has(api.ChatTwin) {
		twin := cfg
		twin.API, twin.Endpoint, twin.Transport = api.Chat, chatPath(path), tr
		if c.chatTwin, err = New(twin); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// boundedTokens is the max_tokens a stream of req is held to: req's, when
// the client sends it as it is. It is 0 (no bound) when req sets none, or
// when --extra-request-body sets the limit itself or asks for several
// choices (n, best_of), whose tokens all come in one stream.
func (c *Client) boundedTokens(req *Request) int {
	if !c.kind.Measure.Tokens() || req.MaxTokens <= 0 {
		return 0
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens", "n", "best_of"} {
		if c.omit[k] {
			return 0
		}
	}
	return req.MaxTokens
}

// chatPath is where a completions client sends its image-bearing requests:
// the chat endpoint beside its own, so a server mounted under a prefix
// (--endpoint /gateway/v1/completions) gets them at
// /gateway/v1/chat/completions. A path not ending in /completions leaves
// the chat default.
func chatPath(completions string) string {
	if prefix, ok := strings.CutSuffix(completions, "/completions"); ok && !strings.HasSuffix(prefix, "/chat") {
		return prefix + "/chat/completions"
	}
	return ""
}

// SetModel sets the default model. Like SetEpoch, it must be called before
// the client is used concurrently.
func (c *Client) SetModel(m string) {
	c.cfg.Model = m
	if u := c.base + api.ExpandPath(c.path, m); u != c.url {
		c.url = u // the path names the model
		if c.post != nil {
			if pu, err := url.Parse(u); err == nil {
				c.post.URL = pu
			}
		}
	}
	if c.chatTwin != nil {
		c.chatTwin.SetModel(m)
	}
}

// SetEpoch sets the instant Result offsets are measured from.
func (c *Client) SetEpoch(t time.Time) {
	c.cfg.Epoch = t
	if c.chatTwin != nil {
		c.chatTwin.SetEpoch(t)
	}
}

// Chat reports whether the client sends chat completions.
func (c *Client) Chat() bool { return c.chat }

// Kind returns the client's API kind.
func (c *Client) Kind() *api.Kind { return c.kind }

// URL is the endpoint requests are posted to.
func (c *Client) URL() string { return c.url }

// HTTPClient is the client's pooled HTTP client (for auxiliary calls).
func (c *Client) HTTPClient() *http.Client { return c.http }

// Header returns a copy of the headers sent with every request.
func (c *Client) Header() http.Header { return c.header.Clone() }

// Request is one request to send.
type Request struct {
	// Model overrides the client's default model when set.
	Model string
	// MaxTokens is the number of tokens to generate.
	MaxTokens int
	// Prompt is a JSON value: the "prompt" of a completion (a string or a
	// list of token ids) or the "content" of a chat user message (a string
	// or a list of content parts).
	Prompt []byte
	// AppendPrompt, when set, is used instead of Prompt: it appends the
	// prompt value straight into the request body, so a prompt is neither
	// built in a buffer of its own nor copied.
	AppendPrompt func(dst []byte) []byte
	// AppendMessages, when set, appends a chat request's whole "messages"
	// value (a session's history and its new message) instead of one user
	// message holding the prompt; completions ignore it.
	AppendMessages func(dst []byte) []byte
	// Chat sends this request as a chat completion to /v1/chat/completions
	// whatever the backend (requests with images).
	Chat bool
	// PreviousResponseID chains a Responses API request to an earlier
	// answer (previous_response_id): a session's turn sends only its new
	// message (--responses-chain).
	PreviousResponseID string
	// Gen is what an openai-images request generates (nil: one image, the
	// server's default steps); Prompt is then a JSON string.
	Gen *arrival.Generation
	// InputTokens is the arrival's input tokens, split over a batch's
	// inputs (Backend.Batch: BatchLens); AppendInput appends the JSON
	// value of input part of a batch, tokens long (text or token ids, a
	// different prompt for each part).
	InputTokens int
	AppendInput func(dst []byte, part, tokens int) []byte
	// CancelAfter, when > 0, cuts the request that long after its first
	// send (the timer starts as the request is handed to the transport,
	// and retries do not restart it): the client closes the connection
	// or stream and marks the Result Cancelled, keeping what arrived.
	// Only such requests get a timer.
	CancelAfter time.Duration
}

// appendMessages appends req's messages (a chat's, a Responses input):
// AppendMessages's, or one user message of the prompt.
func (req *Request) appendMessages(b []byte) []byte {
	if req.AppendMessages != nil {
		return req.AppendMessages(b)
	}
	b = append(b, `[{"role":"user","content":`...)
	b = req.appendPrompt(b)
	return append(b, "}]"...)
}

// appendPrompt appends req's prompt value; empty is the empty string.
func (req *Request) appendPrompt(b []byte) []byte {
	switch {
	case req.AppendPrompt != nil:
		return req.AppendPrompt(b)
	case len(req.Prompt) > 0:
		return append(b, req.Prompt...)
	}
	return append(b, `""`...)
}

// body is a JSON request body being appended: the members the client writes
// by default, except those --extra-request-body overrides, then the extra
// members. It lives on the stack of the function that writes the body.
type body struct {
	b     []byte
	omit  map[string]bool
	empty bool
}

func (c *Client) openBody(b []byte) body {
	return body{b: append(b, '{'), omit: c.omit, empty: true}
}

// openModelBody opens a body with its first member, the request's model
// (the client's default when the request names none).
func (c *Client) openModelBody(b []byte, req *Request) body {
	model := req.Model
	if model == "" {
		model = c.cfg.Model
	}
	o := c.openBody(b)
	if o.member("model") {
		o.b = appendJSONString(o.b, model)
	}
	return o
}

// member starts the member key and reports true, or reports false when the
// extra body overrides key (the caller then writes no value).
func (o *body) member(key string) bool {
	if o.omit[key] {
		return false
	}
	if !o.empty {
		o.b = append(o.b, ',')
	}
	o.empty = false
	o.b = append(o.b, '"')
	o.b = append(o.b, key...)
	o.b = append(o.b, '"', ':')
	return true
}

// closeBody appends the extra members and closes the object.
func (c *Client) closeBody(o *body) []byte {
	b := o.b
	if len(c.extra) > 0 {
		if o.empty { // every default overridden: the extra members open the object
			b = append(b, c.extra[1:]...)
		} else {
			b = append(b, c.extra...)
		}
	}
	return append(b, '}')
}

// AppendBody appends the JSON request body for req.
func (c *Client) AppendBody(b []byte, req *Request) []byte {
	if req.Chat && c.chatTwin != nil {
		return c.chatTwin.AppendBody(b, req)
	}
	return c.wire.appendBody(c, b, req)
}

// appendTextBody appends the body of a text generation: a completion or a
// chat completion.
func appendTextBody(c *Client, b []byte, req *Request) []byte {
	o := c.openModelBody(b, req)
	if c.chat {
		if o.member("messages") {
			o.b = req.appendMessages(o.b)
		}
		if o.member("max_completion_tokens") {
			o.b = appendInt(o.b, req.MaxTokens)
		}
		c.appendChatAnswer(&o)
	} else {
		if o.member("prompt") {
			o.b = req.appendPrompt(o.b)
		}
		if o.member("max_tokens") {
			o.b = appendInt(o.b, req.MaxTokens)
		}
	}
	if o.member("temperature") {
		o.b = append(o.b, '0')
	}
	if o.member("stream") {
		o.b = appendBool(o.b, c.cfg.Stream)
	}
	if c.cfg.Stream && o.member("stream_options") {
		o.b = append(o.b, `{"include_usage":true}`...)
	}
	if o.member("ignore_eos") {
		o.b = appendBool(o.b, c.cfg.IgnoreEOS)
	}
	if c.cfg.IgnoreEOS && o.member("min_tokens") {
		o.b = appendInt(o.b, req.MaxTokens)
	}
	if f := c.cfg.Answer.ResponseFormat; len(f) > 0 && o.member("response_format") {
		o.b = append(o.b, f...)
	}
	return c.closeBody(&o)
}

// watchParent makes the end of g's parent end g: through the client's
// shared watch when the parent is the one it watches (the run's context,
// under which every request of a run is sent: the first that can end,
// or the next once that one has ended), else with a watch of its own.
func (c *Client) watchParent(g *guard) {
	done := g.parent.Done()
	if done == nil {
		return
	}
	w := c.parents.Load()
	if w == nil || w.ended() {
		nw := newParentWatch(g.parent)
		if c.parents.CompareAndSwap(w, nw) {
			w = nw
		} else {
			nw.stop()
			w = c.parents.Load()
		}
	}
	if w.done != done {
		g.watchParent()
		return
	}
	w.add(g)
}

// RequestID is the X-Request-Id of the request whose record has index and,
// in a session, turn (0: none): prefix and index, then "-" and the turn
// (a session's turns share its index). A warm-up request, which has no
// record, has a negative index -k: prefix, "warmup-" and k.
func RequestID(prefix string, index int64, turn int) string {
	if index < 0 {
		return prefix + "warmup-" + strconv.FormatInt(-index, 10)
	}
	id := prefix + strconv.FormatInt(index, 10)
	if turn > 0 {
		id += "-" + strconv.Itoa(turn)
	}
	return id
}

// Do sends req and fills res (whose Index, Scheduled and target sizes the
// caller sets; with Config.RequestIDPrefix, its RequestID too when the
// request's Index and Turn are not its record's, else RequestID is made
// of them). It never returns an error: failures are classified in res.
//
// With Config.Retries > 0, an attempt that failed before any token arrived
// with a connect, http_429 or http_5xx error is sent again after a backoff
// (the server's Retry-After when it gives one). Sent stays the first
// attempt's send time, so the latencies of a retried request include every
// attempt and wait; res.Retries counts the extra attempts and the error
// fields describe the last one. RequestTimeout bounds all attempts together.
func (c *Client) Do(ctx context.Context, req *Request, res *Result) {
	if req.Chat && c.chatTwin != nil {
		c.chatTwin.Do(ctx, req, res)
		return
	}
	res.Measure = c.kind.Measure
	if c.cfg.RequestIDPrefix != "" && res.RequestID == "" {
		res.RequestID = RequestID(c.cfg.RequestIDPrefix, res.Index, res.Turn)
	}
	if c.kind.Has(api.Batch) {
		res.Inputs = c.batchSize()
	}
	if c.kind.Has(api.Audio) {
		res.InputLen = c.audioTokens // the audio is the input, not the schedule's length
	}
	bp := c.buffers.Get().(*[]byte)
	body := c.AppendBody((*bp)[:0], req)
	defer func() { *bp = body[:0]; c.buffers.Put(bp) }()

	// Without retries, the request timeout is the attempt's deadline,
	// kept by the attempt's watch (no context or timer of its own).
	var deadline time.Time
	if c.cfg.RequestTimeout > 0 {
		if c.cfg.Retries > 0 {
			var stop context.CancelFunc
			ctx, stop = context.WithTimeoutCause(ctx, c.cfg.RequestTimeout, errRequestTimeout)
			defer stop()
		} else {
			deadline = time.Now().Add(c.cfg.RequestTimeout)
		}
	}
	if req.CancelAfter > 0 {
		// The cut is measured from the send: Sent is read here, as its
		// timer starts, so a busy machine cannot put the cut before it.
		res.CancelAfter, res.Sent = req.CancelAfter, c.since()
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, req.CancelAfter, errCut)
		defer stop()
	}
	maxTokens := c.boundedTokens(req)
	if c.cfg.Answer.Check != nil {
		res.KeepText = true // the answer's text is checked
	}
	c.unwritten.Add(1)
	for first := true; ; first = false {
		backoff := c.attempt(ctx, deadline, body, maxTokens, res, first)
		if backoff < 0 || res.Retries >= c.cfg.Retries {
			return
		}
		if !wait.Sleep(ctx, backoff) {
			if isCut(ctx) {
				c.cut(res) // cut while waiting to be sent again: the user gave up
			}
			return // the request timed out or the run stopped: keep the last failure
		}
		res.Retries++
		res.ClearAttempt()
	}
}

// attempt sends body once, ending at deadline if it is not zero. It
// returns how long to wait before a retry, or -1 when the failure (or
// success) is final. maxTokens bounds a stream (see streamBound; 0: no
// bound).
func (c *Client) attempt(ctx context.Context, deadline time.Time, body []byte, maxTokens int, res *Result, first bool) time.Duration {
	g := newGuard(ctx)
	if first {
		g.unwritten = &c.unwritten
	}
	defer g.release()
	var watch *stallWatch
	if c.cfg.StallTimeout > 0 || !deadline.IsZero() {
		watch = watchAttempt(c.cfg.StallTimeout, deadline, c.cfg.Now, g.end)
		defer watch.end()
	}
	if first && res.CancelAfter == 0 {
		res.Sent = c.since()
	}
	c.startPhases(g, res)
	g.requestID = res.RequestID
	resp, err := c.send(g, body)
	if err != nil {
		c.failErr(g, res, err, false)
		return c.retryWait(res, 0)
	}
	defer resp.Body.Close()
	var rd io.Reader = resp.Body
	if watch != nil {
		watch.touch(c.cfg.Now()) // the headers were bytes too
		rd = &stallReader{r: resp.Body, w: watch}
	}
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(rd, 4<<10))
		status := resp.Status
		if status == "" {
			status = "HTTP " + strconv.Itoa(resp.StatusCode)
		}
		c.fail(res, statusClass(resp.StatusCode), c.answerHint(resp.StatusCode, errorMessage(status, msg)))
		return c.retryWait(res, retryAfter(resp.Header.Get("Retry-After"), c.cfg.Now()))
	}
	d := c.decode.Get().(*decoder)
	defer func() {
		d.release()
		c.decode.Put(d)
	}()
	d.lines.watch = watch
	d.maxTokens = maxTokens
	if err = c.wire.read(c, d, resp, rd, res); err == nil {
		c.checkAnswer(res)
		return -1
	}
	var pe protocolError
	var se streamError
	switch {
	case g.err() != nil:
		// A timeout or the run's stop, whatever the read made of it.
		c.failErr(g, res, err, true)
	case errors.As(err, &pe):
		c.fail(res, record.ErrProtocol, pe.Error())
	case errors.As(err, &se):
		c.fail(res, se.class, se.msg)
	default:
		c.failErr(g, res, err, true)
	}
	return c.retryWait(res, 0)
}

// cut marks res cancelled at its planned cut: not a failure, what arrived
// before the cut kept (its tokens are the chunks counted: no usage came),
// End the moment of the cut.
func (c *Client) cut(res *Result) {
	res.Cancelled = true
	res.ErrorClass, res.Error = "", ""
	res.End = c.since()
	if res.CompletionTokens == 0 {
		res.CountedOutput(len(res.TokenTimes), record.OutputChunks)
	}
}

// isCut reports whether ctx ended at the request's planned cut. A dial or
// read that ctx's deadline bounded can fail a moment before ctx's own
// timer fires; once the deadline has passed, it waits for ctx to end, so
// that such a failure is the cut it was, not a timeout.
func isCut(ctx context.Context) bool {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		<-ctx.Done()
	}
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), errCut)
}

// send sends body and returns the response (its head read), on the lean
// transport directly or through net/http's Client; g ends it from outside.
func (c *Client) send(g *guard, body []byte) (*http.Response, error) {
	if c.lean != nil {
		if c.headerErr != nil {
			return nil, c.headerErr
		}
		c.watchParent(g)
		resp, err := c.lean.send(g, c.post, body, false)
		if err != nil {
			// As net/http's Client says it (the URL is redacted with
			// the message), so a failure reads the same on every
			// transport.
			err = &url.Error{Op: "Post", URL: c.url, Err: err}
		}
		return resp, err
	}
	g.written() // net/http's transport writes out of sight: its requests are not counted
	ctx, cancel := context.WithCancelCause(g.parent)
	g.cancel = cancel
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, newByteBody(body))
	if err != nil {
		return nil, err
	}
	hreq.Header = c.header
	if g.requestID != "" {
		hreq.Header = c.header.Clone()
		hreq.Header.Set("X-Request-Id", g.requestID)
	}
	hreq.ContentLength = int64(len(body))
	if c.cfg.Host != "" {
		hreq.Host = c.cfg.Host
	}
	if g.ph != nil {
		pt := new(phaseTrace)
		hreq = hreq.WithContext(withPhaseTrace(ctx, pt))
		defer pt.done(g.ph)
	}
	if c.rewind {
		// net/http sends a request again, on another connection or stream,
		// when the server refused it unprocessed (an HTTP/2 GOAWAY or
		// REFUSED_STREAM) — if it can read the body again.
		hreq.GetBody = func() (io.ReadCloser, error) { return newByteBody(body), nil }
	}
	return c.http.Do(hreq)
}

// retryWait decides whether res's failure is retried and after how long:
// only failures before any token of the classes connect, http_429 and
// http_5xx are, after the server's Retry-After (at most maxRetryAfter) or
// an exponential backoff. It returns -1 for no retry.
func (c *Client) retryWait(res *Result, after time.Duration) time.Duration {
	if c.cfg.Retries <= 0 || res.Retries >= c.cfg.Retries || res.FirstToken != 0 {
		return -1
	}
	switch res.ErrorClass {
	case record.ErrConnect, record.ErrHTTP429, record.ErrHTTP5xx:
	default:
		return -1
	}
	if after > 0 {
		return min(after, maxRetryAfter)
	}
	return min(retryBackoff<<min(res.Retries, 16), maxRetryBackoff)
}

// Retry waits: the first retry waits retryBackoff, each further one twice
// as long up to maxRetryBackoff; a server's Retry-After is honoured up to
// maxRetryAfter.
const (
	retryBackoff    = 100 * time.Millisecond
	maxRetryBackoff = 5 * time.Second
	maxRetryAfter   = 30 * time.Second
)

// retryAfter parses a Retry-After header: seconds or an HTTP date (the
// wait from now).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func (c *Client) since() time.Duration { return c.cfg.Now().Sub(c.cfg.Epoch) }

func (c *Client) fail(res *Result, class, msg string) {
	if res.End == 0 {
		res.End = c.since()
	}
	res.ErrorClass = class
	res.Error = truncate(c.redact(msg), 512)
}

func (c *Client) failErr(g *guard, res *Result, err error, gotResponse bool) {
	if isCut(g.parent) {
		c.cut(res)
		return
	}
	if cause := g.err(); cause != nil {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	class := classify(g.parent, err, gotResponse)
	msg := err.Error()
	if class == record.ErrConnect && errors.Is(err, io.EOF) {
		msg = "the server closed the connection without answering: " + msg
	}
	c.fail(res, class, msg)
}

// redact hides the API key and URL credentials in a message, should a
// server or an error echo them.
func (c *Client) redact(s string) string { return c.secrets.String(s) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		n--
	}
	return s[:n] + "…"
}

// errorMessage extracts an error answer's message from its body: an
// error object's ({"error": {"message"}}: OpenAI's, Anthropic's, SGLang's),
// an error string's ({"error": "message"}: KServe's and Triton's), a
// top-level message ({"object": "error", "message"}) or detail; else the
// body.
func errorMessage(status string, body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var text string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			return status + ": " + inner.Message
		case json.Unmarshal(e.Error, &text) == nil && text != "":
			return status + ": " + text
		case e.Message != "":
			return status + ": " + e.Message
		case e.Detail != nil:
			return fmt.Sprintf("%s: %v", status, e.Detail)
		}
	}
	if s := strings.TrimSpace(string(body)); s != "" {
		return status + ": " + s
	}
	return status
}

func appendInt(b []byte, v int) []byte {
	return strconv.AppendInt(b, int64(v), 10)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
