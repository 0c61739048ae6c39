package client

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
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
	`{"choices":[{"delta":{"content":[{"type":"text","text":"Hi"}]}}]}`,
	`{"choices":[{"delta":{"content":{"text":"Hi"}}}]}`,
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
	backend := api.VLLM
	if chat {
		backend = api.Chat
	}
	c, err := New(Config{BaseURL: "http://x", API: backend})
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
		// Content parts, or content of another form: the full decoder.
		{`{"choices":[{"delta":{"content":[{"type":"text","text":"Hi"}]}}]}`, true, none, false},
		{`{"choices":[{"delta":{"content":{"text":"Hi"}}}]}`, true, none, false},
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

// FuzzChunkShape checks reading a chunk through the shape of the chunk
// before against skimChunk, its oracle: the same kind, and the same
// verdict on whether the skimmer reads it at all.
func FuzzChunkShape(f *testing.F) {
	for i, s := range skimSeeds {
		next := skimSeeds[(i+1)%len(skimSeeds)]
		for _, b := range []string{s, next, strings.Replace(s, `"Hi"`, `"Ho"`, 1), strings.Replace(s, `"think"`, `"more"`, 1),
			strings.Replace(s, `" the"`, `"\""`, 1), strings.Replace(s, `" the"`, `""`, 1), strings.Replace(s, `" the"`, `" a\u00e9"`, 1)} {
			f.Add(s, b, false)
			f.Add(s, b, true)
		}
	}
	f.Fuzz(func(t *testing.T, a, b string, chat bool) {
		var sh chunkShape
		sh.skim([]byte(a), chat)
		kind, ok := sh.skim([]byte(b), chat)
		wantKind, wantOK := skimChunk([]byte(b), chat)
		if kind != wantKind || ok != wantOK {
			t.Fatalf("chat %v, after %q, %q: through the shape %v %v; skimmed whole %v %v", chat, a, b, kind, ok, wantKind, wantOK)
		}
	})
}

// TestChunkShape: a chunk that is the one before with another token's
// text is read through its shape; one whose text is empty, holds a quote
// or an escape, or that differs anywhere else is skimmed whole.
func TestChunkShape(t *testing.T) {
	const chat = `{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1795687974,"model":"m","choices":[{"index":0,"delta":{"content":"TEXT"},"logprobs":null,"finish_reason":null}]}`
	const think = `{"choices":[{"delta":{"content":null,"reasoning":"TEXT"}}]}`
	with := func(shape, text string) []byte { return []byte(strings.Replace(shape, "TEXT", text, 1)) }
	for _, tc := range []struct {
		name, shape string
		chat        bool
		next        []byte
		match       bool
		kind        tokenKind
	}{
		{"completion token", benchChunk, false, []byte(strings.Replace(benchChunk, `" the"`, `" quick brown"`, 1)), true, tokOutput},
		{"chat token", chat, true, with(chat, "é, and"), true, tokOutput},
		{"reasoning token", think, true, with(think, "hmm"), true, tokReasoning},
		{"empty text", chat, true, with(chat, ""), false, tokNone},
		{"a quote", chat, true, with(chat, `\"`), false, tokOutput},
		{"a control character", chat, true, with(chat, "a\x01"), false, tokNone},
		{"the last chunk", benchChunk, false, []byte(strings.Replace(benchChunk, `"finish_reason":null`, `"finish_reason":"length"`, 1)), false, tokOutput},
		{"another key", chat, true, []byte(strings.Replace(string(with(chat, "x")), `"content"`, `"contenu"`, 1)), false, tokNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sh chunkShape
			first := with(tc.shape, "first")
			if tc.shape == benchChunk {
				first = []byte(benchChunk)
			}
			if _, ok := sh.skim(first, tc.chat); !ok || sh.kind == tokNone {
				t.Fatalf("the first chunk set no shape: %q", first)
			}
			if got := sh.match(tc.next); got != tc.match {
				t.Fatalf("match %q = %v, want %v", tc.next, got, tc.match)
			}
			kind, ok := sh.skim(tc.next, tc.chat)
			if want, wantOK := skimChunk(tc.next, tc.chat); kind != want || ok != wantOK || kind != tc.kind {
				t.Fatalf("kind %v %v, skimmed whole %v %v, want %v", kind, ok, want, wantOK, tc.kind)
			}
		})
	}
}
