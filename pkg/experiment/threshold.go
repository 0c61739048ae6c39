package experiment

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Bounds a threshold may be judged on with --repeat: the mean over runs
// (the default), or the upper or lower end of its confidence interval.
const (
	OnMean  = "mean"
	OnUpper = "upper"
	OnLower = "lower"
)

// Threshold is one --threshold: KEY OP VALUE[@BOUND].
type Threshold struct {
	Text  string
	Key   string
	Op    string // <=, <, >=, >
	Value float64
	// On is the bound judged with --repeat (OnMean, OnUpper, OnLower);
	// Bound tells it was given.
	On    string
	Bound bool
}

// ParseThreshold reads 'p99_ttft_ms<=300', 'goodput_share>=0.95' or
// 'p99_ttft_ms<=300@upper'; the key must be one of KnownKeys.
func ParseThreshold(s string) (Threshold, error) {
	t := Threshold{Text: s, On: OnMean}
	body := strings.TrimSpace(s)
	if b, on, ok := strings.Cut(body, "@"); ok {
		switch on = strings.TrimSpace(on); on {
		case OnMean, OnUpper, OnLower:
			t.On, t.Bound = on, true
		default:
			return t, fmt.Errorf("--threshold %q: @%s: want @mean, @upper or @lower", s, on)
		}
		body = b
	}
	i := strings.IndexAny(body, "<>")
	if i < 0 {
		return t, fmt.Errorf("--threshold %q: want KEY<=VALUE, KEY<VALUE, KEY>=VALUE or KEY>VALUE (e.g. p99_ttft_ms<=300)", s)
	}
	t.Key, t.Op = strings.TrimSpace(body[:i]), body[i:i+1]
	rest := body[i+1:]
	if strings.HasPrefix(rest, "=") {
		t.Op += "="
		rest = rest[1:]
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return t, fmt.Errorf("--threshold %q: %q is not a number", s, strings.TrimSpace(rest))
	}
	t.Value = v
	if err := CheckKey(t.Key); err != nil {
		return t, fmt.Errorf("--threshold %q: %w", s, err)
	}
	return t, nil
}

// Verdict is a threshold's outcome on a run.
type Verdict struct {
	Threshold
	// Got is the figure judged (the bound, with --repeat); Missing: the
	// run has no such figure (a breach: it cannot be shown to hold).
	Got     float64
	Missing bool
	Pass    bool
}

// Text is the verdict's one line.
func (v Verdict) Text() string {
	what := v.Key
	if v.On != OnMean {
		what = v.On + " bound of " + v.Key
	}
	switch {
	case v.Missing:
		return fmt.Sprintf("threshold %s: BREACHED: the run has no %s", v.Threshold.Text, v.Key)
	case v.Pass:
		return fmt.Sprintf("threshold %s: ok (%s %s)", v.Threshold.Text, what, fmtG(v.Got))
	}
	return fmt.Sprintf("threshold %s: BREACHED (%s %s)", v.Threshold.Text, what, fmtG(v.Got))
}

// Verdicts are vs as the summary's thresholds section records them.
func Verdicts(vs []Verdict) []metrics.ThresholdVerdict {
	out := make([]metrics.ThresholdVerdict, len(vs))
	for i, v := range vs {
		out[i] = metrics.ThresholdVerdict{Threshold: v.Threshold.Text, Key: v.Key, On: v.On, Pass: v.Pass}
		if !v.Missing {
			got := v.Got
			out[i].Value = &got
		}
	}
	return out
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// Judge judges every threshold on s: on its top-level value, or with a
// repeats section on the figure's interval (its mean, or its upper or
// lower bound).
func Judge(ts []Threshold, s *metrics.Summary) ([]Verdict, error) {
	vals, err := Values(s)
	if err != nil {
		return nil, err
	}
	out := make([]Verdict, 0, len(ts))
	for _, t := range ts {
		v := Verdict{Threshold: t}
		got, ok := vals[t.Key]
		if s.Repeats != nil {
			if f, fok := s.Repeats.Figures[t.Key]; fok {
				got, ok = f.Mean, true
				switch t.On {
				case OnUpper:
					got = f.Mean + f.HalfWidth
				case OnLower:
					got = f.Mean - f.HalfWidth
				}
			}
		}
		v.Got, v.Missing = got, !ok
		v.Pass = ok && holds(got, t.Op, t.Value)
		out = append(out, v)
	}
	return out, nil
}

func holds(x float64, op string, v float64) bool {
	switch op {
	case "<=":
		return x <= v
	case "<":
		return x < v
	case ">=":
		return x >= v
	case ">":
		return x > v
	}
	return false
}

// Converge is --until-converged FIGURE:PCT: stop repeating once the
// figure's interval half-width is within Share of its mean, after at least
// MinRuns runs.
type Converge struct {
	Text  string
	Key   string
	Share float64
}

// MinRuns is how many runs --until-converged makes before it judges.
const MinRuns = 3

// ParseConverge reads FIGURE:PCT, e.g. p99_ttft_ms:5% (the % may be left
// out; 0 < PCT < 100).
func ParseConverge(s string) (Converge, error) {
	k, p, ok := strings.Cut(s, ":")
	c := Converge{Text: s, Key: strings.TrimSpace(k)}
	if !ok {
		return c, fmt.Errorf("--until-converged %q: want FIGURE:PCT, e.g. p99_ttft_ms:5%%", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(p), "%"), 64)
	if err != nil || !(v > 0 && v < 100) {
		return c, fmt.Errorf("--until-converged %q: the percentage must be a number in (0, 100), e.g. 5%%", s)
	}
	c.Share = v / 100
	if err := CheckKey(c.Key); err != nil {
		return c, fmt.Errorf("--until-converged %q: %w", s, err)
	}
	return c, nil
}

// Done reports whether values (the figure's, one a run) have converged:
// at least MinRuns and a half-width within Share of the mean's magnitude.
func (c Converge) Done(values []float64) bool {
	if len(values) < MinRuns {
		return false
	}
	m, h := Interval(values)
	return h <= c.Share*math.Abs(m)
}
