package mockserver

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func responsesServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Models = []string{"m"}
	cfg.TTFT, cfg.ITL = 30*ms, 10*ms
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestResponsesStream: the event:/data: stream without [DONE] — created,
// in_progress, the reasoning item's events, the message's, completed with
// the usage — with sequence numbers from 0, each data's type its event's
// name, the first reasoning delta at the TTFT and the first text delta
// after the reasoning tokens.
func TestResponsesStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := responsesServer(t, Config{Reasoning: ReasoningConfig{Tokens: LengthDist{2, 2}}})
		w := serveTimed(s, "/v1/responses", `{"model":"m","input":"one two three","max_output_tokens":4,"ignore_eos":true,"stream":true}`)
		evs := w.events(t)
		var names []string
		for i, e := range evs {
			names = append(names, e.name)
			var d struct {
				Seq  *int   `json:"sequence_number"`
				Type string `json:"type"`
			}
			if err := json.Unmarshal([]byte(e.data), &d); err != nil || d.Seq == nil || *d.Seq != i || d.Type != e.name {
				t.Errorf("event %d %s: %s (%v): want sequence_number %d and type %s", i, e.name, e.data, err, i, e.name)
			}
		}
		want := []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.content_part.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
			"response.reasoning_text.done", "response.content_part.done", "response.output_item.done",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
			"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
		if !slices.Equal(names, want) {
			t.Fatalf("events %v\nwant %v", names, want)
		}
		at := func(i int) time.Duration { return evs[i].at }
		if at(1) != 0 || at(4) != 30*ms || at(5) != 40*ms || at(11) != 50*ms || at(12) != 60*ms || at(16) != 60*ms {
			t.Errorf("times: %s", fmtEvents(evs))
		}
		rid, mid := "rs_"+hex32(uint64(len("rs_"))<<40, 1), "msg_"+hex32(uint64(len("msg_"))<<40, 1)
		for i, wantData := range map[int]string{
			4:  `{"content_index":0,"delta":" think","item_id":"` + rid + `","output_index":0,"sequence_number":4,"type":"response.reasoning_text.delta"}`,
			11: `{"content_index":0,"delta":" tok","item_id":"` + mid + `","logprobs":[],"output_index":1,"sequence_number":11,"type":"response.output_text.delta"}`,
			2:  `{"item":{"id":"` + rid + `","summary":[],"type":"reasoning","status":"in_progress"},"output_index":0,"sequence_number":2,"type":"response.output_item.added"}`,
			13: `{"content_index":0,"item_id":"` + mid + `","logprobs":[],"output_index":1,"sequence_number":13,"text":" tok tok","type":"response.output_text.done"}`,
		} {
			if evs[i].data != wantData {
				t.Errorf("event %d:\n%s\nwant\n%s", i, evs[i].data, wantData)
			}
		}
		if !strings.HasPrefix(evs[0].data, `{"response":{"id":"resp_`) || !strings.Contains(evs[0].data, `"output":[],`) || !strings.Contains(evs[0].data, `"status":"in_progress","text":null,"top_logprobs":null,"truncation":"disabled","usage":null,`) {
			t.Errorf("created: %s", evs[0].data)
		}
		last := evs[len(evs)-1].data
		if !strings.Contains(last, `"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0,"input_tokens_per_turn":[],"cached_tokens_per_turn":[]},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2,"tool_output_tokens":0,"output_tokens_per_turn":[],"tool_output_tokens_per_turn":[]},"total_tokens":7}`) ||
			!strings.Contains(last, `"status":"incomplete"`) || !strings.Contains(last, `"incomplete_details":{"reason":"max_output_tokens"}`) {
			t.Errorf("completed: %s", last)
		}
		if strings.Contains(w.Body.String(), "[DONE]") {
			t.Error("a [DONE] in a Responses stream")
		}
	})
}

// responseJSON is what the tests read of a response object.
type responseJSON struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Args    string `json:"arguments"`
		Content []struct {
			Type, Text string
		} `json:"content"`
	} `json:"output"`
	Usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		InputDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func readResponse(t *testing.T, body string) responseJSON {
	t.Helper()
	var r responseJSON
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return r
}

// TestResponsesWhole: a non-streamed answer to a list of messages with
// instructions; a function call for a tool_choice required.
func TestResponsesWhole(t *testing.T) {
	_, url := start(t, Config{Reasoning: ReasoningConfig{Tokens: LengthDist{3, 3}}, ResponseStore: 10})
	r := post(t, url, "/v1/responses", `{"instructions":"be brief","input":[{"role":"user","content":"a b c"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"d e"}]},{"role":"user","content":[{"type":"input_text","text":"f"}]}],"max_output_tokens":10}`)
	got := readResponse(t, r.body)
	// Every token of max_output_tokens used: incomplete, as vLLM says.
	if r.status != 200 || got.Status != "incomplete" || got.Usage.InputTokens != 8 || got.Usage.OutputTokens != 10 || got.Usage.OutputDetails.ReasoningTokens != 3 ||
		len(got.Output) != 2 || got.Output[0].Type != "reasoning" || got.Output[0].Content[0].Text != strings.Repeat(" think", 3) ||
		got.Output[1].Type != "message" || got.Output[1].Content[0].Text != strings.Repeat(" tok", 7) {
		t.Errorf("%d %s: want 8 input tokens, 10 output of which 3 reasoning, a reasoning item and a message", r.status, r.body)
	}
	r = post(t, url, "/v1/responses", `{"input":"weather?","tools":[{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}},"required":["tz"]}}],"tool_choice":"required","max_output_tokens":50}`)
	got = readResponse(t, r.body)
	var args map[string]any
	if len(got.Output) != 2 || got.Status != "completed" || got.Output[1].Type != "function_call" || got.Output[1].Name != "get_time" || json.Unmarshal([]byte(got.Output[1].Args), &args) != nil || args["tz"] == nil {
		t.Errorf("%s: want a reasoning item and a get_time call with tz", r.body)
	}
	if r := post(t, url, "/v1/responses", `{"input":[{"role":"user","content":[{"type":"video","text":"x"}]}]}`); r.status != 400 || !strings.Contains(r.body, `{"error":{"message":"input: content part type \"video\" is not supported"`) {
		t.Errorf("unsupported part: %d %s", r.status, r.body)
	}
}

