package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseDuration accepts Go durations ("90s", "1h30m") and bare numbers of
// seconds ("90", "0.5").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		// float64(math.MaxInt64) is 2^63: anything below converts safely.
		if math.IsNaN(f) || f < 0 || f*float64(time.Second) >= float64(math.MaxInt64) {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want e.g. 90s, 5m, 1h30m or a number of seconds", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// setParsed is a flag value's Set: s parsed by parse into *dst, which an
// error leaves as it was.
func setParsed[T any](dst *T, s string, parse func(string) (T, error)) error {
	v, err := parse(s)
	if err != nil {
		return err
	}
	*dst = v
	return nil
}

// durationValue is a pflag.Value for parseDuration.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "0"
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error { return setParsed(v.d, s, parseDuration) }

func (v durationValue) Type() string { return "duration" }

// unitValue is a pflag.Value of a duration given as a (fractional) number
// of a unit — ms (millisValue) or µs (microsValue) — from 0 to 10⁶ s.
type unitValue struct {
	d          *time.Duration
	unit       time.Duration
	name, word string // "ms", "milliseconds"
}

// maxUnitValue bounds a unitValue: 10⁶ s, in ns.
const maxUnitValue = 1e15

func millisValue(d *time.Duration) unitValue {
	return unitValue{d, time.Millisecond, "ms", "milliseconds"}
}

func microsValue(d *time.Duration) unitValue {
	return unitValue{d, time.Microsecond, "µs", "microseconds"}
}

func (v unitValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatFloat(float64(*v.d)/float64(v.unit), 'g', -1, 64)
}

func (v unitValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > maxUnitValue/float64(v.unit) {
		return fmt.Errorf("%q: want a number of %s ≥ 0", s, v.word)
	}
	*v.d = time.Duration(f * float64(v.unit))
	return nil
}

func (v unitValue) Type() string { return v.name }

// parseRate parses a request rate: a number > 0, or inf.
func parseRate(s string) (float64, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch s {
	case "inf", "+inf", "infinity":
		return math.Inf(1), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f <= 0 {
		return 0, fmt.Errorf("rate %q: want a number > 0 or inf", s)
	}
	return f, nil
}

// rateValue is a pflag.Value for parseRate.
type rateValue struct{ r *float64 }

func (v rateValue) String() string {
	if v.r == nil {
		return "inf"
	}
	return strconv.FormatFloat(*v.r, 'g', -1, 64)
}

func (v rateValue) Set(s string) error { return setParsed(v.r, s, parseRate) }

func (v rateValue) Type() string { return "rate" }

// parseShard parses --shard I/N.
func parseShard(s string) (i, n int64, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("--shard %q: want I/N, e.g. 0/3", s)
	}
	i, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	n, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 64)
	if err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 0 ≤ I < N", s)
	}
	return i, n, nil
}
