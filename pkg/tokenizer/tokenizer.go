// Package tokenizer counts and cuts text in the tokens of a Hugging Face
// tokenizer (tokenizer.json): byte-level BPE (GPT-2, Llama 3, Qwen) and
// WordPiece (BERT) models with their normalizers and pre-tokenizers.
//
// No pure-Go library reads those files exactly (github.com/sugarme/tokenizer
// compiles Split patterns with Go's regexp, which has no look-ahead, so
// Llama 3's and Qwen's pattern panics, and it exits the process on some
// bad inputs), so the two models are implemented here, with look-ahead
// patterns through github.com/dlclark/regexp2. Anything else (Unigram,
// WordLevel, Metaspace, a BPE that is not byte-level…) is refused by Load
// with an error naming what is unsupported.
package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Tokenizer counts and cuts text. It is safe for concurrent use.
type Tokenizer struct {
	path  string
	kind  string
	norm  normalizer     // nil: none
	pre   []preTokenizer // applied in order, each to the pieces of the last
	model model
	added []string // added tokens' contents, longest first: one token each
	// byFirst lists the added tokens by their first byte, longest first.
	byFirst [256][]string

	mu    sync.Mutex
	cache map[string][]int // a piece's token end offsets (bytes)
}

// model turns one pre-tokenized piece into tokens, returning each token's
// end offset in bytes within the piece.
type model interface {
	tokenize(piece string, dst []int) []int
}

// MaxFileBytes bounds a tokenizer.json (the largest common ones, Llama 3's
// and Qwen's, are under 12 MB).
const MaxFileBytes = 256 << 20

// cacheLimit bounds the pieces whose tokens are remembered.
const cacheLimit = 1 << 16

// UnsupportedError is a tokenizer.json that uses something this package
// does not implement.
type UnsupportedError struct {
	Path string
	What string // e.g. `model type "Unigram"`
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer %s: unsupported: %s (supported: byte-level BPE and WordPiece models)", e.Path, e.What)
}

// Load reads a tokenizer.json, or the tokenizer.json inside a directory.
func Load(path string) (*Tokenizer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	if fi.IsDir() {
		p := filepath.Join(path, "tokenizer.json")
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("tokenizer %s: a directory without a tokenizer.json (a Hugging Face tokenizer file is needed): %w", path, err)
		}
		path = p
	}
	data, err := bounded.ReadFile(path, MaxFileBytes)
	var tl *bounded.TooLarge
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return Parse(path, data)
}

