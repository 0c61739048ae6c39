package experiment

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// FailOn is one --fail-on of compare: KEY:+PCT% fails when the new value
// exceeds the base by more than PCT % (a figure that should not grow, as a
// latency), KEY:-PCT% when it falls below it by more (one that should not
// shrink, as a throughput).
type FailOn struct {
	Text string
	Key  string
	// Share is the change allowed, signed: +0.10 or −0.05.
	Share float64
}

// ParseFailOn reads KEY:+PCT% or KEY:-PCT% (the % may be left out).
func ParseFailOn(s string) (FailOn, error) {
	k, p, ok := strings.Cut(s, ":")
	f := FailOn{Text: s, Key: strings.TrimSpace(k)}
	p = strings.TrimSpace(p)
	if !ok || (!strings.HasPrefix(p, "+") && !strings.HasPrefix(p, "-")) {
		return f, fmt.Errorf("--fail-on %q: want KEY:+PCT%% (fail when it grows by more) or KEY:-PCT%% (when it shrinks by more), e.g. p99_ttft_ms:+10%%", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return f, fmt.Errorf("--fail-on %q: %q is not a signed non-zero percentage", s, p)
	}
	f.Share = v / 100
	if err := CheckKey(f.Key); err != nil {
		return f, fmt.Errorf("--fail-on %q: %w", s, err)
	}
	return f, nil
}

// Diff is one figure of two summaries.
type Diff struct {
	Key       string
	Base, New float64
	// Change is (New − Base) / |Base| (±Inf from a base of 0).
	Change float64
	// Tested: both summaries have the figure's runs (repeats), and P is
	// Welch's two-sided p-value; Significant is P < Alpha.
	Tested      bool
	P           float64
	Significant bool
	// Gate is the --fail-on judging the figure (nil: none); Regression
	// tells it failed: the change went beyond it, and was significant when
	// tested.
	Gate       *FailOn
	Regression bool
}

// Compare returns the differences of the headline figures both summaries
// have, and of every gated figure (one a summary lacks fails as missing).
// A figure's value is the mean over runs when the summary has repeats.
func Compare(base, cur *metrics.Summary, gates []FailOn) ([]Diff, []string, error) {
	bv, err := figureValues(base)
	if err != nil {
		return nil, nil, err
	}
	nv, err := figureValues(cur)
	if err != nil {
		return nil, nil, err
	}
	gated := map[string]*FailOn{}
	for i := range gates {
		gated[gates[i].Key] = &gates[i]
	}
	var diffs []Diff
	var missing []string
	seen := map[string]bool{}
	keys := append(append([]string(nil), Headline...), gateKeys(gates)...)
	for _, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		b, okb := bv[k]
		n, okn := nv[k]
		if !okb || !okn {
			if gated[k] != nil {
				missing = append(missing, k)
			}
			continue
		}
		d := Diff{Key: k, Base: b, New: n, Change: change(b, n), Gate: gated[k]}
		if xs, ys := runValues(base, k), runValues(cur, k); xs != nil && ys != nil {
			d.P, d.Tested = Welch(xs, ys)
			d.Significant = d.Tested && d.P < Alpha
		}
		if g := d.Gate; g != nil {
			beyond := (g.Share > 0 && d.Change > g.Share) || (g.Share < 0 && d.Change < g.Share)
			d.Regression = beyond && (!d.Tested || d.Significant)
		}
		diffs = append(diffs, d)
	}
	return diffs, missing, nil
}

func gateKeys(gates []FailOn) []string {
	k := make([]string, len(gates))
	for i, g := range gates {
		k[i] = g.Key
	}
	return k
}

// figureValues are a summary's figures, a repeated run's headline
// figures as their means over the runs.
func figureValues(s *metrics.Summary) (map[string]float64, error) {
	v, err := Values(s)
	if err != nil {
		return nil, err
	}
	if s.Repeats != nil {
		for k, f := range s.Repeats.Figures {
			v[k] = f.Mean
		}
	}
	return v, nil
}

// runValues are the per-run values of key (nil: not repeated).
func runValues(s *metrics.Summary, key string) []float64 {
	if s.Repeats == nil {
		return nil
	}
	if f, ok := s.Repeats.Figures[key]; ok && len(f.Values) >= 2 {
		return f.Values
	}
	return nil
}

func change(b, n float64) float64 {
	switch {
	case b == n:
		return 0
	case b == 0:
		return math.Copysign(math.Inf(1), n)
	}
	return (n - b) / math.Abs(b)
}

// WriteCompare prints the differences as a table, one figure a line: base,
// new, change, the test's p-value when tested, and the gate's verdict.
func WriteCompare(w io.Writer, diffs []Diff) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tbase\tnew\tchange\tWelch p\tgate")
	for _, d := range diffs {
		p := "-"
		if d.Tested {
			p = strconv.FormatFloat(d.P, 'f', 3, 64)
			if d.Significant {
				p += " *"
			}
		}
		gate := ""
		if d.Gate != nil {
			gate = "ok (" + d.Gate.Text + ")"
			if d.Regression {
				gate = "REGRESSION (" + d.Gate.Text + ")"
			} else if d.Tested && !d.Significant && ((d.Gate.Share > 0 && d.Change > d.Gate.Share) || (d.Gate.Share < 0 && d.Change < d.Gate.Share)) {
				gate = "ok: beyond " + d.Gate.Text + " but not significant"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.Key, fmtG(d.Base), fmtG(d.New), fmtChange(d.Change), p, gate)
	}
	return tw.Flush()
}

func fmtChange(c float64) string {
	if math.IsInf(c, 0) {
		return "from 0"
	}
	return fmt.Sprintf("%+.1f%%", 100*c)
}
