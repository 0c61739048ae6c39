package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// TestConversationBodies: a turn's chat messages alternate user and
// assistant, carry each answer as received (escaped, empty included), and
// end with the new message; a completion's prompt is the previous turn's
// prompt and answer, then the new message.
func TestConversationBodies(t *testing.T) {
	a := arrival.Arrival{Index: 3, InputTokens: 5, OutputTokens: 4}
	u2 := message{user: userArrival(&a, 2, session.Turn{Input: 3})}
	u3 := message{user: userArrival(&a, 3, session.Turn{Input: 2})}
	h := history{msgs: []message{
		{user: a}, {reply: true, answer: []byte(` tok "quoted"` + "\n")},
		u2, {reply: true}, // an empty answer is still an assistant message
	}}

	chat := userWriter{p: prompt.New(prompt.Options{Chat: true, Salt: 9})}
	var msgs []struct{ Role, Content string }
	b := appendMessages(&chat, nil, &h, 0, &u3)
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	roles := []string{"user", "assistant", "user", "assistant", "user"}
	if len(msgs) != len(roles) {
		t.Fatalf("%d messages: %s", len(msgs), b)
	}
	for i, m := range msgs {
		if m.Role != roles[i] {
			t.Errorf("message %d role %q, want %q", i, m.Role, roles[i])
		}
	}
	if msgs[1].Content != ` tok "quoted"`+"\n" || msgs[3].Content != "" {
		t.Errorf("answers %q, %q", msgs[1].Content, msgs[3].Content)
	}
	if n := len(strings.Fields(msgs[0].Content)); n != 5 || len(strings.Fields(msgs[2].Content)) != 3 || len(strings.Fields(msgs[4].Content)) != 2 {
		t.Errorf("user messages of %d, %d, %d words: %q", n, len(strings.Fields(msgs[2].Content)), len(strings.Fields(msgs[4].Content)), msgs)
	}

	comp := userWriter{p: prompt.New(prompt.Options{Format: prompt.Text, Salt: 9})}
	str := func(b []byte) string {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return s
	}
	prev := str(appendConversation(&comp, nil, &history{msgs: h.msgs[:2]}, &u2)) // turn 2's prompt
	whole := str(appendConversation(&comp, nil, &h, &u3))
	if !strings.HasPrefix(whole, prev) {
		t.Errorf("the prompt does not start with the earlier turn's:\n%q\n%q", whole, prev)
	}
	if n := len(strings.Fields(whole)); n != 5+2+3+2 {
		t.Errorf("prompt of %d words, want 5 + the answer's 2 + 3 + 2: %q", n, whole)
	}
}

// toolAnswer is a kept answer "ok" of 10 tokens, with reasoning "think"
// (4 tokens) and calls.
func toolAnswer(calls ...client.ToolCall) *client.Result {
	res := &client.Result{}
	res.Reset()
	res.KeepText = true
	res.Text, res.Reasoning = []byte("ok"), []byte("think")
	res.CompletionTokens, res.ReasoningTokens = 10, 4
	res.Calls = calls
	return res
}

