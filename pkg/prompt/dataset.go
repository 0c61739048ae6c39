package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
)

// Dataset holds real prompt texts (ShareGPT) and their lengths in the unit
// text prompts are sized in: words (whitespace-separated, as the built-in
// server counts), a tokenizer's tokens (--tokenizer) or the server's
// (--tokenize-via-server).
type Dataset struct {
	// Prompts are the first user turns; Inputs their lengths; Outputs the
	// lengths of the first replies (or the sharegpt_pre output_length).
	Prompts []string
	Inputs  []int
	Outputs []int
	// Skipped counts entries without two turns or with empty text.
	Skipped int
	// Units is the unit of Inputs and Outputs (see Sizing).
	Units string
	tok   Tokens // nil: prompts are cut in words
}

// Units text prompts are sized in (the summary's prompt_units).
const (
	UnitWords     = "words"
	UnitTokenizer = "tokenizer"
	UnitServer    = "server"
)

// Tokens is a tokenizer text prompts are counted and cut in
// (*tokenizer.Tokenizer).
type Tokens interface {
	// Count is the number of tokens of s.
	Count(s string) int
	// Cut returns a prefix of s of n tokens (fewer if s has fewer) and
	// its count.
	Cut(s string, n int) (string, int)
}

// Sizing is how a dataset's prompts and replies are counted: with Tokens,
// else with Count (the server's /tokenize), else in words.
type Sizing struct {
	Tokens Tokens
	Count  func(string) (int, error)
}

// Units names the unit s sizes in.
func (s Sizing) Units() string {
	switch {
	case s.Tokens != nil:
		return UnitTokenizer
	case s.Count != nil:
		return UnitServer
	}
	return UnitWords
}

func (s Sizing) count(text string) (int, error) {
	switch {
	case s.Tokens != nil:
		return s.Tokens.Count(text), nil
	case s.Count != nil:
		return s.Count(text)
	}
	return CountWords(text), nil
}

// Len is the number of prompts.
func (d *Dataset) Len() int { return len(d.Prompts) }

// Lengths returns (input, output) pairs in dataset order, as words.
func (d *Dataset) Lengths(fixedOutput int) [][2]int {
	out := make([][2]int, len(d.Prompts))
	for i := range d.Prompts {
		o := d.Outputs[i]
		if fixedOutput > 0 {
			o = fixedOutput
		}
		out[i] = [2]int{d.Inputs[i], max(o, 1)}
	}
	return out
}

// Bounds of a dataset file: one array element (a conversation) and the
// prompt text kept from the whole file. A file beyond either is an error
// naming the element, never memory without bound.
const (
	MaxDatasetElement = 16 << 20
	MaxDatasetText    = 512 << 20
)

// maxDatasetText is MaxDatasetText, lowered by tests.
var maxDatasetText = MaxDatasetText

var errElementTooLarge = fmt.Errorf("an element larger than %d MiB (the limit of one dataset entry)", MaxDatasetElement>>20)

// LoadDataset reads FineServe's dataset files: "sharegpt" (a JSON array of
// {"conversations": [{"from", "value"}, …]}, also "conversation") or
// "sharegpt_pre" (a JSON array of {"input_text", "output_length"}). Entries
// are streamed, so a large file is never held as one value. limit > 0 stops
// after that many usable entries.
func LoadDataset(path, kind string, limit int) (*Dataset, error) {
	return LoadDatasetSized(path, kind, limit, Sizing{})
}

// LoadDatasetSized is LoadDataset with the prompts and replies counted as
// sz says.
func LoadDatasetSized(path, kind string, limit int, sz Sizing) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer f.Close()
	d, err := ReadDatasetSized(f, kind, limit, sz)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return d, nil
}

// ReadDataset is LoadDataset on a reader. Errors name the line, the array
// element and the field where the problem is.
func ReadDataset(r io.Reader, kind string, limit int) (*Dataset, error) {
	return ReadDatasetSized(r, kind, limit, Sizing{})
}

