package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// metaChar is the character SentencePiece's spaces become.
const metaChar = '\u2581'

// wordSplit returns a pre-tokenizer that cuts a SentencePiece BPE's text
// before each "▁" no token can join to the character before it, or nil
// when the model gives no such guarantee. A text without a pre-tokenizer
// (Llama 2, Mistral, Gemma) is otherwise one piece: BPE then merges the
// whole text at once and no piece is cached. The tokens are the same:
// BPE merges a pair only into a token of the vocabulary, so where no
// token holds the character before a "▁" followed by it, no merge spans
// that place, and the pieces on either side are merged independently.
func wordSplit(m *bpe) preTokenizer {
	if m.byteLevel || m.ignoreMerges {
		return nil
	}
	meta := string(metaChar)
	if _, ok := m.vocab[meta]; !ok {
		return nil
	}
	// before holds the characters some token has right before a "▁".
	before := map[rune]bool{}
	for t := range m.vocab {
		for i := strings.Index(t, meta); i >= 0; {
			if i > 0 {
				r, _ := utf8.DecodeLastRuneInString(t[:i])
				before[r] = true
			}
			k := strings.Index(t[i+len(meta):], meta)
			if k < 0 {
				break
			}
			i += len(meta) + k
		}
	}
	return func(s string, sp span, dst []span) []span {
		t := text(s, sp)
		var ms [][2]int
		for i := strings.Index(t, meta); i >= 0; {
			if i > 0 {
				r, n := utf8.DecodeLastRuneInString(t[:i])
				// The character must be a token of its own: a byte
				// fallback's or an unknown token's name could be joined.
				if _, known := m.vocab[t[i-n:i]]; known && !before[r] {
					ms = append(ms, [2]int{i, i + len(meta)})
				}
			}
			k := strings.Index(t[i+len(meta):], meta)
			if k < 0 {
				break
			}
			i += len(meta) + k
		}
		if len(ms) == 0 {
			return append(dst, sp)
		}
		return splitSpan(s, sp, ms, "MergedWithNext", false, dst)
	}
}
