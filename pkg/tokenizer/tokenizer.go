// Package tokenizer counts and cuts text in the tokens of a Hugging Face
// tokenizer (tokenizer.json): byte-level BPE (GPT-2, Llama 3, Qwen),
// SentencePiece-style BPE with byte fallback (Llama 2, Mistral, Gemma),
// Unigram (SentencePiece's other model) and WordPiece (BERT), with their
// normalizers, pre-tokenizers and added tokens.
//
// No pure-Go library reads those files exactly (github.com/sugarme/tokenizer
// compiles Split patterns with Go's regexp, which has no look-ahead, so
// Llama 3's and Qwen's pattern panics, and it exits the process on some
// bad inputs), so the models are implemented here, with look-ahead
// patterns through github.com/dlclark/regexp2. Anything else (WordLevel,
// the Precompiled normalizer…) is refused by Load with an error naming
// what is unsupported.
package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unicode/utf8"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
)

// Tokenizer counts and cuts text. It is safe for concurrent use.
type Tokenizer struct {
	path  string
	kind  string
	norm  normalizer     // nil: none
	pre   []preTokenizer // applied in order, each to the pieces of the last
	model model
	// raw holds the added tokens found before normalization, normed the
	// normalized ones (their content normalized) found after it.
	raw, normed *addedSet

	mu    sync.Mutex
	cache map[string][]tok // a piece's tokens
}

// tok is a token: its id and where it ends (bytes) in the text it is
// a token of.
type tok struct{ end, id int }

// model turns one pre-tokenized piece into tokens, appended to dst.
type model interface {
	tokenize(piece string, dst []tok) []tok
	id(token string) (int, bool) // a token's id in the vocab
	size() int                   // the vocab's size
}

// vocab is a model's tokens by id, one id each (BPE's and WordPiece's):
// the model's id and size.
type vocab map[string]int

func (v vocab) id(token string) (int, bool) {
	id, ok := v[token]
	return id, ok
}

func (v vocab) size() int { return len(v) }

// checkVocab bounds a model's vocabulary of n entries (unit names them),
// which must have one; model names the model in the error.
func checkVocab(model, unit string, n int) error {
	if n == 0 {
		return fmt.Errorf("%s: an empty vocab", model)
	}
	if n > maxVocab {
		return fmt.Errorf("%s vocab: %d %s, more than %d", model, n, unit, maxVocab)
	}
	return nil
}

// MaxFileBytes bounds a tokenizer.json (the largest common ones, Gemma 2's
// and 3's, are under 40 MB).
const MaxFileBytes = 256 << 20

// cacheLimit bounds the pieces whose tokens are remembered, and
// cachePieceBytes the length of one (a SentencePiece tokenizer without a
// pre-tokenizer has the whole text as its piece).
const (
	cacheLimit      = 1 << 16
	cachePieceBytes = 256
)

// UnsupportedError is a tokenizer.json that uses something this package
// does not implement.
type UnsupportedError struct {
	Path string
	What string // e.g. `model type "Unigram"`
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("tokenizer %s: unsupported: %s (supported: byte-level BPE, SentencePiece BPE, Unigram and WordPiece models)", e.Path, e.What)
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
	AddedTokens  []*addedToken   `json:"added_tokens"`
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
	t := &Tokenizer{path: path, cache: map[string][]tok{}}
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
		m, err := parseBPE(f.Model, byteLevel)
		if err != nil {
			return nil, wrap(path, fmt.Errorf("model: %w", err))
		}
		t.model, t.kind = m, "byte-level BPE"
		if !byteLevel {
			t.kind = "SentencePiece BPE"
			if split := wordSplit(m); split != nil {
				t.pre = append(t.pre, split)
			}
		}
	case "Unigram":
		m, err := parseUnigram(f.Model)
		if err != nil {
			return nil, wrap(path, fmt.Errorf("model: %w", err))
		}
		t.model, t.kind = m, "Unigram"
	case "WordPiece":
		m, err := parseWordPiece(f.Model)
		if err != nil {
			return nil, wrap(path, fmt.Errorf("model: %w", err))
		}
		t.model, t.kind = m, "WordPiece"
	default:
		return nil, unsupported(fmt.Sprintf("model type %q", head.Type))
	}
	if err := checkAdded(f.AddedTokens); err != nil {
		return nil, wrap(path, err)
	}
	var raw, normed []*addedToken
	next := t.model.size() // the id of the next added token not in the vocab
	for _, a := range f.AddedTokens {
		if a == nil || a.Content == "" {
			continue
		}
		// Its id is the vocab's, else the next after the vocab and the
		// added tokens before it (the file's id is not read).
		if id, ok := t.model.id(a.Content); ok {
			a.ID = id
		} else {
			a.ID = next
		}
		if a.ID >= next {
			next = a.ID + 1
		}
		if !a.Normalized {
			raw = append(raw, a)
			continue
		}
		// A normalized token is found in the normalized text, as the
		// normalizer makes its content.
		c := *a
		if t.norm != nil {
			c.Content = t.norm(identity(a.Content)).s
		}
		if c.Content != "" {
			normed = append(normed, &c)
		}
	}
	t.raw, t.normed = newAddedSet(raw), newAddedSet(normed)
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

