package prompt

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// TestReadConversationsAlignsWithTheDataset: conversation i is the one
// whose first message is the dataset's prompt i (entries the dataset skips
// are skipped here too); its later exchanges pair each user message with
// its reply's length, and stop at a message without a reply.
func TestReadConversationsAlignsWithTheDataset(t *testing.T) {
	const file = `[
 {"conversations": [{"from": "human", "value": "a b c"}, {"from": "gpt", "value": "x y"},
                    {"from": "human", "value": "d e"}, {"from": "gpt", "value": "p q r s"},
                    {"from": "human", "value": "no reply"}]},
 {"conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "skipped"}]},
 {"conversation": [{"from": "human", "value": "f g"}, {"from": "gpt", "value": "z"}]}
]`
	d, err := ReadDataset(strings.NewReader(file), "sharegpt", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadConversations(strings.NewReader(file), "sharegpt")
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != d.Len() || d.Len() != 2 {
		t.Fatalf("%d conversations for %d prompts", c.Len(), d.Len())
	}
	if got := c.Of(0); len(got) != 1 || got[0] != (Exchange{User: "d e", UserLen: 2, Reply: 4}) {
		t.Errorf("conversation 0: %+v", got)
	}
	if got := c.Of(1); len(got) != 0 {
		t.Errorf("conversation 1: %+v, want no later exchange", got)
	}
	if got := c.Of(2); len(got) != 1 { // wraps like the prompts
		t.Errorf("conversation 2 (of 2): %+v", got)
	}
	if got := string(c.AppendConversationText(nil, 0, 0, 5)); got != "d e d e d" {
		t.Errorf("text %q", got)
	}
	pre := `[{"input_text": "a b", "output_length": 3}, {"input_text": ""}, {"input_text": "c d e f"}]`
	if c, err := ReadConversations(strings.NewReader(pre), "sharegpt_pre"); err != nil || c.Len() != 2 || len(c.Of(0)) != 0 {
		t.Errorf("sharegpt_pre: %+v, %v", c, err)
	}
	if _, err := ReadConversations(strings.NewReader(`[{"conversations": [{"value": "x"}, `), "sharegpt"); err == nil {
		t.Error("a file cut short read without an error")
	}
}

// TestAppendText: a session's message text is the prompt Append writes,
// without its quotes, whatever the format (token ids too), suffix included.
func TestAppendText(t *testing.T) {
	a := arrival.Arrival{Index: 7, InputTokens: 6}
	text := New(Options{Format: Text, Salt: 3, Suffix: "END"})
	ids := New(Options{Format: TokenIDs, Salt: 3, Suffix: "END"})
	want := string(text.Append(nil, &a))
	for _, b := range []*Builder{text, ids} {
		if got := `"` + string(b.AppendText(nil, &a)) + `"`; got != want {
			t.Errorf("AppendText %s, want %s", got, want)
		}
	}
	if n := len(strings.Fields(want)); n != 7 || !strings.HasSuffix(want, ` END"`) {
		t.Errorf("%d words: %s", n, want)
	}
}
