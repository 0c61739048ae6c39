package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// The fuzz targets of the readers of the APIs that are not OpenAI's — one
// each: Anthropic Messages, SGLang's /generate, KServe's generate — feed
// arbitrary bodies, statuses and content types through Do, the body split
// into reads of any size. Each holds every answer to the invariants of all
// readers (checkWire) and to its API's own: what its stream's events may
// count, and the server's message in the record's error when the body is
// an error in its API's shape.

// wireCase is one fuzz input's response and client, decoded from the
// target's arguments: the status is 200 unless status is odd (then any of
// 100–599, below 200 taken as 200); mode picks the content type
// (mode%3: an event stream, JSON, none), whether the client streams (bit
// 2 clear) and keeps the text (bit 3).
type wireCase struct {
	code         int
	stream, keep bool
	streamed     bool // read as a stream: streaming, and not a JSON answer
	body         []byte
	res          *Result
	status       string // the status line's text the client puts before a message
	maxTokens    int
}

// wireFuzzArgs adds a seed of each mode (event stream, JSON, no content
// type; streamed or not) with status 200, and errs with each of the
// statuses.
func wireFuzzArgs(f *testing.F, seeds, errs []string) {
	for i, s := range seeds {
		for _, mode := range []uint8{0, 1, 2, 4, 9, 13} {
			f.Add([]byte(s), uint16(0), mode, uint64(i+1))
		}
	}
	for i, s := range errs {
		for _, status := range []uint16{2*(400-100) + 1, 2*(404-100) + 1, 2*(429-100) + 1, 2*(500-100) + 1, 2*(503-100) + 1, 0} {
			f.Add([]byte(s), status, uint8(i%2), uint64(i+3))
		}
	}
}

// runWire sends one request with kind's client to a transport answering
// with body as the arguments say, and checks what every reader holds to.
func runWire(t *testing.T, kind *api.Kind, body []byte, status uint16, mode uint8, split uint64) *wireCase {
	t.Helper()
	w := &wireCase{code: 200, stream: mode&4 == 0, keep: mode&8 != 0, body: body, maxTokens: 8}
	if status&1 == 1 {
		w.code = max(200, 100+int(status>>1)%500)
	}
	ctype := []string{"text/event-stream", "application/json", ""}[mode%3]
	w.streamed = w.stream && ctype != "application/json"
	bt := &bodyTransport{status: w.code, ctype: ctype, body: body, split: split}
	c, err := New(Config{BaseURL: "http://x", API: kind, Model: "m", Stream: w.stream, Transport: bt, Epoch: time.Now(),
		Answer: AnswerOptions{ReasoningEffort: "low"}})
	if err != nil {
		t.Fatal(err)
	}
	w.res = &Result{}
	w.res.Reset()
	w.res.KeepText = w.keep
	w.res.OutputLen = w.maxTokens
	c.Do(context.Background(), &Request{MaxTokens: w.maxTokens, Prompt: []byte(`"x"`)}, w.res)
	w.status = http.StatusText(w.code)
	if w.status == "" {
		w.status = "HTTP " + strconv.Itoa(w.code)
	}
	checkWire(t, w)
	return w
}

// checkWire checks what every reader holds to: never a panic, a failure
// classified with a bounded message, a non-200 status a failure, token
// times in order and after the send, the first output token not before the
// first token, chunks counted as the tokens timed, a kept text within its
// bound.
func checkWire(t *testing.T, w *wireCase) {
	t.Helper()
	res := w.res
	if res.ErrorClass != "" && (!slices.Contains(record.ErrorClasses, res.ErrorClass) || res.Error == "") {
		t.Fatalf("class %q message %q", res.ErrorClass, res.Error)
	}
	if w.code != 200 && (res.OK() || res.Status != w.code) {
		t.Fatalf("status %d: %q, status %d recorded", w.code, res.ErrorClass, res.Status)
	}
	if res.End < res.Sent || len(res.Error) > 600 || res.ToolArgsInvalid > res.ToolCalls {
		t.Fatalf("sent %v end %v, error of %d bytes, %d invalid of %d calls", res.Sent, res.End, len(res.Error), res.ToolArgsInvalid, res.ToolCalls)
	}
	for i, tt := range res.TokenTimes {
		if tt < res.Sent || i > 0 && tt < res.TokenTimes[i-1] {
			t.Fatalf("token times %v, sent %v", res.TokenTimes, res.Sent)
		}
	}
	if res.FirstOutput != 0 && res.FirstOutput < res.FirstToken || res.ReasoningChunks > len(res.TokenTimes) {
		t.Fatalf("first token %v, first output %v; %d reasoning chunks of %d", res.FirstToken, res.FirstOutput, res.ReasoningChunks, len(res.TokenTimes))
	}
	if len(res.TokenTimes) > streamBound(w.maxTokens) {
		t.Fatalf("%d tokens for max_tokens %d", len(res.TokenTimes), w.maxTokens)
	}
	if res.OutputFrom == record.OutputChunks && res.CompletionTokens != len(res.TokenTimes) {
		t.Fatalf("%d output tokens counted from %d chunks", res.CompletionTokens, len(res.TokenTimes))
	}
	if len(res.Text) > record.MaxKeptText || len(res.Reasoning) > record.MaxKeptText || !w.keep && len(res.Text)+len(res.Reasoning) > 0 {
		t.Fatalf("kept %d bytes of text, %d of reasoning (keep %v)", len(res.Text), len(res.Reasoning), w.keep)
	}
}