// fileJSON is the part of tokenizer.json this package reads.
type fileJSON struct {
	AddedTokens []struct {
		Content string `json:"content"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        json.RawMessage `json:"model"`
}

// Parse reads the contents of a tokenizer.json; path names it in errors.
func Parse(path string, data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer %s: not a tokenizer.json: %w", path, err)
	}
	if len(f.Model) == 0 || string(f.Model) == "null" {
		return nil, fmt.Errorf("tokenizer %s: not a tokenizer.json: no \"model\"", path)
	}
	t := &Tokenizer{path: path, cache: map[string][]int{}}
	unsupported := func(what string) error { return &UnsupportedError{Path: path, What: what} }
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, wrap(path, err)
	}
	var byteLevel bool
	if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, wrap(path, err)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(f.Model, &head); err != nil {
		return nil, fmt.Errorf("tokenizer %s: model: %w", path, err)
	}
	switch head.Type {
	case "BPE", "":
		if !byteLevel {
			return nil, unsupported("a BPE model without a ByteLevel pre-tokenizer (SentencePiece-style BPE, e.g. Llama 2 or Mistral)")
		}
		m, err := parseBPE(f.Model)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: model: %w", path, err)
		}
		t.model, t.kind = m, "byte-level BPE"
	case "WordPiece":
		m, err := parseWordPiece(f.Model)
		if err != nil {
			return nil, fmt.Errorf("tokenizer %s: model: %w", path, err)
		}
		t.model, t.kind = m, "WordPiece"
	default:
		return nil, unsupported(fmt.Sprintf("model type %q", head.Type))
	}
	for _, a := range f.AddedTokens {
		if a.Content != "" {
			t.added = append(t.added, a.Content)
		}
	}
	// Longest first, so that a token containing another wins.
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i]) > len(t.added[j]) })
	for _, a := range t.added {
		t.byFirst[a[0]] = append(t.byFirst[a[0]], a)
	}
	return t, nil
}

// unsupportedPart is a part of the file this package does not implement;
// wrap turns it into an *UnsupportedError naming the file.
type unsupportedPart struct{ what string }

func (e unsupportedPart) Error() string { return "unsupported: " + e.what }

func wrap(path string, err error) error {
	var u unsupportedPart
	if errors.As(err, &u) {
		return &UnsupportedError{Path: path, What: u.what}
	}
	return fmt.Errorf("tokenizer %s: %w", path, err)
}

// Path is the file the tokenizer was read from.
func (t *Tokenizer) Path() string { return t.path }

// Kind names the model: "byte-level BPE" or "WordPiece".
func (t *Tokenizer) Kind() string { return t.kind }

// Normalize returns s as the tokenizer's normalizer makes it (s itself
// without one). Cut returns prefixes of the normalized text.
func (t *Tokenizer) Normalize(s string) string {
	if t.norm == nil {
		return s
	}
	return t.norm(s)
}

// Count is the number of tokens of s: the text's own, without the special
// tokens a post-processor adds (a BOS, BERT's [CLS] and [SEP]) or a chat
// template's.
func (t *Tokenizer) Count(s string) int {
	n := 0
	t.each(t.Normalize(s), func(int) { n++ })
	return n
}

// Ends returns the byte offset in the normalized s where each token ends.
func (t *Tokenizer) Ends(s string) []int {
	var ends []int
	t.each(t.Normalize(s), func(end int) { ends = append(ends, end) })
	return ends
}

// Cut returns the longest prefix of the normalized s that is n tokens or
// fewer, and its count: n when s has at least n tokens, unless no prefix
// of s has exactly n (then the count is the nearest below). A prefix ends
// where a token of s ends, and is counted again, so the count is the
// prefix's own.
func (t *Tokenizer) Cut(s string, n int) (string, int) {
	s = t.Normalize(s)
	if n <= 0 {
		return "", 0
	}
	// Only the text's start is tokenized: a piece is split the same way
	// whatever follows its next character, so the tokens of a prefix are
	// the text's but for the last few.
	var ends []int
	for size := 8*n + 64; ; size *= 2 {
		ends = ends[:0]
		head := s[:min(size, len(s))]
		t.each(head, func(end int) { ends = append(ends, end) })
		if len(head) == len(s) {
			break
		}
		if len(ends) > n+cutMargin {
			ends = ends[:n+cutMargin]
			break
		}
	}
	if len(ends) <= n {
		return s, len(ends)
	}
	// Almost always the first candidate has exactly n tokens; a merge or
	// a split that depends on what follows can make it one more or less.
	best, bestN := "", 0
	k := n
	for range 16 {
		if k < 1 || k > len(ends) {
			break
		}
		p := s[:ends[k-1]]
		c := 0
		t.each(p, func(int) { c++ })
		if c == n {
			return p, n
		}
		if c < n && c > bestN {
			best, bestN = p, c
		}
		if c > n {
			k--
		} else {
			k++
		}
	}
	return best, bestN
}

// cutMargin is how many tokens past the cut a prefix's tokenization must
// hold to be the whole text's up to the cut.
const cutMargin = 8

// each calls f with the end offset of every token of the normalized s.
func (t *Tokenizer) each(s string, f func(end int)) {
	off := 0
	for {
		// An added token is one token wherever it appears.
		at, tok := len(s), ""
		if len(t.added) > 0 {
			at, tok = t.findAdded(s)
		}
		t.eachPlain(s[:at], f, off)
		if tok == "" {
			return
		}
		f(off + at + len(tok))
		off += at + len(tok)
		s = s[at+len(tok):]
	}
}

// findAdded returns where the first added token in s starts and which it
// is (len(s) and "" if none): the longest at the first place one starts.
func (t *Tokenizer) findAdded(s string) (int, string) {
	for i := 0; i < len(s); i++ {
		for _, a := range t.byFirst[s[i]] { // longest first
			if strings.HasPrefix(s[i:], a) {
				return i, a
			}
		}
	}
	return len(s), ""
}

// eachPlain tokenizes s (no added tokens in it): pre-tokenize, then the
// model on each piece.
func (t *Tokenizer) eachPlain(s string, f func(end int), off int) {
	if s == "" {
		return
	}
	pieces := []span{{0, len(s), ""}}
	for _, p := range t.pre {
		var next []span
		for _, sp := range pieces {
			next = p(s, sp, next)
		}
		pieces = next
	}
	var buf []int
	for _, sp := range pieces {
		text := sp.prefix + s[sp.start:sp.end]
		ends := t.lookup(text)
		if ends == nil {
			buf = t.model.tokenize(text, buf[:0])
			ends = t.store(text, buf)
		}
		for _, e := range ends {
			// A prepended space is not in s: its bytes end at the piece's
			// start.
			e -= len(sp.prefix)
			f(off + sp.start + max(e, 0))
		}
	}
}

func (t *Tokenizer) lookup(piece string) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cache[piece]
}

func (t *Tokenizer) store(piece string, ends []int) []int {
	c := append([]int(nil), ends...)
	if c == nil {
		c = []int{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cache) >= cacheLimit {
		clear(t.cache)
	}
	t.cache[piece] = c
	return c
}
