package replay

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unsafe"
)

// csvLines reads a CSV trace one line at a time: a record is one line, so
// a malformed line (a quote that opens a field and never closes, a line
// longer than MaxRecordBytes) costs that line only, never the lines after
// it. Quoted fields may hold commas and doubled quotes, not line breaks.
type csvLines struct {
	lr   lineReader
	line int
	rec  []string
	esc  []byte
}

// errUnbalancedQuote is a quoted field that does not end on its line.
var errUnbalancedQuote = errors.New(`unbalanced quote: a quoted field does not end on its line (records are one line each)`)

// errStrayQuote is a closing quote followed by more text in the field.
var errStrayQuote = errors.New(`stray quote: a quoted field's closing " is followed by more text`)

// next returns the fields of the next non-blank line and its number (the
// first line is 1). A malformed line returns its number and a non-nil
// lineErr (the caller skips it); err is io.EOF after the last line, or a
// read error. The fields are valid until the next call.
func (c *csvLines) next() (rec []string, line int, lineErr, err error) {
	for {
		raw, tooLong, err := c.lr.next()
		if err != nil {
			return nil, c.line + 1, nil, err
		}
		c.line++
		if tooLong {
			return nil, c.line, errLineTooLong, nil
		}
		if len(raw) == 0 {
			continue // a blank line, as encoding/csv skips them
		}
		// The fields are views of the line in the reader's buffer, valid
		// until the next call as documented: a copy of every line was the
		// reading's only allocation (250 MB of garbage for 33 M rows, which
		// the collector let pile up beside the columns). What is kept
		// (names, the header) is cloned.
		rec, lineErr = c.split(unsafe.String(unsafe.SliceData(raw), len(raw)))
		return rec, c.line, lineErr, nil
	}
}

// split cuts one line into fields. An unquoted field is taken as it is
// (a quote inside it is kept as a character); a field that starts with a
// quote ends at the next single quote, "" standing for one quote.
func (c *csvLines) split(s string) ([]string, error) {
	rec, err := c.splitInto(c.rec[:0], s)
	c.rec = rec // kept for the next line (a deferred closure that did this allocated every line)
	return rec, err
}

func (c *csvLines) splitInto(rec []string, s string) ([]string, error) {
	for {
		if len(s) == 0 || s[0] != '"' {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				return append(rec, s), nil
			}
			rec = append(rec, s[:i])
			s = s[i+1:]
			continue
		}
		// A quoted field.
		s = s[1:]
		c.esc = c.esc[:0]
		plain := true // no doubled quote: the field is a substring of s
		start := s
		for {
			i := strings.IndexByte(s, '"')
			if i < 0 {
				return rec, errUnbalancedQuote
			}
			if i+1 < len(s) && s[i+1] == '"' { // "" is one quote
				if plain {
					c.esc = append(c.esc, start[:len(start)-len(s)+i+1]...)
					plain = false
				} else {
					c.esc = append(c.esc, s[:i+1]...)
				}
				s = s[i+2:]
				continue
			}
			var field string
			if plain {
				field = start[:len(start)-len(s)+i]
			} else {
				field = string(append(c.esc, s[:i]...))
			}
			s = s[i+1:]
			rec = append(rec, field)
			switch {
			case len(s) == 0:
				return rec, nil
			case s[0] == ',':
				s = s[1:]
			default:
				return rec, errStrayQuote
			}
			break
		}
	}
}

// header reads the first line of a CSV trace as its header.
func (c *csvLines) header(path string) ([]string, error) {
	rec, line, lineErr, err := c.next()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("replay: %s: header: empty file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %s: header: %w", path, err)
	}
	if lineErr != nil {
		return nil, fmt.Errorf("replay: %s: line %d: header: %w", path, line, lineErr)
	}
	h := make([]string, len(rec))
	for i, f := range rec {
		h[i] = strings.Clone(f)
	}
	return h, nil
}
