package mockserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/valyala/fastjson"
)

// POST /v1/messages: Anthropic's Messages API as vLLM and SGLang serve it
// (docs/WIRE_FORMATS.md): a system prompt, messages of text, tool_use and
// tool_result blocks, max_tokens, tools ({name, description,
// input_schema}) and tool_choice ({"type": auto | any | tool | none}). The
// answer is planned as a chat answer (reasoning.go, tools.go): its
// reasoning is a thinking block, its tool call a tool_use block whose
// input streams as input_json_delta fragments. Errors, the server's own
// and injected faults, are in Anthropic's shape ({"type":"error","error":
// {"type","message"}}), a 503 as Anthropic's 529 overloaded_error; a fault
// that breaks a stream's body sends the first token and then an error
// event (overloaded_error), as Anthropic does when it fails mid-stream.

// anthropicErrorType is Anthropic's error type of an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}

func appendAnthropicError(b []byte, typ string, msg []byte) []byte {
	b = append(b, `{"type":"error","error":{"type":"`+typ+`","message":`...)
	b = appendJSONString(b, msg)
	return append(b, "}}"...)
}

// parseMessages reads a /v1/messages request.
func (s *Server) parseMessages(body []byte) (request, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := parseObject(p, body)
	if err != nil {
		return request{}, badRequest(err.Error())
	}
	req := request{model: s.modelOf(v), maxTokens: -1}
	var hb *blockHasher
	if s.prefix != nil {
		hb = new(blockHasher)
		hb.reset(req.model, s.prefix.blockTokens)
		req.prefix = hb
	}
	text := func(b []byte) {
		req.promptTokens += s.countText(b)
		if hb != nil {
			hb.words(b)
		}
	}
	if err := anthropicContent(v.Get("system"), "system", text); err != nil {
		return req, badRequest(err.Error())
	}
	msgs := v.GetArray("messages")
	if len(msgs) == 0 {
		return req, badRequest("messages: a non-empty list is required")
	}
	for i, m := range msgs {
		if r := string(m.GetStringBytes("role")); r != "user" && r != "assistant" {
			return req, badRequest("messages." + strconv.Itoa(i) + ".role: want user or assistant, got " + strconv.Quote(r))
		}
		if err := anthropicContent(m.Get("content"), "messages."+strconv.Itoa(i)+".content", text); err != nil {
			return req, badRequest(err.Error())
		}
	}
	if err := intField(v, "max_tokens", &req.maxTokens); err != nil {
		return req, badRequest(err.Error())
	}
	if req.maxTokens < 1 {
		return req, badRequest("max_tokens: a number of at least 1 is required")
	}
	if err := intField(v, "min_tokens", &req.minTokens); err != nil {
		return req, badRequest(err.Error())
	}
	if req.minTokens < 0 || req.minTokens > req.maxTokens {
		return req, badRequest("min_tokens must be between 0 and max_tokens")
	}
	if th := v.Get("thinking"); th != nil && th.Type() != fastjson.TypeNull {
		switch string(th.GetStringBytes("type")) {
		case "disabled":
		case "enabled":
			if n := th.GetInt("budget_tokens"); n < 1 || n >= req.maxTokens {
				return req, badRequest("thinking.budget_tokens: want at least 1 and less than max_tokens")
			}
		default:
			return req, badRequest("thinking.type: want enabled or disabled")
		}
	}
	req.ignoreEOS = v.GetBool("ignore_eos")
	req.stream = v.GetBool("stream")
	req.usage = true
	if err := s.parseAnthropicTools(v, &req); err != nil {
		return req, err
	}
	return req, nil
}

// anthropicContent reads a system prompt's or a message's content: a
// string, or text, tool_use, tool_result and thinking blocks (a thinking
// block is not part of the prompt).
func anthropicContent(c *fastjson.Value, where string, text func([]byte)) error {
	if c == nil || c.Type() == fastjson.TypeNull {
		return nil
	}
	switch c.Type() {
	case fastjson.TypeString:
		text(c.GetStringBytes())
		return nil
	case fastjson.TypeArray:
	default:
		return errors.New(where + ": a string or a list of content blocks is required")
	}
	blocks, _ := c.Array()
	for _, b := range blocks {
		switch typ := string(b.GetStringBytes("type")); typ {
		case "text":
			text(b.GetStringBytes("text"))
		case "tool_use":
			if in := b.Get("input"); in == nil || in.Type() != fastjson.TypeObject {
				return errors.New(where + ": a tool_use block's input must be an object")
			} else {
				text(in.MarshalTo(nil))
			}
		case "tool_result":
			if err := anthropicContent(b.Get("content"), where, text); err != nil {
				return err
			}
		case "thinking", "redacted_thinking":
		default:
			return errors.New(where + ": content block type " + strconv.Quote(typ) + " is not supported")
		}
	}
	return nil
}

