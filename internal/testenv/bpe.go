package testenv

import (
	"encoding/json"
	"sort"

	"github.com/dlclark/regexp2"
)

// llama3Split is Llama 3's Split pattern.
const llama3Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// byteChars is GPT-2's bytes_to_unicode.
func byteChars() [256]string {
	var m [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			m[b] = string(rune(b))
		} else {
			m[b] = string(rune(256 + n))
			n++
		}
	}
	return m
}

// TrainBPE trains a byte-level BPE tokenizer on corpus with at most merges
// merges (the most frequent pair first, ties to the smallest pair) and
// returns its tokenizer.json, with Llama 3's pre-tokenizer (a Split with a
// look-ahead, then ByteLevel) and <|endoftext|> as an added token. Tests
// and the docs' examples use it instead of a downloaded tokenizer.
func TrainBPE(corpus string, merges int) []byte {
	bc := byteChars()
	re := regexp2.MustCompile(llama3Split, regexp2.None)
	freq := map[string]int{}
	for m, _ := re.FindStringMatch(corpus); m != nil; m, _ = re.FindNextMatch(m) {
		freq[m.String()]++
	}
	type word struct {
		syms []string
		n    int
	}
	pieces := make([]string, 0, len(freq))
	for p := range freq {
		pieces = append(pieces, p)
	}
	sort.Strings(pieces)
	words := make([]word, 0, len(pieces))
	for _, p := range pieces {
		w := word{n: freq[p]}
		for i := 0; i < len(p); i++ {
			w.syms = append(w.syms, bc[p[i]])
		}
		words = append(words, w)
	}
	vocab := map[string]int{}
	for b := range 256 {
		vocab[bc[b]] = b
	}
	var rules []string
	for range merges {
		counts := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				counts[[2]string{w.syms[i], w.syms[i+1]}] += w.n
			}
		}
		var best [2]string
		bestN := 0
		for p, n := range counts {
			if n > bestN || n == bestN && (p[0] < best[0] || p[0] == best[0] && p[1] < best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		joined := best[0] + best[1]
		if _, ok := vocab[joined]; !ok {
			vocab[joined] = len(vocab)
		}
		rules = append(rules, best[0]+" "+best[1])
		for k := range words {
			s := words[k].syms
			out := s[:0]
			for i := 0; i < len(s); i++ {
				if i+1 < len(s) && s[i] == best[0] && s[i+1] == best[1] {
					out = append(out, joined)
					i++
					continue
				}
				out = append(out, s[i])
			}
			words[k].syms = out
		}
	}
	f := map[string]any{
		"version":      "1.0",
		"added_tokens": []map[string]any{{"id": len(vocab), "content": "<|endoftext|>", "special": true}},
		"normalizer":   nil,
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Split}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "fuse_unk": false, "byte_fallback": false,
			"ignore_merges": false, "vocab": vocab, "merges": rules},
	}
	b, err := json.Marshal(f)
	if err != nil {
		panic(err) // maps of strings and ints always marshal
	}
	return b
}
