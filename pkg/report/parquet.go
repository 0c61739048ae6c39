package report

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/valyala/fastjson"
)

// The per-request Parquet file (--results-parquet) is the records file as
// a typed table for pandas, Polars, DuckDB or Spark: one row per finished
// request, one column per field of the JSON Lines record (recordFields:
// the same names, in the same order, the agentic and HTTP-phase fields
// included), each typed by what it holds (ParquetKind): times as DOUBLE in
// the unit their name says (_s seconds, _ms milliseconds), counts and
// codes as INT64, text as UTF-8 strings, http_reused as BOOLEAN, and
// itl_ms as a LIST of DOUBLE (the gaps between tokens, in ms). Every
// scalar column is nullable: a field the record leaves out, or writes as
// null, is null. Pages are Snappy-compressed (every Parquet reader has
// it).
//
// The rows stream: the record writer's goroutine (RecordWriter) hands each
// chunk of encoded records to the Parquet writer, which writes a row group
// whenever ParquetRowGroupRows rows or ParquetRowGroupBytes of records
// have gathered, so memory stays bounded however long the run; the file's
// footer, and so the file, is complete when the run ends. The values are
// read from the JSON record itself, so they are the JSON Lines file's to
// the digit.

// Row groups are written when either bound is reached.
const (
	ParquetRowGroupRows  = 65536
	ParquetRowGroupBytes = 32 << 20 // of encoded JSON records
)

// ParquetKind is the Parquet type of a record field.
type ParquetKind uint8

const (
	ParquetInt64      ParquetKind = iota // INT64
	ParquetDouble                        // DOUBLE
	ParquetString                        // BYTE_ARRAY, UTF-8
	ParquetBool                          // BOOLEAN
	ParquetDoubleList                    // LIST of DOUBLE
)

// ParquetKindOf is the Parquet type of the record's field key: itl_ms a
// list, the text fields strings, http_reused a boolean, a time (_s, _ms)
// a double, any other field (counts, codes, indices) an integer.
func ParquetKindOf(key string) ParquetKind {
	switch key {
	case "itl_ms":
		return ParquetDoubleList
	case "request_id", "model", "error_class", "error", "outcome", "structured":
		return ParquetString
	case "http_reused":
		return ParquetBool
	}
	if strings.HasSuffix(key, "_ms") || strings.HasSuffix(key, "_s") {
		return ParquetDouble
	}
	return ParquetInt64
}

// parquetColumn is a column of the file: a record field and its type.
type parquetColumn struct {
	key  string
	kind ParquetKind
}

var parquetColumns = func() []parquetColumn {
	cols := make([]parquetColumn, len(recordFields))
	for i, f := range recordFields {
		cols[i] = parquetColumn{f.key, ParquetKindOf(f.key)}
	}
	return cols
}()

// ParquetColumns are the file's column names, in order.
func ParquetColumns() []string {
	names := make([]string, len(parquetColumns))
	for i, c := range parquetColumns {
		names[i] = c.key
	}
	return names
}

// parquetSchema is the file's schema, made from a struct type with a field
// per column so the columns keep the record's order (a parquet.Group
// orders its fields by name).
var parquetSchema = func() *parquet.Schema {
	fields := make([]reflect.StructField, len(parquetColumns))
	for i, c := range parquetColumns {
		var t reflect.Type
		tag := c.key + ",optional"
		switch c.kind {
		case ParquetInt64:
			t = reflect.TypeFor[*int64]()
		case ParquetDouble:
			t = reflect.TypeFor[*float64]()
		case ParquetString:
			t = reflect.TypeFor[*string]()
		case ParquetBool:
			t = reflect.TypeFor[*bool]()
		case ParquetDoubleList:
			t, tag = reflect.TypeFor[[]float64](), c.key+",list"
		}
		fields[i] = reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: t, Tag: reflect.StructTag(`parquet:"` + tag + `"`)}
	}
	return parquet.SchemaOf(reflect.New(reflect.StructOf(fields)).Interface())
}()

// CreateRecordsParquet creates (truncates) path for the per-request
// Parquet file; records are added as CreateRecords's are, and Close writes
// the last row group and the footer.
func CreateRecordsParquet(path string, now func() time.Time) (*RecordWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	pq := newParquetRecords(bw)
	rw := newRecordWriter(pq, now, AppendRecord, nil)
	rw.path = path
	rw.close = func() error {
		err := pq.Close()
		if e := bw.Flush(); err == nil {
			err = e
		}
		if e := f.Sync(); err == nil {
			err = e
		}
		if e := f.Close(); err == nil {
			err = e
		}
		return err
	}
	return rw, nil
}

