package client

import (
	"encoding/json"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The anthropic-messages backend posts Anthropic's Messages API request to
// /v1/messages (docs/WIRE_FORMATS.md):
//
//	{"model": M, "max_tokens": N, "messages": [{"role":"user","content":"…"}],
//	 "stream": true, "temperature": 0, "ignore_eos": true,
//	 "thinking": {"type":"enabled","budget_tokens": B},
//	 "tools": [{"name","description","input_schema"}], "tool_choice": {"type":"auto"}}
//
// with the API key in x-api-key and anthropic-version: 2023-06-01. A
// stream is server-sent events with an event: line and a data: object whose
// "type" repeats it: message_start (the input usage), then per content
// block content_block_start, content_block_delta (text_delta, thinking_delta,
// input_json_delta, signature_delta) and content_block_stop, then
// message_delta (the output usage, the stop reason) and message_stop; ping
// at any time, error in place of the rest. A whole answer is the message
// object: its content blocks (thinking, text, tool_use) and usage.

// anthropicVersion is the anthropic-version header every request carries.
const anthropicVersion = "2023-06-01"

// anthropicEnd is how a Messages stream ends.
const anthropicEnd = "a message_stop event"

// anthropicAnswer is the answer options in the Messages API's forms, made
// once per client.
type anthropicAnswer struct {
	tools, toolChoice json.RawMessage
	// budget is the thinking budget of --reasoning-effort (0: no thinking
	// object; -1: thinking disabled).
	budget int
}

// thinkingBudgets maps --reasoning-effort to a thinking budget_tokens: the
// API's minimum (1,024) for minimal, doubling up to the largest budgets.
// A request's budget is held below its max_tokens, as the API requires.
var thinkingBudgets = map[string]int{
	"none": -1, "minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 65536,
}

// prepareAnthropic converts the chat forms of the answer options.
func prepareAnthropic(c *Client) error {
	a := &c.cfg.Answer
	if a.ReasoningEffort != "" {
		b, ok := thinkingBudgets[a.ReasoningEffort]
		if !ok {
			return fmt.Errorf("reasoning effort %q has no thinking budget", a.ReasoningEffort)
		}
		c.anthropic.budget = b
	}
	if len(a.Tools) > 0 {
		var tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description,omitempty"`
				Parameters  json.RawMessage `json:"parameters,omitempty"`
			} `json:"function"`
		}
		if err := json.Unmarshal(a.Tools, &tools); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		type tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		out := make([]tool, len(tools))
		for i, t := range tools {
			out[i] = tool{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters}
			if len(out[i].InputSchema) == 0 || string(out[i].InputSchema) == "null" {
				out[i].InputSchema = json.RawMessage(`{"type":"object"}`)
			}
		}
		c.anthropic.tools, _ = json.Marshal(out)
	}
	switch a.ToolChoice {
	case "":
	case "auto", "none":
		c.anthropic.toolChoice = json.RawMessage(`{"type":"` + a.ToolChoice + `"}`)
	case "required":
		c.anthropic.toolChoice = json.RawMessage(`{"type":"any"}`)
	default:
		b, _ := json.Marshal(map[string]string{"type": "tool", "name": a.ToolChoice})
		c.anthropic.toolChoice = b
	}
	return nil
}

// appendAnthropicBody appends a Messages API request body.
func appendAnthropicBody(c *Client, b []byte, req *Request) []byte {
	an := &c.anthropic
	o := c.openModelBody(b, req)
	if o.member("max_tokens") {
		o.b = appendInt(o.b, req.MaxTokens)
	}
	if o.member("messages") {
		o.b = req.appendMessages(o.b)
	}
	if o.member("stream") {
		o.b = appendBool(o.b, c.cfg.Stream)
	}
	if an.budget <= 0 && o.member("temperature") { // thinking takes the default temperature only
		o.b = append(o.b, '0')
	}
	if c.cfg.IgnoreEOS && o.member("ignore_eos") {
		o.b = appendBool(o.b, true)
	}
	if an.budget != 0 && o.member("thinking") {
		if an.budget < 0 {
			o.b = append(o.b, `{"type":"disabled"}`...)
		} else {
			o.b = append(o.b, `{"type":"enabled","budget_tokens":`...)
			o.b = appendInt(o.b, max(1, min(an.budget, req.MaxTokens-1)))
			o.b = append(o.b, '}')
		}
	}
	if len(an.tools) > 0 && o.member("tools") {
		o.b = append(o.b, an.tools...)
	}
	if len(an.toolChoice) > 0 && o.member("tool_choice") {
		o.b = append(o.b, an.toolChoice...)
	}
	return c.closeBody(&o)
}

