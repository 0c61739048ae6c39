package report

import (
	"errors"
	"fmt"
	"io"

	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The per-request CSV (--results-csv) is the records file as a table for
// spreadsheets: a header row, then one row per finished request with the
// record's fields (recordFields, in their order) as columns. Every row has
// every column: a field the record leaves out, or writes as null, is an
// empty cell. The inter-token gaps (the record's itl_ms array) become
// three columns — itl_count, itl_mean_ms and itl_max_ms (empty without a
// gap) — so a long answer does not make a cell of thousands of numbers; the
// gaps themselves are in --results-jsonl. Text cells (model, error…) that
// a spreadsheet would take for a formula (starting with = + - @, a tab or
// a carriage return) are written after a single quote, as spreadsheets
// show text.

// csvITL are the columns that stand for itl_ms.
var csvITL = []string{"itl_count", "itl_mean_ms", "itl_max_ms"}

// csvHeader is the CSV's first row.
var csvHeader = func() []byte {
	var cols []string
	for _, f := range recordFields {
		if f.jsonOnly {
			continue
		}
		if f.key == "itl_ms" {
			cols = append(cols, csvITL...)
			continue
		}
		cols = append(cols, f.key)
	}
	return []byte(strings.Join(cols, ",") + "\n")
}()

// CSVHeader returns the CSV's header row (with its newline).
func CSVHeader() []byte { return append([]byte(nil), csvHeader...) }

// AppendRecordCSV appends s as one CSV row (see csvHeader): each field as
// the record writes it (AppendRecord), turned into a cell.
func AppendRecordCSV(b []byte, s *metrics.Sample) []byte {
	var scratch [64]byte
	for i := range recordFields {
		f := &recordFields[i]
		if f.jsonOnly {
			continue
		}
		if i > 0 {
			b = append(b, ',')
		}
		if f.key == "itl_ms" {
			b = appendITLCells(b, s.TokenTimes)
			continue
		}
		if f.omit != nil && f.omit(s) {
			continue
		}
		b = appendCell(b, f.put(scratch[:0], s))
	}
	return append(b, '\n')
}

// appendITLCells writes the gaps between token times as their count,
// mean and largest (ms, as the record writes each gap).
func appendITLCells(b []byte, times []time.Duration) []byte {
	n := len(times) - 1
	if n < 1 {
		return append(b, "0,,"...)
	}
	var largest time.Duration
	for i := 1; i < len(times); i++ {
		largest = max(largest, times[i]-times[i-1])
	}
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, float64(times[n]-times[0])/1e6/float64(n), 'f', 3, 64)
	b = append(b, ',')
	return appendMillis(b, largest)
}

// appendCell turns one field as the record writes it (a JSON number,
// string or null) into a CSV cell.
func appendCell(b, v []byte) []byte {
	switch {
	case string(v) == "null":
		return b
	case len(v) == 0 || v[0] != '"':
		return append(b, v...) // a number
	}
	text, err := strconv.Unquote(string(v)) // the record's escapes are Go's too
	if err != nil {
		text = string(v[1 : len(v)-1])
	}
	if text != "" && strings.ContainsRune("=+-@\t\r", rune(text[0])) {
		text = "'" + text
	}
	if !strings.ContainsAny(text, ",\"\n\r") && strings.TrimSpace(text) == text {
		return append(b, text...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(text, `"`, `""`)...)
	return append(b, '"')
}

// CreateRecordsCSV creates (truncates) path for the per-request CSV and
// writes its header; the rows are written as CreateRecords writes records.
func CreateRecordsCSV(path string, now func() time.Time) (*RecordWriter, error) {
	return createRecords(path, now, NewRecordWriterCSV)
}

// NewRecordWriterCSV returns a writer of CSV rows to w (see
// NewRecordWriter), having written the header.
func NewRecordWriterCSV(w io.Writer, now func() time.Time) *RecordWriter {
	return newRecordWriter(w, now, AppendRecordCSV, csvHeader)
}

// RecordWriters are a run's per-request outputs (the JSON Lines records,
// the CSV): each takes every sample, and they are synced and closed
// together.
type RecordWriters []*RecordWriter

// Add hands s to every writer.
func (ws RecordWriters) Add(s *metrics.Sample) {
	for _, w := range ws {
		w.Add(s)
	}
}

var _ metrics.Sink = RecordWriters(nil)

// Sync has every writer write what it holds (see RecordWriter.Sync) and
// returns their errors, each after its file's name.
func (ws RecordWriters) Sync() error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.named(w.Sync()))
	}
	return errors.Join(errs...)
}

// Close closes every writer and returns their errors, each after its
// file's name.
func (ws RecordWriters) Close() error {
	var errs []error
	for _, w := range ws {
		errs = append(errs, w.named(w.Close()))
	}
	return errors.Join(errs...)
}

// MaxBacklog is the largest backlog of any writer.
func (ws RecordWriters) MaxBacklog() Backlog {
	var b Backlog
	for _, w := range ws {
		m := w.MaxBacklog()
		if m.Records > b.Records {
			b = m
		}
	}
	return b
}

// named puts the writer's file name before err (nil stays nil).
func (rw *RecordWriter) named(err error) error {
	if err == nil || rw.path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", rw.path, err)
}