// parseAnthropicTools reads tools ({name, description, input_schema}) and
// tool_choice ({"type": auto | any | tool | none}).
func (s *Server) parseAnthropicTools(v *fastjson.Value, req *request) error {
	tv := v.Get("tools")
	if tv == nil || tv.Type() == fastjson.TypeNull {
		return nil
	}
	list, err := tv.Array()
	if err != nil {
		return badRequest("tools: a list of tools is required")
	}
	if len(list) > maxTools {
		return badRequest("tools: at most " + strconv.Itoa(maxTools) + " tools are supported")
	}
	for i, t := range list {
		name := t.GetStringBytes("name")
		if len(name) == 0 {
			return badRequest("tools." + strconv.Itoa(i) + ".name: required")
		}
		args, _ := schemaInstance(t.Get("input_schema"), false)
		if args.b[0] != '{' {
			args.b = []byte("{}")
		}
		req.tools = append(req.tools, toolSpec{name: append([]byte(nil), name...), args: args.b})
	}
	if len(req.tools) == 0 {
		return nil
	}
	req.toolChoice = toolChoiceAuto
	tc := v.Get("tool_choice")
	if tc == nil || tc.Type() == fastjson.TypeNull {
		return nil
	}
	switch string(tc.GetStringBytes("type")) {
	case "auto":
	case "any":
		req.toolChoice = toolChoiceRequired
	case "none":
		req.toolChoice = toolChoiceNone
	case "tool":
		name := string(tc.GetStringBytes("name"))
		req.toolChoice, req.named = toolChoiceNamed, -1
		for i, t := range req.tools {
			if string(t.name) == name {
				req.named = i
				break
			}
		}
		if req.named < 0 {
			return badRequest("tool_choice.name: tool " + strconv.Quote(name) + " is not in tools")
		}
	default:
		return badRequest("tool_choice.type: want auto, any, tool or none")
	}
	return nil
}

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	var ms *msgStream
	s.serveGeneration(&shapedErrors{ResponseWriter: w, shape: anthropicShape}, r, generationAPI{chat: true, plan: true, parse: s.parseMessages,
		writer: func(g *generation, fault string, _ time.Time) answerWriter {
			ms = &msgStream{g: g, id: "msg_" + hex32(s.cfg.Seed^0xa17, g.id), failAfterFirst: faultWritesBody(fault, g.req.stream)}
			return ms
		},
		completed: func(g *generation) {
			if !ms.failAfterFirst {
				s.countCompleted(g)
				s.model.count(g)
			}
		}})
}

// msgStream writes a Messages API answer.
type msgStream struct {
	g  *generation
	id string
	// failAfterFirst: a fault breaks the stream after its first token
	// (an error event).
	failAfterFirst bool
}

func (ms *msgStream) toolID() string { return "toolu_" + hex32(ms.g.s.cfg.Seed^0x7001, ms.g.id) }

func (ms *msgStream) stopReason() string {
	g := ms.g
	switch {
	case g.tool != nil:
		return "tool_use"
	case g.out < g.req.maxTokens:
		return "end_turn"
	}
	return "max_tokens"
}

// appendUsage appends a Messages usage object: input_tokens are the
// prompt's tokens after the cached prefix (cache_read_input_tokens).
func (ms *msgStream) appendUsage(b []byte, out int) []byte {
	g := ms.g
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.req.promptTokens-g.cached), 10)
	b = append(b, `,"cache_creation_input_tokens":0,"cache_read_input_tokens":`...)
	b = strconv.AppendInt(b, int64(g.cached), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(out), 10)
	return append(b, '}')
}

// appendMessage appends the message object: done, with its content blocks,
// stop reason and output usage; else empty (message_start's).
func (ms *msgStream) appendMessage(b []byte, done bool) []byte {
	g := ms.g
	b = append(b, `{"id":"`+ms.id+`","type":"message","role":"assistant","model":`...)
	b = appendJSONString(b, []byte(g.req.model))
	b = append(b, `,"content":[`...)
	if !done {
		b = append(b, `],"stop_reason":null,"stop_sequence":null,"usage":`...)
		return append(ms.appendUsage(b, 0), '}')
	}
	b = g.appendParts(b, func(b []byte) []byte {
		b = append(b, `{"type":"thinking","thinking":`...)
		b = appendJSONString(b, (&respStream{g: g}).reasoningText())
		return append(b, `,"signature":"`+ms.signature()+`"}`...)
	}, func(b []byte) []byte {
		return ms.appendToolUse(b, true)
	}, func(b []byte) []byte {
		b = append(b, `{"type":"text","text":`...)
		b = appendJSONString(b, g.answerText())
		return append(b, '}')
	})
	b = append(b, `],"stop_reason":"`+ms.stopReason()+`","stop_sequence":null,"usage":`...)
	return append(ms.appendUsage(b, g.out), '}')
}

func (ms *msgStream) signature() string { return "sig_" + hex32(ms.g.s.cfg.Seed^0x5191, ms.g.id) }

// appendToolUse appends the tool_use block: its input empty (a stream's
// content_block_start) or the call's arguments (an invalid instance, not
// an object, goes as {} in a whole message: its input must be an object).
func (ms *msgStream) appendToolUse(b []byte, done bool) []byte {
	g := ms.g
	b = append(b, `{"type":"tool_use","id":"`+ms.toolID()+`","name":`...)
	b = appendJSONString(b, g.tool.spec.name)
	b = append(b, `,"input":`...)
	if done && json.Valid(g.answer) && g.answer[0] == '{' {
		b = append(b, g.answer...)
	} else {
		b = append(b, "{}"...)
	}
	return append(b, '}')
}

