package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// parquetResults are csvResults plus a record with every optional field:
// an agentic step's answer with reasoning and tool calls, checked against
// a response format, timed by --http-phases on a new TLS connection, sent
// with an X-Request-Id, to a model whose name holds non-ASCII and quotes.
func parquetResults() []*record.Request {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	full := &record.Request{}
	full.Reset()
	full.Index, full.Scheduled, full.Sent, full.FirstToken, full.End = 9, ms(1.25), ms(1.5), ms(7), ms(19.75)
	full.TokenTimes = []time.Duration{ms(7), ms(9.5), ms(19.75)}
	full.FirstOutput, full.FirstToolCall = ms(9.5), ms(19.75)
	full.InputLen, full.OutputLen, full.PromptTokens, full.CompletionTokens, full.CachedTokens = 900, 3, 901, 3, 0
	full.ReasoningTokens, full.ToolCalls, full.ToolArgsInvalid = 1, 2, 1
	full.Model, full.Status, full.RequestID = `Qwen/"Qwen3" — ünïcode`, 200, "run-9"
	full.Session, full.Turn, full.Agent = 4, 3, record.AgentStep{On: true, Branch: 1, Waited: ms(12.5), Expected: 512}
	full.Structured = metrics.StructuredInvalid
	full.HTTP = record.Phases{Measured: true, Connect: ms(0.5), TLS: ms(1.5), Write: ms(0.25), Wait: ms(4)}
	full.Endpoint = 1
	pooled := &record.Request{}
	pooled.Reset()
	pooled.Index, pooled.Sent, pooled.FirstToken, pooled.End, pooled.Status = 10, ms(3), ms(5), ms(6), 200
	pooled.TokenTimes = []time.Duration{ms(5)}
	pooled.HTTP = record.Phases{Measured: true, Reused: true, Write: ms(0.125), Wait: ms(1)}
	return append(csvResults(), full, pooled)
}

// parquetFixture writes parquetResults as JSON Lines and as Parquet.
func parquetFixture(t *testing.T) (jsonl, pq []byte) {
	t.Helper()
	var lines, file bytes.Buffer
	w := NewRecordWriterParquet(&file, nil)
	for _, r := range parquetResults() {
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		lines.Write(AppendRecord(nil, &s))
		w.Add(&s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return lines.Bytes(), file.Bytes()
}

// readParquetGo reads every row of a Parquet file as the fields' values
// (nil for null; int64, float64, string, bool, []float64), with
// parquet-go's generic reader: the values and their levels, column by
// column index, not the writer's struct.
func readParquetGo(t *testing.T, b []byte) (names []string, rows []map[string]any, groups int) {
	t.Helper()
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a Parquet file: %v", err)
	}
	leaves := f.Schema().Columns()
	for _, path := range leaves {
		names = append(names, path[0])
	}
	for _, rg := range f.RowGroups() {
		groups++
		rr := rg.Rows()
		buf := make([]parquet.Row, 64)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				m := map[string]any{}
				for _, v := range row {
					name := names[v.Column()]
					if ParquetKindOf(name) == ParquetDoubleList {
						gaps, _ := m[name].([]float64)
						if gaps == nil {
							gaps = []float64{}
						}
						if !v.IsNull() {
							gaps = append(gaps, v.Double())
						}
						m[name] = gaps
						continue
					}
					switch {
					case v.IsNull():
						m[name] = nil
					case v.Kind() == parquet.Int64:
						m[name] = v.Int64()
					case v.Kind() == parquet.Double:
						m[name] = v.Double()
					case v.Kind() == parquet.ByteArray:
						m[name] = string(v.ByteArray())
					case v.Kind() == parquet.Boolean:
						m[name] = v.Boolean()
					default:
						t.Fatalf("column %s: a value of kind %v", name, v.Kind())
					}
				}
				rows = append(rows, m)
			}
			if err != nil {
				break
			}
		}
		rr.Close()
	}
	return names, rows, groups
}

// jsonlRecords decodes the records of JSON Lines output, one a line, as
// maps whose numbers keep their digits (json.Number).
func jsonlRecords(t *testing.T, jsonl []byte) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(jsonl)), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		recs = append(recs, rec)
	}
	return recs
}

