package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// span is a piece of the text being tokenized: s[start:end], after prefix
// (a space a ByteLevel pre-tokenizer prepends, or Metaspace's "▁", which
// is not in s), with its spaces as meta when that is not 0 (Metaspace's
// replacement).
type span struct {
	start, end int
	prefix     string
	meta       rune
	first      bool // the span starts the text (Metaspace's "first")
}

// offset maps k, an offset in the span's text, to one in s: the prefix
// ends where the span starts; a replaced space's bytes end after it.
func (sp span) offset(s string, k int) int {
	k -= len(sp.prefix)
	if k <= 0 {
		return sp.start
	}
	if sp.meta == 0 {
		return sp.start + k
	}
	w := utf8.RuneLen(sp.meta)
	i := sp.start
	for i < sp.end && k > 0 {
		if s[i] == ' ' {
			k -= w
		} else {
			k--
		}
		i++
	}
	return i
}

// preTokenizer splits the piece sp of s into pieces, appended to dst.
type preTokenizer func(s string, sp span, dst []span) []span

// gpt2Pattern is the ByteLevel pre-tokenizer's split (GPT-2's).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// preJSON is one pre-tokenizer of tokenizer.json.
type preJSON struct {
	Type             string          `json:"type"`
	AddPrefixSpace   *bool           `json:"add_prefix_space"`
	UseRegex         *bool           `json:"use_regex"`
	Pattern          json.RawMessage `json:"pattern"`
	Behavior         string          `json:"behavior"`
	Invert           bool            `json:"invert"`
	IndividualDigits bool            `json:"individual_digits"`
	PreTokenizers    []preJSON       `json:"pretokenizers"`
	Replacement      *string         `json:"replacement"`
	PrependScheme    *string         `json:"prepend_scheme"`
	Split            *bool           `json:"split"`
}

// maxPreTokenizers bounds a Sequence's pre-tokenizers, nested ones
// included.
const maxPreTokenizers = 64

// parsePreTokenizer reads the pre_tokenizer of tokenizer.json, and whether
// it is (or holds) a ByteLevel one.
func parsePreTokenizer(raw json.RawMessage) ([]preTokenizer, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, nil
	}
	var p preJSON
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, false, fmt.Errorf("pre_tokenizer: %w", err)
	}
	byteLevel := false
	count := 0
	pre, err := p.build(&byteLevel, &count)
	return pre, byteLevel, err
}

func (p preJSON) build(byteLevel *bool, count *int) ([]preTokenizer, error) {
	if *count++; *count > maxPreTokenizers {
		return nil, fmt.Errorf("pre_tokenizer: more than %d pre-tokenizers", maxPreTokenizers)
	}
	switch p.Type {
	case "Sequence":
		var all []preTokenizer
		for _, q := range p.PreTokenizers {
			pre, err := q.build(byteLevel, count)
			if err != nil {
				return nil, err
			}
			all = append(all, pre...)
		}
		return all, nil
	case "ByteLevel":
		*byteLevel = true
		prefix := p.AddPrefixSpace != nil && *p.AddPrefixSpace
		if p.UseRegex != nil && !*p.UseRegex {
			if !prefix {
				return nil, nil
			}
			return []preTokenizer{func(s string, sp span, dst []span) []span {
				return append(dst, withSpace(s, sp))
			}}, nil
		}
		split := splitters[gpt2Pattern]
		return []preTokenizer{func(s string, sp span, dst []span) []span {
			if prefix {
				sp = withSpace(s, sp)
			}
			return splitSpan(s, sp, split(text(s, sp)), "Isolated", false, dst)
		}}, nil
	case "Split":
		var pat struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		}
		if err := json.Unmarshal(p.Pattern, &pat); err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: pattern: %w", err)
		}
		if err := checkBehavior(p.Behavior); err != nil {
			return nil, err
		}
		switch {
		case pat.Regex != nil && splitters[*pat.Regex] != nil:
			split := splitters[*pat.Regex]
			return []preTokenizer{func(s string, sp span, dst []span) []span {
				return splitSpan(s, sp, split(text(s, sp)), p.Behavior, p.Invert, dst)
			}}, nil
		case pat.Regex != nil:
			re, err := regexp2.Compile(*pat.Regex, regexp2.None)
			if err != nil {
				return nil, fmt.Errorf("pre_tokenizer Split: pattern %q: %w", *pat.Regex, err)
			}
			return []preTokenizer{func(s string, sp span, dst []span) []span {
				return splitSpan(s, sp, regexMatches(re, text(s, sp)), p.Behavior, p.Invert, dst)
			}}, nil
		case pat.String != nil && *pat.String != "":
			lit := *pat.String
			return []preTokenizer{func(s string, sp span, dst []span) []span {
				return splitSpan(s, sp, literalMatches(lit, text(s, sp)), p.Behavior, p.Invert, dst)
			}}, nil
		}
		return nil, fmt.Errorf("pre_tokenizer Split: want a pattern {\"Regex\": …} or {\"String\": …}")
	case "Whitespace":
		re := regexp2.MustCompile(`\w+|[^\w\s]+`, regexp2.None)
		return []preTokenizer{func(s string, sp span, dst []span) []span {
			return splitSpan(s, sp, regexMatches(re, text(s, sp)), "Removed", true, dst)
		}}, nil
	case "WhitespaceSplit":
		return []preTokenizer{charSplit(unicode.IsSpace, "Removed", false)}, nil
	case "BertPreTokenizer":
		return []preTokenizer{charSplit(unicode.IsSpace, "Removed", false), charSplit(isBertPunct, "Isolated", true)}, nil
	case "Punctuation":
		b := p.Behavior
		if b == "" {
			b = "Isolated"
		}
		if err := checkBehavior(b); err != nil {
			return nil, err
		}
		return []preTokenizer{charSplit(isBertPunct, b, true)}, nil
	case "Metaspace":
		return p.metaspace()
	case "Digits":
		if p.IndividualDigits {
			return []preTokenizer{charSplit(unicode.IsDigit, "Isolated", true)}, nil
		}
		return []preTokenizer{charSplit(unicode.IsDigit, "Contiguous", false)}, nil
	}
	return nil, unsupportedPart{fmt.Sprintf("pre-tokenizer %q", p.Type)}
}

