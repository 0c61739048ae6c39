package mockserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// postTo posts body to path on srv and returns the status and body.
func postTo(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseData returns the data of each event of a stream.
func sseData(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// TestMessagesStream: /v1/messages streams Anthropic's events in order —
// message_start with the input usage, a thinking block, a tool_use block
// whose input_json_delta fragments make the call's arguments, message_delta
// with the output usage and the tool_use stop reason, message_stop — each
// event's type repeated in its data.
func TestMessagesStream(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, Reasoning: ReasoningConfig{Tokens: LengthDist{Min: 2, Max: 2}}, Tools: ToolConfig{CallShare: 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := postTo(t, srv, "/v1/messages", `{"model":"m","max_tokens":40,"stream":true,"system":"be brief","messages":[{"role":"user","content":"one two three"},
		{"role":"assistant","content":[{"type":"text","text":"four"},{"type":"tool_use","id":"t1","name":"f","input":{"a":"five"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"six"}]}],
		"tools":[{"name":"get","description":"d","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}],"tool_choice":{"type":"any"}}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	var types []string
	var args strings.Builder
	var input, output int
	for _, d := range sseData(body) {
		var e struct {
			Type    string `json:"type"`
			Message struct {
				Usage struct {
					InputTokens int `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			Delta struct {
				Type        string `json:"type"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &e); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		name := e.Type
		if e.Delta.Type != "" {
			name += ":" + e.Delta.Type
		}
		if len(types) == 0 || types[len(types)-1] != name {
			types = append(types, name)
		}
		switch e.Type {
		case "message_start":
			input = e.Message.Usage.InputTokens
		case "message_delta":
			output = e.Usage.OutputTokens
			if e.Delta.StopReason != "tool_use" {
				t.Errorf("stop reason %q", e.Delta.StopReason)
			}
		}
		args.WriteString(e.Delta.PartialJSON)
	}
	want := "message_start ping content_block_start content_block_delta:thinking_delta content_block_delta:signature_delta content_block_stop " +
		"content_block_start content_block_delta:input_json_delta content_block_stop message_delta message_stop"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(args.String())) || !strings.Contains(args.String(), `"city"`) {
		t.Errorf("tool input %q", args.String())
	}
	// be brief (2) + one two three (3) + four (1) + {"a":"five"} (1) + six (1)
	if st := s.Stats(); input != 8 || output != int(st.GenerationTokens) || st.Model.ToolCalls != 1 || st.Model.ReasoningTokens != 2 {
		t.Errorf("input %d output %d; server %+v", input, output, st)
	}
}

// TestMessagesErrors: the server's errors and injected faults are in
// Anthropic's shape — a 503 as a 529 overloaded_error — and a fault that
// breaks a stream sends its first token and then an error event.
func TestMessagesErrors(t *testing.T) {
	for _, c := range []struct {
		fault, body string
		code        int
		typ         string
	}{
		{FaultHTTP503, `{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"a"}]}`, 529, "overloaded_error"},
		{FaultHTTP429, `{"model":"m","max_tokens":4,"messages":[{"role":"user","content":"a"}]}`, 429, "rate_limit_error"},
		{"", `{"model":"x","max_tokens":4,"messages":[{"role":"user","content":"a"}]}`, 404, "not_found_error"},
		{"", `{"model":"m","messages":[{"role":"user","content":"a"}]}`, 400, "invalid_request_error"},
	} {
		cfg := Config{Models: []string{"m"}}
		if c.fault != "" {
			cfg.Faults = FaultConfig{Faults: []Fault{{Kind: c.fault, Rate: 1}}}
		}
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		code, body := postTo(t, srv, "/v1/messages", c.body)
		srv.Close()
		var e struct {
			Type  string                         `json:"type"`
			Error struct{ Type, Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(body), &e) != nil || code != c.code || e.Type != "error" || e.Error.Type != c.typ || e.Error.Message == "" {
			t.Errorf("fault %q: %d %s, want %d with an %s", c.fault, code, body, c.code, c.typ)
		}
	}
	s, _ := New(Config{Models: []string{"m"}, ITL: time.Millisecond, Faults: FaultConfig{Faults: []Fault{{Kind: FaultReset, Rate: 1}}}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, body := postTo(t, srv, "/v1/messages", `{"model":"m","max_tokens":4,"stream":true,"messages":[{"role":"user","content":"a"}]}`)
	data := sseData(body)
	if len(data) < 2 || !strings.Contains(data[len(data)-1], `"overloaded_error"`) || strings.Count(body, "text_delta") != 1 || strings.Contains(body, "message_stop") {
		t.Errorf("a faulted stream: %s", body)
	}
}

// TestMessagesWhole: a non-streamed message holds its blocks, stop reason
// and usage.
func TestMessagesWhole(t *testing.T) {
	s, _ := New(Config{Models: []string{"m"}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := postTo(t, srv, "/v1/messages", `{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"a b"}]}`)
	var m struct {
		Type       string                        `json:"type"`
		Content    []struct{ Type, Text string } `json:"content"`
		StopReason string                        `json:"stop_reason"`
		Usage      struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Type != "message" || len(m.Content) != 1 || m.Content[0].Text != " tok tok tok" ||
		m.StopReason != "max_tokens" || m.Usage.InputTokens != 2 || m.Usage.OutputTokens != 3 {
		t.Errorf("%d %s", code, body)
	}
}

// TestSGLangGenerate: /generate streams the whole text so far in every
// chunk with meta_info counts, then [DONE]; token ids count one each.
func TestSGLangGenerate(t *testing.T) {
	s, _ := New(Config{Models: []string{"m"}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := postTo(t, srv, "/generate", `{"input_ids":[5,6,7,8],"sampling_params":{"max_new_tokens":3,"ignore_eos":true},"stream":true}`)
	data := sseData(body)
	if code != 200 || len(data) != 4 || data[3] != "[DONE]" {
		t.Fatalf("%d %q", code, data)
	}
	for i, d := range data[:3] {
		var c struct {
			Text string `json:"text"`
			Meta struct {
				Prompt     int             `json:"prompt_tokens"`
				Completion int             `json:"completion_tokens"`
				Finish     json.RawMessage `json:"finish_reason"`
			} `json:"meta_info"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil || c.Text != strings.Repeat(" tok", i+1) || c.Meta.Prompt != 4 || c.Meta.Completion != i+1 ||
			(i < 2) != (string(c.Meta.Finish) == "null") {
			t.Errorf("chunk %d: %s (%v)", i, d, err)
		}
	}
	if code, _ := postTo(t, srv, "/generate", `{"sampling_params":{}}`); code != 400 {
		t.Errorf("no prompt: %d", code)
	}
}

