// Command parquetbench measures the two Go Parquet libraries considered for
// --results-parquet, parquet-go/parquet-go and apache/arrow-go, writing the
// same rows: the per-request record's columns (nullable scalars, the
// inter-token gaps as a list of doubles), Snappy-compressed, in row groups
// of 65,536 rows, flushed as they fill. It prints the time taken, the file's
// size and the process's peak resident memory; run each library in its own
// process so the peaks do not mix (docs/PERFORMANCE.md):
//
//	cd internal/parquetbench && go run . -lib parquet-go -rows 1000000
//	cd internal/parquetbench && go run . -lib arrow -rows 1000000
//
// It is a module of its own so the project's go.mod holds only the library
// chosen.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	aparquet "github.com/apache/arrow-go/v18/parquet"
	acompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"
)

const rowGroup = 65536

// row is one synthetic request record.
type row struct {
	index                                   int64
	scheduled, sent, ttft, e2e              float64
	hasTTFT                                 bool
	itl                                     []float64
	inputLen, outputLen, prompt, completion int64
	cached, images, status, retries         int64
	hasCached                               bool
	model, errorClass, errText              string
}

// columns are the file's columns, in order, with their kinds.
var columns = []struct{ name, kind string }{
	{"index", "int"}, {"scheduled_s", "float"}, {"sent_s", "float"}, {"ttft_ms", "float"},
	{"e2e_ms", "float"}, {"itl_ms", "list"}, {"input_len", "int"}, {"output_len", "int"},
	{"prompt_tokens", "int"}, {"completion_tokens", "int"}, {"cached_tokens", "int"},
	{"images", "int"}, {"model", "string"}, {"status", "int"}, {"error_class", "string"},
	{"error", "string"}, {"retries", "int"},
}

// gen fills r with the i-th record: 8 to 40 output tokens.
func gen(rng *rand.Rand, i int64, r *row) {
	n := 8 + rng.IntN(33)
	r.index = i
	r.scheduled = float64(i) / 2000
	r.sent = r.scheduled + rng.Float64()/1e4
	r.ttft = 20 + rng.Float64()*30
	r.hasTTFT = rng.IntN(100) > 0
	r.itl = r.itl[:0]
	e2e := r.ttft
	for range n - 1 {
		g := 5 + rng.Float64()*10
		r.itl = append(r.itl, g)
		e2e += g
	}
	r.e2e = e2e
	r.inputLen, r.outputLen = int64(100+rng.IntN(1000)), int64(n)
	r.prompt, r.completion = r.inputLen, int64(n)
	r.cached, r.hasCached = int64(rng.IntN(64)), rng.IntN(2) == 0
	r.images, r.status, r.retries = 0, 200, 0
	r.model, r.errorClass, r.errText = "Qwen/Qwen3-0.6B", "", ""
	if !r.hasTTFT {
		r.status, r.errorClass, r.errText = 500, "http_5xx", "server error"
	}
}

