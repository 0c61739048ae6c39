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
	`{"choices":[{"delta":{"reasoning":"end","content":"Paris"}}]}`,
	`{"choices":[{"delta":{"content":"a","tool_calls":null}}]}`,
	`{"choices":[{"delta":{"content":null,"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}`,
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
	kind, ok := skimChunk([]byte(data), chat)
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
	wantKind, usage, err := c.parseChunk(new(decoder), []byte(data), &Result{})
	if err != nil || usage || wantKind != kind {
		t.Fatalf("chat %v, %q: skimmed %v; the full decoder: %v, usage %v, error %v", chat, data, kind, wantKind, usage, err)
	}
}

// TestSkimChunk: the skimmer takes the common chunks (a token's text, a
// chat delta, a reasoning delta, a chunk without text) and leaves usage,
// errors and anything odd to the full decoder.
func TestSkimChunk(t *testing.T) {
	const none, out, think = tokNone, tokOutput, tokReasoning
	for _, tc := range []struct {
		data string
		chat bool
		kind tokenKind
		ok   bool
	}{
		{benchChunk, false, out, true},
		{skimSeeds[1], false, none, true},
		{skimSeeds[3], true, out, true},
		{skimSeeds[4], true, think, true},
		{skimSeeds[5], true, none, true},
		{skimSeeds[6], true, out, true},   // the first "content" counts
		{skimSeeds[7], true, think, true}, // vLLM ≥ 0.11.1's "reasoning"
		{skimSeeds[8], true, think, true}, // both names (v0.11.1–v0.15)
		{skimSeeds[9], true, none, true},
		{skimSeeds[10], true, out, true},   // content and reasoning at </think>: output
		{skimSeeds[11], true, out, true},   // tool_calls null
		{skimSeeds[12], true, none, false}, // tool calls: the full decoder
		{`{"choices":[{"text":"a"}],"choices":[]}`, false, out, true},
		{skimSeeds[2], false, none, false}, // usage: the full decoder copies it
		{`{"error":{"message":"boom","code":500}}`, false, none, false},
		{`{"choices":{"0":{"text":"a"}}}`, false, none, false}, // not an array
		{`{"ch\u006fices":[{"text":"a"}]}`, false, none, false},
		{`{"a":01}`, false, none, false},
		{`{"choices":[{"text":"a"}]}x`, false, none, false},
	} {
		kind, ok := skimChunk([]byte(tc.data), tc.chat)
		if kind != tc.kind || ok != tc.ok {
			t.Errorf("chat %v, %s: kind %v ok %v, want %v %v", tc.chat, tc.data, kind, ok, tc.kind, tc.ok)
		}
	}
	for _, s := range skimSeeds {
		checkSkim(t, s, false)
		checkSkim(t, s, true)
	}
}
