package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// bpe is a BPE model: a piece's symbols are merged pair by pair, lowest
// rank first. In a byte-level one (a ByteLevel pre-tokenizer) the symbols
// are the piece's bytes as GPT-2's printable byte characters; otherwise
// (SentencePiece's BPE) they are its characters, one not in the vocab
// becoming its bytes' <0xNN> tokens (byte_fallback) or the unknown token
// (consecutive ones one token with fuse_unk).
type bpe struct {
	vocab
	merges       map[[2]int]merge
	byteLevel    bool
	byteID       [256]int // the vocabulary id of each byte's character (-1: none)
	fallbackID   [256]int // the id of each byte's <0xNN> token (-1: none)
	asciiID      [128]int // the id of each ASCII character (-1: none)
	byteFallback bool
	unk          int // -1: none
	fuseUnk      bool
	ignoreMerges bool // a piece in the vocabulary is one token (Llama 3)
}

type merge struct{ rank, id int }

type bpeJSON struct {
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
}

// Limits on a model's vocabulary and merges (the largest common ones,
// Gemma 3's, have 262,144 tokens and 514,906 merges).
const (
	maxVocab  = 1 << 21
	maxMerges = 1 << 22
)

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

func parseBPE(raw json.RawMessage, byteLevel bool) (*bpe, error) {
	var j bpeJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	if err := checkVocab("BPE", "tokens", len(j.Vocab)); err != nil {
		return nil, err
	}
	merges, err := parseMerges(j.Merges)
	if err != nil {
		return nil, err
	}
	for tok, id := range j.Vocab {
		if len(tok) > maxTokenBytes {
			return nil, fmt.Errorf("BPE vocab: a token longer than %d bytes (%.40q…)", maxTokenBytes, tok)
		}
		if id < 0 || id >= 2*maxVocab {
			return nil, fmt.Errorf("BPE vocab: %.40q has id %d, outside 0…%d", tok, id, 2*maxVocab-1)
		}
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
	m := &bpe{vocab: j.Vocab, merges: make(map[[2]int]merge, len(merges)), ignoreMerges: j.IgnoreMerges,
		byteLevel: byteLevel, byteFallback: j.ByteFallback, fuseUnk: j.FuseUnk, unk: -1}
	for b := range 256 {
		id, ok := j.Vocab[string(byteRunes[b])]
		if !ok {
			id = -1
		}
		m.byteID[b] = id
		id, ok = j.Vocab[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			id = -1
		}
		m.fallbackID[b] = id
		if b < 128 {
			id, ok = j.Vocab[string(rune(b))]
			if !ok {
				id = -1
			}
			m.asciiID[b] = id
		}
	}
	if j.UnkToken != nil {
		id, ok := j.Vocab[*j.UnkToken]
		if !ok {
			return nil, fmt.Errorf("BPE unk_token %q: not in the vocab", *j.UnkToken)
		}
		m.unk = id
	}
	for rank, mg := range merges {
		a, b := mg[0], mg[1]
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

// parseMerges reads the merges: pairs ["a", "b"], or (older files)
// strings "a b".
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		if len(pairs) > maxMerges {
			return nil, fmt.Errorf("BPE merges: %d, more than %d", len(pairs), maxMerges)
		}
		return pairs, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		return nil, errors.New(`BPE merges: want a list of pairs ["a", "b"] or of strings "a b"`)
	}
	if len(strs) > maxMerges {
		return nil, fmt.Errorf("BPE merges: %d, more than %d", len(strs), maxMerges)
	}
	pairs = make([][2]string, len(strs))
	for i, s := range strs {
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("BPE merges[%d]: %q is not two tokens separated by a space", i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// tokenize turns the piece into its symbols and merges them pair by pair,
// the pair of lowest rank first (the leftmost of equal ranks), as Hugging
// Face's word merge does: a heap of candidate pairs over a linked list of
// symbols, so a long piece (a run of spaces or dashes, or a whole text
// without pre-tokenizer) costs n log n, not n².
func (m *bpe) tokenize(piece string, dst []tok) []tok {
	if piece == "" {
		return dst
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[m.symbolText(piece)]; ok {
			return append(dst, tok{len(piece), id})
		}
	}
	var id, end []int
	if m.byteLevel {
		id, end = make([]int, len(piece)), make([]int, len(piece))
		for i := 0; i < len(piece); i++ {
			id[i], end[i] = m.byteID[piece[i]], i+1
		}
	} else {
		id, end = m.symbols(piece)
	}
	return m.mergeAll(id, end, dst)
}

// symbolText is the piece as the vocabulary spells it.
func (m *bpe) symbolText(piece string) string {
	if !m.byteLevel {
		return piece
	}
	var b strings.Builder
	for i := 0; i < len(piece); i++ {
		b.WriteRune(byteRunes[piece[i]])
	}
	return b.String()
}

// symbols is a SentencePiece BPE's first symbols of piece: its
// characters, or their bytes' tokens, or unknown tokens; a character
// with none of them is left out.
func (m *bpe) symbols(piece string) (id, end []int) {
	id, end = make([]int, 0, len(piece)), make([]int, 0, len(piece))
	unkEnd := -1 // the end of the unknown token being fused
	flush := func() {
		if unkEnd >= 0 {
			id, end = append(id, m.unk), append(end, unkEnd)
			unkEnd = -1
		}
	}
	for i := 0; i < len(piece); {
		if b := piece[i]; b < utf8.RuneSelf && m.asciiID[b] >= 0 {
			flush()
			id, end = append(id, m.asciiID[b]), append(end, i+1)
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(piece[i:])
		c := piece[i : i+n]
		if v, ok := m.vocab[c]; ok {
			flush()
			id, end = append(id, v), append(end, i+n)
			i += n
			continue
		}
		if m.byteFallback && m.hasFallback(c) {
			flush()
			for k := 0; k < n; k++ {
				id, end = append(id, m.fallbackID[c[k]]), append(end, i+k+1)
			}
			i += n
			continue
		}
		if m.unk >= 0 {
			if !m.fuseUnk {
				flush()
			}
			unkEnd = i + n
		}
		i += n
	}
	flush()
	return id, end
}

func (m *bpe) hasFallback(c string) bool {
	for k := 0; k < len(c); k++ {
		if m.fallbackID[c[k]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll merges the symbols (their ids and ends) and appends the
// tokens to dst.
func (m *bpe) mergeAll(id, end []int, dst []tok) []tok {
	n := len(id)
	if n == 0 {
		return dst
	}
	next := make([]int, n) // -1: none
	prev := make([]int, n)
	for i := range n {
		next[i], prev[i] = i+1, i-1
	}
	next[n-1] = -1
	h := pairHeap(make([]pair, 0, n))
	push := func(i int) {
		if i < 0 {
			return
		}
		j := next[i]
		if j < 0 || id[i] < 0 || id[j] < 0 {
			return
		}
		if g, ok := m.merges[[2]int{id[i], id[j]}]; ok {
			h.push(pair{rank: g.rank, pos: i, left: id[i], right: id[j], id: g.id})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(i)
	}
	for len(h) > 0 {
		p := h.pop()
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
		dst = append(dst, tok{end[i], id[i]})
	}
	return dst
}

// pair is a candidate merge of the symbols at pos and after it.
type pair struct{ rank, pos, left, right, id int }

// pairHeap orders candidate merges by rank, then position (a binary
// heap of values: no allocation per candidate).
type pairHeap []pair

func (h pairHeap) less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].pos < h[b].pos
}

func (h *pairHeap) push(p pair) {
	*h = append(*h, p)
	q := *h
	for i := len(q) - 1; i > 0; {
		up := (i - 1) / 2
		if !q.less(i, up) {
			break
		}
		q[i], q[up] = q[up], q[i]
		i = up
	}
}

func (h *pairHeap) pop() pair {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(q) && q.less(l, m) {
			m = l
		}
		if r < len(q) && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}
