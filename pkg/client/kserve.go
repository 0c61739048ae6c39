package client

import (
	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The kserve-generate backend posts the KServe/Triton v2 protocol's
// generate extension request to /v2/models/{model}/generate, or
// generate_stream when streaming (docs/WIRE_FORMATS.md):
//
//	{"text_input": "…", "parameters": {"max_tokens": N, "stream": true,
//	 "temperature": 0, "ignore_eos": true}}
//
// An answer is {"model_name", "model_version", "text_output", …}; a stream
// is "data: {…}" events of that object, each text_output the text new since
// the last (as Triton's vLLM and TensorRT-LLM backends stream it), with no
// end event: the stream ends with the body. Token counts are read where
// the server gives them (num_input_tokens, num_output_tokens: Triton's
// vLLM backend's optional outputs, per response); else a streamed answer's
// tokens are its chunks counted and a whole answer's its text's tokens
// (Config.CountTokens: --tokenizer's) or words.

// appendKServeBody appends a generate request body.
func appendKServeBody(c *Client, b []byte, req *Request) []byte {
	o := c.openBody(b)
	if o.member("text_input") {
		o.b = req.appendPrompt(o.b)
	}
	if o.member("parameters") {
		o.b = append(o.b, `{"max_tokens":`...)
		o.b = appendInt(o.b, req.MaxTokens)
		o.b = append(o.b, `,"stream":`...)
		o.b = appendBool(o.b, c.cfg.Stream)
		o.b = append(o.b, `,"temperature":0`...)
		if c.cfg.IgnoreEOS {
			o.b = append(o.b, `,"ignore_eos":true,"min_tokens":`...)
			o.b = appendInt(o.b, req.MaxTokens)
		}
		o.b = append(o.b, '}')
	}
	return c.closeBody(&o)
}

// kserveEvent reads one event of a generate_stream answer: its
// text_output is a token; the output tokens it reports are added up
// (d.seen).
func kserveEvent(d *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error) {
	if t := v.GetStringBytes("text_output"); len(t) > 0 {
		res.AppendText(t)
		kind = tokOutput
	}
	setInt(&res.PromptTokens, v, "num_input_tokens")
	var n int
	if setInt(&n, v, "num_output_tokens") {
		d.seen += n
		res.CompletionTokens, usage = d.seen, true
	}
	return kind, usage, false, nil
}

// wholeKServe reads a whole generate answer.
func wholeKServe(c *Client, v *fastjson.Value, res *Result) error {
	t, err := readAnswerText(v, "text_output", "response", res)
	if err != nil {
		return err
	}
	res.CountedOutput(c.countText(t), record.OutputText)
	if setInt(&res.CompletionTokens, v, "num_output_tokens") {
		res.OutputFrom = ""
	}
	setInt(&res.PromptTokens, v, "num_input_tokens")
	return nil
}

// countText counts the tokens of a text the server gave no count of: in
// --tokenizer's tokens (Config.CountTokens) when there is one, else its
// words (a whole KServe answer's output, a whole Anthropic message's
// thinking).
func (c *Client) countText(t []byte) int {
	if count := c.cfg.CountTokens; count != nil {
		return count(t)
	}
	return countWords(t)
}

// countWords counts a text's whitespace-separated words: an answer's
// tokens when the server gives no count.
func countWords(b []byte) int {
	n, in := 0, false
	for _, c := range b {
		sp := c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}