// compareWithJSONL checks that rows hold the records of jsonl: the same
// number, and each field the record has is its row's value under the same
// name, of the column's type, to the digit (a null or absent field: null;
// itl_ms: the same gaps), and no row has a value the record lacks.
func compareWithJSONL(t *testing.T, jsonl []byte, rows []map[string]any) {
	t.Helper()
	recs := jsonlRecords(t, jsonl)
	if len(rows) != len(recs) {
		t.Fatalf("%d rows, %d records", len(rows), len(recs))
	}
	for i, rec := range recs {
		row := rows[i]
		for _, key := range ParquetColumns() {
			want, got := rec[key], row[key]
			kind := ParquetKindOf(key)
			if kind == ParquetDoubleList {
				var gaps []float64
				for _, g := range want.([]any) {
					f, _ := g.(json.Number).Float64()
					gaps = append(gaps, f)
				}
				if gotGaps, _ := got.([]float64); len(gotGaps) != len(gaps) || (len(gaps) > 0 && !reflect.DeepEqual(gotGaps, gaps)) {
					t.Errorf("record %d: itl_ms %v, want %v", i, got, gaps)
				}
				continue
			}
			if want == nil {
				if got != nil {
					t.Errorf("record %d: %s = %v (%T), want null (the record has %v)", i, key, got, got, want)
				}
				continue
			}
			var exp any
			switch kind {
			case ParquetInt64:
				n, err := want.(json.Number).Int64()
				if err != nil {
					t.Fatalf("record %d: %s = %v is not an integer", i, key, want)
				}
				exp = n
			case ParquetDouble:
				exp, _ = want.(json.Number).Float64()
			case ParquetString, ParquetBool:
				exp = want
			}
			if got != exp {
				t.Errorf("record %d: %s = %v (%T), want %v (%T)", i, key, got, got, exp, exp)
			}
		}
		for key := range rec {
			if _, ok := row[key]; !ok {
				t.Errorf("record %d: field %s has no column", i, key)
			}
		}
	}
}

// TestParquetRoundTrip: the Parquet file read back with parquet-go's
// generic reader has the record's fields as columns, in order, and each
// row holds its record's values.
func TestParquetRoundTrip(t *testing.T) {
	jsonl, pq := parquetFixture(t)
	names, rows, _ := readParquetGo(t, pq)
	var keys []string
	for _, f := range recordFields {
		keys = append(keys, f.key)
	}
	if !reflect.DeepEqual(names, keys) {
		t.Errorf("columns %v\nwant the record's fields %v", names, keys)
	}
	compareWithJSONL(t, jsonl, rows)
}

// TestParquetKinds: every field of a record that has them all is of its
// column's type (a new field whose name misleads ParquetKindOf fails
// here).
func TestParquetKinds(t *testing.T) {
	jsonl, _ := parquetFixture(t)
	seen := map[string]bool{}
	for _, rec := range jsonlRecords(t, jsonl) {
		for k, v := range rec {
			if v == nil {
				continue
			}
			seen[k] = true
			ok := false
			switch ParquetKindOf(k) {
			case ParquetInt64:
				n, isNum := v.(json.Number)
				_, err := n.Int64()
				ok = isNum && err == nil
			case ParquetDouble:
				n, isNum := v.(json.Number)
				ok = isNum && strings.Contains(n.String(), ".")
			case ParquetString:
				_, ok = v.(string)
			case ParquetBool:
				_, ok = v.(bool)
			case ParquetDoubleList:
				_, ok = v.([]any)
			}
			if !ok {
				t.Errorf("%s = %v (%T) is not of its Parquet type %d", k, v, v, ParquetKindOf(k))
			}
		}
	}
	for _, f := range recordFields {
		if !seen[f.key] {
			t.Errorf("no fixture record has %s: add one that does", f.key)
		}
	}
}

