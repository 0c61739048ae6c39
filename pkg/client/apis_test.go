package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// events writes server-sent events with event: lines (Anthropic's form).
func events(evs ...[2]string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range evs {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e[0], e[1])
			w.(http.Flusher).Flush()
		}
	}
}

// anthropicStream is a Messages stream with two thinking deltas, a text
// delta and a tool call in two input_json_delta fragments.
var anthropicStream = [][2]string{
	{"message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":7,"cache_read_input_tokens":4,"cache_creation_input_tokens":1,"output_tokens":1}}}`},
	{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`},
	{"ping", `{"type":"ping"}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" ok"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"abc"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":0}`},
	{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":1}`},
	{"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}`},
	{"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}`},
	{"content_block_stop", `{"type":"content_block_stop","index":2}`},
	{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}`},
	{"message_stop", `{"type":"message_stop"}`},
}

// TestAnthropicStream: a Messages stream's deltas are its tokens — thinking
// as reasoning, text and tool input as output (TTFO) — the usage is the
// input and cache counts of message_start and the output of message_delta,
// the tool call is kept whole, and the request carries the API key in
// x-api-key with the API version, the tools in Anthropic's form and the
// thinking budget of the reasoning effort.
func TestAnthropicStream(t *testing.T) {
	cap := &capture{respond: events(anthropicStream...)}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	tools := `[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	c := newTestClient(t, srv, Config{API: api.Anthropic, Stream: true, APIKey: "sk-secret", IgnoreEOS: true,
		Answer: AnswerOptions{Tools: []byte(tools), ToolChoice: "required", ReasoningEffort: "low"}})
	res := doKeep(c, `"hi"`, 100, true)
	if !res.OK() {
		t.Fatalf("%s: %s", res.ErrorClass, res.Error)
	}
	if res.PromptTokens != 12 || res.CachedTokens != 4 || res.CompletionTokens != 9 {
		t.Errorf("prompt %d cached %d completion %d, want 12 (7 + 4 read + 1 written), 4, 9", res.PromptTokens, res.CachedTokens, res.CompletionTokens)
	}
	if len(res.TokenTimes) != 5 || res.ReasoningChunks != 2 || res.ReasoningTokens != 2 {
		t.Errorf("%d tokens, %d reasoning chunks, %d reasoning tokens: want 5 (2 thinking, 1 text, 2 tool input), 2, 2", len(res.TokenTimes), res.ReasoningChunks, res.ReasoningTokens)
	}
	if res.FirstOutput != res.TokenTimes[2] || res.FirstToken != res.TokenTimes[0] {
		t.Errorf("first token %v, first output %v, tokens %v", res.FirstToken, res.FirstOutput, res.TokenTimes)
	}
	if string(res.Text) != "Hi" || string(res.Reasoning) != "hm ok" {
		t.Errorf("text %q reasoning %q", res.Text, res.Reasoning)
	}
	if res.ToolCalls != 1 || res.ToolArgsInvalid != 0 || res.Calls[0].Name != "get_weather" || res.Calls[0].ID != "toolu_1" || string(res.Calls[0].Args) != `{"city":"Paris"}` {
		t.Errorf("tool calls %d (invalid %d): %+v", res.ToolCalls, res.ToolArgsInvalid, res.Calls)
	}
	h := cap.headers[0]
	if h.Get("X-Api-Key") != "sk-secret" || h.Get("Authorization") != "" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("headers %v", h)
	}
	b := cap.bodies[0]
	wantTools := []any{map[string]any{"name": "get_weather", "description": "d", "input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	if fmt.Sprint(b["tools"]) != fmt.Sprint(wantTools) || fmt.Sprint(b["tool_choice"]) != "map[type:any]" {
		t.Errorf("tools %v, tool choice %v", b["tools"], b["tool_choice"])
	}
	if fmt.Sprint(b["thinking"]) != "map[budget_tokens:99 type:enabled]" || b["temperature"] != nil || b["max_tokens"] != 100.0 || b["ignore_eos"] != true {
		t.Errorf("thinking %v (a low effort's 2048 held under max_tokens 100), temperature %v, max_tokens %v, ignore_eos %v", b["thinking"], b["temperature"], b["max_tokens"], b["ignore_eos"])
	}
	if fmt.Sprint(b["messages"]) != "[map[content:hi role:user]]" {
		t.Errorf("messages %v", b["messages"])
	}
}

// TestAnthropicErrors: an error event in a stream, an error object in a
// 200 answer and Anthropic's 529 are classified as the HTTP status of
// their type would be; a stream cut before message_stop is a protocol
// error.
func TestAnthropicErrors(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	for _, c := range []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request)
		stream  bool
		class   string
	}{
		{"error event", events(anthropicStream[0], anthropicStream[7], anthropicStream[8], [2]string{"error", overloaded}), true, record.ErrHTTP5xx},
		{"rate limit event", events(anthropicStream[0], [2]string{"error", `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`}), true, record.ErrHTTP429},
		{"529", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			fmt.Fprint(w, overloaded)
		}, true, record.ErrHTTP5xx},
		{"error answer", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`)
		}, false, record.ErrHTTP4xx},
		{"no message_stop", events(anthropicStream[:10]...), true, record.ErrProtocol},
	} {
		srv := httptest.NewServer(&capture{respond: c.respond})
		cl := newTestClient(t, srv, Config{API: api.Anthropic, Stream: c.stream})
		res := do(cl, `"hi"`, 4)
		srv.Close()
		if res.ErrorClass != c.class {
			t.Errorf("%s: class %q (%s), want %q", c.name, res.ErrorClass, res.Error, c.class)
		}
	}
}

// TestAnthropicWhole: a non-streamed message's blocks are read — its text,
// thinking and tool_use input (kept as the call's arguments) — with its
// usage.
func TestAnthropicWhole(t *testing.T) {
	srv := httptest.NewServer(&capture{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}}`)
	}})
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.Anthropic})
	res := doKeep(c, `"hi"`, 4, true)
	if !res.OK() || res.PromptTokens != 5 || res.CompletionTokens != 6 || string(res.Text) != "Hi" || string(res.Reasoning) != "hm" {
		t.Fatalf("%s %s: prompt %d completion %d text %q reasoning %q", res.ErrorClass, res.Error, res.PromptTokens, res.CompletionTokens, res.Text, res.Reasoning)
	}
	if res.ToolCalls != 1 || string(res.Calls[0].Args) != `{"a":1}` || res.FirstToolCall == 0 {
		t.Errorf("calls %+v", res.Calls)
	}
}

