package report

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// compareRuns are two runs: [1] steady, [2] as steady but for one E2E
// value 100 times the rest, its client saturated.
func compareRuns() []*Data {
	cdf := func(scale, top float64) [][2]float64 {
		var pts [][2]float64
		for i := 0; i <= 1000; i++ {
			pts = append(pts, [2]float64{scale * (100 + float64(i)/10), float64(i) / 1000})
		}
		pts[len(pts)-1][0] = top
		return pts
	}
	run := func(label string, top float64, sat bool) *Data {
		s := &metrics.Summary{Backend: "vllm", Mode: "poisson", Completed: 1000, Duration: 10, RequestThroughput: 100,
			Command:     "fineserve-gen --backend vllm --request-rate 100 --seed -1 --extra-request-body {\"a\":1} --output-file -",
			E2E:         metrics.Dist{Count: 1000, Mean: 150, Median: 150, P99: 199, Max: top},
			TTFT:        metrics.Dist{Count: 1000, Mean: 15, Median: 15, P99: 19.9, Max: 20},
			LatencyCDFs: map[string][][2]float64{"e2e": cdf(1, top), "ttft": cdf(0.1, 20)},
			Saturation:  &metrics.Saturation{Saturated: sat}}
		if sat {
			s.Saturation.Reason = "window 2: send lag p90 5.00 ms > 1.00 ms"
		}
		return &Data{Summary: s, Label: label}
	}
	return []*Data{run("steady", 200, false), run("outlier", 20000, true)}
}

