package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func loadTestdata(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tk, err := Load(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// tokenNames returns the vocabulary's names of the ids of s.
func tokenNames(t testing.TB, tk *Tokenizer, s string) []string {
	t.Helper()
	names := map[int]string{}
	switch m := tk.model.(type) {
	case *bpe:
		for k, v := range m.vocab {
			names[v] = k
		}
	case *unigram:
		for k, v := range m.ids {
			names[v] = k
		}
	}
	var out []string
	for _, id := range tk.ids(s) {
		out = append(out, names[id])
	}
	return out
}

// A character not in the vocab becomes its UTF-8 bytes' <0xNN> tokens
// (byte_fallback), next to the merged words; without byte fallback the
// unknown characters in a row are one <unk> (fuse_unk).
func TestByteFallbackAndUnknown(t *testing.T) {
	cases := []struct {
		file, in string
		want     []string
	}{
		{"spm_bpe", "the é", []string{"▁the", "▁", "<0xC3>", "<0xA9>"}},
		{"spm_bpe", "中国", []string{"▁", "中", "<0xE5>", "<0x9B>", "<0xBD>"}},
		{"spm_bpe", "hello world", []string{"▁hello", "▁world"}},
		{"spm_bpe", "  the", []string{"▁▁", "▁the"}}, // the prepended ▁ and the first space merge
		{"meta_first", "QQQ the", []string{"▁", "<unk>", "▁the"}},
		{"meta_always", "QQ the", []string{"▁", "<unk>", "<unk>", "▁the"}}, // fuse_unk false
		{"meta_always", "    ", []string{"▁", "▁", "▁", "▁"}},              // split before each ▁
		{"meta_first", "    ", []string{"▁▁", "▁▁"}},                       // one piece: ▁▁ merges
	}
	for _, c := range cases {
		tk := loadTestdata(t, c.file)
		if got := tokenNames(t, tk, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q: %q, want %q", c.file, c.in, got, c.want)
		}
	}
}

// Viterbi picks the cut whose scores sum highest, not the greedy longest
// match: "▁hello" (-4) over "▁" "he" "llo" (-2-4.5-4.6); "abab" (-7)
// over "ab" "ab" (-13) and "a" "b" "a" "b" (-16.2); in "▁ababab",
// "▁a" "b" "abab" (-3.3-4.1-7) over "▁" "ab" "abab" (-2-6.5-7) and
// "▁" "abab" "ab" (the same sum, found later); "12" (-9.5) over "1" "2"
// (-10).
func TestUnigramViterbi(t *testing.T) {
	tk := loadTestdata(t, "unigram")
	cases := []struct {
		in   string
		want []string
	}{
		{"hello", []string{"▁hello"}},
		{"abab", []string{"▁", "abab"}},
		{"ababab", []string{"▁a", "b", "abab"}},
		{"12", []string{"▁", "12"}},
		{"hello QQ", []string{"▁hello", "▁", "<unk>"}}, // two unknown characters fused
	}
	for _, c := range cases {
		if got := tokenNames(t, tk, c.in); !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
	fb := loadTestdata(t, "unigram_fallback")
	if got, want := tokenNames(t, fb, "é"), []string{"<0xC3>", "<0xA9>"}; !slices.Equal(got, want) {
		t.Errorf("byte fallback: é: %q, want %q", got, want)
	}
}

// Cut returns a prefix of the text itself (spaces, not the normalizer's
// "▁"; never inside a character a byte fallback split), of exactly n
// tokens, counted the way the whole text is.
func TestCutSentencePiece(t *testing.T) {
	text := "the hello world 中文 éè 😀 hello  world\n\nthe thing " + strings.Repeat("中国 hello ", 20)
	for _, name := range []string{"spm_bpe", "meta_first", "meta_always", "unigram", "unigram_fallback"} {
		tk := loadTestdata(t, name)
		total := tk.Count(text)
		// The counts of the prefixes that end where a token of the text
		// ends, between characters.
		reachable := map[int]bool{}
		for _, e := range tk.Ends(text) {
			if e == len(text) || utf8.RuneStart(text[e]) {
				reachable[tk.Count(text[:e])] = true
			}
		}
		reachable[total] = true
		for n := 1; n <= total+1; n++ {
			p, c := tk.Cut(text, n)
			if !strings.HasPrefix(text, p) || !utf8.ValidString(p) {
				t.Fatalf("%s: Cut(%d) = %q: not a prefix of whole characters", name, n, p)
			}
			if c != tk.Count(p) || c > n {
				t.Fatalf("%s: Cut(%d) = %q, %d; counted %d", name, n, p, c, tk.Count(p))
			}
			// A byte-fallback character's bytes are several tokens that
			// no prefix of whole characters splits: those n have no
			// exact cut, the others must.
			if want := min(n, total); reachable[want] && c != want {
				t.Errorf("%s: Cut(%d) = %q, %d tokens; a prefix of %d exists", name, n, p, c, want)
			}
		}
	}
}

func FuzzSentencePiece(f *testing.F) {
	var tks []*Tokenizer
	for _, name := range []string{"spm_bpe", "meta_first", "meta_always", "unigram", "unigram_fallback"} {
		tks = append(tks, loadTestdata(f, name))
	}
	f.Add("the hello world 中文 éè 😀", 3)
	f.Add("  \n\n\t x<s>'ll 1234567 é\xff</s>", 5)
	f.Fuzz(func(t *testing.T, s string, n int) {
		for _, tk := range tks {
			ends := tk.Ends(s)
			if !slices.IsSorted(ends) || len(ends) > 0 && (ends[0] < 0 || ends[len(ends)-1] > len(s)) {
				t.Fatalf("%q: ends %v", s, ends)
			}
			if tk.Count(s) != len(ends) || len(tk.ids(s)) != len(ends) {
				t.Fatalf("%q: Count %d, %d ends", s, tk.Count(s), len(ends))
			}
			n := n % 64
			p, c := tk.Cut(s, n)
			if !strings.HasPrefix(s, p) || tk.Count(p) != c || c > max(n, 0) {
				t.Fatalf("Cut(%q, %d) = %q, %d (counted %d)", s, n, p, c, tk.Count(p))
			}
		}
	})
}

func benchmarkCount(b *testing.B, tk *Tokenizer) {
	text := strings.Repeat("Hello, world! The dog is singing (again) 12345... 中文 😀\n", 80)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if tk.Count(text) == 0 {
			b.Fatal("no tokens")
		}
	}
}

func BenchmarkCountSentencePieceBPE(b *testing.B) { benchmarkCount(b, loadTestdata(b, "spm_bpe")) }
func BenchmarkCountUnigram(b *testing.B)          { benchmarkCount(b, loadTestdata(b, "unigram_fallback")) }

func BenchmarkCut1024SentencePieceBPE(b *testing.B) {
	tk := loadTestdata(b, "spm_bpe")
	text := strings.Repeat("hello, world! The dog is singing (again) 12345... ", 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, n := tk.Cut(text, 1024); n != 1024 {
			b.Fatal(fmt.Sprint(n))
		}
	}
}

// The text is cut into words before each "▁" only where no token joins
// the character before it to the "▁": here "a▁" is a token, so "a b"
// stays one piece and merges into "▁", "a▁", "b" (cut before the second
// "▁" it would be four tokens).
func TestWordSplitKeepsJoinedTokens(t *testing.T) {
	f := map[string]any{
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"}}},
		"model": map[string]any{"type": "BPE", "vocab": map[string]int{"▁": 0, "a": 1, "b": 2, "a▁": 3, "c": 4, "▁c": 5},
			"merges": []string{"a ▁", "▁ c"}},
	}
	data, _ := json.Marshal(f)
	tk := parse(t, data)
	for in, want := range map[string][]int{"a b": {0, 3, 2}, "b c": {0, 2, 5}, "a c": {0, 3, 4}} {
		if got := tk.ids(in); !slices.Equal(got, want) {
			t.Errorf("%q: ids %v, want %v", in, got, want)
		}
	}
}
