package replay

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Load reads the trace file at path (CSV or JSON Lines, optionally gzipped)
// in the format o names or the one its extension and header show. Unusable
// rows are skipped and counted in Trace.Skipped (an error with Strict);
// the rows are sorted by time and made relative to the first.
func Load(path string, o Options) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	return Read(f, path, o)
}

// Read is Load from a reader; name (a file name, or "") picks the syntax by
// extension and names the input in messages.
func Read(r io.Reader, name string, o Options) (*Trace, error) {
	label := name
	if label == "" {
		label = "trace"
	}
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("replay: %s: %w", label, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
		name = strings.TrimSuffix(name, ".gz")
	}
	if bom, _ := br.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
		br.Discard(3)
	}
	t := &Trace{Path: label}
	first, err := firstLine(br)
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", label, err)
	}
	jsonl := isJSONL(name, first)
	if o.Format == GenericCSV || o.Format == AzureLLM || o.Format == AzureLMM || o.Format == BurstGPT || o.Format == ScheduleCSV || o.Format == FineServe || o.Format == AlibabaLoRA {
		jsonl = false
	} else if o.Format == GenericJSONL || o.Format == Mooncake {
		jsonl = true
	}
	switch {
	case bytes.HasPrefix(bytes.TrimSpace(first), []byte("[")) && o.Format != AlibabaLoRA:
		err = readJSONArray(br, t, &o) // the Alibaba text-to-image trace (alibaba.go)
	case jsonl || (o.Format == AlibabaT2I && len(first) > 0 && first[0] == '{'):
		err = readJSONL(br, t, &o, first)
	default:
		err = readCSV(br, t, &o)
	}
	if err != nil {
		return nil, err
	}
	if t.Len() == 0 {
		why := ""
		if t.Skipped.Rows > 0 {
			why += fmt.Sprintf(" (%d skipped; first: %s)", t.Skipped.Rows, t.Skipped.First)
		}
		if t.Skipped.Failed > 0 {
			why += fmt.Sprintf(" (%d failed requests left out; --keep-failed keeps them)", t.Skipped.Failed)
		}
		if s := &t.Skipped; s.OverLimit > 0 {
			why += fmt.Sprintf(" (%d above the token limit %d, %s; first at line %d; --max-model-len sets it)", s.OverLimit, s.Limit, s.LimitFrom, s.OverLimitLines[0])
		}
		return t, fmt.Errorf("replay: %s: %w%s", label, errNoRows, why)
	}
	return t, nil
}

// firstLine peeks at the first non-empty line without consuming it.
func firstLine(br *bufio.Reader) ([]byte, error) {
	for n := 4096; ; n *= 4 {
		b, err := br.Peek(n)
		trimmed := bytes.TrimLeft(b, " \t\r\n")
		if i := bytes.IndexByte(trimmed, '\n'); i >= 0 {
			return trimmed[:i], nil
		}
		if err != nil || n >= br.Size() {
			if len(trimmed) == 0 {
				if err != nil && !errors.Is(err, io.EOF) {
					return nil, err
				}
				return nil, errors.New("empty file")
			}
			return trimmed, nil
		}
	}
}

func isJSONL(name string, first []byte) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jsonl", ".ndjson":
		return true
	case ".csv", ".tsv":
		return false
	}
	return len(first) > 0 && first[0] == '{'
}

// Field slots of a row.
const (
	fTS = iota
	fIn
	fOut
	fModel
	fImages
	fBurst
	fBlocks
	nFields
)

// spec is what a format's rows hold: the column (or key) of each field
// ("" when absent) and the timestamp unit.
type spec struct {
	format Format
	unit   Unit
	name   [nFields]string
	// optional marks length columns that may be missing (generic formats).
	optional bool
	// failedZeroOut: an output length of 0 marks a failed request.
	failedZeroOut bool
	// unitRule says how an inferred unit was chosen (generic.go).
	unitRule string
}

