package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// byteLevelFile builds a small byte-level BPE tokenizer.json: the 256 byte
// characters, merges that make "hello", " world", " dog", "ing" and two spaces single
// tokens, and pre as its pre_tokenizer.
func byteLevelFile(t testing.TB, pre any, extra map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteRunes[b])] = len(vocab)
	}
	var merges []string
	add := func(word string) { // merges left to right: "h e", "he l", …
		r := []rune(word)
		cur := string(r[0])
		for _, c := range r[1:] {
			merges = append(merges, cur+" "+string(c))
			cur += string(c)
			if _, ok := vocab[cur]; !ok {
				vocab[cur] = len(vocab)
			}
		}
	}
	for _, w := range []string{"hello", "Ġworld", "Ġdog", "ing", "ĠĠ"} {
		add(w)
	}
	model := map[string]any{"type": "BPE", "vocab": vocab, "merges": merges}
	for k, v := range extra {
		model[k] = v
	}
	f := map[string]any{"version": "1.0", "model": model, "pre_tokenizer": pre, "normalizer": nil,
		"added_tokens": []map[string]any{{"id": len(vocab), "content": "<|endoftext|>", "special": true}}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var gpt2Pre = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}

// llama3Pre is Llama 3's pre-tokenizer: a Split with a look-ahead, then
// ByteLevel without its own regex.
var llama3Pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
	map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`}, "behavior": "Isolated", "invert": false},
	map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
}}

func parse(t testing.TB, data []byte) *Tokenizer {
	t.Helper()
	tk, err := Parse("tokenizer.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// pieces returns s cut at its tokens' ends.
func pieces(tk *Tokenizer, s string) []string {
	var out []string
	prev := 0
	for _, e := range tk.Ends(s) {
		out = append(out, s[prev:e])
		prev = e
	}
	return out
}

func TestByteLevelBPE(t *testing.T) {
	for _, pre := range []struct {
		name string
		pre  any
	}{{"gpt2", gpt2Pre}, {"llama3", llama3Pre}} {
		tk := parse(t, byteLevelFile(t, pre.pre, nil))
		cases := []struct {
			in   string
			want []string
		}{
			{"hello world", []string{"hello", " world"}},
			{"hello world dog", []string{"hello", " world", " dog"}},
			{"the", []string{"t", "he"}}, // "h e" ranks before "t h"
			{"hello, world!", []string{"hello", ",", " world", "!"}},
			{"sing", []string{"s", "ing"}},
			{"hello<|endoftext|>hello", []string{"hello", "<|endoftext|>", "hello"}},
			{"é", []string{"\xc3", "\xa9"}}, // two bytes, no merge: two tokens
		}
		for _, c := range cases {
			if got := pieces(tk, c.in); strings.Join(got, "|") != strings.Join(c.want, "|") {
				t.Errorf("%s: %q: tokens %q, want %q", pre.name, c.in, got, c.want)
			}
			if n := tk.Count(c.in); n != len(c.want) {
				t.Errorf("%s: Count(%q) = %d, want %d", pre.name, c.in, n, len(c.want))
			}
		}
	}
}

// The GPT-2 split keeps a space before a word with the word, the run of
// spaces before it apart ("\s+(?!\S)").
func TestByteLevelSpaces(t *testing.T) {
	tk := parse(t, byteLevelFile(t, gpt2Pre, nil))
	got := pieces(tk, "hello   world")
	want := []string{"hello", "  ", " world"} // "ĠĠ" is one token
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tokens %q, want %q", got, want)
	}
}

// The check: a tokenizer counts punctuation the built-in server's
// word count does not.
func TestCountDiffersFromWordsOnPunctuation(t *testing.T) {
	tk := parse(t, byteLevelFile(t, gpt2Pre, nil))
	s := "hello, world! hello... world?"
	words, toks := len(strings.Fields(s)), tk.Count(s)
	// hello , ␣world ! ␣ hello . . . ␣world ?
	if words != 4 || toks != 11 {
		t.Errorf("%q: %d words, %d tokens; want 4 words and 11 tokens", s, words, toks)
	}
}

func TestIgnoreMerges(t *testing.T) {
	// With ignore_merges a piece in the vocab is one token even when no
	// merge builds it.
	data := byteLevelFile(t, gpt2Pre, map[string]any{"ignore_merges": true})
	var f map[string]any
	json.Unmarshal(data, &f)
	vocab := f["model"].(map[string]any)["vocab"].(map[string]any)
	vocab["xyz"] = len(vocab)
	data, _ = json.Marshal(f)
	tk := parse(t, data)
	if n := tk.Count("xyz"); n != 1 {
		t.Errorf("Count(xyz) = %d with ignore_merges, want 1", n)
	}
	if n := parse(t, byteLevelFile(t, gpt2Pre, nil)).Count("xyz"); n != 3 {
		t.Errorf("Count(xyz) = %d without, want 3", n)
	}
}

func wordPieceFile(t testing.TB) []byte {
	vocab := map[string]int{}
	for _, w := range []string{"[UNK]", "[CLS]", "[SEP]", "hello", "world", ",", "!", "un", "##aff", "##able", "the", "##s"} {
		vocab[w] = len(vocab)
	}
	f := map[string]any{
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	b, _ := json.Marshal(f)
	return b
}

func TestWordPiece(t *testing.T) {
	tk := parse(t, wordPieceFile(t))
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"Hello", ",", " World", "!"}}, // cut in the text, not the lowercased one
		{"unaffable", []string{"un", "aff", "able"}},
		{"xyz the", []string{"xyz", " the"}}, // xyz: one [UNK]
		{"Héllo", []string{"Héllo"}},         // one token: accents stripped with lowercase
	}
	for _, c := range cases {
		got := pieces(tk, c.in)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%q: tokens %q, want %q", c.in, got, c.want)
		}
	}
	if n, w := tk.Count("Hello, World!"), len(strings.Fields("Hello, World!")); n != 4 || w != 2 {
		t.Errorf("Hello, World!: %d tokens, %d words; want 4 and 2", n, w)
	}
}

func TestCut(t *testing.T) {
	tk := parse(t, byteLevelFile(t, llama3Pre, nil))
	s := "hello, world! hello world the hello... singing"
	total := tk.Count(s)
	for n := 1; n <= total+2; n++ {
		p, c := tk.Cut(s, n)
		if want := min(n, total); c != want || tk.Count(p) != want {
			t.Errorf("Cut(%d) = %q counted %d (says %d), want %d", n, p, tk.Count(p), c, want)
		}
		if !strings.HasPrefix(s, p) {
			t.Errorf("Cut(%d) = %q is not a prefix", n, p)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), byteLevelFile(t, gpt2Pre, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "tokenizer.json")} {
		tk, err := Load(p)
		if err != nil {
			t.Fatalf("Load(%s): %v", p, err)
		}
		if tk.Kind() != "byte-level BPE" || tk.Count("hello world") != 2 {
			t.Errorf("Load(%s): %s, %d tokens", p, tk.Kind(), tk.Count("hello world"))
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, data, 0o644)
		return p
	}
	wl, _ := json.Marshal(map[string]any{"model": map[string]any{"type": "WordLevel", "vocab": map[string]int{"a": 0}}})
	pre, _ := json.Marshal(map[string]any{"normalizer": map[string]any{"type": "Precompiled", "precompiled_charsmap": "AAAA"}, "model": map[string]any{"type": "Unigram", "unk_id": 0, "vocab": [][]any{{"a", -1.0}}}})
	noUnk, _ := json.Marshal(map[string]any{"model": map[string]any{"type": "Unigram", "vocab": [][]any{{"a", -1.0}}}})
	scheme, _ := json.Marshal(map[string]any{"pre_tokenizer": map[string]any{"type": "Metaspace", "prepend_scheme": "sometimes"}, "model": map[string]any{"type": "BPE", "vocab": map[string]int{"a": 0}, "merges": []string{}}})
	badUnk, _ := json.Marshal(map[string]any{"model": map[string]any{"type": "BPE", "unk_token": "<unk>", "vocab": map[string]int{"a": 0}, "merges": []string{}}})
	long, _ := json.Marshal(map[string]any{"model": map[string]any{"type": "Unigram", "unk_id": 0, "vocab": [][]any{{"<unk>", 0.0}, {strings.Repeat("a", 300), -1.0}}}})
	cases := []struct {
		path        string
		unsupported bool
		want        string
	}{
		{write("wordlevel.json", wl), true, `unsupported: model type "WordLevel"`},
		{write("precompiled.json", pre), true, `unsupported: normalizer "Precompiled"`},
		{write("nounk.json", noUnk), true, "unsupported: a Unigram model without unk_id"},
		{write("scheme.json", scheme), true, `unsupported: Metaspace prepend_scheme "sometimes"`},
		{write("badunk.json", badUnk), false, `model: BPE unk_token "<unk>": not in the vocab`},
		{write("long.json", long), false, "Unigram vocab[1]: a piece longer than 256 bytes"},
		{write("bad.json", []byte("{")), false, "not a tokenizer.json"},
		{write("empty.json", []byte("{}")), false, `no "model"`},
		{filepath.Join(dir, "missing.json"), false, "no such file"},
		{t.TempDir(), false, "a directory without a tokenizer.json"},
	}
	for _, c := range cases {
		_, err := Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
			t.Errorf("Load(%s) = %v, want an error naming the file and %q", c.path, err, c.want)
		}
		var ue *UnsupportedError
		if errors.As(err, &ue) != c.unsupported {
			t.Errorf("Load(%s): %v: an UnsupportedError: %v, want %v", c.path, err, !c.unsupported, c.unsupported)
		}
	}
}

func FuzzCount(f *testing.F) {
	tk := parse(f, byteLevelFile(f, llama3Pre, nil))
	f.Add("hello, world! hello... singing", 3)
	f.Add("  \n\n\t x'll 1234567 é\xff<|endoftext|>", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		ends := tk.Ends(s)
		prev := 0
		for _, e := range ends {
			if e <= prev || e > len(s) {
				t.Fatalf("%q: ends %v not increasing within the text", s, ends)
			}
			prev = e
		}
		if prev != len(s) {
			t.Fatalf("%q: the tokens end at %d of %d bytes", s, prev, len(s))
		}
		if tk.Count(s) != len(ends) {
			t.Fatalf("%q: Count %d, %d ends", s, tk.Count(s), len(ends))
		}
		n = n % 64
		p, c := tk.Cut(s, n)
		if !strings.HasPrefix(s, p) || tk.Count(p) != c || c > max(n, 0) {
			t.Fatalf("Cut(%q, %d) = %q, %d (counted %d)", s, n, p, c, tk.Count(p))
		}
		if n > 0 && len(ends) >= n && c != n {
			t.Logf("Cut(%q, %d): %d tokens (no prefix of exactly %d)", s, n, c, n)
		}
	})
}

// Count is safe for concurrent use (the piece cache).
func TestConcurrentCount(t *testing.T) {
	tk := parse(t, byteLevelFile(t, llama3Pre, nil))
	want := tk.Count("hello, world! singing the dog")
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 200 {
				s := fmt.Sprintf("hello, world! singing the dog %d %d", g, i)
				ok = ok && tk.Count(s) > want
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("a concurrent count was wrong")
		}
	}
}

func BenchmarkCut1024(b *testing.B) {
	tk := parse(b, byteLevelFile(b, llama3Pre, nil))
	text := strings.Repeat("hello, world! The dog is singing (again) 12345... ", 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, n := tk.Cut(text, 1024); n != 1024 {
			b.Fatal(n)
		}
	}
}
