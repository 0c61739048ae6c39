package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// capture is a test server that records request bodies and answers with a
// canned response.
type capture struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
	// forms are multipart bodies' fields (nil for other bodies): a file
	// field's value is its bytes.
	forms   []map[string]string
	respond func(w http.ResponseWriter, r *http.Request)
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	form := readForm(r.Header.Get("Content-Type"), b)
	c.mu.Lock()
	c.forms = append(c.forms, form)
	c.bodies = append(c.bodies, m)
	c.headers = append(c.headers, r.Header.Clone())
	c.paths = append(c.paths, r.URL.Path)
	c.mu.Unlock()
	c.respond(w, r)
}

func sse(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}
}

func newTestClient(t *testing.T, srv *httptest.Server, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL = srv.URL
	if cfg.API == nil {
		cfg.API = api.VLLM
	}
	if cfg.Model == "" {
		cfg.Model = "m"
	}
	cfg.Epoch = time.Now()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// do sends one request for prompt (JSON) of maxTokens output tokens and
// returns its record.
func do(c *Client, prompt string, maxTokens int) *Result { return doKeep(c, prompt, maxTokens, false) }

// doKeep is do, keeping the answer's text (Result.KeepText) when keep is
// set.
func doKeep(c *Client, prompt string, maxTokens int, keep bool) *Result {
	res := &Result{}
	res.Reset()
	res.OutputLen = maxTokens
	res.KeepText = keep
	c.Do(context.Background(), &Request{MaxTokens: maxTokens, Prompt: []byte(prompt)}, res)
	return res
}

const (
	tok   = `{"choices":[{"index":0,"text":" t","finish_reason":null}]}`
	usage = `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`
)

func TestCompletionBodyCarriesWhatVLLMNeeds(t *testing.T) {
	cap := &capture{respond: sse(tok, tok, usage, "[DONE]")}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{Stream: true, IgnoreEOS: true, APIKey: "sk-test", ExtraBody: []byte(`{"top_k": 5, "temperature": 0.7}`)})
	res := do(c, "[1,2,3]", 2)
	if !res.OK() {
		t.Fatalf("request failed: %s %s", res.ErrorClass, res.Error)
	}
	b := cap.bodies[0]
	for key, want := range map[string]any{
		"model": "m", "max_tokens": 2.0, "min_tokens": 2.0, "ignore_eos": true, "stream": true,
		"top_k": 5.0, "temperature": 0.7, // extra members override defaults
	} {
		if b[key] != want {
			t.Errorf("body[%q] = %v, want %v", key, b[key], want)
		}
	}
	if p, _ := b["prompt"].([]any); len(p) != 3 {
		t.Errorf("prompt %v, want 3 token ids", b["prompt"])
	}
	if so, _ := b["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options %v, want include_usage", b["stream_options"])
	}
	if got := cap.headers[0].Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization %q", got)
	}
	if cap.paths[0] != "/v1/completions" {
		t.Errorf("path %q", cap.paths[0])
	}
	if res.PromptTokens != 3 || res.CompletionTokens != 2 || res.CachedTokens != 1 {
		t.Errorf("usage (%d, %d, %d), want (3, 2, 1)", res.PromptTokens, res.CompletionTokens, res.CachedTokens)
	}
	if len(res.TokenTimes) != 2 || res.FirstToken != res.TokenTimes[0] || res.FirstToken < res.Sent || res.End < res.TokenTimes[1] {
		t.Errorf("times: sent %v first %v tokens %v end %v", res.Sent, res.FirstToken, res.TokenTimes, res.End)
	}
}

