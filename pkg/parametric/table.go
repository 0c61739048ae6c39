package parametric

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Columns names the columns of a Gamma window file (FineServe's
// --gamma-shape-column, --gamma-scale-column, --window-start-column,
// --window-end-column).
type Columns struct {
	Shape, Scale           string
	WindowStart, WindowEnd string
}

// DefaultColumns returns FineServe's column names.
func DefaultColumns() Columns {
	return Columns{Shape: "gamma_shape", Scale: "gamma_scale", WindowStart: "window_start_ms", WindowEnd: "window_end_ms"}
}

// Row is one window of a Gamma window file.
type Row struct {
	Shape   float64 // Gamma shape k of the gaps
	ScaleMS float64 // Gamma scale θ of the gaps, in milliseconds
	// StartMS and EndMS are the window's bounds as written in the file (ms);
	// set only when the table has bounds.
	StartMS, EndMS float64
	Line           int // line of the file (0 for rows not read from a file)
}

// MeanGapMS is the mean gap k·θ of the row, in ms.
func (r Row) MeanGapMS() float64 { return r.Shape * r.ScaleMS }

// Limits on what a row may say, so that a schedule stays computable.
const (
	// MinShape is the smallest accepted Gamma shape (gap CV ≈ 31.6).
	MinShape = 1e-3
	// MaxShape is the largest accepted Gamma shape (gaps practically constant).
	MaxShape = 1e6
	// MinMeanGapMS is the smallest accepted mean gap shape·scale, in ms
	// (one million requests per second).
	MinMeanGapMS = 1e-3
	// MaxScaleMS is the largest accepted scale (about 31 years).
	MaxScaleMS = 1e12
)

// Table is a Gamma window file: its rows in time order.
type Table struct {
	Name string // where it came from, for messages
	Rows []Row
	// Bounds is true when the rows carry window_start_ms and window_end_ms;
	// otherwise every row is one window of a fixed length.
	Bounds bool
}

// ReadGammaCSV reads a Gamma window file: a header naming at least the shape
// and scale columns of c (any order, other columns ignored), and with both
// window columns of c present, explicit window bounds. Every problem is
// reported with the file name, line and column (at most ten of them).
func ReadGammaCSV(r io.Reader, name string, c Columns) (*Table, error) {
	if c == (Columns{}) {
		c = DefaultColumns()
	}
	cr := csv.NewReader(bufio.NewReader(r))
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	perr := func(line int, field string, err error) error {
		return &ParseError{File: name, Line: line, Field: field, Err: err}
	}
	head, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, perr(1, "", errors.New("empty file: want a header with "+c.Shape+" and "+c.Scale))
	}
	if err != nil {
		return nil, perr(csvLine(err, 1), "", csvCause(err))
	}
	col := headerColumns(head)
	var missing []string
	for _, n := range []string{c.Shape, c.Scale} {
		if _, ok := col[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, perr(1, "", fmt.Errorf("header %q lacks column %s", strings.Join(head, ","), strings.Join(missing, " and ")))
	}
	iShape, iScale := col[c.Shape], col[c.Scale]
	iStart, hasStart := col[c.WindowStart]
	iEnd, hasEnd := col[c.WindowEnd]
	if hasStart != hasEnd {
		return nil, perr(1, "", fmt.Errorf("header has only one of %s and %s: give both or neither", c.WindowStart, c.WindowEnd))
	}
	t := &Table{Name: name, Bounds: hasStart}
	var errs []error
	fail := func(e error) bool {
		errs = append(errs, e)
		return len(errs) >= maxErrors
	}
	prevEnd := math.Inf(-1)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if fail(perr(csvLine(err, 0), "", csvCause(err))) {
				break
			}
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				continue
			}
			break // a quoting error leaves the reader out of step
		}
		line, _ := cr.FieldPos(0)
		row := Row{Line: line}
		var bad bool
		num := func(i int, field string) float64 {
			s := strings.TrimSpace(rec[i])
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				bad = true
				fail(perr(line, field, fmt.Errorf("%q is not a finite number", s)))
			}
			return v
		}
		row.Shape = num(iShape, c.Shape)
		row.ScaleMS = num(iScale, c.Scale)
		if t.Bounds {
			row.StartMS = num(iStart, c.WindowStart)
			row.EndMS = num(iEnd, c.WindowEnd)
		}
		if !bad {
			if err := checkRow(row, t.Bounds, prevEnd, c); err != nil {
				bad = true
				fail(perr(line, err.field, err.err))
			}
		}
		if len(errs) >= maxErrors {
			break
		}
		if bad {
			continue
		}
		prevEnd = row.EndMS
		t.Rows = append(t.Rows, row)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(t.Rows) == 0 {
		return nil, perr(0, "", errors.New("no window rows after the header"))
	}
	return t, nil
}

