package agentic

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/fineserve-gen/fineserve-gen/pkg/prefix"
)

// Detect reports the agentic format of the trace at path, from its first
// object's keys (JSON) or its header (CSV), and false when it is none.
func Detect(path string) (Format, bool) {
	r, err := prefix.Open(path)
	if err != nil {
		return "", false
	}
	defer r.Close()
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
	r, err := prefix.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
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
	if errors.Is(err, ErrEmpty) && t != nil && t.SkippedCount > 0 {
		// Why: every entry was skipped.
		return t, fmt.Errorf("%s: %w: %d unusable entr(ies) skipped; first: %v", path, err, t.SkippedCount, t.FirstSkip())
	}
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