// checkErrorText checks that a non-200 answer's record holds the server's
// message, after the status, when the body is an error in the API's shape:
// message is what the shape says the message is ("" when the body is not
// in the shape; the message of a body the client reads is its first 4 KiB).
func checkErrorText(t *testing.T, w *wireCase, message func(body []byte) string) {
	t.Helper()
	if w.code == 200 {
		return
	}
	m := message(w.body[:min(len(w.body), 4<<10)])
	if m == "" || strings.Contains(m, "://") || len(w.status)+2+len(m) > 512 { // URLs are redacted, long messages cut
		return
	}
	if want := w.status + ": " + m; w.res.Error != want {
		t.Fatalf("error %q, want %q", w.res.Error, want)
	}
}

// textOnly checks an API without reasoning or tool calls: none are
// recorded, and each token carried text (a token is a chunk whose text
// grew, or a non-empty text_output).
func textOnly(t *testing.T, w *wireCase) {
	t.Helper()
	res := w.res
	if res.ReasoningTokens != 0 || res.ReasoningChunks != 0 || res.ToolCalls != 0 || res.FirstOutput != res.FirstToken {
		t.Fatalf("%d reasoning tokens (%d chunks), %d tool calls, first output %v, first token %v", res.ReasoningTokens, res.ReasoningChunks, res.ToolCalls, res.FirstOutput, res.FirstToken)
	}
	if w.keep && w.streamed && len(res.Text) < record.MaxKeptText && len(res.TokenTimes) > len(res.Text) {
		t.Fatalf("%d tokens and %d bytes of text: a token without text", len(res.TokenTimes), len(res.Text))
	}
}

// errorObject is the fuzz oracle's reading of an error body: its error
// member (a string or an object's message) and its top-level message.
func errorObject(body []byte) (errString, errMessage, message string, ok bool) {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", "", false
	}
	var inner struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &inner) != nil {
		json.Unmarshal(e.Error, &errString)
	}
	return errString, inner.Message, e.Message, true
}

