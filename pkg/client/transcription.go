package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The openai-transcriptions backend posts OpenAI's speech-to-text request
// to /v1/audio/transcriptions as multipart/form-data (vLLM's
// TranscriptionRequest): the fields
//
//	file                   a synthetic WAV of --audio-seconds (audio.go)
//	model                  the request's model
//	max_completion_tokens  the arrival's output length
//	temperature            0
//	stream                 true or false
//	stream_include_usage   true, when streaming (vLLM's flattened stream options)
//
// and --extra-request-body's members as further fields (a string as it
// is, any other value as its JSON). A stream is server-sent events of
// transcription.chunk objects, {"choices": [{"delta": {"content": " The"}}]},
// a last one with usage (prompt_tokens: the audio's tokens), then data:
// [DONE]: TTFT and ITL as a chat stream's. A whole answer is {"text": …,
// "usage": {"type": "duration", "seconds": S}}: its output tokens are the
// words of its text, unless usage counts completion_tokens.

// formBoundary separates the multipart fields (it cannot occur in them:
// field values are numbers, names and the WAV, whose bytes are checked).
const formBoundary = "fineserve-gen-7f3a9c2e41b8"

// prepareTranscription makes the client's WAV and its extra fields.
func prepareTranscription(c *Client) error {
	secs := c.cfg.AudioSeconds
	if secs <= 0 {
		secs = DefaultAudioSeconds
	}
	if secs > MaxAudioSeconds {
		return fmt.Errorf("audio of %g s: at most %g s", secs, MaxAudioSeconds)
	}
	c.audio, c.audioTokens = SyntheticWAV(secs, c.cfg.AudioSeed), AudioTokens(secs)
	for bytes.Contains(c.audio, []byte(formBoundary)) { // never in practice: keep the form well formed anyway
		c.cfg.AudioSeed++
		c.audio = SyntheticWAV(secs, c.cfg.AudioSeed)
	}
	if len(bytes.TrimSpace(c.cfg.ExtraBody)) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(c.cfg.ExtraBody, &m); err != nil {
		return fmt.Errorf("extra request body: %w", err)
	}
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		if bytes.Contains([]byte(k+s), []byte(formBoundary)) {
			return fmt.Errorf("extra request body: %q holds the form's boundary", k)
		}
		c.form = append(c.form, [2]string{k, s})
	}
	sort.Slice(c.form, func(i, j int) bool { return c.form[i][0] < c.form[j][0] })
	return nil
}

// appendField appends one form field; file names the part's file.
func appendField(b []byte, name, file string) []byte {
	b = append(b, "--"+formBoundary+"\r\nContent-Disposition: form-data; name=\""...)
	b = append(b, name...)
	b = append(b, '"')
	if file != "" {
		b = append(b, "; filename=\""...)
		b = append(b, file...)
		b = append(b, "\"\r\nContent-Type: audio/wav"...)
	}
	return append(b, "\r\n\r\n"...)
}

// model is req's model, or the client's default (a form's field: JSON
// bodies open with openModelBody).
func (c *Client) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.cfg.Model
}

// appendTranscriptionBody appends the multipart body of a transcription.
func appendTranscriptionBody(c *Client, b []byte, req *Request) []byte {
	field := func(name, value string) {
		if c.omit[name] {
			return
		}
		b = appendField(b, name, "")
		b = append(b, value...)
		b = append(b, "\r\n"...)
	}
	b = appendField(b, "file", "audio.wav")
	b = append(b, c.audio...)
	b = append(b, "\r\n"...)
	field("model", c.model(req))
	if req.MaxTokens > 0 {
		field("max_completion_tokens", fmt.Sprint(req.MaxTokens))
	}
	field("temperature", "0")
	field("stream", fmt.Sprint(c.cfg.Stream))
	if c.cfg.Stream {
		field("stream_include_usage", "true")
	}
	for _, f := range c.form {
		b = appendField(b, f[0], "")
		b = append(b, f[1]...)
		b = append(b, "\r\n"...)
	}
	return append(b, "--"+formBoundary+"--\r\n"...)
}

// transcriptionEvent reads one transcription.chunk of a stream.
func transcriptionEvent(_ *decoder, v *fastjson.Value, res *Result) (kind tokenKind, usage, done bool, err error) {
	if t := v.GetStringBytes("choices", "0", "delta", "content"); len(t) > 0 {
		kind = tokOutput
		res.AppendText(t)
	}
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		copyUsage(u, res)
		usage = u.Get("completion_tokens") != nil
	}
	return kind, usage, false, nil
}

// wholeTranscription reads a whole transcription: its output tokens are
// its text's words, unless its usage counts them.
func wholeTranscription(_ *Client, v *fastjson.Value, res *Result) error {
	text, err := readAnswerText(v, "text", "transcription", res)
	if err != nil {
		return err
	}
	res.CountedOutput(len(bytes.Fields(text)), record.OutputText) // unless its usage says
	if u := v.Get("usage"); u != nil && u.Type() == fastjson.TypeObject {
		copyUsage(u, res)
	}
	return nil
}