// TestKServeGenerate: generate_stream streams each token's text_output
// with the counts asked for and no end event; generate answers whole; an
// unknown model in the path is a 404.
func TestKServeGenerate(t *testing.T) {
	s, _ := New(Config{Models: []string{"m"}})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := postTo(t, srv, "/v2/models/m/generate_stream", `{"text_input":"a b c","parameters":{"max_tokens":2,"ignore_eos":true},"return_num_input_tokens":true,"return_num_output_tokens":true}`)
	data := sseData(body)
	want := `{"model_name":"m","model_version":"1","text_output":" tok","num_input_tokens":3,"num_output_tokens":1}`
	if code != 200 || len(data) != 2 || data[0] != want || data[1] != want {
		t.Errorf("%d %q", code, data)
	}
	if code, body := postTo(t, srv, "/v2/models/m/generate", `{"text_input":"a","parameters":{"max_tokens":2}}`); code != 200 || body != `{"model_name":"m","model_version":"1","text_output":" tok tok"}` {
		t.Errorf("whole: %d %s", code, body)
	}
	if code, _ := postTo(t, srv, "/v2/models/other/generate", `{"text_input":"a"}`); code != 404 {
		t.Errorf("unknown model: %d", code)
	}
}

// TestNativeErrors: /generate and the KServe generate endpoints answer
// errors, the server's own and injected faults, in their server's shape —
// KServe's (Triton's) {"error": "message"} whatever the status; SGLang's
// {"error": {"message"}} for a request it cannot serve (400) and its
// HTTPException handler's {"object": "error", "message", "type", "param",
// "code"} for the others — with the status and Retry-After kept.
func TestNativeErrors(t *testing.T) {
	const (
		kserveReq = `{"text_input":"a","parameters":{"max_tokens":2}}`
		sglangReq = `{"text":"a","sampling_params":{"max_new_tokens":2}}`
	)
	for _, c := range []struct {
		name, fault, path, body string
		code                    int
		want                    string
	}{
		{"kserve unknown model", "", "/v2/models/other/generate", kserveReq, 404, `{"error":"The model ` + "`other`" + ` does not exist."}`},
		{"kserve no text_input", "", "/v2/models/m/generate_stream", `{"parameters":{}}`, 400, `{"error":"text_input: a string is required"}`},
		{"kserve invalid JSON", "", "/v2/models/m/generate", `{"text_input":`, 400, ""},
		{"kserve 503", FaultHTTP503, "/v2/models/m/generate_stream", kserveReq, 503, `{"error":"injected fault: the server is overloaded"}`},
		{"kserve 429", FaultHTTP429, "/v2/models/m/generate", kserveReq, 429, `{"error":"injected fault: the server is rate limiting requests"}`},
		{"sglang no prompt", "", "/generate", `{"sampling_params":{}}`, 400, `{"error":{"message":"text or input_ids: required"}}`},
		{"sglang bad length", "", "/generate", `{"text":"a","sampling_params":{"max_new_tokens":0}}`, 400, `{"error":{"message":"max_new_tokens must be at least 1, got 0"}}`},
		{"sglang 503", FaultHTTP503, "/generate", sglangReq, 503, `{"object":"error","message":"injected fault: the server is overloaded","type":"503","param":null,"code":503}`},
		{"sglang 500", FaultHTTP500, "/generate", sglangReq, 500, `{"object":"error","message":"injected fault: the engine failed while handling the request","type":"500","param":null,"code":500}`},
		{"sglang 429", FaultHTTP429, "/generate", sglangReq, 429, `{"object":"error","message":"injected fault: the server is rate limiting requests","type":"429","param":null,"code":429}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Models: []string{"m"}}
			if c.fault != "" {
				cfg.Faults = FaultConfig{RetryAfter: 2, Faults: []Fault{{Kind: c.fault, Rate: 1}}}
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			body := string(b)
			if resp.StatusCode != c.code || resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%d %s (%s), want %d", resp.StatusCode, body, resp.Header.Get("Content-Type"), c.code)
			}
			if c.want != "" && body != c.want {
				t.Errorf("body %s, want %s", body, c.want)
			}
			if c.want == "" { // the parser's message, in KServe's shape
				var e struct{ Error string }
				if json.Unmarshal(b, &e) != nil || e.Error == "" || strings.Contains(body, `"object"`) {
					t.Errorf("body %s, want {\"error\": \"message\"}", body)
				}
			}
			if c.code == 429 && resp.Header.Get("Retry-After") != "2" {
				t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
			}
		})
	}
}
