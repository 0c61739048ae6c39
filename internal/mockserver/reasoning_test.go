package mockserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// event is one SSE event of a response and when the server wrote it.
type event struct {
	at   time.Duration
	name string // the event: line (Responses API), "" for chat
	data string
}

// timedWriter records every write of a response with its time.
type timedWriter struct {
	*httptest.ResponseRecorder
	t0     time.Time
	writes []event
}

func (w *timedWriter) Write(b []byte) (int, error) {
	w.writes = append(w.writes, event{at: time.Since(w.t0), data: string(b)})
	return w.ResponseRecorder.Write(b)
}

// events splits the recorded writes into SSE events, each stamped with the
// time of the write that carried it.
func (w *timedWriter) events(t *testing.T) []event {
	t.Helper()
	var out []event
	for _, wr := range w.writes {
		for _, ev := range strings.Split(wr.data, "\n\n") {
			if ev == "" {
				continue
			}
			e := event{at: wr.at}
			for line := range strings.SplitSeq(ev, "\n") {
				if v, ok := strings.CutPrefix(line, "event: "); ok {
					e.name = v
				} else if v, ok := strings.CutPrefix(line, "data: "); ok {
					e.data = v
				} else {
					t.Fatalf("line %q is neither event: nor data:", line)
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// serveTimed runs one request through the handler on the caller's
// goroutine (inside a synctest bubble: exact times).
func serveTimed(s *Server, path, body string) *timedWriter {
	w := &timedWriter{ResponseRecorder: httptest.NewRecorder(), t0: time.Now()}
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return w
}

// delta returns a chat chunk's first choice's delta and finish reason.
func delta(t *testing.T, data string) (map[string]any, any) {
	t.Helper()
	if data == "[DONE]" {
		return nil, nil
	}
	var c struct {
		Choices []struct {
			Delta        map[string]any `json:"delta"`
			FinishReason any            `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		t.Fatalf("chunk %s: %v", data, err)
	}
	if len(c.Choices) == 0 {
		return nil, nil
	}
	return c.Choices[0].Delta, c.Choices[0].FinishReason
}

const ms = time.Millisecond

func reasoningServer(t *testing.T, rc ReasoningConfig) *Server {
	t.Helper()
	s, err := New(Config{Models: []string{"m"}, TTFT: 30 * ms, ITL: 10 * ms, Reasoning: rc})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReasoningStreamExact: 3 reasoning tokens then 2 answer tokens, in
// vLLM ≥ 0.16's chunks byte for byte; the first reasoning token at the
// TTFT, the first answer token 3 ITLs later, on the fake clock.
func TestReasoningStreamExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := reasoningServer(t, ReasoningConfig{Tokens: LengthDist{3, 3}})
		w := serveTimed(s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"a b"}],"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
		want := []event{
			{0, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"prompt_token_ids":null}`},
			{30 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"reasoning":" think"},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{40 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"reasoning":" think"},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{50 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"reasoning":" think"},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{60 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null,"token_ids":null}]}`},
			{70 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}]}`},
			{70 * ms, "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[],"usage":{"prompt_tokens":2,"total_tokens":7,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}}`},
			{70 * ms, "", `[DONE]`},
		}
		if got := w.events(t); !slices.Equal(got, want) {
			t.Errorf("stream:\n%s\nwant:\n%s", fmtEvents(got), fmtEvents(want))
		}
	})
}

func fmtEvents(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.at.String() + " " + e.name + " " + e.data + "\n")
	}
	return b.String()
}

