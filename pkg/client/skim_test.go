package client

import (
	"testing"
)

// skimSeeds are chunks of every shape the skimmer reads or leaves to the
// full decoder.
var skimSeeds = []string{
	benchChunk,
	`{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}],"usage":null}`,
	`{"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`,
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`,
	`{"choices":[{"delta":{"content":"","reasoning_content":"think"}}]}`,
	`{"choices":[{"delta":{"content":null,"reasoning_content":""}}]}`,
	`{"choices":[{"delta":{"content":"a","content":""}}]}`,
	`{"choices":[{"delta":{"content":null,"reasoning":"think"}}]}`,
	`{"choices":[{"delta":{"reasoning":"think","reasoning_content":"think"}}]}`,
	`{"choices":[{"delta":{"content":"","reasoning":""}}]}`,
	`{"choices":[{"text":"\u00e9\"\\\/\b\f\n\r\t"}],"x":[1,-2.5e+3,0.1,true,false,null,{"a":[]}]}`,
	`{"choices":[{"text":1}]}`, `{"choices":[1,{"text":"a"}]}`, `{"choices":{"0":{"text":"a"}}}`,
	`{"choices":[{"text":"a"}],"choices":[]}`, `{"error":{"message":"boom","code":500}}`,
	`{"usage":null,"usage":{"completion_tokens":1}}`, `{"ch\u006fices":[{"text":"a"}]}`,
	` {"choices" : [ { "text" : "a" } ] } `, `{}`, `[]`, `"x"`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`,
	`{"a":"` + "\x01" + `"}`, `{"a":1,}`, `{"choices":[{"text":"a"}]}x`, `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
}

// FuzzSkimChunk checks the skimmer against the full decoder, its oracle:
// whatever chunk it reads, the full decoder accepts, without usage or
// error, and finds the same text.
func FuzzSkimChunk(f *testing.F) {
	for _, s := range skimSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, data string, chat bool) {
		checkSkim(t, data, chat)
	})
}

func checkSkim(t *testing.T, data string, chat bool) {
	t.Helper()
	text, ok := skimChunk([]byte(data), chat)
	if !ok {
		return
	}
	backend := BackendVLLM
	if chat {
		backend = BackendChat
	}
	c, err := New(Config{BaseURL: "http://x", Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	wantText, usage, err := c.parseChunk(new(decoder), []byte(data), &Result{})
	if err != nil || usage || wantText != text {
		t.Fatalf("chat %v, %q: skimmed text %v; the full decoder: text %v, usage %v, error %v", chat, data, text, wantText, usage, err)
	}
}

// TestSkimChunk: the skimmer takes the common chunks (a token's text, a
// chat delta, a reasoning delta, a chunk without text) and leaves usage,
// errors and anything odd to the full decoder.
func TestSkimChunk(t *testing.T) {
	for _, tc := range []struct {
		data     string
		chat     bool
		text, ok bool
	}{
		{benchChunk, false, true, true},
		{skimSeeds[1], false, false, true},
		{skimSeeds[3], true, true, true},
		{skimSeeds[4], true, true, true},
		{skimSeeds[5], true, false, true},
		{skimSeeds[6], true, true, true}, // the first "content" counts
		{skimSeeds[7], true, true, true}, // vLLM ≥ 0.11.1's "reasoning"
		{skimSeeds[8], true, true, true}, // both names (v0.11.1–v0.15)
		{skimSeeds[9], true, false, true},
		{`{"choices":[{"text":"a"}],"choices":[]}`, false, true, true},
		{skimSeeds[2], false, false, false}, // usage: the full decoder copies it
		{`{"error":{"message":"boom","code":500}}`, false, false, false},
		{`{"choices":{"0":{"text":"a"}}}`, false, false, false}, // not an array
		{`{"ch\u006fices":[{"text":"a"}]}`, false, false, false},
		{`{"a":01}`, false, false, false},
		{`{"choices":[{"text":"a"}]}x`, false, false, false},
	} {
		text, ok := skimChunk([]byte(tc.data), tc.chat)
		if text != tc.text || ok != tc.ok {
			t.Errorf("chat %v, %s: text %v ok %v, want %v %v", tc.chat, tc.data, text, ok, tc.text, tc.ok)
		}
	}
	for _, s := range skimSeeds {
		checkSkim(t, s, false)
		checkSkim(t, s, true)
	}
}
