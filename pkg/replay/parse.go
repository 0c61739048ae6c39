package replay

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
)

// Unit is how a trace writes its timestamps.
type Unit int

// Timestamp units. Numeric units are offsets on the trace's own clock;
// DateTime is a calendar date and time (zone optional, UTC when absent).
const (
	UnitDefault Unit = iota // the format's own unit
	Seconds
	Millis
	Micros
	Nanos
	DateTime
)

// ParseUnit parses --timestamp-unit ("" is UnitDefault).
func ParseUnit(s string) (Unit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return UnitDefault, nil
	case "s", "sec", "second", "seconds":
		return Seconds, nil
	case "ms", "milli", "millis", "milliseconds":
		return Millis, nil
	case "us", "µs", "micro", "micros", "microseconds":
		return Micros, nil
	case "ns", "nano", "nanos", "nanoseconds":
		return Nanos, nil
	case "datetime", "date", "iso", "iso8601":
		return DateTime, nil
	}
	return 0, fmt.Errorf("timestamp unit %q: want s, ms, us, ns or datetime", s)
}

// String returns the unit's flag spelling.
func (u Unit) String() string {
	switch u {
	case Seconds:
		return "s"
	case Millis:
		return "ms"
	case Micros:
		return "us"
	case Nanos:
		return "ns"
	case DateTime:
		return "datetime"
	}
	return "default"
}

// decimals is the power of ten that turns one unit into nanoseconds.
func (u Unit) decimals() int {
	switch u {
	case Seconds:
		return 9
	case Millis:
		return 6
	case Micros:
		return 3
	}
	return 0
}

// Field errors. They carry no line: the reader adds file, line and field.
var (
	errEmpty    = errors.New("empty")
	errNegative = errors.New("negative")
	errOverflow = errors.New("out of range")
)

type syntaxError struct{ s string }

func (e syntaxError) Error() string { return fmt.Sprintf("not a number: %q", clip(e.s)) }

type dateError struct{ s string }

func (e dateError) Error() string {
	return fmt.Sprintf("not a date and time: %q (want e.g. 2023-11-16 18:17:03.9799600 or 2024-10-15T12:00:00.269Z)", clip(e.s))
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// parseTimestamp returns the timestamp s in nanoseconds on the trace's
// clock: since its zero for numeric units, since the Unix epoch for
// DateTime. Numeric values are converted exactly (decimal arithmetic, no
// float rounding) when they have at most 19 significant digits.
func parseTimestamp(s string, u Unit) (int64, error) {
	s = trimSpace(s)
	if s == "" {
		return 0, errEmpty
	}
	if u == DateTime {
		return parseDateTime(s)
	}
	return parseDecimal(s, u.decimals())
}

// parseDecimal parses a non-negative decimal number (digits, optional
// fraction, optional exponent) and returns it times 10^shift, rounded half
// away from zero to an integer.
func parseDecimal(s string, shift int) (int64, error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	var mant uint64
	digits, exp := 0, 0 // significant digits kept; decimal exponent of mant
	sawDigit, nonzero := false, false
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		sawDigit = true
		d := uint64(s[i] - '0')
		if digits < 19 {
			if d != 0 || digits > 0 {
				mant = mant*10 + d
				digits++
			}
		} else {
			exp++ // digit beyond precision: only its magnitude counts
		}
		nonzero = nonzero || d != 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			sawDigit = true
			d := uint64(s[i] - '0')
			nonzero = nonzero || d != 0
			if digits < 19 {
				if d != 0 || digits > 0 {
					mant = mant*10 + d
					digits++
				}
				exp--
			}
		}
	}
	if !sawDigit {
		return 0, syntaxError{s}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		start, e := i, 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if e < 10000 {
				e = e*10 + int(s[i]-'0')
			}
		}
		if i == start {
			return 0, syntaxError{s}
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return 0, syntaxError{s}
	}
	if neg && nonzero {
		return 0, errNegative
	}
	if mant == 0 {
		return 0, nil
	}
	exp += shift
	switch {
	case exp > 0:
		if exp > 19 {
			return 0, errOverflow
		}
		hi, lo := bits.Mul64(mant, pow10[exp])
		if hi != 0 || lo > math.MaxInt64 {
			return 0, errOverflow
		}
		return int64(lo), nil
	case exp < 0:
		if -exp > 19 {
			return 0, nil
		}
		p := pow10[-exp]
		q, r := mant/p, mant%p
		if r >= p-r { // round half away from zero
			q++
		}
		if q > math.MaxInt64 {
			return 0, errOverflow
		}
		return int64(q), nil
	}
	if mant > math.MaxInt64 {
		return 0, errOverflow
	}
	return int64(mant), nil
}

