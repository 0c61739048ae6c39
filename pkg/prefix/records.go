package prefix

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
)

// EachRecord calls fn with each JSON record of the trace r, the one
// splitting of every JSON trace format (this package's and pkg/agentic's):
// the whole of r, as line 1, when it is one indented JSON object (a WEKA
// .json file), else each line that is not blank (JSON Lines), trimmed, with
// its line number. A line longer than maxLine bytes is read past and given
// to fn with tooLong (and no bytes); a longer document is an error. The
// first error fn returns ends the reading and is returned as it is.
func EachRecord(r io.Reader, maxLine int, fn func(line int, b []byte, tooLong bool) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	if head, _ := br.Peek(1 << 16); multiLineObject(head) {
		data, err := bounded.Read(br, int64(maxLine))
		if err != nil {
			return fmt.Errorf("a JSON document: %w", err)
		}
		return fn(1, data, false)
	}
	line := 0
	for {
		b, tooLong, err := readLine(br, maxLine)
		if len(b) > 0 || tooLong {
			line++
			if t := bytes.TrimSpace(b); len(t) > 0 || tooLong {
				if e := fn(line, t, tooLong); e != nil {
					return e
				}
			}
		} else if err == nil {
			line++
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", line+1, err)
		}
	}
}

// multiLineObject reports whether head, a file's first bytes, starts a
// JSON object whose first line does not close it (an indented document);
// JSON Lines start every object on a line of its own.
func multiLineObject(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	nl := bytes.IndexByte(head, '\n')
	return nl >= 0 && !json.Valid(bytes.TrimSpace(head[:nl]))
}

// readLine reads one line (without its end), at most max bytes; a longer
// line is read past and reported with tooLong.
func readLine(br *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		frag, e := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(frag) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, frag...)
			}
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return nil, true, e
		}
		return bytes.TrimRight(buf, "\r\n"), false, e
	}
}