func checkBehavior(b string) error {
	switch b {
	case "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous":
		return nil
	}
	return unsupportedPart{fmt.Sprintf("split behavior %q", b)}
}

// text is a span's text.
func text(s string, sp span) string {
	body := s[sp.start:sp.end]
	if sp.meta != 0 && strings.IndexByte(body, ' ') >= 0 {
		body = strings.ReplaceAll(body, " ", string(sp.meta))
	}
	if sp.prefix == "" {
		return body
	}
	return sp.prefix + body
}

// withSpace prepends a space to a piece that does not start with one.
func withSpace(s string, sp span) span {
	if !strings.HasPrefix(text(s, sp), " ") {
		sp.prefix = " " + sp.prefix
	}
	return sp
}

// regexMatches returns the byte ranges of re's matches in t.
func regexMatches(re *regexp2.Regexp, t string) [][2]int {
	if t == "" {
		return nil
	}
	runes := []rune(t)
	// off[i] is the byte offset of rune i.
	off := make([]int, len(runes)+1)
	b := 0
	for i, r := range runes {
		off[i] = b
		b += utf8.RuneLen(r)
		if r == utf8.RuneError {
			// Invalid bytes decode to U+FFFD (3 bytes) but were 1 in t.
			b = off[i] + runeBytesAt(t, off[i])
		}
	}
	off[len(runes)] = b
	var out [][2]int
	m, err := re.FindRunesMatch(runes)
	for err == nil && m != nil {
		out = append(out, [2]int{off[m.Index], off[m.Index+m.Length]})
		m, err = re.FindNextMatch(m)
	}
	return out
}

func runeBytesAt(t string, i int) int {
	_, n := utf8.DecodeRuneInString(t[i:])
	return max(n, 1)
}

// literalMatches returns the byte ranges of lit in t.
func literalMatches(lit, t string) [][2]int {
	var out [][2]int
	for i := 0; ; {
		k := strings.Index(t[i:], lit)
		if k < 0 {
			return out
		}
		out = append(out, [2]int{i + k, i + k + len(lit)})
		i += k + len(lit)
	}
}

