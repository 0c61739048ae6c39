package tokenizer

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ntext is normalized text with where each byte came from in the text
// before normalization: at[i] is the original offset of byte i when i
// starts a unit (a character or a replaced run), -1 inside one; at has
// len(s)+1 entries, the last the original length. A nil at is the
// identity (nothing changed).
type ntext struct {
	s  string
	at []int32
}

func identity(s string) ntext { return ntext{s: s} }

// pos is the original offset of byte i (-1 inside a unit).
func (t ntext) pos(i int) int {
	if t.at == nil {
		return i
	}
	return int(t.at[i])
}

// orig maps an offset in the normalized text to the original one: a
// token that ends inside a unit ends where the unit ends.
func (t ntext) orig(i int) int {
	if t.at == nil {
		return i
	}
	for ; i < len(t.at); i++ {
		if t.at[i] >= 0 {
			return int(t.at[i])
		}
	}
	return int(t.at[len(t.at)-1])
}

// nbuild builds an ntext.
type nbuild struct {
	b  []byte
	at []int32
}

func newBuild(n int) *nbuild {
	return &nbuild{b: make([]byte, 0, n), at: make([]int32, 0, n+1)}
}

// add appends out as one unit that came from original offset from (-1:
// inside a unit).
func (b *nbuild) add(out string, from int) {
	for i := 0; i < len(out); i++ {
		if i == 0 {
			b.at = append(b.at, int32(from))
		} else {
			b.at = append(b.at, -1)
		}
	}
	b.b = append(b.b, out...)
}

// copyFrom appends t.s[i:j] keeping its offsets.
func (b *nbuild) copyFrom(t ntext, i, j int) {
	b.b = append(b.b, t.s[i:j]...)
	for k := i; k < j; k++ {
		b.at = append(b.at, int32(t.pos(k)))
	}
}

func (b *nbuild) done(t ntext) ntext {
	b.at = append(b.at, int32(t.pos(len(t.s))))
	return ntext{s: string(b.b), at: b.at}
}

// mapRunes replaces each character of t with what f appends for it.
func mapRunes(t ntext, f func(r rune, dst []byte) []byte) ntext {
	b := newBuild(len(t.s))
	var tmp []byte
	for i := 0; i < len(t.s); {
		r, n := utf8.DecodeRuneInString(t.s[i:])
		if r == utf8.RuneError && n == 1 {
			b.copyFrom(t, i, i+1) // an invalid byte stays as it is
			i++
			continue
		}
		tmp = f(r, tmp[:0])
		if string(tmp) == t.s[i:i+n] {
			b.copyFrom(t, i, i+n)
		} else {
			b.add(string(tmp), t.pos(i))
		}
		i += n
	}
	return b.done(t)
}

// replaceAt replaces the byte ranges ms of t with content.
func replaceAt(t ntext, ms [][2]int, content string) ntext {
	if len(ms) == 0 {
		return t
	}
	b := newBuild(len(t.s))
	prev := 0
	for _, m := range ms {
		b.copyFrom(t, prev, m[0])
		b.add(content, t.pos(m[0]))
		prev = m[1]
	}
	b.copyFrom(t, prev, len(t.s))
	return b.done(t)
}

// prependText puts p before a non-empty t, as from its first byte.
func prependText(t ntext, p string) ntext {
	if t.s == "" || p == "" {
		return t
	}
	b := newBuild(len(p) + len(t.s))
	b.add(p, t.pos(0))
	b.copyFrom(t, 0, len(t.s))
	return b.done(t)
}

// formText normalizes t to f segment by segment, so that each segment
// keeps its original offset.
func formText(t ntext, f norm.Form) ntext {
	if f.IsNormalString(t.s) {
		return t
	}
	b := newBuild(len(t.s))
	for i := 0; i < len(t.s); {
		n := f.NextBoundaryInString(t.s[i:], true)
		if n <= 0 {
			n = len(t.s) - i
		}
		seg := f.String(t.s[i : i+n])
		if seg == t.s[i:i+n] {
			b.copyFrom(t, i, i+n)
		} else {
			b.add(seg, t.pos(i))
		}
		i += n
	}
	out := b.done(t)
	if whole := f.String(t.s); out.s != whole {
		// Segments normalized alone differ from the whole: one unit.
		b = newBuild(len(whole))
		b.add(whole, t.pos(0))
		return b.done(t)
	}
	return out
}

// trimText removes the bytes before a and after e.
func trimText(t ntext, a, e int) ntext {
	if a == 0 && e == len(t.s) {
		return t
	}
	at := make([]int32, 0, e-a+1)
	for k := a; k <= e; k++ {
		at = append(at, int32(t.pos(k)))
	}
	if a < e && at[0] < 0 {
		at[0] = int32(t.orig(a))
	}
	return ntext{s: t.s[a:e], at: at}
}

// literalRanges returns the byte ranges of lit in s.
func literalRanges(lit, s string) [][2]int {
	if lit == "" || !strings.Contains(s, lit) {
		return nil
	}
	return literalMatches(lit, s)
}
