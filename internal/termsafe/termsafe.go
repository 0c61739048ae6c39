// Package termsafe makes text that came from a server or a file safe to
// print on a terminal: its control characters are written as visible
// escapes, so a model name or an error message cannot clear the screen,
// retitle the window, move the cursor or start a line of its own (a forged
// line of the table).
package termsafe

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s with every character a terminal would act on written
// as a Go escape: the C0 controls but tab (ESC is \x1b, BEL \a, a newline
// \n), DEL, the C1 controls (U+0080–U+009F: U+009B starts a sequence as
// ESC [ does), the bidirectional overrides and isolates (U+202A–U+202E,
// U+2066–U+2069: text shown in an order other than its own), and a byte
// that is not UTF-8 (\xNN). Other text, and s without any of these (the
// common case: no copy), is returned as it is.
func String(s string) string { return clean(s, false) }

// Lines is String that keeps newlines: for a message of several lines the
// program made itself (an error that lists problems) around text that may
// come from outside.
func Lines(s string) string { return clean(s, true) }

func clean(s string, lines bool) string {
	unsafe := func(r rune, n int) bool { return unsafeRune(r, n) && !(lines && r == '\n') }
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafe(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafe(r, n):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\a':
			b.WriteString(`\a`)
		case r == '\b':
			b.WriteString(`\b`)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether r (n bytes long) must be escaped.
func unsafeRune(r rune, n int) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// Args returns a with every string, error and Stringer that String would
// change replaced by its safe text, for a printf whose format is the
// program's own and whose values may come from outside. Other values
// (numbers, a []byte stack) are kept; a is not changed.
func Args(a []any) []any {
	var out []any
	for i, v := range a {
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case error:
			if x == nil {
				continue
			}
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			continue
		}
		if safe := String(s); safe != s {
			if out == nil {
				out = append([]any(nil), a...)
			}
			out[i] = safe
		}
	}
	if out == nil {
		return a
	}
	return out
}
