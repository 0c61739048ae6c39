package agentic

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// open returns path's reader, gunzipped when it is gzip.
func open(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return z, f.Close, nil
	}
	return br, f.Close, nil
}

// Detect reports the agentic format of the trace at path, from its first
// object's keys (JSON) or its header (CSV), and false when it is none.
func Detect(path string) (Format, bool) {
	r, closer, err := open(path)
	if err != nil {
		return "", false
	}
	defer closer()
	head := make([]byte, 1<<16)
	n, _ := io.ReadFull(r, head)
	return DetectBytes(head[:n])
}

// DetectBytes is Detect on a file's first bytes.
func DetectBytes(head []byte) (Format, bool) {
	has := func(k string) bool { return bytes.Contains(head, []byte(`"`+k+`"`)) }
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		switch {
		case has("requests") && (has("block_size") || has("hash_ids")):
			return Weka, true
		case has("round_index") && has("session_id"):
			return TraceLab, true
		case has("chat_id") && has("parent_chat_id"):
			return Bailian, true
		}
		return "", false
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if bytes.Contains(line, []byte("round_idx")) && bytes.Contains(line, []byte("tool_wait_after_ms")) {
		return TraceLab, true
	}
	return "", false
}

// Load reads the trace at path in format f.
func Load(path string, f Format) (*Trace, error) {
	r, closer, err := open(path)
	if err != nil {
		return nil, err
	}
	defer closer()
	var t *Trace
	switch f {
	case Weka:
		t, err = ReadWeka(r)
	case TraceLab:
		t, err = ReadTraceLab(r)
	case Bailian:
		t, err = ReadBailian(r)
	default:
		return nil, fmt.Errorf("%s: not an agentic format", f)
	}
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
