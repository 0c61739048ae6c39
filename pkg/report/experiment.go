package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// writeSteadyState prints which window the headline figures are over and
// the figures over the steady-state window (--steady-state).
func writeSteadyState(t *table, s *metrics.Summary) {
	ss := s.SteadyState
	if ss == nil {
		return
	}
	t.line("%s", center("Steady State ("+ss.Rule+")", '-', 50))
	t.row("Headline figures above:", fmt.Sprintf("whole run (0.00-%.2f s)", s.Duration))
	if ss.Note != "" {
		t.row("Steady-state window:", ss.Note)
		return
	}
	t.row("Steady-state window (s):", fmt.Sprintf("%.2f-%.2f", ss.StartS, ss.EndS))
	if ss.Rule == metrics.SteadyAuto {
		t.row("Running level (requests in flight):", ss.InFlightLevel)
	}
	t.row("Requests sent in the window:", ss.Requests)
	for _, r := range []struct{ label, key string }{
		{"Request throughput (req/s):", "request_throughput"},
		{"Output token throughput (tok/s):", "output_throughput"},
		{"Mean TTFT (ms):", "mean_ttft_ms"},
		{"P99 TTFT (ms):", "p99_ttft_ms"},
		{"Mean TPOT (ms):", "mean_tpot_ms"},
		{"P99 TPOT (ms):", "p99_tpot_ms"},
		{"Mean E2E Latency (ms):", "mean_e2e_latency_ms"},
		{"P99 E2E Latency (ms):", "p99_e2e_latency_ms"},
	} {
		if v, ok := ss.Figures[r.key]; ok {
			t.row(r.label, v)
		}
	}
}

// writeRepeats prints a repeated run's intervals: each headline figure as
// mean ± half-width (its share of the mean), a wide one marked.
func writeRepeats(t *table, s *metrics.Summary) {
	r := s.Repeats
	if r == nil {
		return
	}
	t.line("%s", center(fmt.Sprintf("Repeated Runs (%d of %d)", r.Runs, r.Requested), '-', 50))
	t.row("Figures above:", "means over the runs")
	t.row("Interval:", fmt.Sprintf("%.0f %% CI of the mean (Student's t); WIDE: half-width > %.0f %% of the mean", 100*r.Confidence, 100*r.WideShare))
	if r.Converged != nil {
		c := "no: every run made"
		if *r.Converged {
			c = "yes"
		}
		t.row("Converged ("+r.UntilConverged+"):", c)
	}
	keys := make([]string, 0, len(r.Figures))
	for k := range r.Figures {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return strings.Compare(figureOrder(a), figureOrder(b)) })
	for _, k := range keys {
		t.row(k+":", IntervalText(r.Figures[k]))
	}
}

// writeThresholds prints the --threshold verdicts, a row each: ok or
// BREACHED, with the figure judged.
func writeThresholds(t *table, s *metrics.Summary) {
	if len(s.Thresholds) == 0 {
		return
	}
	t.line("%s", center("Thresholds", '-', 50))
	for _, v := range s.Thresholds {
		t.row(v.Threshold+":", ThresholdText(v))
	}
}

// ThresholdText is a verdict as the table shows it: "ok (p99_ttft_ms
// 212.4)", "BREACHED (upper bound of p99_ttft_ms 412)", "BREACHED: the
// run has no p99_ttft_ms".
func ThresholdText(v metrics.ThresholdVerdict) string {
	if v.Value == nil {
		return "BREACHED: the run has no " + v.Key
	}
	what := v.Key
	if v.On != "" && v.On != "mean" {
		what = v.On + " bound of " + v.Key
	}
	verdict := "ok"
	if !v.Pass {
		verdict = "BREACHED"
	}
	return fmt.Sprintf("%s (%s %s)", verdict, what, strconv.FormatFloat(*v.Value, 'g', 6, 64))
}

// IntervalText is a figure's interval as the table shows it:
// "212.40 ± 8.10 (3.8 %)", "WIDE" appended when it is wide.
func IntervalText(f metrics.RepeatFigure) string {
	rel := "-"
	if f.Mean != 0 {
		rel = strconv.FormatFloat(100*f.HalfWidth/math.Abs(f.Mean), 'f', 1, 64) + " %"
	}
	txt := fmt.Sprintf("%.2f ± %.2f (%s, n=%d)", f.Mean, f.HalfWidth, rel, f.N)
	if f.Wide {
		txt += " WIDE"
	}
	return txt
}

// figureOrder sorts throughput first, then each latency by its figure.
func figureOrder(k string) string {
	switch {
	case strings.HasSuffix(k, "throughput"):
		return "0" + k
	case strings.HasPrefix(k, "request_goodput"), strings.HasPrefix(k, "goodput"):
		return "2" + k
	}
	for i, d := range []string{"ttft", "tpot", "itl", "e2e_latency"} {
		if strings.Contains(k, "_"+d+"_") {
			for j, st := range []string{"mean", "median", "p90", "p95", "p99"} {
				if strings.HasPrefix(k, st+"_") {
					return fmt.Sprintf("1%d%d", i, j)
				}
			}
		}
	}
	return "3" + k
}
