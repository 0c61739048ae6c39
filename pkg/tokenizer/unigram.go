package tokenizer

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// unigram is SentencePiece's Unigram model: a piece is cut into the
// vocabulary's entries whose scores (log probabilities) sum highest, by
// Viterbi over the text's characters, as Hugging Face's encode_optimized
// does. A character no entry starts with is the unknown token, scored
// below every entry; consecutive unknown ones are one token, or their
// bytes' <0xNN> tokens with byte_fallback.
type unigram struct {
	ids      map[string]int // the last id of each entry
	scores   []float64
	unk      int
	unkScore float64
	fallback [256]int // the id of each byte's <0xNN> token (-1: none)
	bytefb   bool
	// The entries as a byte trie: children maps node<<8|byte to the
	// child node; entry[node] is the id of the entry ending there (-1).
	children map[uint64]int32
	entry    []int32
	maxBytes int // the longest entry
}

type unigramJSON struct {
	Vocab        [][2]json.RawMessage `json:"vocab"`
	UnkID        *int                 `json:"unk_id"`
	ByteFallback bool                 `json:"byte_fallback"`
}

// maxPieceBytes bounds a Unigram entry, so that Viterbi's cost per
// character is bounded (SentencePiece's own default is 16 characters).
const maxPieceBytes = 256

// unkPenalty is how far below the lowest entry's score the unknown token
// is scored (Hugging Face's K_UNK_PENALTY, SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

func parseUnigram(raw json.RawMessage) (*unigram, error) {
	var j unigramJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	if err := checkVocab("Unigram", "entries", len(j.Vocab)); err != nil {
		return nil, err
	}
	if j.UnkID == nil {
		return nil, unsupportedPart{"a Unigram model without unk_id"}
	}
	if *j.UnkID < 0 || *j.UnkID >= len(j.Vocab) {
		return nil, fmt.Errorf("Unigram unk_id %d: not an entry of the vocab (%d entries)", *j.UnkID, len(j.Vocab))
	}
	m := &unigram{ids: make(map[string]int, len(j.Vocab)), scores: make([]float64, len(j.Vocab)),
		unk: *j.UnkID, bytefb: j.ByteFallback, children: map[uint64]int32{}, entry: []int32{-1}}
	minScore := math.Inf(1)
	for i, e := range j.Vocab {
		var piece string
		var score float64
		if err := json.Unmarshal(e[0], &piece); err != nil {
			return nil, fmt.Errorf("Unigram vocab[%d]: want [\"piece\", score]: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &score); err != nil {
			return nil, fmt.Errorf("Unigram vocab[%d]: want [\"piece\", score]: %w", i, err)
		}
		if len(piece) > maxPieceBytes {
			return nil, fmt.Errorf("Unigram vocab[%d]: a piece longer than %d bytes (%.40q…)", i, maxPieceBytes, piece)
		}
		if math.IsNaN(score) {
			return nil, fmt.Errorf("Unigram vocab[%d]: score is not a number", i)
		}
		m.ids[piece] = i
		m.scores[i] = score
		minScore = min(minScore, score)
		if !m.insert(piece) {
			return nil, fmt.Errorf("Unigram vocab: the pieces up to vocab[%d] have more than %d distinct prefixes", i, maxTrieNodes)
		}
		m.maxBytes = max(m.maxBytes, len(piece))
	}
	m.unkScore = minScore - unkPenalty
	for b := range 256 {
		id, ok := m.ids[fmt.Sprintf("<0x%02X>", b)]
		if !ok {
			id = -1
		}
		m.fallback[b] = id
	}
	return m, nil
}

// maxTrieNodes bounds the trie of a Unigram's pieces: one node per
// distinct prefix, so a vocabulary of a few hundred thousand short pieces
// stays far below it, and a file of long made-up pieces is refused.
const maxTrieNodes = 1 << 24

// insert adds a piece to the trie (its id is looked up when found); false
// when the trie would hold more than maxTrieNodes.
func (m *unigram) insert(piece string) bool {
	if piece == "" {
		return true
	}
	node := int32(0)
	for i := 0; i < len(piece); i++ {
		k := uint64(node)<<8 | uint64(piece[i])
		c, ok := m.children[k]
		if !ok {
			if len(m.entry) >= maxTrieNodes {
				return false
			}
			c = int32(len(m.entry))
			m.entry = append(m.entry, -1)
			m.children[k] = c
		}
		node = c
	}
	m.entry[node] = 1
	return true
}

// node is the best way found to cut the text up to a position: the
// entry that ends there, where it starts, and the path's score.
type node struct {
	id, from int
	score    float64
	set      bool
}

func (m *unigram) tokenize(piece string, dst []tok) []tok {
	if piece == "" {
		return dst
	}
	size := len(piece)
	best := make([]node, size+1)
	best[0].set = true
	for from := 0; from < size; {
		_, mblen := utf8.DecodeRuneInString(piece[from:])
		here := best[from].score
		single := false
		n := int32(0)
		for i := from; i < size && i-from < m.maxBytes; i++ {
			c, ok := m.children[uint64(n)<<8|uint64(piece[i])]
			if !ok {
				break
			}
			n = c
			if m.entry[n] < 0 {
				continue
			}
			to := i + 1
			id := m.ids[piece[from:to]]
			if s := here + m.scores[id]; !best[to].set || s > best[to].score {
				best[to] = node{id: id, from: from, score: s, set: true}
			}
			if to-from == mblen {
				single = true
			}
		}
		if !single {
			to := from + mblen
			if s := here + m.unkScore; !best[to].set || s > best[to].score {
				best[to] = node{id: m.unk, from: from, score: s, set: true}
			}
		}
		from += mblen
	}
	// Back from the end: consecutive unknown tokens are fused.
	var rev []tok
	for to := size; to > 0; {
		nd := best[to]
		if nd.id == m.unk && len(rev) > 0 && rev[len(rev)-1].id == m.unk {
			to = nd.from
			continue // the token after it (already in rev) now starts here
		}
		rev = append(rev, tok{to, nd.id})
		to = nd.from
	}
	// rev holds each token's end, last first; an unknown token's start
	// is the end of the one before it.
	for i := len(rev) - 1; i >= 0; i-- {
		k := rev[i]
		start := 0
		if i+1 < len(rev) {
			start = rev[i+1].end
		}
		if k.id != m.unk {
			dst = append(dst, k)
			continue
		}
		text := piece[start:k.end]
		if id, ok := m.ids[text]; ok {
			dst = append(dst, tok{k.end, id})
			continue
		}
		if m.bytefb && m.hasFallback(text) {
			for b := start; b < k.end; b++ {
				dst = append(dst, tok{b + 1, m.fallback[piece[b]]})
			}
			continue
		}
		dst = append(dst, k)
	}
	return dst
}

func (m *unigram) hasFallback(c string) bool {
	for k := 0; k < len(c); k++ {
		if m.fallback[c[k]] < 0 {
			return false
		}
	}
	return true
}

func (m *unigram) id(token string) (int, bool) {
	id, ok := m.ids[token]
	return id, ok
}

func (m *unigram) size() int { return len(m.scores) }
