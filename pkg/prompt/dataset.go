package prompt

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Dataset holds real prompt texts (ShareGPT) and their lengths in words,
// the unit the tool sizes text prompts in.
type Dataset struct {
	// Prompts are the first user turns; Outputs the lengths of the first
	// replies (or the sharegpt_pre output_length), in words.
	Prompts []string
	Outputs []int
	// Skipped counts entries without two turns or with empty text.
	Skipped int
}

// Len is the number of prompts.
func (d *Dataset) Len() int { return len(d.Prompts) }

// Lengths returns (input, output) pairs in dataset order, as words.
func (d *Dataset) Lengths(fixedOutput int) [][2]int {
	out := make([][2]int, len(d.Prompts))
	for i, p := range d.Prompts {
		o := d.Outputs[i]
		if fixedOutput > 0 {
			o = fixedOutput
		}
		out[i] = [2]int{CountWords(p), max(o, 1)}
	}
	return out
}

// LoadDataset reads FineServe's dataset files: "sharegpt" (a JSON array of
// {"conversations": [{"from", "value"}, …]}, also "conversation") or
// "sharegpt_pre" (a JSON array of {"input_text", "output_length"}). Entries
// are streamed, so a large file is never held as one value. limit > 0 stops
// after that many usable entries.
func LoadDataset(path, kind string, limit int) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	d, err := ReadDataset(f, kind, limit)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return d, nil
}

// ReadDataset is LoadDataset on a reader.
func ReadDataset(r io.Reader, kind string, limit int) (*Dataset, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("want a JSON array: %w", err)
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '[' {
		return nil, fmt.Errorf("want a JSON array, got %v", tok)
	}
	d := &Dataset{}
	for i := 0; dec.More(); i++ {
		var e struct {
			Conversations []struct {
				Value string `json:"value"`
			} `json:"conversations"`
			Conversation []struct {
				Value string `json:"value"`
			} `json:"conversation"`
			InputText    string `json:"input_text"`
			OutputLength *int   `json:"output_length"`
		}
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("entry %d (near byte %d): %w", i, dec.InputOffset(), err)
		}
		switch kind {
		case "sharegpt_pre":
			if strings.TrimSpace(e.InputText) == "" {
				d.Skipped++
				continue
			}
			out := CountWords(e.InputText) / 2
			if e.OutputLength != nil {
				out = *e.OutputLength
			}
			if out < 1 {
				d.Skipped++
				continue
			}
			d.Prompts = append(d.Prompts, e.InputText)
			d.Outputs = append(d.Outputs, out)
		default:
			conv := e.Conversations
			if conv == nil {
				conv = e.Conversation
			}
			if len(conv) < 2 || strings.TrimSpace(conv[0].Value) == "" {
				d.Skipped++
				continue
			}
			d.Prompts = append(d.Prompts, conv[0].Value)
			d.Outputs = append(d.Outputs, CountWords(conv[1].Value))
		}
		if limit > 0 && len(d.Prompts) >= limit {
			break
		}
	}
	if len(d.Prompts) == 0 {
		return nil, errors.New("no usable prompts (entries need two conversation turns, or input_text)")
	}
	return d, nil
}

// CountWords counts whitespace-separated words: how the built-in server
// counts the tokens of a text prompt.
func CountWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); i++ {
		sp := s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r' || s[i] == '\v' || s[i] == '\f'
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// appendText writes prompt i mod Len, trimmed or repeated to n words and
// JSON-escaped (FineServe's adjust_prompt_to_target_length, in words).
func (d *Dataset) appendText(dst []byte, i int64, n int) []byte {
	p := d.Prompts[int(i%int64(len(d.Prompts)))]
	written := 0
	for written < n {
		start := written
		for _, w := range strings.Fields(p) {
			if written > 0 {
				dst = append(dst, ' ')
			}
			dst = appendEscaped(dst, w)
			written++
			if written == n {
				break
			}
		}
		if written == start { // a prompt of only spaces cannot fill n
			break
		}
	}
	return dst
}
