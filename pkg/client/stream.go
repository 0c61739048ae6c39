package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// maxChunks bounds the text chunks of one response (8 MiB of token times).
const maxChunks = 1 << 20

// streamBound is how many chunks carrying text a stream asked for
// maxTokens tokens may send before it is cut as a protocol error: a server
// sends at most max_tokens tokens (with ignore_eos, exactly that many),
// one or more a chunk, so the margin — a tenth of max_tokens, at least 8 —
// only forgives a server that counts a few tokens differently. maxTokens 0
// sets no bound.
func streamBound(maxTokens int) int {
	if maxTokens <= 0 {
		return math.MaxInt
	}
	return maxTokens + max(8, maxTokens/10)
}

// tokenKind is what a stream chunk carries.
type tokenKind uint8

const (
	tokNone      tokenKind = iota
	tokOutput              // answer text, or a tool call's name or arguments
	tokReasoning           // reasoning text only
)

// protocolError is a response that is not a valid OpenAI response.
type protocolError struct{ msg string }

func (e protocolError) Error() string { return e.msg }

// streamError is an error object the server sent inside a 200 stream.
type streamError struct {
	class, msg string
}

func (e streamError) Error() string { return e.msg }

// decoder holds the per-request reading state; pooled by the Client.
type decoder struct {
	lines lineReader
	// maxTokens is the request's max_tokens a stream is held to (0: none;
	// see streamBound).
	maxTokens int
	buf       []byte
	data      []byte
	// shape is the last chunk skimmed whole (chunkShape).
	shape chunkShape
	// seen is how much of a cumulative stream's text has arrived
	// (sglang-generate: each chunk holds the whole text so far).
	seen int
	// parser is taken from parsers for a parse and handed back when its
	// values are no longer read (release): a stream holds none while it
	// waits for its next chunk, so 10,000 open streams do not hold 10,000
	// parsers' caches (about 3 KB each).
	parser *fastjson.Parser
}

// parsers is every decoder's source of JSON parsers.
var parsers fastjson.ParserPool

// parse parses b with the decoder's parser, taking one from the pool if it
// holds none; the values are valid until release.
func (d *decoder) parse(b []byte) (*fastjson.Value, error) {
	if d.parser == nil {
		d.parser = parsers.Get()
	}
	return d.parser.ParseBytes(b)
}

// release hands the decoder's parser back (the values it gave are dead).
func (d *decoder) release() {
	if d.parser != nil {
		parsers.Put(d.parser)
		d.parser = nil
	}
}

// readStream consumes a server-sent event stream of completion chunks.
func (c *Client) readStream(d *decoder, body io.Reader, res *Result) error {
	if d.buf == nil {
		d.buf = make([]byte, 1<<10) // SSE lines are short; the reader grows it for a long one
	}
	d.lines.now = c.cfg.Now
	if lb := framedBody(body); lb != nil {
		d.lines.resetFramed(lb, d.buf)
	} else {
		d.lines.reset(body, d.buf)
	}
	defer func() { d.buf = d.lines.buf }()
	d.seen = 0

	data := d.data[:0]
	defer func() { d.data = data[:0] }()
	var dataAt time.Time
	haveData, done, usage := false, false, false
	chunks, bound := 0, streamBound(d.maxTokens)
	flush := func() error {
		if !haveData {
			return nil
		}
		haveData = false
		if done {
			return nil // nothing is expected after [DONE]
		}
		if bytes.Equal(data, []byte("[DONE]")) {
			done = true
			return nil
		}
		kind, u, end, err := c.wire.chunk(c, d, data, res)
		d.release()
		if err != nil {
			return err
		}
		done = end
		if kind != tokNone {
			t := dataAt.Sub(c.cfg.Epoch)
			if res.FirstToken == 0 {
				res.FirstToken = t
			}
			if kind == tokReasoning {
				res.ReasoningChunks++
			} else if res.FirstOutput == 0 {
				res.FirstOutput = t
			}
			if len(res.Calls) > 0 && res.FirstToolCall == 0 {
				res.FirstToolCall = t
			}
			res.TokenTimes = append(res.TokenTimes, t)
			chunks++
			if chunks > bound {
				return protocolError{fmt.Sprintf("stream exceeded max_tokens (%d > %d)", chunks, d.maxTokens)}
			}
			if chunks > maxChunks { // a stream that never ends must not exhaust memory
				return protocolError{fmt.Sprintf("more than %d chunks carrying text: the stream does not end", maxChunks)}
			}
		}
		usage = usage || u
		return nil
	}
	for {
		line, at, err := d.lines.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			// The request failed here (a timeout, a reset): it ends now,
			// with the tokens that came.
			res.End = c.since()
			if !usage {
				res.CountedOutput(chunks, record.OutputChunks)
			}
			if errors.Is(err, errLineTooLong) {
				return protocolError{err.Error()}
			}
			return err
		}
		switch {
		case len(line) == 0: // end of an event
			if err := flush(); err != nil {
				return err
			}
		case line[0] == ':': // comment (keep-alive)
		case bytes.HasPrefix(line, []byte("data:")):
			v := line[5:]
			if len(v) > 0 && v[0] == ' ' {
				v = v[1:]
			}
			if haveData {
				data = append(data, '\n')
			} else {
				data = data[:0]
			}
			data = append(data, v...)
			haveData, dataAt = true, at
		default: // event:, id:, retry: carry nothing we measure
		}
	}
	if err := flush(); err != nil {
		return err
	}
	res.End = d.lines.at.Sub(c.cfg.Epoch)
	if d.lines.at.IsZero() {
		res.End = c.since()
	}
	if !usage {
		res.CountedOutput(chunks, record.OutputChunks)
	}
	if res.ReasoningTokens == 0 {
		res.ReasoningTokens = res.ReasoningChunks // no usage details: the chunks counted
	}
	res.CountToolCalls()
	if !done && c.wire.streamEnd != "" {
		return protocolError{"stream ended without " + c.wire.streamEnd}
	}
	if usage && chunks == 0 && res.CompletionTokens >= minUnreadTokens {
		// Never a silent success: its TTFT and ITL would be missing from
		// the figures with no word why.
		return unreadOutput(res.CompletionTokens, "the stream")
	}
	return nil
}

