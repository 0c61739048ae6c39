package client

import (
	"fmt"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The sglang-generate backend posts SGLang's native generation request to
// /generate (docs/WIRE_FORMATS.md):
//
//	{"text": "…" | "input_ids": [1, 2, …],
//	 "sampling_params": {"max_new_tokens": N, "temperature": 0,
//	   "ignore_eos": true, "min_new_tokens": N},
//	 "stream": true}
//
// A stream is "data: {…}" events ending with data: [DONE], each holding the
// WHOLE text so far ("text") and a meta_info with prompt_tokens,
// completion_tokens, cached_tokens and finish_reason: a chunk whose text
// grew carries a token (the growth); one that did not carries none. A
// whole answer is one such object.

// appendSGLangBody appends a /generate request body: the prompt as "text"
// when it is a string, as "input_ids" when it is a list of token ids.
func appendSGLangBody(c *Client, b []byte, req *Request) []byte {
	o := c.openBody(b)
	if !o.omit["text"] && !o.omit["input_ids"] {
		at := len(o.b)
		if !o.empty {
			o.b = append(o.b, ',')
			at++
		}
		o.empty = false
		o.b = req.appendPrompt(o.b)
		key := `"text":`
		if at < len(o.b) && o.b[at] == '[' {
			key = `"input_ids":`
		}
		// The key goes before the value just written.
		n := len(o.b) - at
		o.b = append(o.b, key...)
		copy(o.b[at+len(key):], o.b[at:at+n])
		copy(o.b[at:], key)
	}
	if o.member("sampling_params") {
		o.b = append(o.b, `{"max_new_tokens":`...)
		o.b = appendInt(o.b, req.MaxTokens)
		o.b = append(o.b, `,"temperature":0,"ignore_eos":`...)
		o.b = appendBool(o.b, c.cfg.IgnoreEOS)
		if c.cfg.IgnoreEOS {
			o.b = append(o.b, `,"min_new_tokens":`...)
			o.b = appendInt(o.b, req.MaxTokens)
		}
		o.b = append(o.b, '}')
	}
	if o.member("stream") {
		o.b = appendBool(o.b, c.cfg.Stream)
	}
	return c.closeBody(&o)
}

// sglangEvent reads one chunk of a /generate stream: its text is the whole
// text so far, so a token is a chunk whose text grew (d.seen is what had
// arrived); its meta_info is the usage so far.
func sglangEvent(d *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error) {
	t := v.GetStringBytes("text")
	if len(t) < d.seen {
		return tokNone, false, false, protocolError{fmt.Sprintf("cumulative text shrank from %d to %d bytes", d.seen, len(t))}
	}
	if len(t) > d.seen {
		res.AppendText(t[d.seen:])
		d.seen = len(t)
		kind = tokOutput
	}
	return kind, sglangUsage(v.Get("meta_info"), res), false, nil
}

// sglangUsage copies a meta_info's counts into res; it reports whether it
// held the completion tokens.
func sglangUsage(m *fastjson.Value, res *Result) bool {
	if m == nil || m.Type() != fastjson.TypeObject {
		return false
	}
	setInt(&res.PromptTokens, m, "prompt_tokens")
	setInt(&res.CachedTokens, m, "cached_tokens")
	return setInt(&res.CompletionTokens, m, "completion_tokens")
}

// wholeSGLang reads a whole /generate answer: one object of a stream's form.
func wholeSGLang(_ *Client, v *fastjson.Value, res *Result) error {
	if _, err := readAnswerText(v, "text", "response", res); err != nil {
		return err
	}
	if !sglangUsage(v.Get("meta_info"), res) {
		res.CountedOutput(res.OutputLen, record.OutputRequested)
	}
	return nil
}
