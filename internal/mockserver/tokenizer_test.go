package mockserver

import (
	"encoding/json"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

// With a tokenizer the server counts prompt text in its tokens, in every
// endpoint, /tokenize included.
func TestTokenizerCounts(t *testing.T) {
	tk, err := tokenizer.Parse("t.json", testenv.TrainBPE("hello world, hello there. the end", 20))
	if err != nil {
		t.Fatal(err)
	}
	_, url := start(t, Config{Tokenizer: tk})
	text := "hello, world! the end..."
	want := tk.Count(text)
	if want == 4 {
		t.Fatalf("the test's text has as many tokens as words")
	}
	q, _ := json.Marshal(text)
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":` + string(q) + `,"max_tokens":1}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":` + string(q) + `}],"max_tokens":1}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":` + string(q) + `}]}],"max_tokens":1}`},
	} {
		r := post(t, url, c.path, c.body)
		var out struct {
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		json.Unmarshal([]byte(r.body), &out)
		if out.Usage.PromptTokens != want {
			t.Errorf("%s: prompt_tokens %d, want %d: %s", c.path, out.Usage.PromptTokens, want, r.body)
		}
	}
	r := post(t, url, "/tokenize", `{"prompt":`+string(q)+`}`)
	var n struct{ Count int }
	json.Unmarshal([]byte(r.body), &n)
	if n.Count != want {
		t.Errorf("/tokenize: %s, want count %d", r.body, want)
	}
}