// TestResponsesChain: previous_response_id counts the stored conversation
// as input, and the prefix cache finds it; an unknown id, a response not
// stored (store false) and a server that keeps none get vLLM's 404; the
// store forgets the least recently used beyond its size.
func TestResponsesChain(t *testing.T) {
	s, url := start(t, Config{ResponseStore: 3, PrefixCache: PrefixCacheConfig{Blocks: 1000}})
	first := readResponse(t, post(t, url, "/v1/responses", `{"input":"`+strings.Repeat("w ", 40)+`","max_output_tokens":8,"ignore_eos":true}`).body)
	if first.Usage.InputTokens != 40 || first.Usage.OutputTokens != 8 {
		t.Fatalf("first: %+v", first.Usage)
	}
	second := readResponse(t, post(t, url, "/v1/responses", `{"previous_response_id":"`+first.ID+`","input":"`+strings.Repeat("v ", 10)+`","max_output_tokens":2,"ignore_eos":true}`).body)
	// 40 + 8 tokens of history (3 blocks of 16, all cached) and 10 new.
	if second.Usage.InputTokens != 58 || second.Usage.InputDetails.CachedTokens != 48 {
		t.Errorf("chained: %+v: want 58 input tokens, 48 cached", second.Usage)
	}
	third := readResponse(t, post(t, url, "/v1/responses", `{"previous_response_id":"`+second.ID+`","input":"x","max_output_tokens":2,"ignore_eos":true}`).body)
	if third.Usage.InputTokens != 61 || third.Usage.InputDetails.CachedTokens != 48 {
		t.Errorf("chained twice: %+v: want 61 input tokens, 48 cached", third.Usage)
	}
	unstored := readResponse(t, post(t, url, "/v1/responses", `{"input":"a","store":false}`).body)
	for _, id := range []string{"resp_nope", unstored.ID} {
		r := post(t, url, "/v1/responses", `{"previous_response_id":"`+id+`","input":"a"}`)
		if want := `{"error":{"message":"Response with id '` + id + `' not found.","type":"NotFoundError","param":null,"code":404}}`; r.status != 404 || r.body != want {
			t.Errorf("%d %s\nwant 404 %s", r.status, r.body, want)
		}
	}
	if n := s.StoredResponses(); n != 3 {
		t.Errorf("%d stored, want 3", n)
	}
	post(t, url, "/v1/responses", `{"input":"a"}`) // the first is forgotten
	if r := post(t, url, "/v1/responses", `{"previous_response_id":"`+first.ID+`","input":"a"}`); r.status != 404 {
		t.Errorf("the least recently used response: %d %s, want 404", r.status, r.body)
	}
	_, url = start(t, Config{})
	id := readResponse(t, post(t, url, "/v1/responses", `{"input":"a"}`).body).ID
	if r := post(t, url, "/v1/responses", `{"previous_response_id":"`+id+`","input":"a"}`); r.status != 404 {
		t.Errorf("a server that stores nothing: %d %s, want 404", r.status, r.body)
	}
}

// TestResponsesToolCallStream: a function call's events, its argument
// deltas putting together the done event's arguments.
func TestResponsesToolCallStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := responsesServer(t, Config{})
		evs := serveTimed(s, "/v1/responses", `{"input":"a","stream":true,"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{"q":{"type":"string","minLength":9}},"required":["q"]}}],"tool_choice":"required","max_output_tokens":50}`).events(t)
		var names []string
		var args strings.Builder
		var done struct{ Arguments, Name string }
		for _, e := range evs {
			names = append(names, e.name)
			switch e.name {
			case "response.function_call_arguments.delta":
				var d struct{ Delta string }
				json.Unmarshal([]byte(e.data), &d)
				args.WriteString(d.Delta)
			case "response.function_call_arguments.done":
				json.Unmarshal([]byte(e.data), &done)
			}
		}
		n := (len(`{"q":"xxxxxxxxx"}`) + 3) / 4
		want := []string{"response.created", "response.in_progress", "response.output_item.added"}
		for range n {
			want = append(want, "response.function_call_arguments.delta")
		}
		want = append(want, "response.function_call_arguments.done", "response.output_item.done", "response.completed")
		if !slices.Equal(names, want) || args.String() != `{"q":"xxxxxxxxx"}` || done.Arguments != args.String() || done.Name != "f" ||
			evs[3].at != 30*ms || !strings.Contains(evs[len(evs)-1].data, `"status":"completed"`) {
			t.Errorf("events %v, arguments %q, done %+v\nwant %v", names, args.String(), done, want)
		}
	})
}