var pow10 = [20]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// maxTokens bounds a length or count field: larger values are treated as
// overflowing (no request is that large, and int32 storage is kept).
const maxTokens = math.MaxInt32

// parseCount parses a token length or image count: a non-negative integer,
// also written as a float ("63.0", as pandas exports integer columns with
// missing values); a fractional value is rounded to the nearest integer.
func parseCount(s string) (int32, error) {
	s = trimSpace(s)
	if s == "" {
		return 0, errEmpty
	}
	// Fast path: plain digits.
	if len(s) <= 9 {
		var v int32
		ok := true
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
				break
			}
			v = v*10 + int32(c-'0')
		}
		if ok {
			return v, nil
		}
	}
	v, err := parseDecimal(s, 0)
	if err != nil {
		return 0, err
	}
	if v > maxTokens {
		return 0, errOverflow
	}
	return int32(v), nil
}

func trimSpace(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == '\r') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

// parseDateTime parses YYYY-MM-DD[T ]HH:MM:SS[.fraction][zone] into
// nanoseconds since the Unix epoch. The zone is Z, ±HH:MM, ±HHMM, ±HH or
// absent (UTC: a trace without a zone has no daylight-saving jumps). Up to
// nine fractional digits count; further ones are ignored.
func parseDateTime(s string) (int64, error) {
	bad := dateError{s}
	if len(s) < 19 {
		return 0, bad
	}
	num := func(a, b int) (int, bool) {
		v := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || s[4] != '-' || s[7] != '-' ||
		(s[10] != 'T' && s[10] != ' ' && s[10] != 't') || s[13] != ':' || s[16] != ':' {
		return 0, bad
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return 0, bad
	}
	i := 19
	var frac int64
	if i < len(s) && (s[i] == '.' || s[i] == ',') {
		i++
		start := i
		scale := int64(1e8)
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			frac += int64(s[i]-'0') * scale
			scale /= 10
		}
		if i == start {
			return 0, bad
		}
	}
	offset := 0 // seconds east of UTC
	if i < len(s) {
		switch z := s[i:]; {
		case z == "Z" || z == "z":
		case z[0] == '+' || z[0] == '-':
			var h, m int
			var ok bool
			switch len(z) {
			case 3: // ±HH
				h, ok = num(i+1, i+3)
			case 5: // ±HHMM
				h, ok = num(i+1, i+3)
				if ok {
					m, ok = num(i+3, i+5)
				}
			case 6: // ±HH:MM
				h, ok = num(i+1, i+3)
				if ok && z[3] == ':' {
					m, ok = num(i+4, i+6)
				} else {
					ok = false
				}
			}
			if !ok || h > 23 || m > 59 {
				return 0, bad
			}
			offset = h*3600 + m*60
			if z[0] == '-' {
				offset = -offset
			}
		default:
			return 0, bad
		}
	}
	secs := daysFromCivil(year, month, day)*86400 + int64(hour*3600+minute*60+sec) - int64(offset)
	// int64 nanoseconds since 1970 reach from 1677 to 2262.
	if secs > math.MaxInt64/int64(1e9)-1 || secs < math.MinInt64/int64(1e9)+1 {
		return 0, errOverflow
	}
	return secs*1e9 + frac, nil
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil returns the days from 1970-01-01 to the proleptic Gregorian
// date y-m-d (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