// msgEvent appends one server-sent event of type typ whose data is data's.
func msgEvent(b []byte, typ string, data func([]byte) []byte) []byte {
	b = append(b, "event: "+typ+"\ndata: {\"type\":\""+typ+"\""...)
	if data != nil {
		b = append(b, ',')
		b = data(b)
	}
	return append(b, "}\n\n"...)
}

func blockIndex(b []byte, i int) []byte {
	b = append(b, `"index":`...)
	return strconv.AppendInt(b, int64(i), 10)
}

// appendToken appends the events of output token k: a block's start when
// it is its first, then its delta.
func (ms *msgStream) appendToken(b []byte, k int) []byte {
	g := ms.g
	if k < g.reasoning {
		if k == 0 {
			b = msgEvent(b, "content_block_start", func(b []byte) []byte {
				return append(blockIndex(b, 0), `,"content_block":{"type":"thinking","thinking":""}`...)
			})
		}
		return msgEvent(b, "content_block_delta", func(b []byte) []byte {
			return append(blockIndex(b, 0), `,"delta":{"type":"thinking_delta","thinking":"`+reasoningText+`"}`...)
		})
	}
	idx, j := 0, k-g.reasoning
	if g.reasoning > 0 {
		idx = 1
	}
	if j == 0 {
		if g.reasoning > 0 {
			b = ms.thinkingDone(b)
		}
		b = msgEvent(b, "content_block_start", func(b []byte) []byte {
			b = append(blockIndex(b, idx), `,"content_block":`...)
			if g.tool != nil {
				return ms.appendToolUse(b, false)
			}
			return append(b, `{"type":"text","text":""}`...)
		})
	}
	return msgEvent(b, "content_block_delta", func(b []byte) []byte {
		b = append(blockIndex(b, idx), `,"delta":{"type":`...)
		switch {
		case g.tool != nil:
			b = append(b, `"input_json_delta","partial_json":`...)
			b = appendJSONString(b, g.fragment(j))
		case g.answer != nil:
			b = append(b, `"text_delta","text":`...)
			b = appendJSONString(b, g.fragment(j))
		default:
			b = append(b, `"text_delta","text":"`+tokenText+`"`...)
		}
		return append(b, '}')
	})
}

// thinkingDone appends the thinking block's signature and its stop.
func (ms *msgStream) thinkingDone(b []byte) []byte {
	b = msgEvent(b, "content_block_delta", func(b []byte) []byte {
		return append(blockIndex(b, 0), `,"delta":{"type":"signature_delta","signature":"`+ms.signature()+`"}`...)
	})
	return msgEvent(b, "content_block_stop", func(b []byte) []byte { return blockIndex(b, 0) })
}

// appendEnd appends the events after the last token: the open block's
// stop, message_delta (stop reason, output usage) and message_stop.
func (ms *msgStream) appendEnd(b []byte) []byte {
	g := ms.g
	switch {
	case g.out == g.reasoning && g.reasoning > 0:
		b = ms.thinkingDone(b)
	case g.out > g.reasoning:
		idx := 0
		if g.reasoning > 0 {
			idx = 1
		}
		b = msgEvent(b, "content_block_stop", func(b []byte) []byte { return blockIndex(b, idx) })
	}
	b = msgEvent(b, "message_delta", func(b []byte) []byte {
		b = append(b, `"delta":{"stop_reason":"`+ms.stopReason()+`","stop_sequence":null},"usage":{"output_tokens":`...)
		b = strconv.AppendInt(b, int64(g.out), 10)
		return append(b, '}')
	})
	return msgEvent(b, "message_stop", nil)
}

// stream writes the event stream: message_start and a ping at once, token
// k at first + k·ITL; it reports false if the client left.
func (ms *msgStream) stream(ctx context.Context, w http.ResponseWriter, first time.Time) bool {
	ev := tokenEvents{
		start: func(b []byte) []byte {
			b = msgEvent(b, "message_start", func(b []byte) []byte { return ms.appendMessage(append(b, `"message":`...), false) })
			return msgEvent(b, "ping", nil)
		},
		token: ms.appendToken,
		end:   ms.appendEnd,
	}
	if ms.failAfterFirst { // the error comes after the first token
		ev.fail = func(b []byte) []byte {
			return msgEvent(b, "error", func(b []byte) []byte {
				return append(b, `"error":{"type":"overloaded_error","message":"injected fault: Overloaded"}`...)
			})
		}
	}
	return ms.g.streamTokens(ctx, w, first, ev)
}

// writeWhole writes the whole message, or the fault's error in its place.
func (ms *msgStream) writeWhole(w http.ResponseWriter) {
	if ms.failAfterFirst {
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "injected fault: Overloaded")
		return
	}
	writeJSON(w, ms.appendMessage(nil, true))
}
