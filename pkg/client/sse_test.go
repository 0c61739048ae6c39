package client

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// chunkedReader returns its chunks one Read at a time; with eofWithData the
// last chunk comes together with io.EOF, as io.Reader allows.
type chunkedReader struct {
	chunks      []string
	eofWithData bool
	reads       int
}

func (r *chunkedReader) Read(p []byte) (int, error) {
	if len(r.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if r.chunks[0] == "" {
		r.chunks = r.chunks[1:]
	}
	r.reads++
	if len(r.chunks) == 0 && r.eofWithData {
		return n, io.EOF
	}
	return n, nil
}

func TestLineReader(t *testing.T) {
	for _, tc := range []struct {
		name        string
		chunks      []string
		eofWithData bool
		want        []string
	}{
		{"lines in one read", []string{"a\nbb\n\nccc\n"}, false, []string{"a", "bb", "", "ccc"}},
		{"line split across reads", []string{"da", "ta: x\n", "\n"}, false, []string{"data: x", ""}},
		{"crlf", []string{"a\r\nb\r\n"}, false, []string{"a", "b"}},
		{"unterminated last line", []string{"a\nlast"}, false, []string{"a", "last"}},
		{"data arrives with EOF", []string{"a\n", "b\n\nc\n\n"}, true, []string{"a", "b", "", "c", ""}},
		{"unterminated with EOF", []string{"x\ny"}, true, []string{"x", "y"}},
		{"long line grows the buffer", []string{strings.Repeat("z", 100) + "\n"}, false, []string{strings.Repeat("z", 100)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &chunkedReader{chunks: append([]string(nil), tc.chunks...), eofWithData: tc.eofWithData}
			var l lineReader
			l.reset(r, make([]byte, 16))
			l.now = time.Now
			var got []string
			for {
				line, _, err := l.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(line))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineReaderStampsLinesWithTheReadThatCompletedThem(t *testing.T) {
	r := &chunkedReader{chunks: []string{"data: a\n\ndata: b", "\n\n"}}
	var l lineReader
	l.reset(r, make([]byte, 64))
	tick := time.Unix(0, 0)
	l.now = func() time.Time { tick = tick.Add(time.Second); return tick }
	stamps := map[string]time.Time{}
	for {
		line, at, err := l.next()
		if err != nil {
			break
		}
		if len(line) > 0 {
			stamps[string(line)] = at
		}
	}
	// "data: a" arrived with the first read; "data: b" was completed by the
	// second, so it carries the second read's time.
	if got := stamps["data: a"].Unix(); got != 1 {
		t.Errorf("first line stamped at read %d, want 1", got)
	}
	if got := stamps["data: b"].Unix(); got != 2 {
		t.Errorf("second line stamped at read %d, want 2", got)
	}
}

func TestLineReaderRejectsEndlessLine(t *testing.T) {
	r := strings.NewReader(strings.Repeat("x", maxLine+10))
	var l lineReader
	l.reset(r, make([]byte, 1024))
	l.now = time.Now
	if _, _, err := l.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("err %v, want errLineTooLong", err)
	}
}