func TestDisableIgnoreEOSAndStream(t *testing.T) {
	cap := &capture{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"text":" a b"}],"usage":{"prompt_tokens":4,"completion_tokens":7}}`)
	}}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{})
	res := do(c, `"hello"`, 9)
	if !res.OK() {
		t.Fatalf("%s: %s", res.ErrorClass, res.Error)
	}
	b := cap.bodies[0]
	if b["ignore_eos"] != false || b["stream"] != false {
		t.Errorf("ignore_eos %v stream %v, want false false", b["ignore_eos"], b["stream"])
	}
	for _, k := range []string{"min_tokens", "stream_options"} {
		if _, ok := b[k]; ok {
			t.Errorf("%s sent without ignore_eos/stream", k)
		}
	}
	if res.CompletionTokens != 7 || res.FirstToken != res.End {
		t.Errorf("non-stream: completion %d, first %v end %v", res.CompletionTokens, res.FirstToken, res.End)
	}
}

func TestChatBodyAndRoleChunkIsNotAToken(t *testing.T) {
	role := `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`
	content := `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`
	cap := &capture{respond: sse(role, content, content, content, "[DONE]")}
	srv := httptest.NewServer(cap)
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.Chat, Stream: true, IgnoreEOS: true})
	res := do(c, `"hello there"`, 3)
	if !res.OK() {
		t.Fatalf("%s: %s", res.ErrorClass, res.Error)
	}
	if cap.paths[0] != "/v1/chat/completions" {
		t.Errorf("path %q", cap.paths[0])
	}
	msgs, _ := cap.bodies[0]["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "hello there" {
		t.Errorf("messages %v", cap.bodies[0]["messages"])
	}
	if cap.bodies[0]["max_completion_tokens"] != 3.0 {
		t.Errorf("max_completion_tokens %v", cap.bodies[0]["max_completion_tokens"])
	}
	// No usage in the stream: the three content chunks are counted.
	if res.CompletionTokens != 3 || len(res.TokenTimes) != 3 {
		t.Errorf("completion tokens %d, token times %d, want 3 and 3", res.CompletionTokens, len(res.TokenTimes))
	}
}

func TestFailuresAreClassified(t *testing.T) {
	for _, tc := range []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request)
		class   string
		msg     string
	}{
		{"404", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(404)
			io.WriteString(w, `{"object":"error","message":"The model x does not exist.","code":404}`)
		}, record.ErrHTTP4xx, "does not exist"},
		{"429", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(429) }, record.ErrHTTP429, "429"},
		{"503", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(503)
			io.WriteString(w, `{"error":{"message":"overloaded"}}`)
		}, record.ErrHTTP5xx, "overloaded"},
		{"invalid json chunk", sse(`{"choices":[`, "[DONE]"), record.ErrProtocol, "invalid JSON"},
		{"no done", sse(tok), record.ErrProtocol, "[DONE]"},
		{"error in stream", sse(tok, `{"error":{"message":"boom","code":500}}`), record.ErrHTTP5xx, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(&capture{respond: tc.respond})
			defer srv.Close()
			res := do(newTestClient(t, srv, Config{Stream: true}), "[1]", 1)
			if res.ErrorClass != tc.class || !strings.Contains(res.Error, tc.msg) {
				t.Errorf("class %q error %q, want %q containing %q", res.ErrorClass, res.Error, tc.class, tc.msg)
			}
			if res.End < res.Sent {
				t.Errorf("end %v before sent %v", res.End, res.Sent)
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		res := do(newTestClient(t, srv, Config{Stream: true}), "[1]", 1)
		if res.ErrorClass != record.ErrConnect {
			t.Errorf("class %q (%s), want connect", res.ErrorClass, res.Error)
		}
	})
	t.Run("stall timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(&capture{respond: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "data: %s\n\n", tok)
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}})
		defer srv.Close()
		defer close(release)
		res := do(newTestClient(t, srv, Config{Stream: true, StallTimeout: 100 * time.Millisecond}), "[1]", 2)
		if res.ErrorClass != record.ErrTimeout || len(res.TokenTimes) != 1 {
			t.Errorf("class %q (%s), tokens %d: want timeout after one token", res.ErrorClass, res.Error, len(res.TokenTimes))
		}
	})
}

func TestExtraBodyMustBeAnObject(t *testing.T) {
	for _, bad := range []string{`[1]`, `5`, `{"a":`, `null`, `{} {}`} {
		if _, err := New(Config{BaseURL: "http://x", API: api.VLLM, ExtraBody: []byte(bad)}); err == nil {
			t.Errorf("extra body %s accepted", bad)
		}
	}
}

func TestAppendBodyIsValidJSON(t *testing.T) {
	for _, extra := range []string{"", `{"model":"x","prompt":[9],"max_tokens":1,"temperature":1,"stream":false,"ignore_eos":false,"stream_options":null,"min_tokens":0}`} {
		c, err := New(Config{BaseURL: "http://x", API: api.VLLM, Model: `we"ird`, Stream: true, IgnoreEOS: true, ExtraBody: []byte(extra)})
		if err != nil {
			t.Fatal(err)
		}
		b := c.AppendBody(nil, &Request{MaxTokens: 4, Prompt: []byte(`[1,2]`)})
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("extra %q: body %s is not JSON: %v", extra, b, err)
		}
	}
}