// ReadDatasetSized is ReadDataset with the prompts and replies counted as
// sz says.
func ReadDatasetSized(r io.Reader, kind string, limit int, sz Sizing) (*Dataset, error) {
	d := &Dataset{Units: sz.Units(), tok: sz.Tokens}
	text := 0 // bytes of prompt text kept
	err := eachEntry(r, func(e *datasetEntry, at entryAt) (bool, error) {
		switch kind {
		case "sharegpt_pre":
			out, ok := e.preOutput()
			if !ok {
				d.Skipped++
				return false, nil
			}
			d.Prompts = append(d.Prompts, e.InputText)
			d.Outputs = append(d.Outputs, out)
		default:
			conv := e.conversation()
			if len(conv) < 2 || strings.TrimSpace(conv[0].Value) == "" {
				d.Skipped++
				return false, nil
			}
			out, err := sz.count(conv[1].Value)
			if err != nil {
				return false, at.errorf("the reply: %v", err)
			}
			d.Prompts = append(d.Prompts, conv[0].Value)
			d.Outputs = append(d.Outputs, out)
		}
		in, err := sz.count(d.Prompts[len(d.Prompts)-1])
		if err != nil {
			return false, at.errorf("the prompt: %v", err)
		}
		d.Inputs = append(d.Inputs, in)
		if kind == "sharegpt_pre" && e.OutputLength == nil {
			d.Outputs[len(d.Outputs)-1] = max(in/2, 1) // half the prompt, in its unit
		}
		if text += len(d.Prompts[len(d.Prompts)-1]); text > maxDatasetText {
			return false, at.errorf("the prompts kept so far exceed %d MiB of text (the limit of a dataset): use a smaller file", maxDatasetText>>20)
		}
		return limit > 0 && len(d.Prompts) >= limit, nil
	})
	if err != nil {
		return nil, err
	}
	if len(d.Prompts) == 0 {
		return nil, errors.New("no usable prompts (entries need two conversation turns, or input_text)")
	}
	return d, nil
}

// eofError names a file that ends too early.
func eofError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the file ends early: %w", io.ErrUnexpectedEOF)
	}
	return err
}

// lineCounter passes reads through to a JSON decoder and keeps the bytes
// the decoder may still report an offset in, so that offsets become line
// numbers. Memory: the bytes since the last release (about one element).
type lineCounter struct {
	r     io.Reader
	buf   []byte // the bytes from offset base on
	base  int64
	lines int // newlines before base
}

func (c *lineCounter) Read(p []byte) (int, error) {
	room := MaxDatasetElement + 1 - len(c.buf)
	if room <= 0 {
		return 0, errElementTooLarge
	}
	n, err := c.r.Read(p[:min(len(p), room)])
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

func (c *lineCounter) index(off int64) int {
	return int(min(max(off-c.base, 0), int64(len(c.buf))))
}

// line returns the 1-based line of byte offset off (not before the last
// release).
func (c *lineCounter) line(off int64) int {
	return c.lines + bytes.Count(c.buf[:c.index(off)], []byte{'\n'}) + 1
}

// release forgets the bytes before offset off.
func (c *lineCounter) release(off int64) {
	k := c.index(off)
	c.lines += bytes.Count(c.buf[:k], []byte{'\n'})
	c.buf = c.buf[k:]
	c.base += int64(k)
}

// entryError places the error of decoding array element i, which starts
// after offset start, on its line and names the field.
func (c *lineCounter) entryError(start int64, i int, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the element"
		}
		return fmt.Errorf("line %d: element [%d]: %s: want %s, got a JSON %s", c.line(start+te.Offset-1), i, field, jsonKind(te.Type.Kind()), te.Value)
	}
	// The decoder's syntax error offsets do not count the bytes it skipped
	// between elements: find the error again in the element's own bytes.
	v := bytes.TrimLeft(c.buf[c.index(start):], ", \t\r\n")
	k := len(c.buf) - len(v)
	var raw json.RawMessage
	var se *json.SyntaxError
	if rerr := json.NewDecoder(bytes.NewReader(v)).Decode(&raw); errors.As(rerr, &se) && se.Offset > 0 {
		return fmt.Errorf("line %d: element [%d]: %w", c.line(c.base+int64(k)+se.Offset-1), i, err)
	}
	return fmt.Errorf("line %d: element [%d]: %w", c.line(c.base+int64(len(c.buf))), i, eofError(err))
}

// jsonKind names what a Go kind is in JSON.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Slice:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return k.String()
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

