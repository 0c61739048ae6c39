package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites the text before it is pre-tokenized.
type normalizer func(string) string

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

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var n normJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	return n.build()
}

func flag(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func (n normJSON) build() (normalizer, error) {
	switch n.Type {
	case "Sequence":
		var all []normalizer
		for _, m := range n.Normalizers {
			f, err := m.build()
			if err != nil {
				return nil, err
			}
			if f != nil {
				all = append(all, f)
			}
		}
		return func(s string) string {
			for _, f := range all {
				s = f(s)
			}
			return s
		}, nil
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "StripAccents":
		return stripMarks, nil
	case "Strip":
		left, right := flag(n.Left, true), flag(n.Right, true)
		return func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}, nil
	case "Prepend":
		p := n.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Replace":
		var pat struct {
			Regex  *string `json:"Regex"`
			String *string `json:"String"`
		}
		if err := json.Unmarshal(n.Pattern, &pat); err != nil {
			return nil, fmt.Errorf("normalizer Replace: pattern: %w", err)
		}
		content := n.Content
		if pat.String != nil {
			old := *pat.String
			return func(s string) string { return strings.ReplaceAll(s, old, content) }, nil
		}
		if pat.Regex != nil {
			re, err := regexp2.Compile(*pat.Regex, regexp2.None)
			if err != nil {
				return nil, fmt.Errorf("normalizer Replace: pattern %q: %w", *pat.Regex, err)
			}
			return func(s string) string {
				r, err := re.Replace(s, content, -1, -1)
				if err != nil {
					return s
				}
				return r
			}, nil
		}
		return nil, fmt.Errorf("normalizer Replace: want a pattern {\"Regex\": …} or {\"String\": …}")
	case "BertNormalizer":
		clean, chinese, lower := flag(n.CleanText, true), flag(n.HandleChineseChars, true), flag(n.Lowercase, true)
		strip := flag(n.StripAccents, lower) // null: as lowercase
		return func(s string) string {
			var b strings.Builder
			for _, r := range s {
				switch {
				case clean && (r == 0 || r == 0xfffd || isControl(r)):
					continue
				case clean && unicode.IsSpace(r):
					b.WriteByte(' ')
				case chinese && isChinese(r):
					b.WriteByte(' ')
					b.WriteRune(r)
					b.WriteByte(' ')
				default:
					b.WriteRune(r)
				}
			}
			out := b.String()
			if strip {
				out = stripMarks(out)
			}
			if lower {
				out = strings.ToLower(out)
			}
			return out
		}, nil
	}
	return nil, unsupportedPart{fmt.Sprintf("normalizer %q", n.Type)}
}

// stripMarks decomposes s and removes its combining marks.
func stripMarks(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, norm.NFD.String(s))
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
