package client

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// parts is a chat delta whose content is an array of content parts.
func parts(items ...string) string {
	return `{"choices":[{"index":0,"delta":{"content":[` + strings.Join(items, ",") + `]},"finish_reason":null}]}`
}

// TestContentPartsAreRead: a chat stream whose delta content is an array
// of content parts, as servers that answer in several modalities stream
// it: text parts are the answer (timed and kept), a refusal too, a
// non-text part that carries something is output without text, an empty
// or untyped-and-empty part is nothing.
func TestContentPartsAreRead(t *testing.T) {
	role := `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	u := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}`
	events := []string{role,
		parts(`{"type":"text","text":"Hel"}`),
		parts(`{"type":"text","text":"lo"}`, `{"type":"text","text":"!"}`),
		parts(`{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}`),
		parts(`{"type":"text","text":""}`, `{"type":"audio"}`, `7`),
		parts(`{"type":"refusal","refusal":" no"}`),
		u, "[DONE]"}
	srv := httptest.NewServer(&capture{respond: sse(events...)})
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.Chat, Stream: true})
	res := doKeep(c, `"q"`, 4, true)
	if !res.OK() {
		t.Fatalf("%s: %s", res.ErrorClass, res.Error)
	}
	if len(res.TokenTimes) != 4 || res.FirstToken == 0 || res.FirstOutput != res.TokenTimes[0] {
		t.Errorf("%d token times (first %v, first output %v), want 4: two text chunks, the image and the refusal", len(res.TokenTimes), res.FirstToken, res.FirstOutput)
	}
	if string(res.Text) != "Hello! no" {
		t.Errorf("text %q, want the text parts and the refusal", res.Text)
	}
	// Not kept: the same timing, by the skimmer's way out to the full
	// decoder.
	res2 := do(c, `"q"`, 4)
	if !res2.OK() || len(res2.TokenTimes) != 4 {
		t.Errorf("without the text kept: %s %s, %d token times", res2.ErrorClass, res2.Error, len(res2.TokenTimes))
	}
}

// TestNothingReadIsAProtocolFailure: a stream that completes with no
// token read while the server reported output tokens is a protocol
// failure that says so, never a silent success with no TTFT; an answer the
// server reports as one token (an end-of-sequence token alone) or none is
// a genuine empty answer. Chat, completions, a Responses stream whose
// response.completed comes before any delta, and a chat answer read whole.
func TestNothingReadIsAProtocolFailure(t *testing.T) {
	role := `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	odd := `{"choices":[{"index":0,"delta":{"content":{"text":"hi"}}}]}`
	usage := func(n int) string {
		b, _ := json.Marshal(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": 3, "completion_tokens": n}})
		return string(b)
	}
	completed := func(n int) string {
		return `{"type":"response.completed","response":{"id":"resp_1","usage":{"input_tokens":3,"output_tokens":` + string(rune('0'+n)) + `}}}`
	}
	created := `{"type":"response.created","response":{"id":"resp_1"}}`
	delta := `{"type":"response.output_text.delta","content_index":0,"delta":"hi"}`
	for _, tc := range []struct {
		name   string
		api    *api.Kind
		events []string
		fail   bool
	}{
		{"chat, content in a form not read", api.Chat, []string{role, odd, odd, usage(2), "[DONE]"}, true},
		{"chat, nothing but the role", api.Chat, []string{role, usage(16), "[DONE]"}, true},
		{"chat, one token with no text", api.Chat, []string{role, usage(1), "[DONE]"}, false},
		{"chat, no tokens", api.Chat, []string{role, usage(0), "[DONE]"}, false},
		{"chat, no usage", api.Chat, []string{role, "[DONE]"}, false},
		{"completions, empty texts", api.VLLM, []string{`{"choices":[{"text":""}]}`, usage(8), "[DONE]"}, true},
		{"completions, text read", api.VLLM, []string{tok, usage(8), "[DONE]"}, false},
		{"responses, completed first, 5 tokens reported", api.Responses, []string{created, completed(5)}, true},
		{"responses, completed first, none reported", api.Responses, []string{created, completed(0)}, false},
		{"responses, a delta, then completed", api.Responses, []string{created, delta, completed(5)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: sse(tc.events...)})
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: tc.api, Stream: true})
			res := do(c, `"q"`, 16)
			switch {
			case tc.fail && (res.OK() || res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "output tokens but the stream carried none")):
				t.Errorf("%v %s: %s, want a protocol failure saying no token was read", res.OK(), res.ErrorClass, res.Error)
			case !tc.fail && !res.OK():
				t.Errorf("%s: %s, want a success", res.ErrorClass, res.Error)
			}
		})
	}
	whole := func(content string, n int) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":` + content + `}}],"usage":{"prompt_tokens":3,"completion_tokens":` + string(rune('0'+n)) + `}}`))
		}
	}
	for _, tc := range []struct {
		name, content, text string
		n                   int
		fail                bool
	}{
		{"whole, parts", `[{"type":"text","text":"Hi"},{"type":"text","text":" there"}]`, "Hi there", 3, false},
		{"whole, a string", `"Hi"`, "Hi", 3, false},
		{"whole, an object", `{"text":"Hi"}`, "", 3, true},
		{"whole, null and one token", `null`, "", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: whole(tc.content, tc.n)})
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: api.Chat, Stream: false})
			res := doKeep(c, `"q"`, 8, true)
			switch {
			case tc.fail && (res.OK() || res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "output tokens but the answer carried none")):
				t.Errorf("%v %s: %s, want a protocol failure", res.OK(), res.ErrorClass, res.Error)
			case !tc.fail && (!res.OK() || string(res.Text) != tc.text):
				t.Errorf("%s %s: text %q, want a success with %q", res.ErrorClass, res.Error, res.Text, tc.text)
			}
		})
	}
}
