package tokenizer

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// bpe is a byte-level BPE model: a piece's bytes become GPT-2's printable
// byte characters, which are merged pair by pair, lowest rank first.
type bpe struct {
	vocab        map[string]int
	merges       map[[2]int]merge
	byteID       [256]int // the vocabulary id of each byte's character (-1: none)
	ignoreMerges bool     // a piece in the vocabulary is one token (Llama 3)
}

type merge struct{ rank, id int }

type bpeJSON struct {
	Vocab                   map[string]int    `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	IgnoreMerges            bool              `json:"ignore_merges"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	Dropout                 *float64          `json:"dropout"`
}

// byteRunes is GPT-2's bytes_to_unicode: printable bytes stand for
// themselves, the others for the characters from U+0100 on.
var byteRunes = func() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}()

func parseBPE(raw json.RawMessage) (*bpe, error) {
	var j bpeJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	if len(j.Vocab) == 0 {
		return nil, errors.New("BPE: an empty vocab")
	}
	if j.ContinuingSubwordPrefix != nil && *j.ContinuingSubwordPrefix != "" {
		return nil, unsupportedPart{"BPE continuing_subword_prefix"}
	}
	if j.EndOfWordSuffix != nil && *j.EndOfWordSuffix != "" {
		return nil, unsupportedPart{"BPE end_of_word_suffix"}
	}
	if j.Dropout != nil && *j.Dropout > 0 {
		return nil, unsupportedPart{"BPE dropout"}
	}
	m := &bpe{vocab: j.Vocab, merges: make(map[[2]int]merge, len(j.Merges)), ignoreMerges: j.IgnoreMerges}
	for b := range 256 {
		id, ok := j.Vocab[string(byteRunes[b])]
		if !ok {
			id = -1
		}
		m.byteID[b] = id
	}
	for rank, r := range j.Merges {
		var a, b string
		var s string
		if err := json.Unmarshal(r, &s); err == nil {
			var ok bool
			if a, b, ok = strings.Cut(s, " "); !ok {
				return nil, fmt.Errorf("BPE merges[%d]: %q is not two tokens separated by a space", rank, s)
			}
		} else {
			var pair []string
			if err := json.Unmarshal(r, &pair); err != nil || len(pair) != 2 {
				return nil, fmt.Errorf("BPE merges[%d]: want \"a b\" or [\"a\", \"b\"]", rank)
			}
			a, b = pair[0], pair[1]
		}
		ia, oka := j.Vocab[a]
		ib, okb := j.Vocab[b]
		id, ok := j.Vocab[a+b]
		if !oka || !okb || !ok {
			return nil, fmt.Errorf("BPE merges[%d]: %q + %q: a token not in the vocab", rank, a, b)
		}
		k := [2]int{ia, ib}
		if _, dup := m.merges[k]; !dup {
			m.merges[k] = merge{rank, id}
		}
	}
	return m, nil
}

// tokenize merges the piece's byte symbols pair by pair, the pair of lowest
// rank first (the leftmost of equal ranks), as Hugging Face's word merge
// does: a heap of candidate pairs over a linked list of symbols, so a long
// piece (a run of spaces or dashes) costs n log n, not n².
func (m *bpe) tokenize(piece string, dst []int) []int {
	if piece == "" {
		return dst
	}
	if m.ignoreMerges {
		var b strings.Builder
		for i := 0; i < len(piece); i++ {
			b.WriteRune(byteRunes[piece[i]])
		}
		if _, ok := m.vocab[b.String()]; ok {
			return append(dst, len(piece))
		}
	}
	n := len(piece)
	id := make([]int, n)
	end := make([]int, n)
	next := make([]int, n) // -1: none
	prev := make([]int, n)
	for i := range n {
		id[i], end[i], next[i], prev[i] = m.byteID[piece[i]], i+1, i+1, i-1
	}
	next[n-1] = -1
	h := &pairHeap{}
	push := func(i int) {
		if i < 0 {
			return
		}
		j := next[i]
		if j < 0 || id[i] < 0 || id[j] < 0 {
			return
		}
		if g, ok := m.merges[[2]int{id[i], id[j]}]; ok {
			heap.Push(h, pair{rank: g.rank, pos: i, left: id[i], right: id[j], id: g.id})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for h.Len() > 0 {
		p := heap.Pop(h).(pair)
		j := next[p.pos]
		if id[p.pos] != p.left || j < 0 || id[j] != p.right {
			continue // stale: a symbol of the pair was merged away
		}
		// Merge j into pos.
		id[p.pos], end[p.pos] = p.id, end[j]
		id[j] = -2 // gone
		next[p.pos] = next[j]
		if k := next[j]; k >= 0 {
			prev[k] = p.pos
		}
		push(prev[p.pos])
		push(p.pos)
	}
	for i := 0; i >= 0; i = next[i] {
		dst = append(dst, end[i])
	}
	return dst
}

// pair is a candidate merge of the symbols at pos and after it.
type pair struct{ rank, pos, left, right, id int }

// pairHeap orders candidate merges by rank, then position.
type pairHeap []pair

func (h pairHeap) Len() int { return len(h) }
func (h pairHeap) Less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].pos < h[b].pos
}
func (h pairHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *pairHeap) Push(x any)   { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