// appendText writes prompt i mod Len, trimmed or repeated to n words (n
// tokens with a tokenizer) and JSON-escaped (FineServe's
// adjust_prompt_to_target_length). Negative indexes (the warm-up's) wrap
// around like any other.
func (d *Dataset) appendText(dst []byte, i int64, n int) []byte {
	k := d.index(i)
	if d.Units != UnitWords && d.Units != "" {
		if n == d.Inputs[k] {
			return appendEscaped(dst, d.Prompts[k]) // its own length: as it is
		}
		if d.tok == nil {
			// Sized by the server, cut here in words: n tokens are this
			// prompt's words per token times n, near n tokens.
			n = max(1, int(math.Round(float64(n)*float64(CountWords(d.Prompts[k]))/float64(max(d.Inputs[k], 1)))))
		}
	}
	if d.tok != nil {
		return appendCut(dst, d.tok, n, func(raw []byte, scale int) []byte { return d.appendRaw(raw, i, n, scale) })
	}
	words := strings.Fields(d.Prompts[k])
	written := 0
	for written < n {
		start := written
		for _, w := range words {
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

// index is i mod Len, from 0.
func (d *Dataset) index(i int64) int64 {
	k := i % int64(len(d.Prompts))
	if k < 0 {
		k += int64(len(d.Prompts))
	}
	return k
}

// appendRaw appends prompt i mod Len, unescaped, repeated (joined by a
// space) to about n tokens and more — scale times more copies than a copy
// of its own length each would need: a copy after the first may be a
// token or two shorter, its first word joined to the space before it.
// A tokenizer cuts it to n.
func (d *Dataset) appendRaw(dst []byte, i int64, n, scale int) []byte {
	k := d.index(i)
	copies := 1
	if c := max(d.Inputs[k], 1); n >= c {
		copies = scale * (n/c + 2)
	}
	for j := range copies {
		if j > 0 {
			dst = append(dst, ' ')
		}
		dst = append(dst, d.Prompts[k]...)
	}
	return dst
}

// appendCut appends, escaped, text of exactly n of tok's tokens cut from
// the start of what build appends (given a scale, it appends more text
// for a larger one), scaling up while the text is too short.
func appendCut(dst []byte, tok Tokens, n int, build func(raw []byte, scale int) []byte) []byte {
	bp := scratchPool.Get().(*[]byte)
	raw := (*bp)[:0]
	var cut string
	for scale := 1; scale <= 16; scale *= 2 {
		raw = build(raw[:0], scale)
		var got int
		if cut, got = tok.Cut(string(raw), n); got >= n {
			break
		}
	}
	dst = appendEscaped(dst, cut)
	*bp = raw[:0]
	scratchPool.Put(bp)
	return dst
}

// scratchPool recycles the buffers text is built in before a tokenizer
// cuts it.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// datasetEntry is one element of a dataset file, in either format.
type datasetEntry struct {
	Conversations []struct {
		Value string `json:"value"`
	} `json:"conversations"`
	Conversation []struct {
		Value string `json:"value"`
	} `json:"conversation"`
	InputText    string `json:"input_text"`
	OutputLength *int   `json:"output_length"`
}

// conversation returns the entry's messages ("conversations", else
// "conversation").
func (e *datasetEntry) conversation() []struct {
	Value string `json:"value"`
} {
	if e.Conversations != nil {
		return e.Conversations
	}
	return e.Conversation
}

// preOutput is a sharegpt_pre entry's output length (its output_length,
// else half its words), and whether the entry is usable.
func (e *datasetEntry) preOutput() (int, bool) {
	if strings.TrimSpace(e.InputText) == "" {
		return 0, false
	}
	out := CountWords(e.InputText) / 2
	if e.OutputLength != nil {
		out = *e.OutputLength
	}
	return out, out >= 1
}

// entryAt is where an entry stands in its file, for its errors.
type entryAt struct {
	lc    *lineCounter
	start int64
	index int
}

func (at entryAt) errorf(format string, a ...any) error {
	return fmt.Errorf("line %d: element [%d]: %s", at.lc.line(at.start), at.index, fmt.Sprintf(format, a...))
}

// eachEntry streams the JSON array of a dataset file, handing each element
// to f until f says stop. A file that is not an array, an element that
// does not decode, or an array not closed (unless f stopped) is an error
// naming the line and the element.
func eachEntry(r io.Reader, f func(e *datasetEntry, at entryAt) (stop bool, err error)) error {
	lc := &lineCounter{r: r}
	dec := json.NewDecoder(lc)
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("line %d: want a JSON array: %w", lc.line(dec.InputOffset()), eofError(err))
	}
	if delim, ok := tok.(json.Delim); !ok || delim != '[' {
		return fmt.Errorf("line 1: want a JSON array, got %v", tok)
	}
	i := 0
	for ; dec.More(); i++ {
		var e datasetEntry
		start := dec.InputOffset()
		if err := dec.Decode(&e); err != nil {
			return lc.entryError(start, i, err)
		}
		lc.release(dec.InputOffset())
		if stop, err := f(&e, entryAt{lc, start, i}); err != nil || stop {
			return err
		}
	}
	// The array must be closed: a file cut short is not a smaller dataset.
	end := dec.InputOffset()
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		if err == nil {
			err = fmt.Errorf("unexpected %v", tok)
		}
		return fmt.Errorf("line %d: after element [%d]: want , or ] : %w", lc.line(end), i-1, eofError(err))
	}
	return nil
}