// Kind names the model: "byte-level BPE", "SentencePiece BPE", "Unigram"
// or "WordPiece".
func (t *Tokenizer) Kind() string { return t.kind }

// Normalize returns s as the tokenizer's normalizer makes it (s itself
// without one).
func (t *Tokenizer) Normalize(s string) string {
	if t.norm == nil {
		return s
	}
	return t.norm(identity(s)).s
}

// Count is the number of tokens of s: the text's own, without the special
// tokens a post-processor adds (a BOS, BERT's [CLS] and [SEP]) or a chat
// template's.
func (t *Tokenizer) Count(s string) int {
	n := 0
	t.each(s, func(tok) { n++ })
	return n
}

// Ends returns the byte offset in s where each token ends. A token that
// ends inside a character the normalizer rewrote (or inside one of
// several bytes, byte fallback's tokens) ends where that character ends.
func (t *Tokenizer) Ends(s string) []int {
	var ends []int
	t.each(s, func(k tok) { ends = append(ends, k.end) })
	return ends
}

// ids returns the token ids of s.
func (t *Tokenizer) ids(s string) []int {
	ids := []int{}
	t.each(s, func(k tok) { ids = append(ids, k.id) })
	return ids
}

// Cut returns the longest prefix of s that is n tokens or fewer, and its
// count: n when s has at least n tokens, unless no prefix that ends where
// a token of s ends, between two characters, has exactly n (then the
// count is the nearest below: a character cut into its bytes' tokens by
// byte fallback is not cut). The prefix is counted again, so the count is
// the prefix's own.
func (t *Tokenizer) Cut(s string, n int) (string, int) {
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
		t.each(head, func(k tok) { ends = append(ends, k.end) })
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
	k := min(n, len(ends))
	for range 16 {
		if k < 1 || k > len(ends) {
			break
		}
		end := ends[k-1]
		if end < len(s) && !utf8.RuneStart(s[end]) {
			k-- // not inside a character
			continue
		}
		p := s[:end]
		c := t.Count(p)
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

// each calls f with every token of s, its end an offset in s: the added
// tokens found in s, then in each piece between them normalized, and the
// model's tokens of the rest after pre-tokenization.
func (t *Tokenizer) each(s string, f func(tok)) {
	var segs [16]segment
	for _, g := range t.raw.split(s, segs[:0]) {
		if g.tok != nil {
			f(tok{g.b, g.tok.ID})
			continue
		}
		t.eachNormalized(s[g.a:g.b], g.a, f)
	}
}

// eachNormalized tokenizes raw, the text at off of the whole, which holds
// no raw added token.
func (t *Tokenizer) eachNormalized(raw string, off int, f func(tok)) {
	nt := identity(raw)
	if t.norm != nil {
		nt = t.norm(nt)
	}
	var segs [16]segment
	for _, g := range t.normed.split(nt.s, segs[:0]) {
		if g.tok != nil {
			f(tok{off + nt.orig(g.b), g.tok.ID})
			continue
		}
		t.eachPlain(nt, g.a, g.b, off == 0 && g.a == 0, func(k tok) {
			f(tok{off + nt.orig(k.end), k.id})
		})
	}
}

// eachPlain tokenizes nt.s[a:b] (no added tokens in it): pre-tokenize,
// then the model on each piece; first is whether it starts the text.
func (t *Tokenizer) eachPlain(nt ntext, a, b int, first bool, f func(tok)) {
	s := nt.s
	pieces := []span{{start: a, end: b, first: first}}
	for _, p := range t.pre {
		var next []span
		for _, sp := range pieces {
			next = p(s, sp, next)
		}
		pieces = next
	}
	var buf []tok
	for _, sp := range pieces {
		text := text(s, sp)
		toks := t.lookup(text)
		if toks == nil {
			buf = t.model.tokenize(text, buf[:0])
			toks = buf
			if len(text) <= cachePieceBytes {
				toks = t.store(text, buf)
			}
		}
		for _, k := range toks {
			f(tok{sp.offset(s, k.end), k.id})
		}
	}
}

func (t *Tokenizer) lookup(piece string) []tok {
	if len(piece) > cachePieceBytes {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cache[piece]
}

func (t *Tokenizer) store(piece string, toks []tok) []tok {
	c := append([]tok(nil), toks...)
	if c == nil {
		c = []tok{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.cache) >= cacheLimit {
		clear(t.cache)
	}
	t.cache[piece] = c
	return c
}