// TestParquetStreams: rows reach the file in row groups as they fill —
// before Close, once a group's worth is added — so a long run's memory
// stays bounded; the file then holds every row, in groups of at most
// ParquetRowGroupRows.
func TestParquetStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 140,000 records")
	}
	w, path := createIn(t, CreateRecordsParquet, "r.parquet")
	r := parquetResults()[0]
	var s metrics.Sample
	const n = 2*ParquetRowGroupRows + 8000
	for i := range n {
		r.Index = int64(i)
		s.From(r, metrics.NoSLO)
		w.Add(&s)
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() < 1<<16 { // two row groups of 65,536 rows are far more
		t.Errorf("%d bytes in the file before Close, after %d rows: the row groups are held", fi.Size(), n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, groups := readParquetGo(t, mustRead(t, path))
	if len(rows) != n || groups != 3 {
		t.Errorf("%d rows in %d row groups, want %d in 3", len(rows), groups, n)
	}
	for i, row := range rows {
		if row["index"] != int64(i) {
			t.Fatalf("row %d has index %v", i, row["index"])
		}
	}
}

// TestParquetEmpty: a run where no request finished writes a valid file
// with the columns and no row.
func TestParquetEmpty(t *testing.T) {
	w, path := createIn(t, CreateRecordsParquet, "r.parquet")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	names, rows, _ := readParquetGo(t, mustRead(t, path))
	if len(names) != len(recordFields) || len(rows) != 0 {
		t.Errorf("%d columns, %d rows", len(names), len(rows))
	}
}

// TestParquetIndependentReader reads the file with hyparquet, a
// JavaScript Parquet reader written apart from the Go libraries (pinned in
// .ci/run, which sets FINESERVE_GEN_PARQUET_REF to where it is installed),
// and compares every field of every row with the JSON Lines records. It
// skips without the reader, and fails in CI (CI=true) without it.
func TestParquetIndependentReader(t *testing.T) {
	dir := os.Getenv("FINESERVE_GEN_PARQUET_REF")
	node, nodeErr := exec.LookPath("node")
	missing := ""
	switch {
	case dir == "":
		missing = "FINESERVE_GEN_PARQUET_REF is not set (npm install --prefix DIR hyparquet@1.33.0; see .ci/run)"
	case nodeErr != nil:
		missing = "no node on PATH"
	default:
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "hyparquet")); err != nil {
			missing = "no hyparquet under " + dir
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the independent Parquet reader is missing in CI: %s", missing)
		}
		t.Skipf("the independent Parquet reader is missing: %s", missing)
	}
	jsonl, pq := parquetFixture(t)
	path := filepath.Join(t.TempDir(), "r.parquet")
	if err := os.WriteFile(path, pq, 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/parquet/read.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, script, path)
	cmd.Env = append(os.Environ(), "NODE_PATH="+filepath.Join(dir, "node_modules"))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hyparquet: %v\n%s", err, stderr.String())
	}
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("hyparquet's output: %v", err)
		}
		rows = append(rows, typedRow(t, raw))
	}
	compareWithJSONL(t, jsonl, rows)
}

// typedRow types a row as read.mjs prints it (integers as strings of
// digits, doubles as numbers) by the column's type.
func typedRow(t *testing.T, raw map[string]any) map[string]any {
	t.Helper()
	m := map[string]any{}
	for k, v := range raw {
		switch ParquetKindOf(k) {
		case ParquetInt64:
			if v != nil {
				var n int64
				if _, err := fmt.Sscan(v.(string), &n); err != nil {
					t.Fatalf("%s = %v: %v", k, v, err)
				}
				v = n
			}
		case ParquetDouble:
			if v != nil {
				f, err := v.(json.Number).Float64()
				if err != nil || math.IsNaN(f) {
					t.Fatalf("%s = %v: %v", k, v, err)
				}
				v = f
			}
		case ParquetDoubleList:
			gaps := []float64{}
			if v != nil {
				for _, g := range v.([]any) {
					f, _ := g.(json.Number).Float64()
					gaps = append(gaps, f)
				}
			}
			v = gaps
		}
		m[k] = v
	}
	return m
}

// BenchmarkParquetRecords: a record through --results-parquet's writer —
// encoded as its JSON line, parsed back and written as a row — per
// operation (a streamed answer of 4 tokens), the last row group and the
// footer included.
func BenchmarkParquetRecords(b *testing.B) {
	w := NewRecordWriterParquet(io.Discard, nil)
	r := csvResults()[0]
	var s metrics.Sample
	s.From(r, metrics.NoSLO)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Index = int64(i)
		w.Add(&s)
	}
	err := w.Close() // the rows still waiting, timed too
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}

// TestParquetRowGroupBytes: long answers make row groups of fewer rows —
// a group is written once its records reach ParquetRowGroupBytes — so a
// row group's memory is bounded by bytes too, not rows alone.
func TestParquetRowGroupBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 60 MB of records")
	}
	r := parquetResults()[0]
	r.TokenTimes = r.TokenTimes[:0]
	for i := range 2000 { // 2,000 tokens: about 14 KB a record
		r.TokenTimes = append(r.TokenTimes, r.FirstToken+time.Duration(i)*time.Millisecond+time.Duration(i%7)*time.Microsecond)
	}
	r.End = r.TokenTimes[len(r.TokenTimes)-1]
	var s metrics.Sample
	s.From(r, metrics.NoSLO)
	line := len(AppendRecord(nil, &s))
	n := 2*ParquetRowGroupBytes/line + 100
	var file bytes.Buffer
	w := NewRecordWriterParquet(&file, nil)
	for i := range n {
		s.Index = int64(i)
		w.Add(&s)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, rows, groups := readParquetGo(t, file.Bytes())
	if len(rows) != n || groups != 3 {
		t.Errorf("%d rows of %d bytes in %d row groups, want %d in 3 (a group every %d bytes of records)", len(rows), line, groups, n, ParquetRowGroupBytes)
	}
	if gaps := rows[n-1]["itl_ms"].([]float64); len(gaps) != 1999 {
		t.Errorf("the last row has %d gaps, want 1999", len(gaps))
	}
}
