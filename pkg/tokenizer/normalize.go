package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites the text before it is pre-tokenized, keeping where
// each part came from.
type normalizer func(ntext) ntext

type normJSON struct {
	Type               string          `json:"type"`
	Normalizers        []normJSON      `json:"normalizers"`
	Left               *bool           `json:"left"`
	Right              *bool           `json:"right"`
	CleanText          *bool           `json:"clean_text"`
	HandleChineseChars *bool           `json:"handle_chinese_chars"`
	StripAccents       *bool           `json:"strip_accents"`
	Lowercase          *bool           `json:"lowercase"`
	Pattern            json.RawMessage `json:"pattern"`
	Content            string          `json:"content"`
	Prepend            string          `json:"prepend"`
}

// maxNormalizers bounds a Sequence's normalizers, nested ones included.
const maxNormalizers = 64

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n normJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	count := 0
	return n.build(&count)
}

func flag(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func form(f norm.Form) normalizer { return func(t ntext) ntext { return formText(t, f) } }

func runes(f func(r rune, dst []byte) []byte) normalizer {
	return func(t ntext) ntext { return mapRunes(t, f) }
}

func lower(r rune, dst []byte) []byte { return utf8.AppendRune(dst, unicode.ToLower(r)) }

func (n normJSON) build(count *int) (normalizer, error) {
	if *count++; *count > maxNormalizers {
		return nil, fmt.Errorf("normalizer: more than %d normalizers", maxNormalizers)
	}
	switch n.Type {
	case "Sequence":
		var all []normalizer
		for _, m := range n.Normalizers {
			f, err := m.build(count)
			if err != nil {
				return nil, err
			}
			if f != nil {
				all = append(all, f)
			}
		}
		return func(t ntext) ntext {
			for _, f := range all {
				t = f(t)
			}
			return t
		}, nil
	case "NFC":
		return form(norm.NFC), nil
	case "NFD":
		return form(norm.NFD), nil
	case "NFKC":
		return form(norm.NFKC), nil
	case "NFKD":
		return form(norm.NFKD), nil
	case "Lowercase":
		return runes(lower), nil
	case "StripAccents":
		return stripMarks, nil
	case "Strip":
		left, right := flag(n.Left, true), flag(n.Right, true)
		return func(t ntext) ntext {
			a, e := 0, len(t.s)
			if left {
				a = len(t.s) - len(strings.TrimLeftFunc(t.s, unicode.IsSpace))
			}
			if right {
				e = len(strings.TrimRightFunc(t.s, unicode.IsSpace))
			}
			return trimText(t, a, max(a, e))
		}, nil
	case "Prepend":
		p := n.Prepend
		if len(p) > maxTokenBytes {
			return nil, fmt.Errorf("normalizer Prepend: prepend: longer than %d bytes", maxTokenBytes)
		}
		return func(t ntext) ntext { return prependText(t, p) }, nil
	case "Replace":
		var pat struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		}
		if err := json.Unmarshal(n.Pattern, &pat); err != nil {
			return nil, fmt.Errorf("normalizer Replace: pattern: %w", err)
		}
		content := n.Content
		if len(content) > maxTokenBytes {
			return nil, fmt.Errorf("normalizer Replace: content: longer than %d bytes", maxTokenBytes)
		}
		if pat.String != nil {
			old := *pat.String
			if old == "" {
				return nil, fmt.Errorf("normalizer Replace: an empty pattern String")
			}
			return func(t ntext) ntext { return replaceAt(t, literalRanges(old, t.s), content) }, nil
		}
		if pat.Regex != nil {
			re, err := regexp2.Compile(*pat.Regex, regexp2.None)
			if err != nil {
				return nil, fmt.Errorf("normalizer Replace: pattern %q: %w", *pat.Regex, err)
			}
			// The content is put in literally (no $1).
			return func(t ntext) ntext { return replaceAt(t, regexMatches(re, t.s), content) }, nil
		}
		return nil, fmt.Errorf("normalizer Replace: want a pattern {\"Regex\": …} or {\"String\": …}")
	case "BertNormalizer":
		clean, chinese, low := flag(n.CleanText, true), flag(n.HandleChineseChars, true), flag(n.Lowercase, true)
		strip := flag(n.StripAccents, low) // null: as lowercase
		return func(t ntext) ntext {
			t = mapRunes(t, func(r rune, dst []byte) []byte {
				switch {
				case clean && (r == 0 || r == 0xfffd || isControl(r)):
					return dst
				case clean && unicode.IsSpace(r):
					return append(dst, ' ')
				case chinese && isChinese(r):
					return append(utf8.AppendRune(append(dst, ' '), r), ' ')
				}
				return utf8.AppendRune(dst, r)
			})
			if strip {
				t = stripMarks(t)
			}
			if low {
				t = mapRunes(t, lower)
			}
			return t
		}, nil
	case "Precompiled":
		return nil, unsupportedPart{`normalizer "Precompiled" (a SentencePiece precompiled_charsmap, e.g. T5 or XLM-R)`}
	}
	return nil, unsupportedPart{fmt.Sprintf("normalizer %q", n.Type)}
}

// stripMarks decomposes t and removes its combining marks.
func stripMarks(t ntext) ntext {
	return mapRunes(formText(t, norm.NFD), func(r rune, dst []byte) []byte {
		if unicode.Is(unicode.Mn, r) {
			return dst
		}
		return utf8.AppendRune(dst, r)
	})
}

// isControl is BERT's control character: a C category other than \t \n \r.
func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isChinese is BERT's CJK ideograph ranges.
func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) || (r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) || (r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B820 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}