// FuzzAnthropicStream: the Messages reader. A streamed success ended with
// message_stop, and its reasoning tokens are its thinking deltas (the
// API's usage never counts them); a whole success's reasoning tokens are
// at most its output tokens and at least its thinking's words (each
// block's counted apart); an HTTP error in Anthropic's shape
// ({"type":"error","error":{"type","message"}}) gives the record its
// message.
func FuzzAnthropicStream(f *testing.F) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	wireFuzzArgs(f, []string{
		anthropicEvents(anthropicStream),
		anthropicEvents(append(slices.Clone(anthropicStream[:9]), [2]string{"error", overloaded})),
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n",
		"event: ping\ndata: {\"type\":\"ping\"}\n\n: comment\n\ndata: {\"type\":\"content_block_delta\",\"index\":-1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"content_block_delta\"}\n\n",
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"a b\"}}\r\n\r\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":\"x\"}}\r\n\r\n",
		`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":" let me think","signature":"s"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":[1]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"cache_read_input_tokens":2,"output_tokens":5}}`,
		`{"content":[{"type":"redacted_thinking","data":"x"},{"type":"thinking","thinking":7}],"usage":{"output_tokens":1}}`,
		`{"content":[{"type":"thinking","thinking":"a b c d e"}]}`,
		overloaded,
	}, []string{overloaded, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}`, `{"error":"x"}`, "<html>bad gateway</html>"})
	f.Fuzz(func(t *testing.T, body []byte, status uint16, mode uint8, split uint64) {
		w := runWire(t, api.Anthropic, body, status, mode, split)
		res := w.res
		switch {
		case !res.OK():
		case w.streamed:
			if res.ReasoningTokens != res.ReasoningChunks || !bytes.Contains(body, []byte("message_stop")) {
				t.Fatalf("a stream's %d reasoning tokens of %d thinking deltas; message_stop in the body: %v", res.ReasoningTokens, res.ReasoningChunks, bytes.Contains(body, []byte("message_stop")))
			}
		default:
			words := res.ReasoningTokens
			if w.keep {
				words = min(countWords(res.Reasoning), max(res.CompletionTokens, 0))
			}
			if res.ReasoningChunks != 0 || res.ReasoningTokens < words || res.ReasoningTokens < 0 || res.ReasoningTokens > max(res.CompletionTokens, 0) {
				t.Fatalf("a whole message's %d reasoning tokens (%d chunks): want %d words at least, %d output tokens at most", res.ReasoningTokens, res.ReasoningChunks, words, res.CompletionTokens)
			}
		}
		checkErrorText(t, w, func(b []byte) string {
			_, m, _, _ := errorObject(b)
			return m
		})
	})
}

// FuzzSGLangStream: the /generate reader (cumulative text). No reasoning
// or tool call is recorded and every token grew the text; an HTTP error
// in SGLang's shapes ({"error":{"message"}}, or {"object":"error",
// "message"}) gives the record its message.
func FuzzSGLangStream(f *testing.F) {
	meta := func(n int, fin string) string {
		return `"meta_info":{"id":"x","finish_reason":` + fin + `,"prompt_tokens":3,"completion_tokens":` + strconv.Itoa(n) + `,"cached_tokens":1}`
	}
	wireFuzzArgs(f, []string{
		"data: {\"text\":\" a\"," + meta(1, "null") + "}\n\ndata: {\"text\":\" a\"," + meta(1, "null") + "}\n\ndata: {\"text\":\" a b c\"," + meta(3, `{"type":"length","length":3}`) + "}\n\ndata: [DONE]\n\n",
		"data: {\"text\":\" a b\"}\n\ndata: {\"text\":\" a\"}\n\n",
		"data: {\"text\":\" a\"," + meta(1, "null") + "}\n\ndata: {\"error\":{\"message\":\"The input is too long\"}}\n\ndata: [DONE]\n\n",
		"data: {\"text\":\"\",\"meta_info\":{}}\n\ndata: {\"text\":\"\u00e9\"}\n\ndata: [DONE]\n\ndata: {\"text\":\"\u00e9x\"}\n\n",
		"data: {\"text\":7,\"meta_info\":[]}\n\n",
		`{"text":" a b","output_ids":[1,2],` + meta(2, `{"type":"stop","matched":2}`) + `}`,
		`{"text":null}`,
	}, []string{`{"error":{"message":"The input (9000 tokens) is longer than the model's context length (8192 tokens)."}}`,
		`{"object":"error","message":"The request queue is full.","type":"503","param":null,"code":503}`, `{"error":{"message":7}}`, ""})
	f.Fuzz(func(t *testing.T, body []byte, status uint16, mode uint8, split uint64) {
		w := runWire(t, api.SGLang, body, status, mode, split)
		textOnly(t, w)
		checkErrorText(t, w, func(b []byte) string {
			errString, errMessage, message, _ := errorObject(b)
			if errMessage != "" || errString != "" {
				return errMessage // a string error is not SGLang's
			}
			return message
		})
	})
}

// FuzzKServeStream: the generate_stream reader (a text_output delta an
// event, no end event). No reasoning or tool call is recorded and every
// token carried text; without the server's counts the prompt tokens are
// unknown, and a whole answer's output tokens are its text's words; an
// HTTP error in Triton's shape ({"error":"message"}) gives the record its
// message.
func FuzzKServeStream(f *testing.F) {
	wireFuzzArgs(f, []string{
		"data: {\"model_name\":\"m\",\"model_version\":\"1\",\"text_output\":\" a\"}\n\ndata: {\"model_name\":\"m\",\"model_version\":\"1\",\"text_output\":\" b\"}\n\n",
		"data: {\"text_output\":\" a\",\"num_input_tokens\":5,\"num_output_tokens\":1}\n\ndata: {\"text_output\":\" b c\",\"num_output_tokens\":2}\n\n",
		"data: {\"text_output\":\" a\"}\n\ndata: {\"error\":\"model failed\"}\n\n",
		"data: {\"text_output\":\"\"}\n\ndata: {\"text_output\":7}\n\ndata: [DONE]\n\n",
		`{"model_name":"m","model_version":"1","text_output":" one two  three"}`,
		`{"text_output":"a b","num_input_tokens":3,"num_output_tokens":-1}`,
		`{"error":"boom"}`,
	}, []string{`{"error":"Request for unknown model: 'm' is not found"}`, `{"error":{"message":"x"}}`, `{"error":""}`, "plain text"})
	f.Fuzz(func(t *testing.T, body []byte, status uint16, mode uint8, split uint64) {
		w := runWire(t, api.KServe, body, status, mode, split)
		res := w.res
		textOnly(t, w)
		if res.PromptTokens != -1 && !bytes.Contains(body, []byte("num_input_tokens")) {
			t.Fatalf("%d prompt tokens from a body without num_input_tokens", res.PromptTokens)
		}
		if res.OK() && res.OutputFrom == record.OutputText && w.keep && len(res.Text) < record.MaxKeptText && res.CompletionTokens != countWords(res.Text) {
			t.Fatalf("a whole answer's %d output tokens, %d words", res.CompletionTokens, countWords(res.Text))
		}
		checkErrorText(t, w, func(b []byte) string {
			errString, _, _, _ := errorObject(b)
			return errString
		})
	})
}
