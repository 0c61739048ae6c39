package prompt

import "github.com/fineserve-gen/fineserve-gen/pkg/arrival"

// AppendText appends a's prompt as text, JSON-escaped but without quotes,
// whatever the builder's format: a session's completion prompt joins its
// messages' text into one string (--prompt-suffix is not added).
func (b *Builder) AppendText(dst []byte, a *arrival.Arrival) []byte {
	n := max(a.InputTokens, 1)
	if b.dataset != nil && len(a.PrefixBlocks) == 0 {
		return b.dataset.appendText(dst, a.Index, n)
	}
	return b.appendBody(dst, &b.words, a, n)
}

// AppendEscaped appends s escaped for the inside of a JSON string.
func AppendEscaped(dst []byte, s []byte) []byte {
	return appendEscaped(dst, string(s))
}
