package parametric

import "fmt"

// ParseError is a problem at one place of an input file.
type ParseError struct {
	File  string // file name, or what the data is ("bundled …")
	Line  int    // 1-based line number; 0 when not known
	Field string // column or key; "" for the whole line
	Err   error
}

func (e *ParseError) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(": line %d", e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *ParseError) Unwrap() error { return e.Err }

// maxErrors bounds the problems one parse reports.
const maxErrors = 10
