package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fastjson"
)

// MaxRecordBytes bounds one record of a trace: a CSV or JSON Lines line,
// an element of a JSON array. A longer one is skipped as unusable (its
// rest is read and dropped, never held), so no line costs more memory
// than this.
const MaxRecordBytes = 1 << 20

const maxLineBytes = MaxRecordBytes

var errLineTooLong = fmt.Errorf("longer than %d MiB (the limit of one record)", maxLineBytes>>20)

// lineReader yields the lines of a stream without their newline.
type lineReader struct {
	br   *bufio.Reader
	long []byte
}

// next returns the next line; tooLong reports a line cut at maxLineBytes
// (its rest is discarded). It returns io.EOF after the last line.
func (lr *lineReader) next() (line []byte, tooLong bool, err error) {
	b, err := lr.br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(b) > 0) {
		return bytes.TrimRight(b, "\r\n"), false, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, false, err
	}
	lr.long = append(lr.long[:0], b...)
	for {
		b, err = lr.br.ReadSlice('\n')
		if len(lr.long) < maxLineBytes {
			lr.long = append(lr.long, b...)
		} else {
			tooLong = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, false, err
		}
		if len(lr.long) > maxLineBytes {
			tooLong = true
		}
		return bytes.TrimRight(lr.long, "\r\n"), tooLong, nil
	}
}

// detectJSONL picks a JSON Lines format from the keys of its first object.
func detectJSONL(first []byte, o *Options) (Format, error) {
	var p fastjson.Parser
	v, err := p.ParseBytes(first)
	if err != nil || v.Type() != fastjson.TypeObject {
		if o.TimestampColumn != "" {
			return GenericJSONL, nil
		}
		return "", errors.New("line 1: not a JSON object; give --trace-format")
	}
	has := func(k string) bool { return v.Exists(k) }
	keys := objectKeys(v)
	switch {
	case isT2IObject(v) && o.TimestampColumn == "":
		return AlibabaT2I, nil
	case has("hash_ids") || (has("timestamp") && has("input_length") && has("output_length") && o.TimestampColumn == ""):
		return Mooncake, nil
	case o.TimestampColumn != "" || findAlias(keys, timeAliases) != "":
		return GenericJSONL, nil
	}
	return "", noTimeColumn(keys)
}

// objectKeys lists the keys of a JSON object (nil for any other value).
func objectKeys(v *fastjson.Value) []string {
	var keys []string
	if v == nil || v.Type() != fastjson.TypeObject {
		return nil
	}
	v.GetObject().Visit(func(k []byte, _ *fastjson.Value) { keys = append(keys, string(k)) })
	return keys
}

// readJSONL reads a JSON Lines trace: one object per line.
func readJSONL(br *bufio.Reader, t *Trace, o *Options, first []byte) error {
	f := o.Format
	if f == FormatAuto {
		var err error
		if f, err = detectJSONL(first, o); err != nil {
			return fmt.Errorf("replay: %s: %w", t.Path, err)
		}
	}
	if f == AlibabaT2I {
		return readT2ILines(br, t, o)
	}
	if f != Mooncake && f != GenericJSONL {
		return fmt.Errorf("replay: %s: --trace-format %s needs a CSV file", t.Path, f)
	}
	sp := specFor(f, o)
	t.Format = f
	// Which fields the trace carries: all of a named format's; for a
	// generic one, those the first object has (or the flags name).
	var fp fastjson.Parser
	fv, ferr := fp.ParseBytes(first)
	if sp.optional {
		if err := sp.resolveGeneric(objectKeys(fv), o); err != nil {
			return fmt.Errorf("replay: %s: line 1: %w", t.Path, err)
		}
	}
	if sp.unit == UnitDefault {
		if err := sp.inferUnit(sampleJSONL(br, sp.name[fTS])); err != nil {
			return fmt.Errorf("replay: %s: %w", t.Path, err)
		}
	}
	present := func(k int) bool {
		return sp.name[k] != "" && ferr == nil && fv.Type() == fastjson.TypeObject && fv.Exists(sp.name[k])
	}
	// Mooncake's hash_ids are optional as a whole (other Mooncake-style
	// traces lack them), not row by row.
	c := columns{in: true, out: true, blocks: present(fBlocks) || (ferr != nil && sp.name[fBlocks] != "")}
	if sp.optional {
		c.in = present(fIn) || o.InputColumn != ""
		c.out = present(fOut) || o.OutputColumn != ""
		c.model = o.ModelColumn != ""
	} else {
		c.model = sp.name[fModel] != ""
	}
	p := newRowParser(t, o, sp, c)
	if sp.optional {
		t.Detected = sp.describe(c.in, c.out)
	}
	var v *fastjson.Value
	var num []byte
	get := func(k int) (string, bool) {
		x := v.Get(sp.name[k])
		if x == nil {
			return "", false
		}
		switch x.Type() {
		case fastjson.TypeString:
			return string(x.GetStringBytes()), true
		case fastjson.TypeNull:
			return "", true
		}
		num = x.MarshalTo(num[:0])
		return string(num), true
	}
	blocks := func(r *row) error {
		x := v.Get(sp.name[fBlocks])
		if x == nil {
			return errMissing
		}
		arr, err := x.Array()
		if err != nil {
			return errors.New("not a list")
		}
		for _, e := range arr {
			id, err := e.Uint64()
			if err != nil {
				return fmt.Errorf("block id %s: want an integer ≥ 0", clip(string(e.MarshalTo(nil))))
			}
			r.blocks = append(r.blocks, id)
		}
		return nil
	}
	if !c.blocks {
		blocks = nil
	}
	err := eachJSONObject(br, t, p.b, func(line int, obj *fastjson.Value) error {
		v = obj
		return p.parse(line, get, blocks)
	})
	return p.b.end(err)
}

// eachJSONObject calls fn with every non-blank line of a JSON Lines file,
// parsed, and its line number; lines too long or not a JSON object are
// skipped and counted (an error in strict mode). The value is valid during
// the call.
func eachJSONObject(br *bufio.Reader, t *Trace, b *builder, fn func(line int, v *fastjson.Value) error) error {
	var jp fastjson.Parser
	lr := lineReader{br: br}
	for line := 1; ; line++ {
		raw, tooLong, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("replay: %s: line %d: %w", t.Path, line, err)
		}
		if tooLong {
			t.Rows++
			if err := b.skip(line, "", errLineTooLong); err != nil {
				return err
			}
			continue
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		v, err := jp.ParseBytes(raw)
		if err == nil && v.Type() != fastjson.TypeObject {
			err = errors.New("not a JSON object")
		}
		if err != nil {
			t.Rows++
			if err := b.skip(line, "", fmt.Errorf("invalid JSON: %s", clip(err.Error()))); err != nil {
				return err
			}
			continue
		}
		if err := fn(line, v); err != nil {
			return err
		}
	}
}
