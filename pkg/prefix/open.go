package prefix

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// Open opens a trace file, gunzipping it when it starts with gzip's magic
// bytes (every prefix and agentic trace is opened here).
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, err
		}
		return readCloser{zr, f}, nil
	}
	return readCloser{br, f}, nil
}

type readCloser struct {
	io.Reader
	f *os.File
}

func (r readCloser) Close() error { return r.f.Close() }

// Sniff reports whether the file at path looks like a prefix trace: JSON
// whose first object has hash_ids, chat_id or a requests array.
func Sniff(path string) bool {
	rc, err := Open(path)
	if err != nil {
		return false
	}
	defer rc.Close()
	head, _ := io.ReadAll(io.LimitReader(rc, 1<<16))
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	if i := bytes.IndexByte(head, '\n'); i > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(head[:i], &obj) == nil {
			return obj["hash_ids"] != nil || obj["chat_id"] != nil || obj["requests"] != nil
		}
	}
	// An indented document: look for its keys near the top.
	s := string(head)
	return strings.Contains(s, `"requests"`) && strings.Contains(s, `"hash_ids"`)
}