// charSplit splits on characters where is holds; each such character is a
// match of its own unless runs is false (then a run of them is one).
func charSplit(is func(rune) bool, behavior string, each bool) preTokenizer {
	return func(s string, sp span, dst []span) []span {
		t := text(s, sp)
		var ms [][2]int
		for i, r := range t {
			if !is(r) {
				continue
			}
			e := i + utf8.RuneLen(r)
			if r == utf8.RuneError {
				e = i + runeBytesAt(t, i)
			}
			if !each && len(ms) > 0 && ms[len(ms)-1][1] == i {
				ms[len(ms)-1][1] = e
				continue
			}
			ms = append(ms, [2]int{i, e})
		}
		return splitSpan(s, sp, ms, behavior, false, dst)
	}
}

// isBertPunct is BERT's punctuation: ASCII punctuation and Unicode's P
// categories.
func isBertPunct(r rune) bool {
	return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126) || unicode.IsPunct(r)
}

// splitSpan cuts sp at the matches ms (byte ranges in its text) as
// Hugging Face's SplitDelimiterBehavior does, appending the non-empty
// pieces to dst.
func splitSpan(s string, sp span, ms [][2]int, behavior string, invert bool, dst []span) []span {
	t := text(s, sp)
	type seg struct {
		a, b  int
		match bool
	}
	var segs []seg
	prev := 0
	for _, m := range ms {
		if m[0] > prev {
			segs = append(segs, seg{prev, m[0], invert})
		}
		if m[1] > m[0] {
			segs = append(segs, seg{m[0], m[1], !invert})
		}
		prev = m[1]
	}
	if prev < len(t) {
		segs = append(segs, seg{prev, len(t), invert})
	}
	var out []seg
	switch behavior {
	case "Removed":
		for _, g := range segs {
			if !g.match {
				out = append(out, g)
			}
		}
	case "Isolated":
		out = segs
	case "MergedWithPrevious":
		prevMatch := false
		for _, g := range segs {
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].b = g.b
			} else {
				out = append(out, g)
			}
			prevMatch = g.match
		}
	case "MergedWithNext":
		prevMatch := false
		for i := len(segs) - 1; i >= 0; i-- {
			g := segs[i]
			if g.match && !prevMatch && len(out) > 0 {
				out[len(out)-1].a = g.a
			} else {
				out = append(out, g)
			}
			prevMatch = g.match
		}
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	case "Contiguous":
		prevMatch := false
		for i, g := range segs {
			if i > 0 && g.match == prevMatch {
				out[len(out)-1].b = g.b
			} else {
				out = append(out, g)
			}
			prevMatch = g.match
		}
	}
	p := len(sp.prefix)
	for _, g := range out {
		if g.b <= g.a {
			continue
		}
		piece := span{start: sp.offset(s, g.a), end: sp.offset(s, g.b), meta: sp.meta, first: sp.first && g.a == 0}
		if g.a < p {
			piece.prefix = t[g.a:min(g.b, p)]
		}
		dst = append(dst, piece)
	}
	return dst
}

// metaspace is SentencePiece's pre-tokenizer: spaces become the
// replacement ("▁"), one is put before the piece (always, only before the
// text's first, or never: prepend_scheme; add_prefix_space in older
// files), and the piece is split before each replacement (split).
func (p preJSON) metaspace() ([]preTokenizer, error) {
	repl := '\u2581'
	if p.Replacement != nil {
		r, n := utf8.DecodeRuneInString(*p.Replacement)
		if n == 0 || n != len(*p.Replacement) || r == utf8.RuneError || r == ' ' {
			return nil, fmt.Errorf("pre_tokenizer Metaspace: replacement %q: want one character", *p.Replacement)
		}
		repl = r
	}
	scheme := "always"
	switch {
	case p.PrependScheme != nil:
		scheme = *p.PrependScheme
	case p.AddPrefixSpace != nil && !*p.AddPrefixSpace:
		scheme = "never"
	}
	if scheme != "always" && scheme != "first" && scheme != "never" {
		return nil, unsupportedPart{fmt.Sprintf("Metaspace prepend_scheme %q", scheme)}
	}
	split := p.Split == nil || *p.Split
	rs := string(repl)
	return []preTokenizer{func(s string, sp span, dst []span) []span {
		sp.meta = repl
		t := text(s, sp)
		if !strings.HasPrefix(t, rs) && (scheme == "always" || scheme == "first" && sp.first) {
			sp.prefix = rs + sp.prefix
			t = rs + t
		}
		if !split {
			return append(dst, sp)
		}
		return splitSpan(s, sp, literalMatches(rs, t), "MergedWithNext", false, dst)
	}}, nil
}