// specFor returns f's columns with o's overrides.
func specFor(f Format, o *Options) spec {
	s := spec{format: f}
	switch f {
	case FineServe:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = Micros, "timestamp", "input_length", "output_length"
	case AzureLLM:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = DateTime, "TIMESTAMP", "ContextTokens", "GeneratedTokens"
	case AzureLMM:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = DateTime, "TIMESTAMP", "ContextTokens", "GeneratedTokens"
		s.name[fImages] = "NumImages"
	case Mooncake:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = Millis, "timestamp", "input_length", "output_length"
		s.name[fBlocks] = "hash_ids"
	case BurstGPT:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = Seconds, "Timestamp", "Request tokens", "Response tokens"
		s.name[fModel] = "Model"
		s.failedZeroOut = true
	case ScheduleCSV:
		s.unit, s.name[fTS], s.name[fIn], s.name[fOut] = Seconds, "time_s", "input_len", "output_len"
		s.name[fModel], s.name[fImages], s.name[fBurst] = "model", "num_images", "burst"
	case GenericCSV, GenericJSONL:
		s.optional = true // the columns are found by name (generic.go)
	}
	s.name[fTS] = cmp.Or(o.TimestampColumn, s.name[fTS])
	s.name[fIn] = cmp.Or(o.InputColumn, s.name[fIn])
	s.name[fOut] = cmp.Or(o.OutputColumn, s.name[fOut])
	s.name[fModel] = cmp.Or(o.ModelColumn, s.name[fModel])
	s.unit = cmp.Or(o.Unit, s.unit)
	return s
}

// fieldNames are the fields' names in messages.
var fieldNames = [nFields]string{"timestamp", "input length", "output length", "model", "images", "burst", "hash_ids"}

// detectCSV picks a CSV format from its header.
func detectCSV(header []string, o *Options) (Format, error) {
	has := func(name string) bool { return colIndex(header, name) >= 0 }
	switch {
	case isScheduleCSV(header):
		// A schedule written by --schedule-out, with its optional
		// columns: replaying it decides the endpoints again, and the
		// cuts are not replayed (the replaying run's own --cancel-*
		// options decide).
		return ScheduleCSV, nil
	case has("TIMESTAMP") && has("ContextTokens") && has("GeneratedTokens") && has("NumImages"):
		return AzureLMM, nil
	case has("TIMESTAMP") && has("ContextTokens") && has("GeneratedTokens"):
		return AzureLLM, nil
	case has("Timestamp") && has("Request tokens") && has("Response tokens"):
		return BurstGPT, nil
	case o.TimestampColumn == "" && isLoRAHeader(has):
		return AlibabaLoRA, nil
	case has("input_length") && has("output_length") && (has("timestamp") || o.TimestampColumn != ""):
		return FineServe, nil
	case o.TimestampColumn != "" || findAlias(header, timeAliases) != "":
		return GenericCSV, nil
	}
	return "", noTimeColumn(header)
}

func clipHeader(h []string) string {
	s := strings.Join(h, ",")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// colIndex finds a column by name: exactly, else ignoring case and
// surrounding space.
func colIndex(header []string, name string) int {
	for i, h := range header {
		if h == name {
			return i
		}
	}
	for i, h := range header {
		if strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(name)) {
			return i
		}
	}
	return -1
}

