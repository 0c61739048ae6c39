package mockserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

const weatherTools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object","properties":{"city":{"type":"string","minLength":5},"days":{"type":"integer","minimum":1,"maximum":7},"unit":{"type":"string","enum":["c","f"]}},"required":["city","days","unit"]}}},{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}}]`

func toolServer(t *testing.T, tc ToolConfig, seed uint64) *Server {
	t.Helper()
	s, err := New(Config{Models: []string{"m"}, TTFT: 30 * ms, ITL: 10 * ms, Tools: tc, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestToolCallStreamExact: a named call streams as vLLM's tool parsers do —
// the name and the first argument fragment in one delta (two entries of
// index 0), then fragments, content null, then an empty delta with the
// finish reason — the first at the TTFT, one every ITL.
func TestToolCallStreamExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := toolServer(t, ToolConfig{}, 0)
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],`+weatherTools+`,"tool_choice":{"type":"function","function":{"name":"get_time"}},"max_tokens":50,"stream":true}`)
		evs := w.events(t)
		id := "chatcmpl-tool-" + hex32(0, 1)
		want := []event{
			{0, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null}`},
			{30 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"id":"` + id + `","type":"function","index":0,"function":{"name":"get_time"}},{"index":0,"function":{"arguments":"{\"t"}}]},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{40 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"z\":"}}]},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{50 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"\"\"}"}}]},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{50 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null,"token_ids":null}]}`},
			{50 * ms, "", `[DONE]`},
		}
		if len(evs) != len(want) {
			t.Fatalf("stream:\n%s\nwant:\n%s", fmtEvents(evs), fmtEvents(want))
		}
		for i := range want {
			if evs[i] != want[i] {
				t.Errorf("event %d:\n%v %s\nwant\n%v %s", i, evs[i].at, evs[i].data, want[i].at, want[i].data)
			}
		}
	})
}

// toolAnswer reads a chat answer (streamed or not) with go-openai: its
// tool calls (arguments put together) and finish reason.
func toolAnswer(t *testing.T, c *openai.Client, req openai.ChatCompletionRequest) ([]openai.ToolCall, string, openai.Usage) {
	t.Helper()
	ctx := context.Background()
	if !req.Stream {
		r, err := c.CreateChatCompletion(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Message.ToolCalls, string(r.Choices[0].FinishReason), r.Usage
	}
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var calls []openai.ToolCall
	var finish string
	var usage openai.Usage
	for {
		ch, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.Usage != nil {
			usage = *ch.Usage
		}
		if len(ch.Choices) == 0 {
			continue
		}
		if ch.Choices[0].FinishReason != "" {
			finish = string(ch.Choices[0].FinishReason)
		}
		for _, tc := range ch.Choices[0].Delta.ToolCalls {
			i := *tc.Index
			for len(calls) <= i {
				calls = append(calls, openai.ToolCall{})
			}
			if tc.ID != "" {
				calls[i].ID, calls[i].Type, calls[i].Function.Name = tc.ID, tc.Type, tc.Function.Name
			}
			calls[i].Function.Arguments += tc.Function.Arguments
		}
	}
	return calls, finish, usage
}

// TestToolCallsReadByGoOpenAI: calls are read by another client, streamed
// and not; their arguments are valid against the function's parameters;
// auto calls for the configured share, required and named always, none
// never; the invalid share's arguments do not parse.
func TestToolCallsReadByGoOpenAI(t *testing.T) {
	_, url := start(t, Config{Tools: ToolConfig{CallShare: 0.5, InvalidShare: 0.25}, Seed: 3})
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = url + "/v1"
	c := openai.NewClientWithConfig(cfg)
	var tools []openai.Tool
	var wrapper struct{ Tools []openai.Tool }
	if err := json.Unmarshal([]byte("{"+weatherTools+"}"), &wrapper); err != nil {
		t.Fatal(err)
	}
	tools = wrapper.Tools
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "weather?"}}
	for _, tc := range []struct {
		name       string
		choice     any
		min, max   int // calls of 40
		wantFinish string
	}{
		{"auto", nil, 12, 28, "tool_calls"},
		{"required", "required", 40, 40, "tool_calls"},
		{"none", "none", 0, 0, ""},
		{"named", openai.ToolChoice{Type: "function", Function: openai.ToolFunction{Name: "get_weather"}}, 40, 40, "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, invalid := 0, 0
			for i := range 40 {
				req := openai.ChatCompletionRequest{Model: "m", Messages: msgs, Tools: tools, ToolChoice: tc.choice, MaxTokens: 200, Stream: i%2 == 0}
				got, finish, usage := toolAnswer(t, c, req)
				if len(got) == 0 {
					if finish == "tool_calls" {
						t.Errorf("no call, finish_reason tool_calls")
					}
					continue
				}
				calls++
				call := got[0]
				if len(got) != 1 || !strings.HasPrefix(call.ID, "chatcmpl-tool-") || len(call.ID) != 14+32 || call.Type != "function" || finish != tc.wantFinish || usage.CompletionTokens < 1 {
					t.Errorf("calls %+v finish %q usage %+v: want one chatcmpl-tool-<32 hex> function call, finish %q", got, finish, usage, tc.wantFinish)
				}
				var args map[string]any
				if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
					invalid++
					continue
				}
				switch call.Function.Name {
				case "get_weather":
					if city, _ := args["city"].(string); len(city) < 5 || args["days"] != 1.0 || args["unit"] != "c" || len(args) != 3 {
						t.Errorf("get_weather arguments %v: want city of 5+ characters, days 1, unit c", args)
					}
				case "get_time":
					if _, ok := args["tz"].(string); !ok || len(args) != 1 {
						t.Errorf("get_time arguments %v", args)
					}
				default:
					t.Errorf("called %q", call.Function.Name)
				}
			}
			if calls < tc.min || calls > tc.max || (calls > 0 && (invalid < calls/10 || invalid > calls/2)) {
				t.Errorf("%d of 40 called (want %d–%d), %d invalid (want about a quarter)", calls, tc.min, tc.max, invalid)
			}
		})
	}
}

// TestToolErrorsLikeVLLM: vLLM's 400s, in its current error shape.
func TestToolErrorsLikeVLLM(t *testing.T) {
	_, url := start(t, Config{Tools: ToolConfig{NoAutoToolChoice: true, CallShare: 1}})
	const msgs = `"messages":[{"role":"user","content":"a"}]`
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"tools without a parser", `{` + msgs + `,` + weatherTools + `}`, 400,
			`{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}`},
		{"auto without a parser", `{` + msgs + `,` + weatherTools + `,"tool_choice":"auto"}`, 400, `"auto\" tool choice requires`},
		{"required needs no parser", `{` + msgs + `,` + weatherTools + `,"tool_choice":"required"}`, 200, `"tool_calls":[{"id":"chatcmpl-tool-`},
		{"named needs no parser", `{` + msgs + `,` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"get_time"}}}`, 200, `"name":"get_time"`},
		{"none", `{` + msgs + `,` + weatherTools + `,"tool_choice":"none"}`, 200, `"content":" tok`},
		{"choice without tools", `{` + msgs + `,"tool_choice":"required"}`, 400, "When using `tool_choice`, `tools` must be set."},
		{"unknown name", `{` + msgs + `,` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"nope"}}}`, 400, "Tool 'nope' has not been passed in `tools`."},
		{"empty tools", `{` + msgs + `,"tools":[]}`, 400, `"code":400`},
		{"named with a schema", `{` + msgs + `,` + weatherTools + `,"tool_choice":{"type":"function","function":{"name":"get_time"}},"response_format":{"type":"json_object"}}`, 400,
			"You can only either use constraints for structured outputs or tools, not both."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url, "/v1/chat/completions", tc.body)
			if r.status != tc.status || !strings.Contains(r.body, tc.want) {
				t.Errorf("%d %s\nwant %d containing %s", r.status, r.body, tc.status, tc.want)
			}
		})
	}
}

// TestToolHistoryAccepted: a conversation with an assistant tool call and
// the tool's answer is served, its tool message counted in the prompt.
func TestToolHistoryAccepted(t *testing.T) {
	_, url := start(t, Config{})
	r := post(t, url, "/v1/chat/completions", `{"messages":[{"role":"user","content":"weather in Paris"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},`+
		`{"role":"tool","tool_call_id":"chatcmpl-tool-1","content":"sunny and warm"},{"role":"user","content":"thanks"}],"max_tokens":2}`)
	if r.status != 200 || r.usage["prompt_tokens"] != 7.0 {
		t.Errorf("%d %s: want 200 and 7 prompt tokens (3 + 3 + 1)", r.status, r.body)
	}
}

// TestToolCallWhole: a non-streamed call in vLLM's message shape.
func TestToolCallWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := toolServer(t, ToolConfig{}, 0)
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],`+weatherTools+`,"tool_choice":"required","max_tokens":50}`)
		got := w.Body.String()
		var r struct {
			Choices []struct {
				Message struct {
					ToolCalls []struct {
						ID, Type string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(got), &r); err != nil || len(r.Choices) != 1 || len(r.Choices[0].Message.ToolCalls) != 1 {
			t.Fatalf("%s: %v", got, err)
		}
		call := r.Choices[0].Message.ToolCalls[0]
		wantTokens := (len(call.Function.Arguments) + 3) / 4
		if !strings.Contains(got, `"message":{"role":"assistant","content":null,"refusal":null,"annotations":null,"audio":null,"function_call":null,"tool_calls":[{"id":"chatcmpl-tool-`) ||
			!strings.Contains(got, `"reasoning":null},"logprobs":null,"finish_reason":"tool_calls","stop_reason":null,"token_ids":null}]`) ||
			r.Usage.CompletionTokens != wantTokens || w.writes[0].at != 30*ms+time.Duration(wantTokens-1)*10*ms {
			t.Errorf("got at %v:\n%s\nwant vLLM's message shape, finish tool_calls, %d tokens", w.writes[0].at, got, wantTokens)
		}
	})
}

// TestEndlessFaultAfterToolCall: the endless fault on a request answered
// with a tool call goes on with plain tokens (it indexed past the call's
// argument fragments and panicked).
func TestEndlessFaultAfterToolCall(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, ITL: time.Millisecond, Tools: ToolConfig{CallShare: 1},
		Faults: FaultConfig{Faults: []Fault{{Kind: FaultEndless, Rate: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelAfter{ResponseRecorder: httptest.NewRecorder(), n: 20, cancel: cancel}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"a"}],`+weatherTools+`,"max_tokens":4,"stream":true}`))
	s.Handler().ServeHTTP(w, r)
	if w.writes < 20 || !strings.Contains(w.Body.String(), `"tool_calls":[{"id":"chatcmpl-tool-`) {
		t.Errorf("%d writes: %.600s", w.writes, w.Body.String())
	}
}