// TestChatRequestsFollowEndpoint: a completions client sends its chat
// requests (those with images) beside its own endpoint.
func TestChatRequestsFollowEndpoint(t *testing.T) {
	for _, c := range []struct{ endpoint, text, chat string }{
		{"", "/v1/completions", "/v1/chat/completions"},
		{"/gateway/v1/completions", "/gateway/v1/completions", "/gateway/v1/chat/completions"},
		{"/generate", "/generate", "/v1/chat/completions"},
	} {
		cap := &capture{respond: sse(`{"choices":[{"text":"a"}]}`, "[DONE]")}
		srv := httptest.NewServer(cap)
		cl := newTestClient(t, srv, Config{API: api.VLLM, Endpoint: c.endpoint, Stream: true})
		for _, chat := range []bool{false, true} {
			var res Result
			res.Reset()
			cl.Do(context.Background(), &Request{Prompt: []byte(`"p"`), MaxTokens: 1, Chat: chat}, &res)
		}
		srv.Close()
		if len(cap.paths) != 2 || cap.paths[0] != c.text || cap.paths[1] != c.chat {
			t.Errorf("--endpoint %q: paths %v, want [%s %s]", c.endpoint, cap.paths, c.text, c.chat)
		}
	}
}

// TestUnwrittenCountsOnlyRequestsNotYetWritten: a request written and
// waiting for the server's answer no longer counts as unwritten (the
// dispatcher's bound must not throttle a slow server), and none counts
// once the requests are done, failed or not.
func TestUnwrittenCountsOnlyRequestsNotYetWritten(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"text":"a"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	for _, transport := range []string{api.TransportLean, api.TransportNetHTTP} {
		c := newTestClient(t, srv, Config{HTTPTransport: transport})
		done := make(chan *Result)
		go func() { done <- do(c, `"hi"`, 1) }()
		<-arrived
		// The server may read the request before the writing goroutine
		// is back from its write: the count must fall to 0 while the
		// request still waits for the server's answer.
		deadline := time.Now().Add(10 * time.Second)
		for c.Unwritten() != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if n := c.Unwritten(); n != 0 {
			t.Errorf("%s: %d unwritten while the request waits for the server", transport, n)
		}
		close(release)
		if res := <-done; !res.OK() {
			t.Fatalf("%s: %s %s", transport, res.ErrorClass, res.Error)
		}
		if n := c.Unwritten(); n != 0 {
			t.Errorf("%s: %d unwritten after the request", transport, n)
		}
		release = make(chan struct{})
	}
	c, err := New(Config{BaseURL: "http://127.0.0.1:1", API: api.VLLM, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if res := do(c, `"hi"`, 1); res.OK() {
		t.Fatal("a refused connection succeeded")
	}
	if n := c.Unwritten(); n != 0 {
		t.Errorf("%d unwritten after a failed request", n)
	}
}

// TestReasoningIsATokenButNotHistory: a reasoning model's stream under
// each of vLLM's field names — "reasoning" (v0.11.1 on), "reasoning_content"
// (before v0.16) and both at once — starts TTFT at the first reasoning
// chunk, counts each chunk once for ITL, and keeps only the answer as the
// text a conversation's history carries.
func TestReasoningIsATokenButNotHistory(t *testing.T) {
	for _, field := range []string{"reasoning", "reasoning_content", "both"} {
		t.Run(field, func(t *testing.T) {
			think := func(s string) string {
				switch field {
				case "both":
					return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"reasoning":%q,"reasoning_content":%q}}]}`, s, s)
				default:
					return fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":null,%q:%q}}]}`, field, s)
				}
			}
			answer := `{"choices":[{"index":0,"delta":{"content":"yes"}}]}`
			events := []string{`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`}
			for range 3 {
				events = append(events, think("hmm"))
			}
			events = append(events, answer, answer, "[DONE]")
			srv := httptest.NewServer(&capture{respond: sse(events...)})
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: api.Chat, Stream: true, IgnoreEOS: true})
			for _, keep := range []bool{false, true} {
				res := &Result{}
				res.Reset()
				res.KeepText = keep
				res.OutputLen = 5
				c.Do(context.Background(), &Request{MaxTokens: 5, Prompt: []byte(`"q"`)}, res)
				if !res.OK() {
					t.Fatalf("%s: %s", res.ErrorClass, res.Error)
				}
				if len(res.TokenTimes) != 5 || res.CompletionTokens != 5 {
					t.Errorf("keep %v: %d token times, %d completion tokens, want 5 and 5 (3 reasoning + 2 content, each once)",
						keep, len(res.TokenTimes), res.CompletionTokens)
				}
				if res.FirstToken != res.TokenTimes[0] {
					t.Errorf("keep %v: first token %v is not the first reasoning chunk's %v", keep, res.FirstToken, res.TokenTimes[0])
				}
				if keep && (string(res.Text) != "yesyes" || string(res.Reasoning) != "hmmhmmhmm") {
					t.Errorf("kept text %q and reasoning %q, want them apart", res.Text, res.Reasoning)
				}
				if res.FirstOutput != res.TokenTimes[3] || res.TTFO() < res.TTFT() {
					t.Errorf("keep %v: first output %v, want the first content chunk's %v, not before the first token", keep, res.FirstOutput, res.TokenTimes[3])
				}
				if res.ReasoningTokens != 3 || res.ReasoningChunks != 3 {
					t.Errorf("keep %v: reasoning tokens %d (chunks %d), want 3 counted", keep, res.ReasoningTokens, res.ReasoningChunks)
				}
			}
		})
	}
}

