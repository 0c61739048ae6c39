package prompt

import "github.com/fineserve-gen/fineserve-gen/pkg/arrival"

// AppendText appends a's prompt as text (with --prompt-suffix, as a chat
// message's), JSON-escaped but without quotes, whatever the builder's
// format: a session's completion prompt joins its messages' text into one
// string.
func (b *Builder) AppendText(dst []byte, a *arrival.Arrival) []byte {
	return b.appendText(dst, a, max(a.InputTokens, 1))
}

// AppendEscaped appends s escaped for the inside of a JSON string.
func AppendEscaped(dst []byte, s []byte) []byte {
	return appendEscaped(dst, string(s))
}