// anthropicEvent reads one event of a Messages stream. Every delta is a
// token (TTFT is the first of any kind); a thinking_delta is reasoning, a
// text_delta or a tool's input_json_delta output (TTFO). An error event
// carries its error object, which jsonChunk reports.
func anthropicEvent(_ *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error) {
	switch string(v.GetStringBytes("type")) {
	case "message_start":
		anthropicUsage(v.Get("message", "usage"), res)
	case "content_block_start":
		if cb := v.Get("content_block"); cb != nil && string(cb.GetStringBytes("type")) == "tool_use" {
			res.ToolCallAt(v.GetInt("index"), cb.GetStringBytes("id"), cb.GetStringBytes("name"))
		}
	case "content_block_delta":
		delta := v.Get("delta")
		if delta == nil {
			return tokNone, false, false, protocolError{fmt.Sprintf("content_block_delta without a delta: %q", truncate(v.String(), 200))}
		}
		switch string(delta.GetStringBytes("type")) {
		case "text_delta":
			if t := delta.GetStringBytes("text"); len(t) > 0 {
				res.AppendText(t)
				return tokOutput, false, false, nil
			}
		case "thinking_delta":
			if t := delta.GetStringBytes("thinking"); len(t) > 0 {
				res.AppendReasoning(t)
				return tokReasoning, false, false, nil
			}
		case "input_json_delta":
			if a := delta.GetStringBytes("partial_json"); len(a) > 0 {
				if call := res.ToolCallAt(v.GetInt("index"), nil, nil); call != nil {
					call.AddArgs(a, res.ToolArgsBytes())
				}
				return tokOutput, false, false, nil
			}
		}
	case "message_delta":
		return tokNone, anthropicUsage(v.Get("usage"), res), false, nil
	case "message_stop":
		return tokNone, false, true, nil
	case "error":
		return tokNone, false, false, streamError{record.ErrProtocol, "error event: " + truncate(v.String(), 200)}
	}
	return tokNone, false, false, nil
}

// anthropicUsage copies a Messages usage object into res: the prompt is
// its input_tokens and the cache's (cache_read_input_tokens,
// cache_creation_input_tokens: input_tokens counts only what follows the
// cache), cache_read_input_tokens the cached tokens. It reports whether it
// held the output tokens.
func anthropicUsage(u *fastjson.Value, res *Result) bool {
	if u == nil || u.Type() != fastjson.TypeObject {
		return false
	}
	var p int
	if setInt(&p, u, "input_tokens") {
		if setInt(&res.CachedTokens, u, "cache_read_input_tokens") {
			p += res.CachedTokens
		}
		var written int
		setInt(&written, u, "cache_creation_input_tokens")
		res.PromptTokens = p + written
	}
	return setInt(&res.CompletionTokens, u, "output_tokens")
}

// wholeAnthropic reads a whole Messages answer: the message object. Its
// usage does not count the thinking apart (output_tokens includes it), so
// the reasoning tokens are the thinking blocks' text counted by the client
// (Client.countText: --tokenizer's tokens, else words), at most the output
// tokens — as a stream's are its thinking deltas counted.
func wholeAnthropic(c *Client, v *fastjson.Value, res *Result) error {
	blocks, err := arrayMember(v, "content", "message")
	if err != nil {
		return err
	}
	thinking := 0
	for i, cb := range blocks {
		switch string(cb.GetStringBytes("type")) {
		case "text":
			res.AppendText(cb.GetStringBytes("text"))
		case "thinking":
			t := cb.GetStringBytes("thinking")
			res.AppendReasoning(t)
			thinking += c.countText(t)
		case "tool_use":
			if call := res.ToolCallAt(i, cb.GetStringBytes("id"), cb.GetStringBytes("name")); call != nil {
				var in []byte
				if x := cb.Get("input"); x != nil {
					in = x.MarshalTo(nil)
				}
				call.AddArgs(in, res.ToolArgsBytes())
				res.FirstToolCall = res.End
			}
		}
	}
	if !anthropicUsage(v.Get("usage"), res) {
		res.CountedOutput(res.OutputLen, record.OutputRequested)
	}
	res.ReasoningTokens = max(0, min(thinking, res.CompletionTokens))
	res.CountToolCalls()
	return nil
}