// parseObject parses one event of a stream, which must be a JSON object;
// what names the event in the error.
func (d *decoder) parseObject(data []byte, what string) (*fastjson.Value, error) {
	v, err := d.parse(data)
	if err != nil {
		return nil, protocolError{fmt.Sprintf("invalid JSON in stream: %v: %q", err, truncate(string(data), 200))}
	}
	if v.Type() != fastjson.TypeObject {
		return nil, protocolError{fmt.Sprintf("%s is not a JSON object: %q", what, truncate(string(data), 200))}
	}
	return v, nil
}

// errorMember is the failure a JSON answer or stream event reports in its
// "error" member, or nil when it has none (or a null one).
func errorMember(v *fastjson.Value) error {
	if e := v.Get("error"); e != nil && e.Type() != fastjson.TypeNull {
		return chunkError(e)
	}
	return nil
}

// jsonChunk is the chunk reader of the kinds whose stream events are JSON
// objects (every kind but completions and chat completions, whose
// textChunk skims): it parses an event, fails with the error the event
// reports in its "error" member, and hands the rest to the kind's event
// reader.
func jsonChunk(c *Client, d *decoder, data []byte, res *Result) (kind tokenKind, usage, done bool, err error) {
	v, err := d.parseObject(data, "stream event")
	if err == nil {
		err = errorMember(v)
	}
	if err != nil {
		return tokNone, false, false, err
	}
	return c.wire.event(d, v, res)
}

// readGeneration reads a generation's answer: a server-sent event stream
// (readStream, with the kind's chunk reader), or a whole JSON answer (the
// kind's whole reader) when streaming is off or the server answers with
// JSON anyway.
func readGeneration(c *Client, d *decoder, resp *http.Response, rd io.Reader, res *Result) error {
	if c.cfg.Stream && !isJSON(resp) {
		return c.readStream(d, resp.Body, res)
	}
	v, err := c.readWholeAnswer(d, rd, res)
	if err != nil {
		return err
	}
	return c.wire.whole(c, v, res)
}

// readAnswerText reads a whole answer's text into res and returns it: its
// member key, which must be a JSON string (what names the answer in the
// error).
func readAnswerText(v *fastjson.Value, key, what string, res *Result) ([]byte, error) {
	t := v.Get(key)
	if t == nil || t.Type() != fastjson.TypeString {
		return nil, protocolError{what + " has no " + key}
	}
	text := t.GetStringBytes()
	res.AppendText(text)
	return text, nil
}

// arrayMember is a whole answer's list: its member key, which must be a
// JSON array (what names the answer in the error).
func arrayMember(v *fastjson.Value, key, what string) ([]*fastjson.Value, error) {
	a := v.Get(key)
	if a == nil || a.Type() != fastjson.TypeArray {
		return nil, protocolError{what + " has no " + key + " list"}
	}
	return a.GetArray(), nil
}

// setInt sets *dst to v's member at keys when that member is a JSON
// number; it reports whether it was.
func setInt(dst *int, v *fastjson.Value, keys ...string) bool {
	n := v.Get(keys...)
	if n == nil || n.Type() != fastjson.TypeNumber {
		return false
	}
	*dst = n.GetInt()
	return true
}