// TestReasoningFields: the reasoning goes in the field(s) asked for, and
// include_reasoning false hides it without moving the answer's tokens.
func TestReasoningFields(t *testing.T) {
	for _, tc := range []struct {
		name, field, extra string
		wantKeys           []string // of a reasoning delta; nil: no reasoning chunk
		wantRole           string   // the role chunk's delta
	}{
		{"default", "", "", []string{"reasoning"}, `{"content":"","role":"assistant"}`},
		{"reasoning_content", ReasoningFieldContent, "", []string{"reasoning_content"}, `{"content":"","role":"assistant"}`},
		{"both", ReasoningFieldBoth, "", []string{"reasoning", "reasoning_content"}, `{"content":"","reasoning_content":null,"role":"assistant"}`},
		{"hidden", "", `,"include_reasoning":false`, nil, `{"content":"","role":"assistant"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := reasoningServer(t, ReasoningConfig{Tokens: LengthDist{4, 4}, Field: tc.field})
				w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}`+tc.extra+`}`)
				evs := w.events(t)
				role, _ := delta(t, evs[0].data)
				if b, _ := json.Marshal(role); string(b) != tc.wantRole {
					t.Errorf("role delta %s, want %s", b, tc.wantRole)
				}
				var reasoningAt, contentAt []time.Duration
				for _, e := range evs[1:] {
					d, _ := delta(t, e.data)
					switch {
					case d == nil:
					case d["content"] != nil:
						contentAt = append(contentAt, e.at)
					default:
						var keys []string
						for k := range d {
							keys = append(keys, k)
						}
						slices.Sort(keys)
						if !slices.Equal(keys, tc.wantKeys) {
							t.Errorf("reasoning delta %v, want keys %v", d, tc.wantKeys)
						}
						reasoningAt = append(reasoningAt, e.at)
					}
				}
				wantReasoning := []time.Duration{30 * ms, 40 * ms, 50 * ms, 60 * ms}
				if tc.wantKeys == nil {
					wantReasoning = nil
				}
				if !slices.Equal(reasoningAt, wantReasoning) || !slices.Equal(contentAt, []time.Duration{70 * ms, 80 * ms}) {
					t.Errorf("reasoning at %v, answer at %v; want %v and [70ms 80ms]", reasoningAt, contentAt, wantReasoning)
				}
				if !strings.Contains(evs[len(evs)-2].data, `"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":4}}`) {
					t.Errorf("usage %s: want 6 completion tokens of which 4 reasoning", evs[len(evs)-2].data)
				}
			})
		})
	}
}

// TestReasoningWhole: a non-streamed answer in vLLM's whole shape, at
// TTFT + (tokens - 1) ITL.
func TestReasoningWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := reasoningServer(t, ReasoningConfig{Tokens: LengthDist{2, 2}})
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a b c"}],"max_tokens":4,"ignore_eos":true}`)
		want := `{"id":"chatcmpl-1","object":"chat.completion","created":946684800,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":" tok tok","refusal":null,"annotations":null,"audio":null,"function_call":null,"reasoning":" think think"},"logprobs":null,"finish_reason":"length","stop_reason":null,"token_ids":null}],"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":3,"total_tokens":7,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":2}},"prompt_logprobs":null,"prompt_token_ids":null,"kv_transfer_params":null}`
		if got := w.Body.String(); got != want || len(w.writes) != 1 || w.writes[0].at != 60*ms {
			t.Errorf("got at %v:\n%s\nwant at 60ms:\n%s", w.writes[0].at, got, want)
		}
	})
	// Without the usage details, and with both field names.
	synctest.Test(t, func(t *testing.T) {
		s := reasoningServer(t, ReasoningConfig{Tokens: LengthDist{2, 2}, Field: ReasoningFieldBoth, NoUsageDetails: true})
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":4,"ignore_eos":true,"include_reasoning":false}`)
		got := w.Body.String()
		if !strings.Contains(got, `"function_call":null,"reasoning":null,"reasoning_content":null},`) || strings.Contains(got, "completion_tokens_details") ||
			!strings.Contains(got, `"completion_tokens":4,`) {
			t.Errorf("got %s: want reasoning and reasoning_content null (hidden), no completion_tokens_details, 4 completion tokens", got)
		}
	})
}

// TestReasoningWithinMaxTokens: reasoning counts in max_tokens; a request
// whose reasoning takes every token ends with finish_reason length and no
// answer; hidden, the finish still comes, in a chunk of its own.
func TestReasoningWithinMaxTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := reasoningServer(t, ReasoningConfig{Tokens: LengthDist{10, 10}})
		for _, hide := range []bool{false, true} {
			body := `{"messages":[{"role":"user","content":"a"}],"max_tokens":3,"stream":true`
			if hide {
				body += `,"include_reasoning":false`
			}
			evs := serveTimed(s, "/v1/chat/completions", body+`}`).events(t)
			var n int
			var finish any
			for _, e := range evs[1 : len(evs)-1] {
				d, f := delta(t, e.data)
				if d["reasoning"] != nil {
					n++
				}
				if d["content"] != nil {
					t.Errorf("answer chunk %s: the reasoning took every token", e.data)
				}
				if f != nil {
					finish = f
				}
			}
			if want := map[bool]int{false: 3, true: 0}[hide]; n != want || finish != "length" || evs[len(evs)-1].at != 50*ms {
				t.Errorf("hidden %v: %d reasoning chunks, finish %v, end at %v; want %d, length, 50ms", hide, n, finish, evs[len(evs)-1].at, want)
			}
		}
	})
}

