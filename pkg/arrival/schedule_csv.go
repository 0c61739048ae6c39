package arrival

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ScheduleHeader is the header of a schedule CSV (--schedule-out).
const ScheduleHeader = "index,time_s,input_len,output_len,model,num_images,burst"

// Optional columns a schedule CSV adds after ScheduleHeader's, in this
// order, each only when its feature is on, so a run without them writes
// the same bytes as before they existed:
//   - endpoint: the endpoint a request goes to, when a run has several and
//     the schedule decides each request's (--balance round-robin or
//     session);
//   - cancel_after_s: the request's cut in seconds after its first send,
//     0.000000 for a request that is not cancelled (--cancel-share).
const (
	EndpointColumn = "endpoint"
	CancelColumn   = "cancel_after_s"
)

// CSVColumns tells which optional columns a schedule CSV carries.
type CSVColumns struct{ Endpoint, Cancel bool }

// Header is the schedule CSV's header line (without its newline).
func (c CSVColumns) Header() string {
	h := ScheduleHeader
	if c.Endpoint {
		h += "," + EndpointColumn
	}
	if c.Cancel {
		h += "," + CancelColumn
	}
	return h
}

// AppendRow appends one row (with its newline) for a: AppendCSVRow's
// fields, then the optional columns c carries.
func (c CSVColumns) AppendRow(b []byte, a Arrival) []byte {
	b = AppendCSVRow(b, a)
	if !c.Endpoint && !c.Cancel {
		return b
	}
	b = b[:len(b)-1]
	if c.Endpoint {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(a.Endpoint), 10)
	}
	if c.Cancel {
		b = append(b, ',')
		b = appendMicros(b, a.CancelAfter)
	}
	return append(b, '\n')
}

// ParseCSVHeader reports which optional columns a schedule CSV's header
// (its fields joined by commas) carries, and whether it is one at all.
func ParseCSVHeader(head string) (CSVColumns, bool) {
	for _, c := range []CSVColumns{{}, {Endpoint: true}, {Cancel: true}, {Endpoint: true, Cancel: true}} {
		if head == c.Header() {
			return c, true
		}
	}
	return CSVColumns{}, false
}

// WriteCSV writes s as a schedule CSV: one row per arrival, time_s in seconds
// from the start with microsecond precision. The same schedule always gives
// the same bytes.
func WriteCSV(w io.Writer, s Schedule) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(ScheduleHeader + "\n")
	var n int64
	var line []byte
	for a := range s {
		line = AppendCSVRow(line[:0], a)
		if _, err := bw.Write(line); err != nil {
			return n, err
		}
		n++
	}
	return n, bw.Flush()
}

// AppendCSVRow appends one schedule row (with its newline) for a.
func AppendCSVRow(b []byte, a Arrival) []byte {
	b = strconv.AppendInt(b, a.Index, 10)
	b = append(b, ',')
	b = appendMicros(b, a.At)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(a.InputTokens), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(a.OutputTokens), 10)
	b = append(b, ',')
	b = appendCSVField(b, a.Model)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(a.Images), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, a.Burst, 10)
	return append(b, '\n')
}

// appendMicros writes d in seconds with exactly six decimals, rounding to
// the nearest microsecond, without going through float formatting.
func appendMicros(b []byte, d time.Duration) []byte {
	us := (int64(d) + 500) / 1000
	b = strconv.AppendInt(b, us/1_000_000, 10)
	frac := us % 1_000_000
	b = append(b, '.')
	var digits [6]byte
	for i := 5; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(b, digits[:]...)
}

func appendCSVField(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") && (s == "" || s[0] != ' ') {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

// ReadCSV parses a schedule CSV written by WriteCSV. Errors name the line.
func ReadCSV(r io.Reader) ([]Arrival, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("schedule: header: %w", err)
	}
	cols, ok := ParseCSVHeader(strings.Join(head, ","))
	if !ok {
		return nil, fmt.Errorf("schedule: line 1: header %q, want %q (optionally followed by %s, then %s)", strings.Join(head, ","), ScheduleHeader, EndpointColumn, CancelColumn)
	}
	var out []Arrival
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil { // a *csv.ParseError names the line
			return out, fmt.Errorf("schedule: %w", err)
		}
		line, _ := cr.FieldPos(0)
		var a Arrival
		var errs []error
		num := func(field string, i int) int64 {
			v, err := strconv.ParseInt(rec[i], 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", field, err))
			} else if v < 0 {
				errs = append(errs, fmt.Errorf("%s: %d is negative", field, v))
			}
			return v
		}
		a.Index = num("index", 0)
		sec, err := strconv.ParseFloat(rec[1], 64)
		// Below maxSeconds: Seconds would saturate rather than fail.
		if err != nil || !(sec >= 0 && sec < maxSeconds) {
			errs = append(errs, fmt.Errorf("time_s: invalid %q (want seconds ≥ 0)", rec[1]))
		}
		a.At = Seconds(sec)
		a.InputTokens = int(num("input_len", 2))
		a.OutputTokens = int(num("output_len", 3))
		a.Model = strings.Clone(rec[4])
		a.Images = int(num("num_images", 5))
		a.Burst = num("burst", 6)
		next := 7
		if cols.Endpoint {
			a.Endpoint = int(num(EndpointColumn, next))
			next++
		}
		if cols.Cancel {
			cut, err := strconv.ParseFloat(rec[next], 64)
			if err != nil || !(cut >= 0 && cut < maxSeconds) {
				errs = append(errs, fmt.Errorf("%s: invalid %q (want seconds ≥ 0)", CancelColumn, rec[next]))
			}
			a.CancelAfter = Seconds(cut)
		}
		if err := errors.Join(errs...); err != nil {
			return out, fmt.Errorf("schedule: line %d: %w", line, err)
		}
		out = append(out, a)
	}
}