// textChunk is the chunk reader of completions and chat completions: their
// streams end with data: [DONE], which readStream reads.
func textChunk(c *Client, d *decoder, data []byte, res *Result) (kind tokenKind, usage, done bool, err error) {
	kind, usage, err = c.chunk(d, data, res)
	return kind, usage, false, err
}

// chunk decodes one completion chunk: the token it carries and whether it
// carries usage (which it copies into res).
func (c *Client) chunk(d *decoder, data []byte, res *Result) (kind tokenKind, usage bool, err error) {
	if !res.KeepText {
		if kind, ok := d.shape.skim(data, c.chat); ok {
			return kind, false, nil
		}
	}
	return c.parseChunk(d, data, res)
}

// parseChunk decodes a chunk with the full JSON parser: what skimChunk
// leaves, and the reference it is checked against.
func (c *Client) parseChunk(d *decoder, data []byte, res *Result) (kind tokenKind, usage bool, err error) {
	v, err := d.parseObject(data, "stream chunk")
	if err != nil {
		return tokNone, false, err
	}
	if e := v.Get("error"); e != nil {
		return tokNone, false, chunkError(e)
	}
	if ch := v.Get("choices", "0"); ch != nil {
		if c.chat {
			if delta := ch.Get("delta"); delta != nil {
				kind = c.delta(delta, res)
			}
		} else if t := ch.GetStringBytes("text"); len(t) > 0 {
			kind = tokOutput
			res.AppendText(t)
		}
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		copyUsage(u, res)
		usage = u.Get("completion_tokens") != nil
	}
	return kind, usage, nil
}

// delta reads a chat delta: its content, its tool calls' fragments (both
// output tokens) and its reasoning — a token like content (TTFT is the
// first of either) but kept apart from the answer: a conversation's
// history carries the answer only, unless asked to carry the reasoning.
func (c *Client) delta(delta *fastjson.Value, res *Result) tokenKind {
	kind := tokNone
	if readContent(delta.Get("content"), res) {
		kind = tokOutput
	}
	if calls := delta.GetArray("tool_calls"); len(calls) > 0 && toolDeltas(res, calls) {
		kind = tokOutput
	}
	if kind == tokOutput {
		return kind
	}
	r := delta.GetStringBytes("reasoning")
	if len(r) == 0 {
		r = delta.GetStringBytes("reasoning_content")
	}
	if len(r) > 0 {
		res.AppendReasoning(r)
		return tokReasoning
	}
	return tokNone
}

// readContent reads a message's or a delta's content — a string, or an
// array of content parts, as servers that answer in several modalities
// send it — keeping its text; it reports whether the content carried
// output. A part of type "text" (or "output_text", or of no type) carries
// its text, a
// "refusal" its refusal, both kept as the answer; a part of another type
// (an image, audio) carries output when it holds anything besides its
// type, but no text to keep; a part that is not an object, or that holds
// nothing, carries none. Content of any other form (null, a number, an
// object) carries none.
func readContent(v *fastjson.Value, res *Result) bool {
	if v == nil {
		return false
	}
	switch v.Type() {
	case fastjson.TypeString:
		t := v.GetStringBytes()
		res.AppendText(t)
		return len(t) > 0
	case fastjson.TypeArray:
	default:
		return false
	}
	parts, _ := v.Array()
	out := false
	for _, p := range parts {
		o, err := p.Object()
		if err != nil {
			continue
		}
		switch typ := string(p.GetStringBytes("type")); typ {
		case "text", "output_text", "refusal", "":
			key := "text"
			if typ == "refusal" {
				key = "refusal"
			}
			if t := p.GetStringBytes(key); len(t) > 0 {
				res.AppendText(t)
				out = true
			}
		default:
			o.Visit(func(k []byte, m *fastjson.Value) {
				if string(k) != "type" && m.Type() != fastjson.TypeNull {
					out = true
				}
			})
		}
	}
	return out
}

// minUnreadTokens is the fewest output tokens a server may report for an
// answer in which nothing was read before the answer counts as one whose
// content came in a form the client does not read (a protocol failure):
// an answer of one token with no text is what an answer that is only its
// end-of-sequence token looks like (vLLM counts that token in
// completion_tokens and sends no text for it).
const minUnreadTokens = 2

// unreadOutput is the protocol error of an answer whose server reported n
// output tokens, none of which was read.
func unreadOutput(n int, where string) error {
	return protocolError{fmt.Sprintf("the server reported %d output tokens but %s carried none that could be read (content in a form this client does not read?)", n, where)}
}

