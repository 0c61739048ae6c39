package tokenizer

import (
	"encoding/json"
	"unicode/utf8"
)

// wordPiece is BERT's model: each piece is cut greedily into the longest
// vocabulary entries, those after the first with the continuing prefix
// ("##"); a piece that cannot be cut is one unknown token.
type wordPiece struct {
	vocab
	unk      int
	prefix   string
	maxChars int
}

type wordPieceJSON struct {
	Vocab                   map[string]int `json:"vocab"`
	UnkToken                string         `json:"unk_token"`
	ContinuingSubwordPrefix *string        `json:"continuing_subword_prefix"`
	MaxInputCharsPerWord    *int           `json:"max_input_chars_per_word"`
}

func parseWordPiece(raw json.RawMessage) (*wordPiece, error) {
	var j wordPieceJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	if err := checkVocab("WordPiece", "tokens", len(j.Vocab)); err != nil {
		return nil, err
	}
	m := &wordPiece{vocab: j.Vocab, prefix: "##", maxChars: 100, unk: -1}
	if id, ok := j.Vocab[j.UnkToken]; ok {
		m.unk = id
	}
	if j.ContinuingSubwordPrefix != nil {
		m.prefix = *j.ContinuingSubwordPrefix
	}
	if j.MaxInputCharsPerWord != nil {
		m.maxChars = *j.MaxInputCharsPerWord
	}
	return m, nil
}

func (m *wordPiece) tokenize(piece string, dst []tok) []tok {
	if piece == "" {
		return dst
	}
	if utf8.RuneCountInString(piece) > m.maxChars {
		return append(dst, tok{len(piece), m.unk})
	}
	n := len(dst)
	for start := 0; start < len(piece); {
		end := len(piece)
		found, id := false, 0
		for end > start {
			sub := piece[start:end]
			if start > 0 {
				sub = m.prefix + sub
			}
			if id, found = m.vocab[sub]; found {
				break
			}
			_, size := utf8.DecodeLastRuneInString(piece[start:end])
			end -= size
		}
		if !found {
			return append(dst[:n], tok{len(piece), m.unk}) // the whole piece is [UNK]
		}
		dst = append(dst, tok{end, id})
		start = end
	}
	return dst
}
