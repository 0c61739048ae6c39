package tokenizer

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// addedToken is one of tokenizer.json's added_tokens: one token wherever
// its content appears in the text (before normalization unless
// normalized).
type addedToken struct {
	Content    string `json:"content"`
	ID         int    `json:"id"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// Limits on the added tokens of a file.
const (
	maxAddedTokens = 1 << 20
	maxTokenBytes  = 1 << 10
)

// addedSet finds added tokens in a text: the longest at the leftmost
// place one starts, then the next after it (Hugging Face's leftmost-
// longest matching).
type addedSet struct {
	byContent map[string]*addedToken
	// lens lists, for each first byte, the lengths of the tokens that
	// start with it, longest first.
	lens [256][]int
}

func newAddedSet(toks []*addedToken) *addedSet {
	if len(toks) == 0 {
		return nil
	}
	a := &addedSet{byContent: make(map[string]*addedToken, len(toks))}
	for _, t := range toks {
		if _, dup := a.byContent[t.Content]; dup {
			continue // the first wins
		}
		a.byContent[t.Content] = t
		b := t.Content[0]
		if !slices.Contains(a.lens[b], len(t.Content)) {
			a.lens[b] = append(a.lens[b], len(t.Content))
		}
	}
	for b := range a.lens {
		slices.SortFunc(a.lens[b], func(x, y int) int { return y - x })
	}
	return a
}

// segment is s[a:b]: an added token, or text between them (tok nil).
type segment struct {
	a, b int
	tok  *addedToken
}

// split cuts s at its added tokens, as Hugging Face's find_matches does:
// a single_word token only where it is a word of its own, an lstrip or
// rstrip one taking the spaces before or after it. Text between tokens
// is left out when empty.
func (a *addedSet) split(s string, dst []segment) []segment {
	if a == nil {
		if s != "" {
			dst = append(dst, segment{0, len(s), nil})
		}
		return dst
	}
	start := 0
	for i := 0; i < len(s); {
		tok, n := a.at(s, i)
		if tok == nil {
			i++
			continue
		}
		from, to := i, i+n
		i = to // the next match starts after this one, used or not
		if tok.SingleWord && (from > 0 && endsWithWord(s[:from]) || to < len(s) && startsWithWord(s[to:])) {
			continue
		}
		if tok.LStrip {
			from = max(len(trimRightSpace(s[:from])), start)
		}
		if tok.RStrip {
			to = len(s) - len(trimLeftSpace(s[to:]))
		}
		if start < from {
			dst = append(dst, segment{start, from, nil})
		}
		dst = append(dst, segment{from, to, tok})
		start = to
	}
	if start < len(s) {
		dst = append(dst, segment{start, len(s), nil})
	}
	return dst
}

// at returns the longest added token that starts at s[i:], and its length.
func (a *addedSet) at(s string, i int) (*addedToken, int) {
	for _, n := range a.lens[s[i]] {
		if i+n <= len(s) {
			if t, ok := a.byContent[s[i:i+n]]; ok {
				return t, n
			}
		}
	}
	return nil, 0
}

func isWordChar(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordChar(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordChar(r)
}

func trimRightSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func trimLeftSpace(s string) string {
	for s != "" {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}

// checkAdded validates the added tokens of a file.
func checkAdded(toks []*addedToken) error {
	if len(toks) > maxAddedTokens {
		return fmt.Errorf("added_tokens: more than %d", maxAddedTokens)
	}
	for i, t := range toks {
		if len(t.Content) > maxTokenBytes {
			return fmt.Errorf("added_tokens[%d]: content longer than %d bytes", i, maxTokenBytes)
		}
	}
	return nil
}