// TestReasoningTokensFromUsage: the server's completion_tokens_details.
// reasoning_tokens is taken over the chunks counted.
func TestReasoningTokensFromUsage(t *testing.T) {
	think := `{"choices":[{"index":0,"delta":{"reasoning":"a b"}}]}`
	answer := `{"choices":[{"index":0,"delta":{"content":"yes"}}]}`
	u := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":7,"completion_tokens_details":{"reasoning_tokens":5}}}`
	srv := httptest.NewServer(&capture{respond: sse(think, think, answer, u, "[DONE]")})
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.Chat, Stream: true})
	res := do(c, `"q"`, 7)
	if !res.OK() || res.ReasoningTokens != 5 || res.ReasoningChunks != 2 || res.CompletionTokens != 7 {
		t.Errorf("%s %s: reasoning tokens %d, chunks %d, completion %d; want 5 (usage), 2, 7",
			res.ErrorClass, res.Error, res.ReasoningTokens, res.ReasoningChunks, res.CompletionTokens)
	}
}

// TestToolCallStream: vLLM's tool-call deltas (vLLM's hermes parser and DeltaToolCall: the name
// and the first argument fragment as two entries of one index in one
// delta, "content": null, then fragments) are output tokens; the call is
// counted with its id and name, and its arguments are checked as JSON.
func TestToolCallStream(t *testing.T) {
	role := `{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`
	first := `{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"id":"chatcmpl-tool-5f0e","type":"function","index":0,"function":{"name":"get_weather"}},{"index":0,"function":{"arguments":"{\"city\": \""}}]},"logprobs":null,"finish_reason":null}]}`
	for _, tc := range []struct {
		name, rest string
		invalid    int
	}{
		{"valid", `Paris\"}`, 0},
		{"broken", `Paris`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := `{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"` + tc.rest + `"}}]},"logprobs":null,"finish_reason":null}]}`
			fin := `{"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null}]}`
			srv := httptest.NewServer(&capture{respond: sse(role, first, more, fin, "[DONE]")})
			defer srv.Close()
			c := newTestClient(t, srv, Config{API: api.Chat, Stream: true})
			res := do(c, `"q"`, 8)
			if !res.OK() {
				t.Fatalf("%s: %s", res.ErrorClass, res.Error)
			}
			if len(res.TokenTimes) != 2 || res.CompletionTokens != 2 {
				t.Errorf("%d token times, %d completion tokens, want 2 and 2", len(res.TokenTimes), res.CompletionTokens)
			}
			if res.ToolCalls != 1 || res.ToolArgsInvalid != tc.invalid || res.Calls[0].Name != "get_weather" || res.Calls[0].ID != "chatcmpl-tool-5f0e" {
				t.Errorf("tool calls %d, invalid %d, calls %+v", res.ToolCalls, res.ToolArgsInvalid, res.Calls)
			}
			if res.FirstToolCall != res.TokenTimes[0] || res.FirstOutput != res.TokenTimes[0] {
				t.Errorf("first tool call %v, first output %v, want the first chunk's %v", res.FirstToolCall, res.FirstOutput, res.TokenTimes[0])
			}
		})
	}
}