// TestAnthropicWholeThinking: a whole message's thinking blocks are its
// reasoning tokens, counted by the client as a stream's thinking deltas
// are (Anthropic's usage does not count them apart): their words, or
// --tokenizer's tokens, summed over the blocks and at most the output
// tokens.
func TestAnthropicWholeThinking(t *testing.T) {
	message := func(content, usage string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[%s],"stop_reason":"end_turn"%s}`, content, usage)
		}
	}
	thinking := `{"type":"thinking","thinking":" let me  think","signature":"s"},{"type":"text","text":" Hi there"},{"type":"thinking","thinking":"\nmore","signature":"t"}`
	bytesCount := func(b []byte) int { return len(b) }
	for _, tc := range []struct {
		name                 string
		respond              func(http.ResponseWriter, *http.Request)
		count                func([]byte) int
		reasoning, completed int
	}{
		{"words", message(thinking, `,"usage":{"input_tokens":5,"output_tokens":9}`), nil, 4, 9},
		{"tokenizer", message(thinking, `,"usage":{"input_tokens":5,"output_tokens":30}`), bytesCount, len(" let me  think") + len("\nmore"), 30},
		{"at most the output", message(thinking, `,"usage":{"input_tokens":5,"output_tokens":3}`), nil, 3, 3},
		{"no usage", message(thinking, ``), nil, 4, 6},
		{"no thinking", message(`{"type":"text","text":"a b c"}`, `,"usage":{"input_tokens":5,"output_tokens":3}`), nil, 0, 3},
		{"redacted only", message(`{"type":"redacted_thinking","data":"xyz"},{"type":"text","text":"a"}`, `,"usage":{"input_tokens":5,"output_tokens":7}`), nil, 0, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: tc.respond})
			defer srv.Close()
			res := do(newTestClient(t, srv, Config{API: api.Anthropic, CountTokens: tc.count, Answer: AnswerOptions{ReasoningEffort: "low"}}), `"hi"`, 6)
			if !res.OK() || res.ReasoningTokens != tc.reasoning || res.CompletionTokens != tc.completed {
				t.Errorf("%s %s: %d reasoning tokens of %d output tokens, want %d of %d", res.ErrorClass, res.Error, res.ReasoningTokens, res.CompletionTokens, tc.reasoning, tc.completed)
			}
		})
	}
}

// TestSGLangCumulative: a /generate stream's text is cumulative: a chunk
// whose text grew is a token carrying the growth, one that did not is
// none; the counts are meta_info's. A token-id prompt is sent as
// input_ids, a text one as text.
func TestSGLangCumulative(t *testing.T) {
	meta := func(n int, fin string) string {
		return fmt.Sprintf(`"meta_info":{"id":"x","finish_reason":%s,"prompt_tokens":3,"completion_tokens":%d,"cached_tokens":2}`, fin, n)
	}
	cap := &capture{respond: sse(
		`{"text":"","output_ids":[],`+meta(0, "null")+`}`,
		`{"text":" a","output_ids":[1],`+meta(1, "null")+`}`,
		`{"text":" a","output_ids":[1],`+meta(1, "null")+`}`,
		`{"text":" a b c","output_ids":[1,2,3],`+meta(3, "null")+`}`,
		`{"text":" a b c d","output_ids":[1,2,3,4],`+meta(4, `{"type":"length","length":4}`)+`}`,
		"[DONE]")}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.SGLang, Stream: true, IgnoreEOS: true})
	res := doKeep(c, `[5,6,7]`, 4, true)
	if !res.OK() {
		t.Fatalf("%s: %s", res.ErrorClass, res.Error)
	}
	if len(res.TokenTimes) != 3 || string(res.Text) != " a b c d" {
		t.Errorf("%d token chunks, text %q: want 3 (the chunks whose text grew), the whole text once", len(res.TokenTimes), res.Text)
	}
	if res.PromptTokens != 3 || res.CompletionTokens != 4 || res.CachedTokens != 2 {
		t.Errorf("prompt %d completion %d cached %d", res.PromptTokens, res.CompletionTokens, res.CachedTokens)
	}
	b := cap.bodies[0]
	if fmt.Sprint(b["input_ids"]) != "[5 6 7]" || b["text"] != nil || b["model"] != nil ||
		fmt.Sprint(b["sampling_params"]) != "map[ignore_eos:true max_new_tokens:4 min_new_tokens:4 temperature:0]" || b["stream"] != true {
		t.Errorf("body %v", b)
	}
	do(c, `"one two"`, 2)
	if b := cap.bodies[1]; b["text"] != "one two" || b["input_ids"] != nil {
		t.Errorf("a text prompt: body %v", b)
	}
	srv2 := httptest.NewServer(&capture{respond: sse(`{"text":" a b","meta_info":{"completion_tokens":2}}`, `{"text":" a","meta_info":{}}`, "[DONE]")})
	defer srv2.Close()
	if res := do(newTestClient(t, srv2, Config{API: api.SGLang, Stream: true}), `"x"`, 2); res.ErrorClass != record.ErrProtocol {
		t.Errorf("a cumulative text that shrank: class %q (%s)", res.ErrorClass, res.Error)
	}
}

// TestKServeGenerate: the model is named in the path (generate_stream
// when streaming, the model set later too); each event's text_output is a
// token; the counts are the server's when it gives them, else the chunks
// counted (streamed) or the words (whole); the stream ends with the body.
func TestKServeGenerate(t *testing.T) {
	cap := &capture{respond: sse(
		`{"model_name":"m","model_version":"1","text_output":" a"}`,
		`{"model_name":"m","model_version":"1","text_output":" b"}`,
		`{"model_name":"m","model_version":"1","text_output":" c"}`)}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.KServe, Stream: true, Model: "first"})
	c.SetModel("llama 3")
	res := do(c, `"hi there"`, 3)
	if !res.OK() || len(res.TokenTimes) != 3 || res.CompletionTokens != 3 || res.PromptTokens != -1 {
		t.Fatalf("%s %s: %d tokens, completion %d, prompt %d", res.ErrorClass, res.Error, len(res.TokenTimes), res.CompletionTokens, res.PromptTokens)
	}
	if cap.paths[0] != "/v2/models/llama 3/generate_stream" {
		t.Errorf("path %q", cap.paths[0])
	}
	if b := cap.bodies[0]; b["text_input"] != "hi there" || fmt.Sprint(b["parameters"]) != "map[max_tokens:3 stream:true temperature:0]" {
		t.Errorf("body %v", b)
	}
	named := newTestClient(t, srv, Config{API: api.KServe, Stream: true, Endpoint: "/gw/v2/models/{model}/versions/2/generate_stream"})
	if named.URL() != srv.URL+"/gw/v2/models/m/versions/2/generate_stream" {
		t.Errorf("--endpoint naming the streaming path: %s", named.URL())
	}
	counted := &capture{respond: sse(`{"text_output":" a","num_input_tokens":5,"num_output_tokens":1}`, `{"text_output":" b c","num_output_tokens":2}`)}
	srv2 := httptest.NewServer(counted)
	defer srv2.Close()
	if res := do(newTestClient(t, srv2, Config{API: api.KServe, Stream: true}), `"x"`, 3); res.PromptTokens != 5 || res.CompletionTokens != 3 {
		t.Errorf("the server's counts: prompt %d completion %d, want 5, 3 (1 + 2)", res.PromptTokens, res.CompletionTokens)
	}
	whole := &capture{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"model_name":"m","model_version":"1","text_output":" one two  three"}`)
	}}
	srv3 := httptest.NewServer(whole)
	defer srv3.Close()
	if res := do(newTestClient(t, srv3, Config{API: api.KServe}), `"x"`, 3); !res.OK() || res.CompletionTokens != 3 || whole.paths[0] != "/v2/models/m/generate" {
		t.Errorf("whole: %s %s, completion %d (want the 3 words), path %v", res.ErrorClass, res.Error, res.CompletionTokens, whole.paths)
	}
	byTokenizer := newTestClient(t, srv3, Config{API: api.KServe, CountTokens: func(b []byte) int { return len(b) }})
	if res := do(byTokenizer, `"x"`, 3); res.CompletionTokens != len(" one two  three") {
		t.Errorf("whole, counted by the tokenizer: %d completion tokens", res.CompletionTokens)
	}
	bad := httptest.NewServer(&capture{respond: sse(`{"text_output":" a"}`, `{"error":"model failed"}`)})
	defer bad.Close()
	if res := do(newTestClient(t, bad, Config{API: api.KServe, Stream: true}), `"x"`, 3); res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "model failed") {
		t.Errorf("an error event: %q %s", res.ErrorClass, res.Error)
	}
}

