package runner

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
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
	b := appendMessages(&chat, nil, &h, &u3)
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
