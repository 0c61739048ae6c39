// Package jsonscan follows JSON text byte by byte for the readers that
// bound or cut it before parsing it: which bytes are inside a string,
// where a bracket is not nesting.
package jsonscan

// Strings says, byte by byte, which bytes of JSON text belong to a string
// (its quotes and escapes included). The zero value starts outside one.
type Strings struct {
	in, escaped bool
}

// Step takes the next byte c: in reports whether it is part of a string,
// closed whether it is the quote that ends one.
func (s *Strings) Step(c byte) (in, closed bool) {
	switch {
	case !s.in:
		s.in = c == '"'
		return s.in, false
	case s.escaped:
		s.escaped = false
	case c == '\\':
		s.escaped = true
	case c == '"':
		s.in = false
		return true, true
	}
	return true, false
}

// In reports whether the bytes stepped so far end inside a string.
func (s *Strings) In() bool { return s.in }
