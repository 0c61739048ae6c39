package client

import (
	"encoding/json"
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The openai-responses backend posts OpenAI's Responses API request to
// /v1/responses:
//
//	{"model": M, "input": [{"role":"user","content":"…"}],
//	 "max_output_tokens": N, "temperature": 0, "stream": true,
//	 "ignore_eos": true, "reasoning": {"effort": "low"}, "tools": […],
//	 "tool_choice": "auto", "text": {"format": {…}},
//	 "previous_response_id": "resp_…"}
//
// A stream is server-sent events, each with an event: line and a data:
// object whose "type" repeats it, and no data: [DONE]: it ends with
// response.completed (or response.incomplete), whose response carries the
// usage (input_tokens, output_tokens and their details). Deltas of
// response.output_text are the answer, of response.reasoning_text the
// reasoning, of response.function_call_arguments a tool call's arguments
// (vLLM's simple_streaming_events.py). A whole answer is the response object: its output
// items (reasoning, message, function_call) and usage.

// responsesEnd is how a Responses stream ends.
const responsesEnd = "a response.completed event"

// responsesAnswer is the answer options in the Responses API's forms,
// made once per client: tools flat ({"type":"function","name",…}), the
// response format as text.format.
type responsesAnswer struct {
	tools, format json.RawMessage
}

// prepareResponses converts the chat forms of the answer options.
func prepareResponses(c *Client) error {
	a := &c.cfg.Answer
	if len(a.Tools) > 0 {
		var tools []struct {
			Type     string          `json:"type"`
			Function json.RawMessage `json:"function"`
		}
		if err := json.Unmarshal(a.Tools, &tools); err != nil {
			return fmt.Errorf("tools: %w", err)
		}
		flat := make([]map[string]json.RawMessage, len(tools))
		for i, t := range tools {
			if err := json.Unmarshal(t.Function, &flat[i]); err != nil {
				return fmt.Errorf("tools[%d].function: %w", i, err)
			}
			flat[i]["type"] = json.RawMessage(`"function"`)
		}
		c.responses.tools, _ = json.Marshal(flat)
	}
	if len(a.ResponseFormat) > 0 {
		var f struct {
			Type   string                     `json:"type"`
			Schema map[string]json.RawMessage `json:"json_schema"`
		}
		if err := json.Unmarshal(a.ResponseFormat, &f); err != nil {
			return fmt.Errorf("response format: %w", err)
		}
		format := map[string]json.RawMessage{"type": json.RawMessage(fmt.Sprintf("%q", f.Type))}
		for k, v := range f.Schema { // name, schema, strict: flat in text.format
			format[k] = v
		}
		b, _ := json.Marshal(map[string]any{"format": format})
		c.responses.format = b
	}
	return nil
}

// appendResponsesBody appends a Responses API request body.
func appendResponsesBody(c *Client, b []byte, req *Request) []byte {
	a := &c.cfg.Answer
	o := c.openModelBody(b, req)
	if o.member("input") {
		o.b = req.appendMessages(o.b)
	}
	if req.PreviousResponseID != "" && o.member("previous_response_id") {
		o.b = appendJSONString(o.b, req.PreviousResponseID)
	}
	if o.member("max_output_tokens") {
		o.b = appendInt(o.b, req.MaxTokens)
	}
	if o.member("temperature") {
		o.b = append(o.b, '0')
	}
	if o.member("stream") {
		o.b = appendBool(o.b, c.cfg.Stream)
	}
	if o.member("ignore_eos") {
		o.b = appendBool(o.b, c.cfg.IgnoreEOS)
	}
	if a.ReasoningEffort != "" && o.member("reasoning") {
		o.b = append(o.b, `{"effort":`...)
		o.b = appendJSONString(o.b, a.ReasoningEffort)
		o.b = append(o.b, '}')
	}
	if len(c.responses.tools) > 0 && o.member("tools") {
		o.b = append(o.b, c.responses.tools...)
	}
	if a.ToolChoice != "" && o.member("tool_choice") {
		o.b = appendToolChoice(o.b, a.ToolChoice, true)
	}
	if len(c.responses.format) > 0 && o.member("text") {
		o.b = append(o.b, c.responses.format...)
	}
	return c.closeBody(&o)
}

// responsesEvent reads one event of a Responses stream.
func responsesEvent(_ *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error) {
	switch string(v.GetStringBytes("type")) {
	case "response.output_text.delta":
		if t := v.GetStringBytes("delta"); len(t) > 0 {
			res.AppendText(t)
			return tokOutput, false, false, nil
		}
	case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
		if t := v.GetStringBytes("delta"); len(t) > 0 {
			res.AppendReasoning(t)
			return tokReasoning, false, false, nil
		}
	case "response.output_item.added":
		if it := v.Get("item"); it != nil && string(it.GetStringBytes("type")) == "function_call" {
			res.ToolCallAt(v.GetInt("output_index"), it.GetStringBytes("call_id"), it.GetStringBytes("name"))
		}
	case "response.function_call_arguments.delta":
		if a := v.GetStringBytes("delta"); len(a) > 0 {
			if call := res.ToolCallAt(v.GetInt("output_index"), nil, nil); call != nil {
				call.AddArgs(a, res.ToolArgsBytes())
			}
			return tokOutput, false, false, nil
		}
	case "response.created", "response.in_progress":
		setResponseID(res, v.Get("response"))
	case "response.completed", "response.incomplete":
		r := v.Get("response")
		setResponseID(res, r)
		usage = responsesUsage(r, res)
		return tokNone, usage, true, nil
	case "response.failed":
		if e := v.Get("response", "error"); e != nil && e.Type() == fastjson.TypeObject {
			return tokNone, false, false, chunkError(e)
		}
		return tokNone, false, false, streamError{record.ErrProtocol, "response failed"}
	case "error":
		return tokNone, false, false, chunkError(v)
	}
	return tokNone, false, false, nil
}

// setResponseID keeps a response's id when the answer's text is kept (a
// session chains its next turn to it).
func setResponseID(r *Result, resp *fastjson.Value) {
	if resp == nil || !r.KeepText {
		return
	}
	if id := resp.GetStringBytes("id"); len(id) > 0 && len(id) <= 256 {
		r.ResponseID = string(id)
	}
}

// responsesUsage copies a response's usage into res; it reports whether
// it held the output tokens.
func responsesUsage(resp *fastjson.Value, res *Result) bool {
	u := resp.Get("usage")
	if u == nil || u.Type() != fastjson.TypeObject {
		return false
	}
	setInt(&res.PromptTokens, u, "input_tokens")
	setInt(&res.CachedTokens, u, "input_tokens_details", "cached_tokens")
	setInt(&res.ReasoningTokens, u, "output_tokens_details", "reasoning_tokens")
	return setInt(&res.CompletionTokens, u, "output_tokens")
}

// wholeResponses reads a whole Responses answer: the response object.
func wholeResponses(c *Client, v *fastjson.Value, res *Result) error {
	items, err := arrayMember(v, "output", "response")
	if err != nil {
		return err
	}
	setResponseID(res, v)
	read := false
	var thoughts [][]byte
	for i, it := range items {
		switch string(it.GetStringBytes("type")) {
		case "message":
			read = readContent(it.Get("content"), res) || read
		case "reasoning":
			for _, part := range it.GetArray("content") {
				t := part.GetStringBytes("text")
				res.AppendReasoning(t)
				thoughts = append(thoughts, t)
				read = read || len(t) > 0
			}
		case "function_call":
			if call := res.ToolCallAt(i, it.GetStringBytes("call_id"), it.GetStringBytes("name")); call != nil {
				call.AddArgs(it.GetStringBytes("arguments"), res.ToolArgsBytes())
				res.FirstToolCall = res.End
				read = true
			}
		}
	}
	if !responsesUsage(v, res) {
		res.CountedOutput(res.OutputLen, record.OutputRequested)
	} else if !read && res.CompletionTokens >= minUnreadTokens {
		return unreadOutput(res.CompletionTokens, "the answer")
	}
	res.CountReasoning(func() (n int) {
		for _, t := range thoughts {
			n += c.countText(t)
		}
		return n
	})
	res.CountToolCalls()
	return nil
}