// chunkError turns an error inside a stream into a classified error: an
// error object, or an error string (KServe's {"error": "message"}).
func chunkError(e *fastjson.Value) error {
	msg := string(e.GetStringBytes("message"))
	if e.Type() == fastjson.TypeString {
		msg = string(e.GetStringBytes())
	}
	if msg == "" {
		msg = string(e.MarshalTo(nil))
	}
	code := e.GetInt("code")
	if code == 0 {
		code = e.GetInt("status")
	}
	if code == 0 {
		code = errorTypeStatus[string(e.GetStringBytes("type"))]
	}
	if code >= 400 && code < 600 {
		return streamError{statusClass(code), fmt.Sprintf("error in stream (code %d): %s", code, msg)}
	}
	return streamError{record.ErrProtocol, "error in stream: " + msg}
}

// errorTypeStatus is the HTTP status of an error that names its type and
// no code: Anthropic's error types (its stream's error event), classified
// as the same error answered with its status would be — overloaded_error
// is Anthropic's 529, a server error (http_5xx) retried like a 503.
var errorTypeStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
	"request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529,
}

func copyUsage(u *fastjson.Value, res *Result) {
	if n := u.Get("prompt_tokens"); n != nil {
		res.PromptTokens = n.GetInt()
	}
	if n := u.Get("completion_tokens"); n != nil {
		res.CompletionTokens, res.OutputFrom = n.GetInt(), ""
	}
	if n := u.Get("prompt_tokens_details", "cached_tokens"); n != nil {
		res.CachedTokens = n.GetInt()
	}
	setInt(&res.ReasoningTokens, u, "completion_tokens_details", "reasoning_tokens")
}

// Bounds of non-streamed answers: one body, and all those being read and
// parsed at once (a parsed body takes a few times its size).
const (
	maxWholeResponse = 16 << 20
	maxWholeInFlight = 256 << 20
)

// wholeInFlight is the bytes of non-streamed bodies held now, all clients
// together.
var wholeInFlight atomic.Int64

// readWholeBody reads a non-streamed body, at most maxWholeResponse bytes, and
// reserves them against maxWholeInFlight until release is called (it
// always returns one). A larger body, or one past the shared bound, is a
// protocol error that says so.
func readWholeBody(body io.Reader) (raw []byte, release func(), err error) {
	return readChunked(body) // wholebody.go
}

// readWholeAnswer reads a non-streamed answer (bounded: readWholeBody) and
// parses it: a JSON object, whose "error" member, unless null, is the
// request's failure. The answer ends when it has arrived: End, the first
// token and the first output are now.
func (c *Client) readWholeAnswer(d *decoder, body io.Reader, res *Result) (*fastjson.Value, error) {
	raw, release, err := readWholeBody(body)
	defer release()
	now := c.since()
	res.End, res.FirstToken, res.FirstOutput = now, now, now
	if err != nil {
		return nil, err
	}
	v, err := d.parse(raw)
	if err != nil || v.Type() != fastjson.TypeObject {
		return nil, protocolError{fmt.Sprintf("invalid JSON response: %q", truncate(string(raw), 200))}
	}
	if err := errorMember(v); err != nil {
		return nil, err
	}
	return v, nil
}

// isJSON reports whether a response is a JSON document (not a stream).
func isJSON(resp *http.Response) bool {
	return strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
}

// wholeText reads a whole completion or chat completion.
func wholeText(c *Client, v *fastjson.Value, res *Result) error {
	now := res.End
	if v.Get("choices", "0") == nil {
		return protocolError{"response has no choices"}
	}
	res.CountedOutput(res.OutputLen, record.OutputRequested) // unless its usage says
	ch := v.Get("choices", "0")
	read := false
	var thought []byte
	if m := ch.Get("message"); m != nil {
		read = readContent(m.Get("content"), res)
		r := m.GetStringBytes("reasoning")
		if len(r) == 0 {
			r = m.GetStringBytes("reasoning_content")
		}
		res.AppendReasoning(r)
		thought = r
		read = read || len(r) > 0
		if calls := m.GetArray("tool_calls"); len(calls) > 0 {
			read = toolDeltas(res, calls) || read
			res.FirstToolCall = now
		}
	} else {
		t := ch.GetStringBytes("text")
		res.AppendText(t)
		read = len(t) > 0
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		copyUsage(u, res)
		if n := u.Get("completion_tokens"); !read && n != nil && n.GetInt() >= minUnreadTokens {
			return unreadOutput(n.GetInt(), "the answer")
		}
	}
	res.CountReasoning(func() int { return c.countText(thought) })
	res.CountToolCalls()
	return nil
}
