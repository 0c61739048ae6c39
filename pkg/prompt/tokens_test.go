package prompt

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

const tokCorpus = `The quick brown fox jumps over the lazy dog. Don't panic! It's 2026, and the
server's tokenizer counts "punctuation", numbers (12345) and words... differently: hello, world.`

func testTokenizer(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	tk, err := tokenizer.Parse("test-tokenizer.json", testenv.TrainBPE(tokCorpus+" "+strings.Join(vocabulary, " "), 300))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

const tokDataset = `[
 {"conversations": [{"from": "human", "value": "Hello, world! Don't panic: it's 12345..."}, {"from": "gpt", "value": "Sure, I won't."}]},
 {"conversations": [{"from": "human", "value": "The quick brown fox (a fox) jumps over the lazy dog."}, {"from": "gpt", "value": "Ok."}]}
]`

func TestDatasetSizedInTokens(t *testing.T) {
	tk := testTokenizer(t)
	d, err := ReadDatasetSized(strings.NewReader(tokDataset), "sharegpt", 0, Sizing{Tokens: tk})
	if err != nil {
		t.Fatal(err)
	}
	if d.Units != UnitTokenizer {
		t.Errorf("units %q, want %q", d.Units, UnitTokenizer)
	}
	words, _ := ReadDataset(strings.NewReader(tokDataset), "sharegpt", 0)
	for i, p := range d.Prompts {
		l, wl := d.Lengths(0)[i], words.Lengths(0)[i]
		if l[0] != tk.Count(p) || l[1] != tk.Count([]string{"Sure, I won't.", "Ok."}[i]) {
			t.Errorf("prompt %d: lengths %v, want the tokenizer's counts", i, l)
		}
		if l[0] <= wl[0] {
			t.Errorf("prompt %d: %d tokens, %d words: punctuation should make more tokens than words", i, l[0], wl[0])
		}
	}
	if words.Units != UnitWords {
		t.Errorf("units %q without a tokenizer, want %q", words.Units, UnitWords)
	}
	// The server's count: each prompt and reply asked once.
	asked := 0
	sv, err := ReadDatasetSized(strings.NewReader(tokDataset), "sharegpt", 0, Sizing{Count: func(s string) (int, error) { asked++; return len(s), nil }})
	if err != nil || sv.Units != UnitServer || asked != 4 || sv.Inputs[0] != len(sv.Prompts[0]) {
		t.Errorf("server sizing: %v, units %q, %d asked, inputs %v", err, sv.Units, asked, sv.Inputs)
	}
	_, err = ReadDatasetSized(strings.NewReader(tokDataset), "sharegpt", 0, Sizing{Count: func(string) (int, error) { return 0, fmt.Errorf("404 Not Found") }})
	if err == nil || !strings.Contains(err.Error(), "element [0]") || !strings.Contains(err.Error(), "404") {
		t.Errorf("a failed count: %v, want the element and the server's error", err)
	}
}

// Every text prompt a builder with a tokenizer writes is exactly its
// target in that tokenizer's tokens: synthetic words, dataset text cut or
// repeated, shared prefixes, chat content and the text of image prompts.
func TestBuilderExactTokens(t *testing.T) {
	tk := testTokenizer(t)
	d, err := ReadDatasetSized(strings.NewReader(tokDataset), "sharegpt", 0, Sizing{Tokens: tk})
	if err != nil {
		t.Fatal(err)
	}
	builders := map[string]Options{
		"text":           {Format: Text, Tokens: tk, Salt: 7},
		"chat":           {Chat: true, Tokens: tk, Salt: 7},
		"dataset":        {Dataset: d, Tokens: tk, Salt: 7},
		"dataset-prefix": {Dataset: d, Tokens: tk, Salt: 7, Prefix: mustPrefix(t)},
	}
	for name, o := range builders {
		b := New(o)
		for _, n := range []int{1, 2, 7, d.Inputs[0], d.Inputs[1], 40, 333} {
			for idx := range int64(3) {
				a := arrival.Arrival{Index: idx, InputTokens: n}
				s := decode[string](t, b.Append(nil, &a))
				if got := tk.Count(s); got != n {
					t.Errorf("%s: index %d, %d tokens: the prompt %q has %d", name, idx, n, s, got)
				}
			}
		}
	}
	// Mooncake's prefix blocks, cut in tokens too.
	b := New(Options{Format: Text, Tokens: tk})
	a := arrival.Arrival{Index: 3, InputTokens: 700, PrefixBlocks: []uint64{1, 2}}
	if got := tk.Count(decode[string](t, b.Append(nil, &a))); got != 700 {
		t.Errorf("prefix blocks: %d tokens, want 700", got)
	}
}

// A dataset prompt asked at its own length is sent as it is.
func TestDatasetOwnLength(t *testing.T) {
	tk := testTokenizer(t)
	d, _ := ReadDatasetSized(strings.NewReader(tokDataset), "sharegpt", 0, Sizing{Tokens: tk})
	b := New(Options{Dataset: d, Tokens: tk})
	a := arrival.Arrival{Index: 0, InputTokens: d.Inputs[0]}
	if s := decode[string](t, b.Append(nil, &a)); s != d.Prompts[0] {
		t.Errorf("prompt at its own length: %q, want %q", s, d.Prompts[0])
	}
}

func TestConversationsSizedInTokens(t *testing.T) {
	tk := testTokenizer(t)
	file := `[{"conversations": [{"value": "Hi!"}, {"value": "Hello."}, {"value": "What's up, doc?"}, {"value": "Nothing, really..."}]}]`
	c, err := ReadConversationsSized(strings.NewReader(file), "sharegpt", Sizing{Tokens: tk})
	if err != nil {
		t.Fatal(err)
	}
	ex := c.Of(0)
	if len(ex) != 1 || ex[0].UserLen != tk.Count("What's up, doc?") || ex[0].Reply != tk.Count("Nothing, really...") {
		t.Fatalf("exchanges %+v", ex)
	}
	for _, n := range []int{1, 3, ex[0].UserLen, 50} {
		s := decode[string](t, append(append([]byte{'"'}, c.AppendConversationText(nil, 0, 0, n)...), '"'))
		if got := tk.Count(s); got != n {
			t.Errorf("message of %d tokens: %q has %d", n, s, got)
		}
	}
}

func mustPrefix(t testing.TB) *SharedPrefix {
	p, err := NewSharedPrefix(5, 2, "uniform", 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A repeated prompt can be shorter than its copies' lengths added up (a
// copy's first word joins the space before it): long targets are still
// exact. The command's fixtures have such prompts.
func TestDatasetRepeatsExactly(t *testing.T) {
	tk, err := tokenizer.Load("../../cmd/fineserve-gen/testdata/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"sharegpt", "sharegpt_pre"} {
		d, err := LoadDatasetSized("../../cmd/fineserve-gen/testdata/"+kind+".json", kind, 0, Sizing{Tokens: tk})
		if err != nil {
			t.Fatal(err)
		}
		b := New(Options{Dataset: d, Tokens: tk})
		for i := range int64(d.Len()) {
			for _, n := range []int{1024, 5232} {
				a := arrival.Arrival{Index: i, InputTokens: n}
				if got := tk.Count(decode[string](t, b.Append(nil, &a))); got != n {
					t.Errorf("%s prompt %d (%d tokens) to %d: %d tokens", kind, i, d.Inputs[i], n, got)
				}
			}
		}
	}
}