// TestToolCallArgumentsAreBounded: a server that streams arguments without
// end cannot make the client keep them: past the bound the call is cut
// and counted invalid.
func TestToolCallArgumentsAreBounded(t *testing.T) {
	frag := `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + strings.Repeat("x", 60<<10) + `"}}]}}]}`
	events := []string{`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`}
	for range 8 {
		events = append(events, frag)
	}
	srv := httptest.NewServer(&capture{respond: sse(append(events, "[DONE]")...)})
	defer srv.Close()
	c := newTestClient(t, srv, Config{API: api.Chat, Stream: true})
	res := do(c, `"q"`, 0)
	if !res.OK() || res.ToolCalls != 1 || res.ToolArgsInvalid != 1 || !res.Calls[0].Cut || len(res.Calls[0].Args) > record.MaxToolArgs {
		t.Errorf("%s: tool calls %d, invalid %d, cut %v, %d bytes kept (bound %d)", res.Error, res.ToolCalls, res.ToolArgsInvalid, res.Calls[0].Cut, len(res.Calls[0].Args), record.MaxToolArgs)
	}
}

// TestWholeResponseIsBounded: a non-streamed answer larger than the bound
// is a protocol error that says so (not "invalid JSON"), and the bytes it
// held are given back; the answers being read at once share a bound too.
func TestWholeResponseIsBounded(t *testing.T) {
	big := `{"choices":[{"text":"` + strings.Repeat("x", maxWholeResponse) + `"}]}`
	srv := httptest.NewServer(&capture{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	}})
	defer srv.Close()
	c := newTestClient(t, srv, Config{Stream: false})
	res := do(c, `[1]`, 4)
	if res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "response larger than 16 MiB") {
		t.Errorf("class %q: %s", res.ErrorClass, res.Error)
	}
	if n := wholeInFlight.Load(); n != 0 {
		t.Errorf("%d bytes still held after the request", n)
	}
	// The shared bound: with the budget nearly spent by others, an answer
	// is refused, saying why, and the budget is as it was.
	wholeInFlight.Add(maxWholeInFlight - 1024)
	defer wholeInFlight.Add(-(maxWholeInFlight - 1024))
	small := httptest.NewServer(&capture{respond: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"text":"`+strings.Repeat("y", 64<<10)+`"}]}`)
	}})
	defer small.Close()
	res = do(newTestClient(t, small, Config{Stream: false}), `[1]`, 4)
	if res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "non-streamed answers being read hold more than 256 MiB") {
		t.Errorf("class %q: %s", res.ErrorClass, res.Error)
	}
	if n := wholeInFlight.Load(); n != maxWholeInFlight-1024 {
		t.Errorf("the budget is %d after a refused answer, want %d", n, maxWholeInFlight-1024)
	}
}