// readCSV reads a CSV trace, one record per line.
func readCSV(br *bufio.Reader, t *Trace, o *Options) error {
	cl := &csvLines{lr: lineReader{br: br}}
	header, err := cl.header(t.Path)
	if err != nil {
		return err
	}
	f := o.Format
	if f == FormatAuto {
		if f, err = detectCSV(header, o); err != nil {
			return fmt.Errorf("replay: %s: %w", t.Path, err)
		}
	}
	if f == Mooncake || f == GenericJSONL || f == AlibabaT2I {
		return fmt.Errorf("replay: %s: --trace-format %s needs a JSON Lines file", t.Path, f)
	}
	if f == AlibabaLoRA {
		return readLoRA(cl, header, t, o)
	}
	sp := specFor(f, o)
	t.Format = f
	if sp.optional {
		if err := sp.resolveGeneric(header, o); err != nil {
			return fmt.Errorf("replay: %s: line 1: %w", t.Path, err)
		}
	}
	var idx [nFields]int
	var missing []string
	for k := range nFields {
		idx[k] = -1
		if sp.name[k] == "" {
			continue
		}
		idx[k] = colIndex(header, sp.name[k])
		if idx[k] < 0 {
			given := (k == fTS && o.TimestampColumn != "") || (k == fIn && o.InputColumn != "") ||
				(k == fOut && o.OutputColumn != "") || (k == fModel && o.ModelColumn != "")
			if k == fTS || given || !sp.optional {
				missing = append(missing, fmt.Sprintf("%s column %q", fieldNames[k], sp.name[k]))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("replay: %s: line 1: %s format: no %s in the header %q", t.Path, f, strings.Join(missing, ", no "), clipHeader(header))
	}
	if sp.unit == UnitDefault {
		vals := sampleCSV(br, idx[fTS])
		if err := sp.inferUnit(vals); err != nil {
			return fmt.Errorf("replay: %s: %w", t.Path, err)
		}
	}
	p := newRowParser(t, o, sp, columns{
		in: idx[fIn] >= 0, out: idx[fOut] >= 0, images: idx[fImages] >= 0,
		model: idx[fModel] >= 0, burst: idx[fBurst] >= 0,
	})
	if sp.optional {
		t.Detected = sp.describe(idx[fIn] >= 0, idx[fOut] >= 0)
	}
	var rec []string
	get := columnGetter(idx[:], &rec)
	err = eachCSVRecord(cl, t, p.b, func(line int, fields []string) error {
		rec = fields
		return p.parse(line, get, nil)
	})
	return p.b.end(err)
}

// eachCSVRecord calls fn with every record of cl and its line; a malformed
// line is skipped and counted as one row (an error in strict mode).
func eachCSVRecord(cl *csvLines, t *Trace, b *builder, fn func(line int, rec []string) error) error {
	for {
		rec, line, lineErr, err := cl.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("replay: %s: line %d: %w", t.Path, line, err)
		}
		if lineErr != nil {
			t.Rows++
			if err := b.skip(line, "", lineErr); err != nil {
				return err
			}
			continue
		}
		if err := fn(line, rec); err != nil {
			return err
		}
	}
}

// rowParser turns fields into stored rows, following a spec.
type rowParser struct {
	t    *Trace
	o    *Options
	sp   spec
	b    *builder
	r    row
	unit Unit
}

func newRowParser(t *Trace, o *Options, sp spec, c columns) *rowParser {
	t.Unit = sp.unit
	return &rowParser{t: t, o: o, sp: sp, b: newBuilder(t, o, c), unit: sp.unit}
}

// parse reads one row through get (field slot → text, present) and, for
// JSONL, blocks (the hash_ids, already parsed). It returns an error only
// when the row is unusable in strict mode, or the unit cannot be told.
func (p *rowParser) parse(line int, get func(k int) (string, bool), blocks func(r *row) error) error {
	p.t.Rows++
	r := &p.r
	*r = row{line: line, burst: -1, blocks: r.blocks[:0]}
	ts, ok := get(fTS)
	if !ok {
		return p.b.skip(line, p.sp.name[fTS], errMissing)
	}
	at, err := parseTimestamp(ts, p.unit)
	if err != nil {
		return p.b.skip(line, p.sp.name[fTS], err)
	}
	r.at = at
	for _, k := range [...]int{fIn, fOut, fImages, fBurst} {
		if p.sp.name[k] == "" {
			continue
		}
		s, ok := get(k)
		if !ok {
			if !p.colPresent(k) {
				continue
			}
			return p.b.skip(line, p.sp.name[k], errMissing)
		}
		if k == fBurst {
			v, err := parseDecimal(trimSpace(s), 0)
			if err != nil {
				return p.b.skip(line, p.sp.name[k], err)
			}
			r.burst = v
			continue
		}
		v, err := parseCount(s)
		if err != nil {
			return p.b.skip(line, p.sp.name[k], err)
		}
		switch k {
		case fIn:
			r.in = v
		case fOut:
			r.out = v
		case fImages:
			r.images = v
		}
	}
	if p.sp.name[fModel] != "" {
		if s, ok := get(fModel); ok {
			r.model = trimSpace(s)
		}
	}
	if blocks != nil {
		if err := blocks(r); err != nil {
			return p.b.skip(line, p.sp.name[fBlocks], err)
		}
	}
	if p.sp.failedZeroOut && r.out == 0 && !p.o.KeepFailed {
		p.t.Skipped.Failed++
		return nil
	}
	return p.b.add(r)
}

// colPresent reports whether the trace carries field k at all.
func (p *rowParser) colPresent(k int) bool {
	switch k {
	case fIn:
		return p.t.HasInput
	case fOut:
		return p.t.HasOutput
	case fImages:
		return p.t.images != nil
	case fBurst:
		return p.t.burst != nil
	}
	return false
}

var errMissing = errors.New("missing")

// columnGetter returns the field of the current record (*rec) in the column
// idx[k] holds for field k; false for a column the header lacks (-1) or the
// record is too short to hold.
func columnGetter(idx []int, rec *[]string) func(k int) (string, bool) {
	return func(k int) (string, bool) {
		i := idx[k]
		if i < 0 || i >= len(*rec) {
			return "", false
		}
		return (*rec)[i], true
	}
}

// isScheduleCSV reports whether header is a schedule CSV's
// (--schedule-out), with any of its optional columns.
func isScheduleCSV(header []string) bool {
	_, ok := arrival.ParseCSVHeader(strings.Join(header, ","))
	return ok
}