// TestCompareShowsSaturation: a run whose client fell behind is flagged on
// the comparison page (a warning and the runs table) and in its table.
func TestCompareShowsSaturation(t *testing.T) {
	runs := compareRuns()
	var text, page bytes.Buffer
	if err := WriteCompareTable(&text, runs); err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(text.String()) {
		if strings.HasPrefix(l, "Client saturated") {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 4 || f[2] != "no" || f[3] != "yes" {
		t.Errorf("comparison table's saturation line %q, want no, yes", line)
	}
	if err := WriteCompareHTML(&page, runs); err != nil {
		t.Fatal(err)
	}
	p := parseHTML(t, page.Bytes())
	if got := p.text("runs"); !strings.Contains(got, "saturated") || !strings.Contains(got, "ok") {
		t.Errorf("runs table: %q", got)
	}
	if !strings.Contains(page.String(), "[2] outlier: the client fell behind its schedule") ||
		!strings.Contains(page.String(), "send lag p90 5.00 ms") {
		t.Error("no warning for the saturated run")
	}
	if strings.Contains(page.String(), "[1] steady: the client fell behind") {
		t.Error("the steady run is flagged")
	}
}

// TestCompareCommandWrapsAtFlags: a command is split into pieces a page
// wraps between — the program, then each flag with its values — never
// inside a flag or between a flag and its value; the pieces give the
// command back.
func TestCompareCommandWrapsAtFlags(t *testing.T) {
	cmd := compareRuns()[0].Summary.Command
	got := cmdArgs(cmd)
	want := []string{"fineserve-gen", "--backend vllm", "--request-rate 100", "--seed -1", `--extra-request-body {"a":1}`, "--output-file -"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("pieces %q, want %q", got, want)
	}
	if strings.Join(got, " ") != cmd {
		t.Errorf("pieces joined %q, want %q", strings.Join(got, " "), cmd)
	}
	var page bytes.Buffer
	if err := WriteCompareHTML(&page, compareRuns()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<span class="arg">--request-rate 100</span>`) {
		t.Error("the comparison does not keep a flag with its value")
	}
	if !strings.Contains(page.String(), `<td class="cmdline">`) {
		t.Error("the command's cell breaks words anywhere (class msg) or is gone")
	}
	p := parseHTML(t, page.Bytes())
	if !strings.Contains(p.text("runs"), cmd) {
		t.Errorf("the command's text on the page differs from %q", cmd)
	}
}

// TestCompareCDFClipsOutlier: one E2E value 100 times the rest does not
// stretch the comparison's E2E axis: it ends near the values' p99.9, and
// the plot says so; a CDF without an outlier (TTFT) is not clipped.
func TestCompareCDFClipsOutlier(t *testing.T) {
	var page bytes.Buffer
	if err := WriteCompareHTML(&page, compareRuns()); err != nil {
		t.Fatal(err)
	}
	s := page.String()
	e2e := plotSVG(s, PlotE2E)
	top := 0.0
	for _, tx := range texts(e2e) {
		if v, err := strconv.ParseFloat(strings.ReplaceAll(tx.S, ",", ""), 64); err == nil && tx.Y > 0 {
			top = math.Max(top, v)
		}
	}
	if top == 0 || top > 1000 {
		t.Errorf("E2E axis labels reach %g ms, want the p99.9 (about 200 ms), not the 20,000 ms outlier", top)
	}
	i := strings.Index(s, `id="plot-e2e_cdf"`)
	fig := s[i : i+strings.Index(s[i:], "</figure>")]
	if !strings.Contains(fig, "p99.9 of the runs&#39; values together") || !strings.Contains(fig, "20000 ms") {
		t.Errorf("the E2E plot does not say it is clipped: %s", fig[strings.LastIndex(fig, "</svg>"):])
	}
	j := strings.Index(s, `id="plot-ttft_cdf"`)
	if ttft := s[j : j+strings.Index(s[j:], "</figure>")]; strings.Contains(ttft, "p99.9 of the runs") {
		t.Error("the TTFT plot is clipped without an outlier")
	}
}

// TestCompareAchievedRatePlot: runs whose summaries hold several windows
// get their achieved rate over time drawn as steps, one per window; runs
// of one window each (a short run) get no plot of lone dots but a line
// saying why. A figure n/a in a run has no difference ("–", not NaN).
func TestCompareAchievedRatePlot(t *testing.T) {
	windows := func(n int) []metrics.WindowStats {
		var ws []metrics.WindowStats
		for i := range n {
			ws = append(ws, metrics.WindowStats{Index: i, Start: float64(10 * i), End: float64(10 * (i + 1)), AchievedRate: float64(5 + i)})
		}
		return ws
	}
	for _, n := range []int{1, 3} {
		runs := compareRuns()
		for _, r := range runs {
			r.Summary.Windows, r.Summary.WindowSeconds = windows(n), 10
		}
		runs[1].Summary.SendLag = metrics.Dist{} // n/a in [2]
		runs[0].Summary.SendLag = metrics.Dist{Count: 5, Median: 1, P99: 2, Max: 3}
		var page bytes.Buffer
		if err := WriteCompareHTML(&page, runs); err != nil {
			t.Fatal(err)
		}
		doc := page.String()
		i := strings.Index(doc, `<figure id="plot-rate">`)
		if i < 0 {
			t.Fatalf("%d window(s): no achieved-rate figure", n)
		}
		fig := doc[i : i+strings.Index(doc[i:], "</figure>")]
		switch drawn := strings.Contains(fig, "<svg"); {
		case n == 1 && (drawn || !strings.Contains(fig, "one window only")):
			t.Errorf("one window a run: %s", fig)
		case n == 3 && (!drawn || strings.Count(fig, "<path") < 2):
			t.Errorf("three windows a run: the rate is not drawn: %.300s", fig)
		}
		if strings.Contains(doc, "NaN") {
			t.Errorf("%d window(s): the page shows NaN", n)
		}
	}
}

// TestCompareShowsIntervals: repeated runs' figures show their interval
// (mean ± half-width), on the comparison page and table and on a run's own
// report; a difference both intervals could hold is not coloured as a
// change, one beyond them is.
func TestCompareShowsIntervals(t *testing.T) {
	runs := compareRuns()
	for i, hw := range []float64{2, 3} {
		s := runs[i].Summary
		s.Saturation.Saturated = false
		s.Repeats = &metrics.RepeatsSummary{Runs: 3, Requested: 3, Confidence: 0.95, WideShare: 0.1, Figures: map[string]metrics.RepeatFigure{
			"mean_ttft_ms":       {Mean: s.TTFT.Mean, HalfWidth: hw, N: 3},
			"request_throughput": {Mean: s.RequestThroughput, HalfWidth: 0.5, N: 3},
		}}
	}
	runs[1].Summary.TTFT.Mean = 18         // 3 ms apart, intervals of 2 and 3: within
	runs[1].Summary.RequestThroughput = 90 // 10 apart, intervals of 0.5: a change
	runs[1].Summary.Repeats.Figures["request_throughput"] = metrics.RepeatFigure{Mean: 90, HalfWidth: 0.5, N: 3}
	var b bytes.Buffer
	if err := WriteCompareHTML(&b, runs); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"15.00 ± 2.00 ms", "18.00 ± 3.00 ms", "3.00 (&#43;20.0 %) within the intervals", "100.00 ± 0.50 req/s"} {
		if !strings.Contains(page, want) {
			t.Errorf("comparison page: no %q", want)
		}
	}
	if !strings.Contains(page, `<td class="worse">-10.00 (-10.0 %)</td>`) {
		t.Errorf("a throughput change beyond the intervals is not coloured")
	}
	if i := strings.Index(page, "<td>Mean TTFT</td>"); i < 0 || strings.Contains(page[i:i+strings.Index(page[i:], "</tr>")], `class="worse"`) {
		t.Errorf("a TTFT difference within the intervals is coloured")
	}
	b.Reset()
	if err := WriteHTML(&b, runs[0]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<td>Mean TTFT</td><td>15.00 ± 2.00 ms</td>") {
		t.Errorf("a repeated run's report shows no interval")
	}
	b.Reset()
	runs[0].Summary.Repeats = nil
	if err := WriteHTML(&b, runs[0]); err != nil || !strings.Contains(b.String(), "<td>Mean TTFT</td><td>15.00 ms</td>") {
		t.Errorf("a single run's report: %v", err)
	}
}