type fieldErr struct {
	field string
	err   error
}

// checkRow validates one row: parameters within the limits, and with bounds,
// a window of positive length that does not start before the previous ends.
func checkRow(r Row, bounds bool, prevEnd float64, c Columns) *fieldErr {
	switch {
	case !(r.Shape >= MinShape && r.Shape <= MaxShape):
		return &fieldErr{c.Shape, fmt.Errorf("%g out of range [%g, %g]", r.Shape, float64(MinShape), float64(MaxShape))}
	case !(r.ScaleMS > 0 && r.ScaleMS <= MaxScaleMS):
		return &fieldErr{c.Scale, fmt.Errorf("%g ms out of range (0, %g]", r.ScaleMS, float64(MaxScaleMS))}
	case r.MeanGapMS() < MinMeanGapMS:
		return &fieldErr{c.Scale, fmt.Errorf("mean gap shape·scale = %g ms is below %g ms (over a million requests per second)", r.MeanGapMS(), float64(MinMeanGapMS))}
	}
	if !bounds {
		return nil
	}
	switch {
	case r.StartMS < 0 || r.StartMS > 1e15:
		return &fieldErr{c.WindowStart, fmt.Errorf("%g ms out of range [0, 1e15]", r.StartMS)}
	case !(r.EndMS > r.StartMS) || r.EndMS > 1e15:
		return &fieldErr{c.WindowEnd, fmt.Errorf("%g ms: want a window end after its start (%g ms), at most 1e15", r.EndMS, r.StartMS)}
	case r.StartMS < prevEnd:
		return &fieldErr{c.WindowStart, fmt.Errorf("%g ms is before the previous window's end (%g ms): windows must be sorted and not overlap", r.StartMS, prevEnd)}
	}
	return nil
}

// headerColumns maps each name of a CSV header (trimmed, without a byte
// order mark) to its first column.
func headerColumns(head []string) map[string]int {
	col := map[string]int{}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := col[h]; !dup {
			col[h] = i
		}
	}
	return col
}

func csvLine(err error, def int) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return def
}

func csvCause(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteGammaCSV writes t in FineServe's format: gamma_shape,gamma_scale,
// preceded by window_start_ms,window_end_ms when t has bounds. Numbers are
// written in their shortest exact form, so reading the file back gives the
// same table.
func WriteGammaCSV(w io.Writer, t *Table) error {
	var b bytes.Buffer
	if t.Bounds {
		b.WriteString("window_start_ms,window_end_ms,")
	}
	b.WriteString("gamma_shape,gamma_scale\n")
	f := func(v float64) { b.Write(strconv.AppendFloat(b.AvailableBuffer(), v, 'g', -1, 64)) }
	for _, r := range t.Rows {
		if t.Bounds {
			f(r.StartMS)
			b.WriteByte(',')
			f(r.EndMS)
			b.WriteByte(',')
		}
		f(r.Shape)
		b.WriteByte(',')
		f(r.ScaleMS)
		b.WriteByte('\n')
	}
	_, err := w.Write(b.Bytes())
	return err
}