// TestReasoningUniformSeeded: uniform:A:B lengths are within [A, B], vary,
// and are the same for the same seed and request number.
func TestReasoningUniformSeeded(t *testing.T) {
	d, err := ParseLengthDist("uniform:5:9")
	if err != nil || d != (LengthDist{5, 9}) || d.String() != "uniform:5:9" {
		t.Fatalf("ParseLengthDist: %v %v", d, err)
	}
	seen := map[int]bool{}
	for id := range int64(200) {
		n := d.draw(7, id)
		if n < 5 || n > 9 || n != d.draw(7, id) {
			t.Fatalf("request %d: %d", id, n)
		}
		seen[n] = true
	}
	if len(seen) != 5 {
		t.Errorf("200 draws took %d of the 5 values", len(seen))
	}
	same := 0
	for id := range int64(200) {
		if d.draw(7, id) == d.draw(8, id) {
			same++
		}
	}
	if same > 80 {
		t.Errorf("seeds 7 and 8 agree on %d of 200 requests", same)
	}
	for _, bad := range []string{"-1", "uniform:3", "uniform:5:2", "x", "uniform:0:99999999999"} {
		if _, err := ParseLengthDist(bad); err == nil {
			t.Errorf("ParseLengthDist(%q) accepted", bad)
		}
	}
	if _, err := New(Config{Models: []string{"m"}, Reasoning: ReasoningConfig{Tokens: LengthDist{1, 1}, Field: "thinking"}}); err == nil {
		t.Error("reasoning field thinking accepted")
	}
}

// TestHistoricalShapeUnchanged: without the new options a chat answer is
// byte for byte what the server always sent.
func TestHistoricalShapeUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := reasoningServer(t, ReasoningConfig{})
		w := serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
		want := `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":"length"}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":946684800,"model":"m","choices":[],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}

data: [DONE]

`
		if got := w.Body.String(); got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
		w = serveTimed(s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a"}],"max_tokens":2,"ignore_eos":true}`)
		if want := `{"id":"chatcmpl-2","object":"chat.completion","created":946684800,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":" tok tok"},"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":1,"total_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`; w.Body.String() != want {
			t.Errorf("got\n%s\nwant\n%s", w.Body.String(), want)
		}
	})
}

// TestModelStatsAndTokensFor: the server counts what it answered with, and
// TokensFor tells each request's reasoning length.
func TestModelStatsAndTokensFor(t *testing.T) {
	rc := ReasoningConfig{Tokens: LengthDist{1, 9}}
	s, url := start(t, Config{Seed: 9, Reasoning: rc, Tools: ToolConfig{CallShare: 1, InvalidShare: 0.5}, Structured: StructuredConfig{InvalidShare: 1}})
	want := ModelStats{}
	for n := int64(1); n <= 6; n++ {
		body := `{"messages":[{"role":"user","content":"a"}],"max_tokens":100,"stream":true,"stream_options":{"include_usage":true}`
		if n%2 == 0 {
			body += `,` + weatherTools
		} else {
			body += `,"response_format":{"type":"json_object"}`
		}
		r := post(t, url, "/v1/chat/completions", body+`}`)
		details, _ := r.usage["completion_tokens_details"].(map[string]any)
		if got := details["reasoning_tokens"]; got != float64(rc.TokensFor(9, n)) {
			t.Errorf("request %d: %v reasoning tokens, TokensFor says %d", n, got, rc.TokensFor(9, n))
		}
		want.ReasoningTokens += int64(rc.TokensFor(9, n))
	}
	st := s.Stats().Model
	if st.ReasoningTokens != want.ReasoningTokens || st.ToolCalls != 3 || st.Structured != 3 || st.InvalidStructured != 3 || st.InvalidToolCalls > 3 {
		t.Errorf("model stats %+v: want %d reasoning tokens, 3 tool calls, 3 structured answers all invalid", st, want.ReasoningTokens)
	}
}