// wireSeeds are the fuzz seeds of the API kinds whose streams and whole
// answers have a form of their own and no fuzz target of their own:
// Responses and transcriptions (Anthropic Messages, SGLang's /generate and
// KServe's generate have theirs: apis_fuzz_test.go).
var wireSeeds = []struct {
	kind  *api.Kind
	seeds []string
}{
	{api.Responses, []string{
		"data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n" +
			"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
		"data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"x\"}}}\n\n",
		`{"output":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}],"usage":{"output_tokens":2}}`}},
	{api.Transcriptions, []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\" The\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
		`{"text":"one two","usage":{"type":"duration","seconds":1}}`}},
}

// anthropicEvents is a Messages stream's body.
func anthropicEvents(evs [][2]string) string {
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e[0], e[1])
	}
	return b.String()
}

// FuzzWireStreams feeds arbitrary bodies to the readers of wireSeeds'
// kinds through Do: never a panic, every failure classified with a
// message, token times in order.
func FuzzWireStreams(f *testing.F) {
	for i, w := range wireSeeds {
		for _, s := range w.seeds {
			f.Add([]byte(s), uint8(0), uint64(1), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, ctype uint8, split uint64, kind uint8) {
		bt := &bodyTransport{status: 200, ctype: []string{"text/event-stream", "application/json", ""}[ctype%3], body: body, split: split}
		c, err := New(Config{BaseURL: "http://x", API: wireSeeds[int(kind)%len(wireSeeds)].kind, Model: "m", Stream: ctype%4 != 3, Transport: bt,
			Epoch: time.Now(), AudioSeconds: 0.1, Answer: AnswerOptions{ReasoningEffort: "low"}})
		if err != nil {
			t.Fatal(err)
		}
		res := &Result{}
		res.Reset()
		res.KeepText = ctype&8 != 0
		c.Do(context.Background(), &Request{MaxTokens: 4, Prompt: []byte(`"x"`)}, res)
		if res.ErrorClass != "" && (!slices.Contains(record.ErrorClasses, res.ErrorClass) || res.Error == "") {
			t.Fatalf("class %q message %q", res.ErrorClass, res.Error)
		}
		if res.End < res.Sent || len(res.Error) > 600 || res.ToolArgsInvalid > res.ToolCalls {
			t.Fatalf("sent %v end %v, error of %d bytes, %d invalid of %d calls", res.Sent, res.End, len(res.Error), res.ToolArgsInvalid, res.ToolCalls)
		}
		for i := 1; i < len(res.TokenTimes); i++ {
			if res.TokenTimes[i] < res.TokenTimes[i-1] {
				t.Fatalf("token times go back: %v", res.TokenTimes)
			}
		}
	})
}

// TestStreamErrorMember: an event of any JSON stream that carries an error
// object ends the request with that error, classified by its code,
// whatever the kind's events are otherwise (a Responses or Messages event
// with no type included).
func TestStreamErrorMember(t *testing.T) {
	for _, kind := range []*api.Kind{api.Responses, api.Anthropic, api.SGLang, api.KServe, api.Transcriptions} {
		srv := httptest.NewServer(&capture{respond: sse(`{"error":{"message":"model failed","code":503}}`)})
		res := do(newTestClient(t, srv, Config{API: kind, Stream: true}), `"x"`, 3)
		srv.Close()
		if res.ErrorClass != record.ErrHTTP5xx || !strings.Contains(res.Error, "model failed") {
			t.Errorf("%s: %q %s, want the event's error", kind.Name, res.ErrorClass, res.Error)
		}
	}
}

// TestOutputFrom: a request says where its output token count came from
// when the server gave none — a stream's chunks, an answer's words, or the
// length asked for — and nothing when the server counted.
func TestOutputFrom(t *testing.T) {
	answer := func(body string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		respond func(http.ResponseWriter, *http.Request)
		tokens  int
		from    string
	}{
		{"stream, no usage", Config{Stream: true}, sse(tok, tok, tok, "[DONE]"), 3, record.OutputChunks},
		{"stream, usage", Config{Stream: true}, sse(tok, tok, usage, "[DONE]"), 2, ""},
		{"whole, no usage", Config{}, answer(`{"choices":[{"index":0,"text":" a b"}]}`), 5, record.OutputRequested},
		{"whole, usage", Config{}, answer(`{"choices":[{"index":0,"text":" a b"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`), 2, ""},
		{"kserve whole, no count", Config{API: api.KServe}, answer(`{"text_output":" one two three"}`), 3, record.OutputText},
		{"kserve whole, counted", Config{API: api.KServe}, answer(`{"text_output":" one two three","num_output_tokens":4}`), 4, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: tc.respond})
			defer srv.Close()
			res := do(newTestClient(t, srv, tc.cfg), `"x"`, 5)
			if !res.OK() || res.CompletionTokens != tc.tokens || res.OutputFrom != tc.from {
				t.Errorf("%s %s: %d output tokens from %q, want %d from %q", res.ErrorClass, res.Error, res.CompletionTokens, res.OutputFrom, tc.tokens, tc.from)
			}
		})
	}
}

