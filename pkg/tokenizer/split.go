package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split patterns of GPT-2 (ByteLevel's own), Llama 3 and Qwen 2 are
// matched by hand: regexp2 spends most of a tokenization in them. Each
// splitter returns what the pattern's leftmost-first matches would be
// (FuzzSplitters checks them against regexp2 on the pattern itself).

// Patterns with a splitter of their own.
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// splitters maps a pattern to its hand-written matcher.
var splitters = map[string]func(string) [][2]int{
	gpt2Pattern: func(t string) [][2]int { return splitMatches(t, matchGPT2) },
	llama3Pattern: func(t string) [][2]int {
		return splitMatches(t, func(t string, i int) int { return matchLlama3(t, i, 3) })
	},
	qwen2Pattern: func(t string) [][2]int {
		return splitMatches(t, func(t string, i int) int { return matchLlama3(t, i, 1) })
	},
}

// splitMatches collects the matches of match (the end of the match at i,
// or i when none) from left to right, as FindNextMatch does.
func splitMatches(t string, match func(t string, i int) int) [][2]int {
	var out [][2]int
	for i := 0; i < len(t); {
		if e := match(t, i); e > i {
			out = append(out, [2]int{i, e})
			i = e
			continue
		}
		_, n := utf8.DecodeRuneInString(t[i:])
		i += n
	}
	return out
}

// at decodes the rune at i (utf8.RuneError, 1 for an invalid byte; 0, 0
// at the end).
func at(t string, i int) (rune, int) {
	if i >= len(t) {
		return 0, 0
	}
	return utf8.DecodeRuneInString(t[i:])
}

func isL(r rune) bool { return unicode.IsLetter(r) }
func isN(r rune) bool { return unicode.IsNumber(r) }
func isS(r rune) bool { return unicode.IsSpace(r) }

// other is [^\s\p{L}\p{N}].
func other(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// contraction matches 's 't 're 've 'm 'll 'd at i (fold: any case).
func contraction(t string, i int, fold bool) int {
	if i >= len(t) || t[i] != '\'' {
		return i
	}
	lower := func(k int) byte {
		if k >= len(t) {
			return 0
		}
		c := t[k]
		if fold && c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		return c
	}
	switch c := lower(i + 1); c {
	case 's', 't', 'm', 'd':
		return i + 2
	case 'r', 'v':
		if lower(i+2) == 'e' {
			return i + 3
		}
	case 'l':
		if lower(i+2) == 'l' {
			return i + 3
		}
	}
	return i
}

// run returns the end of the run of runes from i where is holds (at most
// limit runes; limit < 0: no limit).
func run(t string, i int, is func(rune) bool, limit int) int {
	for n := 0; i < len(t) && n != limit; n++ {
		r, size := at(t, i)
		if !is(r) {
			break
		}
		i += size
	}
	return i
}

// spaces matches \s*[\r\n]+ | \s+(?!\S) | \s+ at i (t[i] a space).
func spaces(t string, i int, newlines bool) int {
	j := run(t, i, isS, -1)
	if j == i {
		return i
	}
	if newlines {
		// \s*[\r\n]+: up to the last \r or \n of the run.
		for k := j - 1; k >= i; k-- {
			if t[k] == '\r' || t[k] == '\n' {
				return k + 1
			}
		}
	}
	if j == len(t) {
		return j
	}
	// \s+(?!\S): all but the last space before a non-space, if any remain.
	_, last := utf8.DecodeLastRuneInString(t[i:j])
	if j-last > i {
		return j - last
	}
	return j // \s+
}

// matchGPT2 is gpt2Pattern at i.
func matchGPT2(t string, i int) int {
	if e := contraction(t, i, false); e > i {
		return e
	}
	r, n := at(t, i)
	k := i
	if r == ' ' {
		k = i + n
	}
	r2, _ := at(t, k)
	switch {
	case isL(r2):
		return run(t, k, isL, -1)
	case isN(r2):
		return run(t, k, isN, -1)
	case k < len(t) && other(r2):
		return run(t, k, other, -1)
	}
	if isS(r) {
		return spaces(t, i, false)
	}
	return i
}

// matchLlama3 is llama3Pattern (digits 3) or qwen2Pattern (digits 1) at i.
func matchLlama3(t string, i int, digits int) int {
	if e := contraction(t, i, true); e > i {
		return e
	}
	r, n := at(t, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(r) {
		return run(t, i, isL, -1)
	}
	if r != '\r' && r != '\n' && !isN(r) {
		if r2, _ := at(t, i+n); isL(r2) {
			return run(t, i+n, isL, -1)
		}
	}
	// \p{N}{1,digits}
	if isN(r) {
		return run(t, i, isN, digits)
	}
	// ?[^\s\p{L}\p{N}]+[\r\n]*
	k := i
	if r == ' ' {
		k = i + n
	}
	if r2, _ := at(t, k); k < len(t) && other(r2) {
		e := run(t, k, other, -1)
		return run(t, e, func(r rune) bool { return r == '\r' || r == '\n' }, -1)
	}
	if isS(r) {
		return spaces(t, i, true)
	}
	return i
}