// TestHistoryWithToolsAndReasoning: an answer's tool calls go back as an
// assistant message with tool_calls and a tool message per call (chat), or
// as function_call and function_call_output items (Responses), the tool
// results of --tool-result-len words; reasoning goes back only when kept,
// and the history's tokens count what is sent. A chained turn sends the
// last answer's tool results and the new message only.
func TestHistoryWithToolsAndReasoning(t *testing.T) {
	a := arrival.Arrival{Index: 3, InputTokens: 5, OutputTokens: 4}
	res := toolAnswer(client.ToolCall{Index: 0, ID: "call_a", Name: "get_weather", Args: []byte(`{"city":"Paris"}`)})
	res.ResponseID = "resp_1"
	result := arrival.Arrival{Index: 99, InputTokens: 6}
	u2 := message{user: userArrival(&a, 2, session.Turn{Input: 3})}
	p := prompt.New(prompt.Options{Chat: true, Salt: 9})

	for _, tc := range []struct {
		name  string
		turns TurnOptions
		items bool
		grew  int
	}{
		{"chat", TurnOptions{ToolResultLen: 6}, false, 10 - 4 + 6},
		{"chat-keep-reasoning", TurnOptions{ToolResultLen: 6, KeepReasoning: true}, false, 10 - 4 + 6},
		{"responses", TurnOptions{ToolResultLen: 6}, true, 10 - 4 + 6},
		{"responses-chained", TurnOptions{ToolResultLen: 6, Chain: true}, true, 10 - 4 + 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := history{msgs: []message{{user: a}}}
			if grew := h.reply(res, tc.turns, result); grew != tc.grew {
				t.Errorf("history grew by %d tokens, want %d", grew, tc.grew)
			}
			w := userWriter{p: p, items: tc.items, results: true}
			from := 0
			if tc.turns.Chain {
				if h.responseID != "resp_1" {
					t.Fatalf("chained to %q", h.responseID)
				}
				from = h.chained - 1
			}
			b := appendMessages(&w, nil, &h, from, &u2)
			var msgs []map[string]any
			if err := json.Unmarshal(b, &msgs); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			var kinds []string
			for _, m := range msgs {
				k, _ := m["role"].(string)
				if k == "" {
					k, _ = m["type"].(string)
				}
				kinds = append(kinds, k)
			}
			want := map[string]string{
				"chat": "user assistant tool user", "chat-keep-reasoning": "user assistant tool user",
				"responses": "user assistant function_call function_call_output user", "responses-chained": "function_call_output user",
			}[tc.name]
			if strings.Join(kinds, " ") != want {
				t.Fatalf("messages %v, want %s: %s", kinds, want, b)
			}
			last := msgs[len(msgs)-2]
			out, _ := last["content"].(string)
			if tc.items {
				out, _ = last["output"].(string)
				if last["call_id"] != "call_a" {
					t.Errorf("tool output for %v", last["call_id"])
				}
			} else if last["tool_call_id"] != "call_a" {
				t.Errorf("tool message for %v", last["tool_call_id"])
			}
			if n := len(strings.Fields(out)); n != 6 {
				t.Errorf("tool result of %d words, want 6: %q", n, out)
			}
			if !tc.items {
				asst := msgs[1]
				calls, _ := asst["tool_calls"].([]any)
				if len(calls) != 1 || asst["content"] != "ok" || (asst["reasoning"] != nil) != tc.turns.KeepReasoning {
					t.Errorf("assistant message %v", asst)
				}
			}
		})
	}
}

// TestHistoryInContentBlocks: for Anthropic's Messages (ContentBlocks),
// an answer goes back as an assistant message of a text block and a
// tool_use block per call (its input the arguments' object; arguments that
// are not one go as {}), the tool results as tool_result blocks of one
// user message of --tool-result-len words, the reasoning never (even when
// kept: a thinking block needs its signature); an empty answer is an
// empty assistant message.
func TestHistoryInContentBlocks(t *testing.T) {
	a := arrival.Arrival{Index: 3, InputTokens: 5, OutputTokens: 4}
	res := toolAnswer(client.ToolCall{Index: 0, ID: "toolu_a", Name: "get_weather", Args: []byte(`{"city":"Paris"}`)},
		client.ToolCall{Index: 1, ID: "toolu_b", Name: "f", Args: []byte(`{"cut`)})
	h := history{msgs: []message{{user: a}}}
	h.reply(res, TurnOptions{ToolResultLen: 6, KeepReasoning: true}, arrival.Arrival{Index: 99, InputTokens: 6})
	h.msgs = append(h.msgs, message{user: userArrival(&a, 2, session.Turn{Input: 3})}, message{reply: true})
	u3 := message{user: userArrival(&a, 3, session.Turn{Input: 2})}
	w := userWriter{p: prompt.New(prompt.Options{Chat: true, Salt: 9}), blocks: true, results: true}
	b := appendMessages(&w, nil, &h, 0, &u3)
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &msgs); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant user user assistant user" {
		t.Fatalf("roles %s: %s", got, b)
	}
	var answer []map[string]any
	if err := json.Unmarshal(msgs[1].Content, &answer); err != nil || len(answer) != 3 {
		t.Fatalf("answer %s (%v)", msgs[1].Content, err)
	}
	if answer[0]["type"] != "text" || answer[0]["text"] != "ok" || answer[1]["type"] != "tool_use" || answer[1]["id"] != "toolu_a" ||
		answer[1]["name"] != "get_weather" || fmt.Sprint(answer[1]["input"]) != "map[city:Paris]" || fmt.Sprint(answer[2]["input"]) != "map[]" {
		t.Errorf("answer blocks %v", answer)
	}
	var results []struct {
		Type, ToolUseID, Content string
	}
	if err := json.Unmarshal(msgs[2].Content, &results); err != nil || len(results) != 2 {
		t.Fatalf("results %s (%v)", msgs[2].Content, err)
	}
	for i, r := range results {
		if r.Type != "tool_result" || len(strings.Fields(r.Content)) != 6 {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if strings.Contains(string(b), "think") || string(msgs[4].Content) != `""` {
		t.Errorf("reasoning sent, or the empty answer %s: %s", msgs[4].Content, b)
	}
}