// TestWholeReasoningCounted: a whole chat or Responses answer whose usage
// gives no reasoning count (vLLM 0.16–0.21 on chat; 0 on older Responses)
// has its reasoning text counted by the client (words, or --tokenizer's
// tokens), at most its output tokens; a count in the usage is the
// server's.
func TestWholeReasoningCounted(t *testing.T) {
	chat := func(usage string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there","reasoning":"let me think it over"},"finish_reason":"stop"}]%s}`, usage)
		}
	}
	responses := func(usage string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"reasoning","content":[{"type":"reasoning_text","text":"let me"},{"type":"reasoning_text","text":"think it over"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Hi there"}]}]%s}`, usage)
		}
	}
	for _, tc := range []struct {
		name                 string
		kind                 *api.Kind
		respond              func(http.ResponseWriter, *http.Request)
		reasoning, completed int
	}{
		{"chat, no count", api.Chat, chat(`,"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12}`), 5, 9},
		{"chat, the server's count", api.Chat, chat(`,"usage":{"prompt_tokens":3,"completion_tokens":9,"total_tokens":12,"completion_tokens_details":{"reasoning_tokens":7}}`), 7, 9},
		{"chat, at most the output", api.Chat, chat(`,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`), 4, 4},
		{"responses, no count", api.Responses, responses(`,"usage":{"input_tokens":3,"output_tokens":9,"total_tokens":12,"output_tokens_details":{"reasoning_tokens":0}}`), 5, 9},
		{"responses, the server's count", api.Responses, responses(`,"usage":{"input_tokens":3,"output_tokens":9,"total_tokens":12,"output_tokens_details":{"reasoning_tokens":6}}`), 6, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: tc.respond})
			defer srv.Close()
			res := do(newTestClient(t, srv, Config{API: tc.kind, Answer: AnswerOptions{ReasoningEffort: "low"}}), `"hi"`, 6)
			if !res.OK() || res.ReasoningTokens != tc.reasoning || res.CompletionTokens != tc.completed {
				t.Errorf("%s %s: %d reasoning tokens of %d output tokens, want %d of %d", res.ErrorClass, res.Error, res.ReasoningTokens, res.CompletionTokens, tc.reasoning, tc.completed)
			}
		})
	}
}
