package session

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Unit is what a Dist's values are: a count of turns, a number of tokens or
// a duration.
type Unit int

const (
	// Count values are whole numbers ≥ 1 (turns per session).
	Count Unit = iota
	// Tokens values are whole numbers ≥ 1 (a message's length).
	Tokens
	// Duration values are times ≥ 0, written as Go durations (2s, 500ms)
	// or plain seconds.
	Duration
)

// Dist is a distribution of one session property, parsed from the command
// line: a constant ("5", "2s"), "uniform:A:B", "geometric:MEAN" (whole
// values ≥ 1), "exp:MEAN" or "lognormal:MEDIAN:SIGMA". The zero value is
// unset.
type Dist struct {
	Kind string // const, uniform, geometric, exp, lognormal; "" unset
	A, B float64
	Unit Unit
}

// Set reports whether d was given.
func (d Dist) Set() bool { return d.Kind != "" }

// Const returns the constant distribution of v.
func Const(v float64, u Unit) Dist { return Dist{Kind: "const", A: v, Unit: u} }

// ParseDist parses s as a distribution of values of unit u.
func ParseDist(s string, u Unit) (Dist, error) {
	s = strings.TrimSpace(s)
	d := Dist{Unit: u}
	kind, rest, has := strings.Cut(s, ":")
	if !has {
		v, err := parseValue(s, u)
		if err != nil {
			return d, err
		}
		d.Kind, d.A = "const", v
		return d, d.check()
	}
	args := strings.Split(rest, ":")
	want := map[string]int{"uniform": 2, "geometric": 1, "exp": 1, "lognormal": 2}[kind]
	if want == 0 {
		return d, fmt.Errorf("unknown distribution %q (want a value, uniform:A:B, geometric:MEAN, exp:MEAN or lognormal:MEDIAN:SIGMA)", kind)
	}
	if len(args) != want {
		return d, fmt.Errorf("%s takes %d parameter(s)", kind, want)
	}
	d.Kind = kind
	var err error
	if d.A, err = parseValue(args[0], u); err != nil {
		return d, err
	}
	if want == 2 {
		unit := u
		if kind == "lognormal" {
			unit = -1 // sigma is a plain number
		}
		if d.B, err = parseValue(args[1], unit); err != nil {
			return d, err
		}
	}
	return d, d.check()
}

// parseValue reads one parameter: a duration or seconds for Duration, a
// number otherwise (u < 0: a plain number).
func parseValue(s string, u Unit) (float64, error) {
	s = strings.TrimSpace(s)
	if u == Duration {
		if dur, err := time.ParseDuration(s); err == nil {
			return dur.Seconds(), nil
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		if u == Duration {
			return 0, fmt.Errorf("%q is not a duration (2s, 500ms) or a number of seconds", s)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return v, nil
}

// check validates d's parameters.
func (d Dist) check() error {
	low := 1.0
	if d.Unit == Duration {
		low = 0
	}
	switch d.Kind {
	case "const":
		if d.A < low {
			return fmt.Errorf("must be at least %g", low)
		}
	case "uniform":
		if d.A < low || d.B < d.A {
			return fmt.Errorf("uniform:A:B needs %g ≤ A ≤ B", low)
		}
	case "geometric":
		if d.Unit == Duration {
			return errors.New("geometric is for counts and lengths")
		}
		if d.A < 1 {
			return errors.New("geometric:MEAN needs MEAN ≥ 1")
		}
	case "exp":
		if d.A <= 0 {
			return errors.New("exp:MEAN needs MEAN > 0")
		}
	case "lognormal":
		if d.A <= 0 || d.B < 0 {
			return errors.New("lognormal:MEDIAN:SIGMA needs MEDIAN > 0 and SIGMA ≥ 0")
		}
	}
	if d.Unit == Tokens && (d.A > arrival.MaxLength || d.Kind == "uniform" && d.B > arrival.MaxLength) {
		return fmt.Errorf("a length is at most %d tokens", arrival.MaxLength)
	}
	return nil
}

// Mean is the distribution's mean (before rounding to whole values).
func (d Dist) Mean() float64 {
	switch d.Kind {
	case "const", "geometric", "exp":
		return d.A
	case "uniform":
		return (d.A + d.B) / 2
	case "lognormal":
		return d.A * math.Exp(d.B*d.B/2)
	}
	return 0
}

// Draw draws one value from r: whole and ≥ 1 for counts (at most
// MaxTurns) and tokens (at most arrival.MaxLength), ≥ 0 seconds for
// durations.
func (d Dist) Draw(r *rand.Rand) float64 {
	var v float64
	switch d.Kind {
	case "const":
		v = d.A
	case "uniform":
		if d.Unit == Duration {
			v = d.A + r.Float64()*(d.B-d.A)
		} else {
			lo, hi := math.Round(d.A), math.Round(d.B)
			v = lo + float64(r.IntN(int(hi-lo)+1))
		}
	case "geometric":
		// Trials until the first success with p = 1/mean: support 1, 2, …
		p := 1 / d.A
		if p >= 1 {
			v = 1
		} else {
			v = math.Floor(math.Log(1-r.Float64())/math.Log(1-p)) + 1
		}
	case "exp":
		v = r.ExpFloat64() * d.A
	case "lognormal":
		v = d.A * math.Exp(d.B*r.NormFloat64())
	}
	if d.Unit != Duration {
		v = max(math.Round(v), 1)
	}
	switch d.Unit { // a geometric or lognormal tail, or a huge constant
	case Tokens:
		v = min(v, arrival.MaxLength)
	case Count:
		v = min(v, MaxTurns)
	}
	return v
}

// String writes d as it is parsed.
func (d Dist) String() string {
	f := func(v float64) string {
		if d.Unit == Duration {
			return time.Duration(math.Round(v * 1e9)).String()
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	switch d.Kind {
	case "":
		return ""
	case "const":
		return f(d.A)
	case "uniform":
		return "uniform:" + f(d.A) + ":" + f(d.B)
	case "lognormal":
		return "lognormal:" + f(d.A) + ":" + strconv.FormatFloat(d.B, 'g', -1, 64)
	}
	return d.Kind + ":" + f(d.A)
}