// NewRecordWriterParquet returns a writer of records as Parquet rows to w
// (see NewRecordWriter); its Close completes the file (and does not close
// w).
func NewRecordWriterParquet(w io.Writer, now func() time.Time) *RecordWriter {
	pq := newParquetRecords(w)
	rw := newRecordWriter(pq, now, AppendRecord, nil)
	rw.close = pq.Close
	return rw
}

// parquetRecords turns JSON records written to it (whole lines) into rows
// of a Parquet file. It is written by one goroutine at a time.
type parquetRecords struct {
	pw        *parquet.Writer
	parser    fastjson.Parser
	partial   []byte // a line not yet ended (never, from RecordWriter)
	rows      []parquet.Row
	arena     []byte // the batch's strings (a parsed value's bytes are the parser's)
	pending   int    // bytes of records since the last row group
	groupRows int    // rows since the last row group
	err       error
}

const parquetBatch = 256 // rows handed to the Parquet writer at once

func newParquetRecords(w io.Writer) *parquetRecords {
	pw := parquet.NewWriter(w, parquetSchema,
		parquet.Compression(&snappy.Codec{}),
		parquet.CreatedBy("fineserve-gen", "", ""))
	return &parquetRecords{pw: pw, rows: make([]parquet.Row, 0, parquetBatch)}
}

// Write takes whole records (JSON lines) and adds them as rows.
func (p *parquetRecords) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n := len(b)
	if len(p.partial) > 0 {
		b = append(p.partial, b...)
		p.partial = p.partial[:0]
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial = append(p.partial, b...)
			break
		}
		if err := p.add(b[:i]); err != nil {
			p.err = err
			return 0, err
		}
		b = b[i+1:]
		if p.pending >= ParquetRowGroupBytes || p.groupRows >= ParquetRowGroupRows { // a row group's worth, however large the chunk
			if err := p.flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := p.writeBatch(); err != nil {
		p.err = err
		return 0, err
	}
	return n, nil
}

// flush writes the rows so far as a row group.
func (p *parquetRecords) flush() error {
	p.pending, p.groupRows = 0, 0
	if err := p.writeBatch(); err != nil {
		p.err = err
		return err
	}
	if err := p.pw.Flush(); err != nil {
		p.err = err
		return err
	}
	return nil
}

// add parses one record and adds its row to the batch.
func (p *parquetRecords) add(line []byte) error {
	v, err := p.parser.ParseBytes(line)
	if err != nil {
		return fmt.Errorf("parquet: a record does not parse: %w", err)
	}
	p.pending += len(line) + 1
	p.groupRows++
	k := len(p.rows)
	p.rows = p.rows[:k+1]
	row := p.rows[k][:0]
	for col, c := range parquetColumns {
		x := v.Get(c.key)
		if c.kind == ParquetDoubleList {
			var gaps []*fastjson.Value
			if x != nil && x.Type() == fastjson.TypeArray {
				gaps, _ = x.Array()
			}
			if len(gaps) == 0 {
				row = append(row, parquet.NullValue().Level(0, 0, col))
			}
			for j, g := range gaps {
				row = append(row, parquet.DoubleValue(g.GetFloat64()).Level(min(j, 1), 1, col))
			}
			continue
		}
		if x == nil || x.Type() == fastjson.TypeNull {
			row = append(row, parquet.NullValue().Level(0, 0, col))
			continue
		}
		var val parquet.Value
		switch c.kind {
		case ParquetInt64:
			val = parquet.Int64Value(x.GetInt64())
		case ParquetDouble:
			val = parquet.DoubleValue(x.GetFloat64())
		case ParquetString:
			start := len(p.arena)
			p.arena = append(p.arena, x.GetStringBytes()...)
			val = parquet.ByteArrayValue(p.arena[start:len(p.arena):len(p.arena)])
		case ParquetBool:
			val = parquet.BooleanValue(x.Type() == fastjson.TypeTrue)
		}
		row = append(row, val.Level(0, 1, col))
	}
	p.rows[k] = row
	if len(p.rows) == cap(p.rows) {
		return p.writeBatch()
	}
	return nil
}

// writeBatch hands the batch's rows to the Parquet writer.
func (p *parquetRecords) writeBatch() error {
	if len(p.rows) == 0 {
		return nil
	}
	_, err := p.pw.WriteRows(p.rows)
	p.rows = p.rows[:0]
	p.arena = p.arena[:0]
	return err
}

// Close writes what is left and the file's footer.
func (p *parquetRecords) Close() error {
	if p.err != nil {
		return p.err
	}
	if len(p.partial) > 0 {
		p.err = fmt.Errorf("parquet: a record without its end (%d bytes)", len(p.partial))
		return p.err
	}
	if err := p.writeBatch(); err != nil {
		p.err = err
		return err
	}
	p.err = p.pw.Close()
	return p.err
}
