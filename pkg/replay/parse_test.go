package replay

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"
)

// ratOracle is the exact value of decimal s times 10^shift, rounded half
// away from zero, by math/big; ok is false when big.Rat rejects s.
func ratOracle(s string, shift int) (v *big.Int, ok bool) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, false
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(shift)), nil)))
	num, den := new(big.Int).Set(r.Num()), r.Denom()
	neg := num.Sign() < 0
	num.Abs(num)
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(m, big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if neg {
		q.Neg(q)
	}
	return q, true
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		s     string
		shift int
		want  int64
		err   error // nil, errNegative, errOverflow, or errSyntax (any syntaxError)
	}{
		{"0", 9, 0, nil},
		{"0.0", 3, 0, nil},
		{"55908.0", 3, 55908000, nil},
		{"4000000.5", 3, 4000000500, nil},
		{"1.5e3", 9, 1500e9, nil},
		{"1.5E-3", 9, 1500000, nil},
		{".5", 9, 5e8, nil},
		{"5.", 0, 5, nil},
		{"+3", 6, 3e6, nil},
		{"-0", 9, 0, nil},
		{"-0.0", 9, 0, nil},
		{"0.0000000005", 9, 1, nil}, // half away from zero
		{"0.0000000004", 9, 0, nil},
		{"9223372036.854775807", 9, math.MaxInt64, nil},
		{"9223372036.854775808", 9, 0, errOverflow},
		{"1e30", 3, 0, errOverflow},
		{"1e-400", 9, 0, nil},
		{"1e99999999999", 0, 0, errOverflow},
		{"123456789012345678901234", 0, 0, errOverflow},
		{"0.123456789012345678901234", 9, 123456789, nil},
		{"-1", 0, 0, errNegative},
		{"-1e-3", 9, 0, errNegative},
		{"", 0, 0, errSyntax},
		{"abc", 0, 0, errSyntax},
		{"1e", 0, 0, errSyntax},
		{"1.2.3", 0, 0, errSyntax},
		{".", 0, 0, errSyntax},
		{"1 2", 0, 0, errSyntax},
		{"NaN", 0, 0, errSyntax},
		{"inf", 0, 0, errSyntax},
		{"0x10", 0, 0, errSyntax},
	} {
		t.Run(c.s, func(t *testing.T) {
			got, err := parseDecimal(c.s, c.shift)
			switch {
			case c.err == errSyntax:
				var se syntaxError
				if !errors.As(err, &se) {
					t.Fatalf("got %d, %v; want a syntax error", got, err)
				}
			case err != c.err || got != c.want:
				t.Fatalf("got %d, %v; want %d, %v", got, err, c.want, c.err)
			}
			if err == nil && len(strings.TrimLeft(c.s, "+-0.")) <= 19 {
				if o, ok := ratOracle(c.s, c.shift); ok && (!o.IsInt64() || o.Int64() != got) {
					t.Errorf("oracle says %v", o)
				}
			}
		})
	}
}

// errSyntax marks the syntax-error cases of the table.
var errSyntax = errors.New("syntax")

func TestParseDateTime(t *testing.T) {
	for _, c := range []struct {
		s, layout string // layout: time.Parse's reading of s ("" : must fail)
	}{
		{"2023-11-16 18:17:03.9799600", "2006-01-02 15:04:05.9999999"},
		{"2024-05-12 00:00:00+00:00", "2006-01-02 15:04:05-07:00"},
		{"2024-05-12 00:00:00.123456+00:00", "2006-01-02 15:04:05.999999-07:00"},
		{"2024-05-12 23:59:59.5-07:30", "2006-01-02 15:04:05.9-07:00"},
		{"2024-10-15T12:00:00.269Z", time.RFC3339Nano},
		{"2024-10-15t12:00:00Z", "2006-01-02t15:04:05Z"},
		{"2024-11-15 16:57:50", time.DateTime},
		{"2024-02-29 00:00:00", time.DateTime},
		{"2000-02-29 00:00:00+0530", "2006-01-02 15:04:05-0700"},
		{"1970-01-01 00:00:00+01", "2006-01-02 15:04:05-07"},
		{"1969-12-31 23:59:59.999999999", "2006-01-02 15:04:05.999999999"},
		{"2023-02-29 00:00:00", ""},
		{"2023-13-01 00:00:00", ""},
		{"2023-01-01 24:00:00", ""},
		{"2023-01-01 00:60:00", ""},
		{"2023-01-01 00:00:60", ""},
		{"2023-01-01", ""},
		{"2023-01-01 00:00:00.", ""},
		{"2023-01-01 00:00:00 UTC", ""},
		{"2023-01-01 00:00:00+25:00", ""},
		{"2023/01/01 00:00:00", ""},
		{"1699999999", ""},
	} {
		t.Run(c.s, func(t *testing.T) {
			got, err := parseDateTime(c.s)
			if c.layout == "" {
				if err == nil {
					t.Fatalf("parsed %d, want an error", got)
				}
				return
			}
			want, perr := time.Parse(c.layout, c.s)
			if perr != nil {
				t.Fatalf("oracle: %v", perr)
			}
			if err != nil || got != want.UnixNano() {
				t.Fatalf("got %d, %v; want %d (%v)", got, err, want.UnixNano(), want.UTC())
			}
		})
	}
}

func TestParseCount(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int32
		ok   bool
	}{
		{"63", 63, true}, {" 63 ", 63, true}, {"63.0", 63, true}, {"63.5", 64, true}, {"1e3", 1000, true},
		{"0", 0, true}, {"2147483647", math.MaxInt32, true}, {"2147483648", 0, false},
		{"", 0, false}, {"-1", 0, false}, {"x", 0, false}, {"1,000", 0, false},
	} {
		got, err := parseCount(c.s)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseCount(%q) = %d, %v; want %d, ok %v", c.s, got, err, c.want, c.ok)
		}
	}
}