func main() {
	lib := flag.String("lib", "parquet-go", "parquet-go or arrow")
	rows := flag.Int64("rows", 1_000_000, "rows to write")
	out := flag.String("o", os.DevNull, "the file written")
	flag.Parse()
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cw := &countingWriter{w: bufio.NewWriterSize(f, 1<<20)}
	start := time.Now()
	switch *lib {
	case "parquet-go":
		err = writeParquetGo(cw, *rows)
	case "arrow":
		err = writeArrow(cw, *rows)
	default:
		err = fmt.Errorf("unknown -lib %q", *lib)
	}
	if err == nil {
		err = cw.w.(*bufio.Writer).Flush()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	took := time.Since(start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	fmt.Printf("%s: %d rows in %.2f s (%.0f rows/s), %.1f MB written, peak RSS %.0f MiB\n",
		*lib, *rows, took.Seconds(), float64(*rows)/took.Seconds(), float64(cw.n)/1e6, float64(ru.Maxrss)/1024)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeParquetGo writes rows with parquet-go: a schema from a struct type
// made from columns (so the columns keep their order), rows of values with
// their levels written in batches.
func writeParquetGo(w io.Writer, rows int64) error {
	var fields []reflect.StructField
	for i, c := range columns {
		var t reflect.Type
		tag := c.name + ",optional"
		switch c.kind {
		case "int":
			t = reflect.TypeFor[*int64]()
		case "float":
			t = reflect.TypeFor[*float64]()
		case "string":
			t = reflect.TypeFor[*string]()
		case "list":
			t, tag = reflect.TypeFor[[]float64](), c.name+",list"
		}
		fields = append(fields, reflect.StructField{Name: fmt.Sprintf("F%d", i), Type: t, Tag: reflect.StructTag(`parquet:"` + tag + `"`)})
	}
	schema := parquet.SchemaOf(reflect.New(reflect.StructOf(fields)).Interface())
	pw := parquet.NewWriter(w, schema, parquet.Compression(&snappy.Codec{}), parquet.MaxRowsPerRowGroup(rowGroup))
	rng := rand.New(rand.NewPCG(1, 2))
	var r row
	batch := make([]parquet.Row, 0, 256)
	for i := range rows {
		gen(rng, i, &r)
		var v parquet.Row
		if len(batch) < cap(batch) {
			v = batch[:len(batch)+1][len(batch)][:0]
		}
		opt := func(col int, x parquet.Value, ok bool) {
			if !ok {
				v = append(v, parquet.NullValue().Level(0, 0, col))
				return
			}
			v = append(v, x.Level(0, 1, col))
		}
		opt(0, parquet.Int64Value(r.index), true)
		opt(1, parquet.DoubleValue(r.scheduled), true)
		opt(2, parquet.DoubleValue(r.sent), true)
		opt(3, parquet.DoubleValue(r.ttft), r.hasTTFT)
		opt(4, parquet.DoubleValue(r.e2e), true)
		if len(r.itl) == 0 {
			v = append(v, parquet.NullValue().Level(0, 0, 5))
		}
		for j, g := range r.itl {
			v = append(v, parquet.DoubleValue(g).Level(min(j, 1), 1, 5))
		}
		opt(6, parquet.Int64Value(r.inputLen), true)
		opt(7, parquet.Int64Value(r.outputLen), true)
		opt(8, parquet.Int64Value(r.prompt), true)
		opt(9, parquet.Int64Value(r.completion), true)
		opt(10, parquet.Int64Value(r.cached), r.hasCached)
		opt(11, parquet.Int64Value(r.images), true)
		opt(12, parquet.ByteArrayValue([]byte(r.model)), true)
		opt(13, parquet.Int64Value(r.status), true)
		opt(14, parquet.ByteArrayValue([]byte(r.errorClass)), true)
		opt(15, parquet.ByteArrayValue([]byte(r.errText)), true)
		opt(16, parquet.Int64Value(r.retries), true)
		batch = append(batch, v)
		if len(batch) == cap(batch) {
			if _, err := pw.WriteRows(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if _, err := pw.WriteRows(batch); err != nil {
		return err
	}
	return pw.Close()
}

// writeArrow writes rows with arrow-go: a builder per column, a record
// batch written as a row group each time rowGroup rows are built.
func writeArrow(w io.Writer, rows int64) error {
	var fields []arrow.Field
	for _, c := range columns {
		var t arrow.DataType
		switch c.kind {
		case "int":
			t = arrow.PrimitiveTypes.Int64
		case "float":
			t = arrow.PrimitiveTypes.Float64
		case "string":
			t = arrow.BinaryTypes.String
		case "list":
			t = arrow.ListOfNonNullable(arrow.PrimitiveTypes.Float64)
		}
		fields = append(fields, arrow.Field{Name: c.name, Type: t, Nullable: c.kind != "list"})
	}
	schema := arrow.NewSchema(fields, nil)
	props := aparquet.NewWriterProperties(aparquet.WithCompression(acompress.Codecs.Snappy), aparquet.WithMaxRowGroupLength(rowGroup))
	fw, err := pqarrow.NewFileWriter(schema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	flush := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return fw.Write(rec)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var r row
	i64 := func(col int, x int64, ok bool) { appendOpt(b.Field(col).(*array.Int64Builder), x, ok) }
	f64 := func(col int, x float64, ok bool) { appendOpt(b.Field(col).(*array.Float64Builder), x, ok) }
	str := func(col int, x string) { b.Field(col).(*array.StringBuilder).Append(x) }
	n := 0
	for i := range rows {
		gen(rng, i, &r)
		i64(0, r.index, true)
		f64(1, r.scheduled, true)
		f64(2, r.sent, true)
		f64(3, r.ttft, r.hasTTFT)
		f64(4, r.e2e, true)
		lb := b.Field(5).(*array.ListBuilder)
		lb.Append(true)
		lb.ValueBuilder().(*array.Float64Builder).AppendValues(r.itl, nil)
		i64(6, r.inputLen, true)
		i64(7, r.outputLen, true)
		i64(8, r.prompt, true)
		i64(9, r.completion, true)
		i64(10, r.cached, r.hasCached)
		i64(11, r.images, true)
		str(12, r.model)
		i64(13, r.status, true)
		str(14, r.errorClass)
		str(15, r.errText)
		i64(16, r.retries, true)
		if n++; n == rowGroup {
			if err := flush(); err != nil {
				return err
			}
			n = 0
		}
	}
	if n > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	return fw.Close()
}

// appendOpt appends x to a column's builder, or a null when !ok.
func appendOpt[T any](fb interface {
	Append(T)
	AppendNull()
}, x T, ok bool) {
	if ok {
		fb.Append(x)
	} else {
		fb.AppendNull()
	}
}
