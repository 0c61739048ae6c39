package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// svgText is one <text> of a plot: its position on the canvas (points, y
// grows upwards) and content.
type svgText struct {
	X, Y float64
	S    string
}

var textRE = regexp.MustCompile(`(?s)<text x="([-0-9.e]+)" y="([-0-9.e]+)"[^>]*>([^<]*)</text>`)

// plotSVG returns the inline SVG of the plot named name in page, "" when
// there is none.
func plotSVG(page, name string) string {
	i := strings.Index(page, fmt.Sprintf(`data-plot=%q`, name))
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(page[:i], "<svg")
	end := strings.Index(page[i:], "</svg>")
	return page[start : i+end+len("</svg>")]
}

// texts lists a plot's texts. The canvas writes them with
// transform="scale(1, -1)", so their y attribute is minus the position.
func texts(svg string) []svgText {
	var out []svgText
	for _, m := range textRE.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		out = append(out, svgText{x, -y, m[3]})
	}
	return out
}

// yTickLabels are a plot's numeric texts that share their height with no
// other numeric text: the y axis' labels (the x axis' share one height).
func yTickLabels(svg string) []string {
	byY := map[float64]int{}
	var nums []svgText
	for _, t := range texts(svg) {
		if _, err := strconv.ParseFloat(t.S, 64); err == nil {
			nums = append(nums, t)
			byY[t.Y]++
		}
	}
	var out []string
	for _, t := range nums {
		if byY[t.Y] == 1 {
			out = append(out, t.S)
		}
	}
	return out
}

// countReport is a run whose counts are small and whose in-flight means
// are fractional: where a default tick marker puts 0.5, 2.5 or 32.5.
func countReport(t *testing.T) []byte {
	t.Helper()
	s := &metrics.Summary{Completed: 12, Failed: 3, ErrorsByClass: map[string]int64{"timeout": 3}, Duration: 10, Backend: "vllm"}
	var ws []metrics.WindowStats
	for i := range 10 {
		ws = append(ws, metrics.WindowStats{Index: i, Start: float64(2 * i), End: float64(2*i + 2), OfferedRate: 0.6, AchievedRate: 0.6,
			Completed: 1, InFlightMean: 0.23 * float64(i%4)})
	}
	s.Windows, s.WindowSeconds = ws, 2
	s.LengthHistograms = map[string]*metrics.LengthBins{
		"input":  {Edges: []float64{256, 257, 258}, Counts: []int64{11, 1}, Total: 12},
		"output": {Edges: []float64{32, 33}, Counts: []int64{12}, Total: 12},
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, &Data{Summary: s}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestCountAxesHaveWholeNumberTicks: the axes that count requests or
// tokens are labelled with whole numbers only (no 2.5 requests).
func TestCountAxesHaveWholeNumberTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 1}, {0, 1.15}, {0, 2.3}, {0, 5.5}, {31.5, 32.5}, {255.5, 257.5}, {0, 173}, {3, 1e6}, {0.2, 0.8}} {
		ticks := intTicks{}.Ticks(r[0], r[1])
		labelled := 0
		for _, tk := range ticks {
			if tk.Value != math.Trunc(tk.Value) || tk.Value < r[0] || tk.Value > r[1] {
				t.Errorf("range %v: tick at %g", r, tk.Value)
			}
			if tk.Label != "" {
				labelled++
				if tk.Label != strconv.FormatFloat(tk.Value, 'f', 0, 64) {
					t.Errorf("range %v: tick %g labelled %q", r, tk.Value, tk.Label)
				}
			}
		}
		if whole := math.Floor(r[1]) >= math.Ceil(r[0]); whole && labelled == 0 || labelled > 7 {
			t.Errorf("range %v: %d labelled ticks", r, labelled)
		}
	}

	page := string(countReport(t))
	for _, c := range []struct {
		plot  string
		xToo  bool // the x axis counts too (tokens)
		fewer int  // at least this many y labels
	}{{PlotInFlight, false, 2}, {PlotErrors, false, 2}, {PlotInput, true, 2}, {PlotOutput, true, 2}} {
		svg := plotSVG(page, c.plot)
		if svg == "" {
			t.Fatalf("no %s plot", c.plot)
		}
		labels := yTickLabels(svg)
		if c.xToo {
			labels = nil
			for _, tx := range texts(svg) {
				if _, err := strconv.ParseFloat(tx.S, 64); err == nil {
					labels = append(labels, tx.S)
				}
			}
		}
		if len(labels) < c.fewer {
			t.Errorf("%s: tick labels %q", c.plot, labels)
		}
		for _, l := range labels {
			if v, _ := strconv.ParseFloat(l, 64); v != math.Trunc(v) || strings.Contains(l, ".") {
				t.Errorf("%s: tick label %q on a count axis", c.plot, l)
			}
		}
	}
}

// TestLegendBelowThePlot: a legend is drawn under the x axis' title, not
// over the plotted lines.
func TestLegendBelowThePlot(t *testing.T) {
	page := string(countReport(t))
	svg := plotSVG(page, PlotRate)
	var axis, key *svgText
	for _, tx := range texts(svg) {
		switch tx.S {
		case "time since start (s)":
			axis = &tx
		case "offered (by scheduled time)":
			key = &tx
		}
	}
	if axis == nil || key == nil {
		t.Fatalf("rate plot: axis title %v, legend entry %v", axis, key)
	}
	if key.Y >= axis.Y {
		t.Errorf("legend entry at height %.1f, above the x axis' title at %.1f: it is inside the plot", key.Y, axis.Y)
	}
}

// TestLongRunNameWhole: a run's name is never cut: the comparison page's
// tables, its plots' legends (wrapped over lines) and the console table all
// hold it whole.
func TestLongRunNameWhole(t *testing.T) {
	a, b := loadFixture(t, ""), loadFixture(t, "")
	long := "baseline-vllm-0.6.3-llama-3.1-8b-instruct-tp1-max-num-seqs-256-chunked-prefill-on-request-rate-20-run-2026-11-25.json"
	spaced := "the second run of the day, with the prefix cache on and a very long description that goes on past the width of any plot"
	a.Label, b.Label = long, spaced
	var out bytes.Buffer
	if err := WriteCompareHTML(&out, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	p := parseHTML(t, out.Bytes())
	for _, id := range []string{"runs", "rates"} {
		for _, name := range []string{long, spaced} {
			if !strings.Contains(p.text(id), name) {
				t.Errorf("table %s lacks the whole name %q", id, name)
			}
		}
	}
	squash := func(s string) string { return strings.Join(strings.Fields(s), "") }
	for _, plot := range []string{PlotTTFT, PlotE2E, PlotRate} {
		svg := plotSVG(out.String(), plot)
		var all strings.Builder
		for _, tx := range texts(svg) {
			all.WriteString(tx.S)
		}
		for i, name := range []string{long, spaced} {
			if !strings.Contains(squash(all.String()), squash(fmt.Sprintf("[%d] %s", i+1, name))) {
				t.Errorf("%s: the legend lacks the whole name %q", plot, name)
			}
		}
	}
	if plotSVG(out.String(), PlotRunRates) == "" {
		t.Error("no bar chart of the runs' rates")
	}
	var text bytes.Buffer
	if err := WriteCompareTable(&text, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{long, spaced} {
		if !strings.Contains(text.String(), name) {
			t.Errorf("the console table lacks the whole name %q:\n%s", name, text.String())
		}
	}
}

// TestRunRates: the rates table gives each run's offered, achieved and
// goodput rates.
func TestRunRates(t *testing.T) {
	a, b := loadFixture(t, "ttft:100"), loadFixture(t, "")
	a.Summary.Scheduled, a.Summary.ScheduleSpan = 11, 4 // 10 gaps in 4 s
	a.Summary.RequestThroughput = 2.25
	var out bytes.Buffer
	if err := WriteCompareHTML(&out, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	rates := parseHTML(t, out.Bytes()).text("rates")
	for _, want := range []string{"2.50 req/s", "2.25 req/s"} {
		if !strings.Contains(rates, want) {
			t.Errorf("rates table lacks %q: %s", want, rates)
		}
	}
	if g := a.Summary.Goodput; g == nil || !strings.Contains(rates, fmtFloat(g.Rate, 2)+" req/s") {
		t.Errorf("rates table lacks run 1's goodput %+v: %s", g, rates)
	}
}

// TestZeroITLGapsNoted: ITL gaps of 0 ms are counted in a note under the
// plot, not drawn at a 1 µs floor; a run without any has no note.
func TestZeroITLGapsNoted(t *testing.T) {
	render := func(cdf [][2]float64, count int64) string {
		s := &metrics.Summary{Completed: 10, Duration: 1}
		s.ITL = metrics.Dist{Count: count, Median: 8, Max: 20}
		s.LatencyCDFs = map[string][][2]float64{"itl": cdf}
		var b bytes.Buffer
		if err := WriteHTML(&b, &Data{Summary: s}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	zeros := [][2]float64{{0, 0}, {0, 0.2}, {0, 0.3}, {0.05, 0.31}, {8, 0.5}, {9, 0.9}, {20, 1}}
	page := render(zeros, 1000)
	note := parseHTML(t, []byte(page)).text("plot-" + PlotITL)
	if !strings.Contains(note, "300 gaps of 0 ms (30.0 % of 1000)") || !strings.Contains(note, "curve starts at their share") {
		t.Errorf("ITL figure: %q", note)
	}
	// Nothing is drawn left of the smallest positive gap: the log axis
	// starts there, not at a 0.001 floor.
	for _, tx := range texts(plotSVG(page, PlotITL)) {
		if tx.S == "0.001" {
			t.Error("the ITL axis reaches down to a 0.001 ms floor")
		}
	}
	// Without a count (a summary read from JSON), the share.
	if note := parseHTML(t, []byte(render(zeros, 0))).text("plot-" + PlotITL); !strings.Contains(note, "30.0 % of the gaps are 0 ms") {
		t.Errorf("ITL figure without a count: %q", note)
	}
	positive := [][2]float64{{0.05, 0}, {8, 0.5}, {9, 0.9}, {20, 1}}
	if strings.Contains(render(positive, 1000), "gaps of 0 ms") {
		t.Error("a run without zero gaps has a zero-gap note")
	}
}

// TestErrorsPlotSaysNoneFailed: with no failure the errors plot is not an
// empty chart with a 0–1 axis but says so; with failures it draws a bar
// per class.
func TestErrorsPlotSaysNoneFailed(t *testing.T) {
	page := func(s *metrics.Summary) string {
		var b bytes.Buffer
		if err := WriteHTML(&b, &Data{Summary: s}); err != nil {
			t.Fatal(err)
		}
		return plotSVG(b.String(), PlotErrors)
	}
	svg := page(&metrics.Summary{Completed: 12, Backend: "vllm", ErrorsByClass: map[string]int64{}})
	if !strings.Contains(svg, "none failed (12 completed)") {
		t.Errorf("no failures: the plot does not say none failed:\n%s", svg)
	}
	if labels := yTickLabels(svg); len(labels) > 0 || strings.Contains(svg, "<path") {
		t.Errorf("no failures: an axis or bars drawn (%v)", labels)
	}
	svg = page(&metrics.Summary{Completed: 12, Failed: 2, Backend: "vllm", ErrorsByClass: map[string]int64{"http_5xx": 2}})
	if strings.Contains(svg, "none failed") || !strings.Contains(svg, "http_5xx") || len(yTickLabels(svg)) < 2 {
		t.Errorf("2 failures: no bar chart:\n%.400s", svg)
	}
}

// TestSendLagMaxDoesNotHideP99: in bins of few sends p99 equals max; max
// is drawn first, as a wide pale band, so the p99 line stays visible on
// it, and the legend keeps the order p50, p99, max.
func TestSendLagMaxDoesNotHideP99(t *testing.T) {
	s := &metrics.Summary{Completed: 4, Backend: "vllm", WindowSeconds: 1}
	for i := range 4 {
		s.Windows = append(s.Windows, metrics.WindowStats{Index: i, Start: float64(i), End: float64(i + 1), Completed: 1,
			LagP50: 0.1, LagP99: 0.5, LagMax: 0.5})
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, &Data{Summary: s}); err != nil {
		t.Fatal(err)
	}
	svg := plotSVG(b.String(), PlotLag)
	stroke := func(c color.RGBA) string { return fmt.Sprintf("stroke:#%02X%02X%02X", c.R, c.G, c.B) }
	width := regexp.MustCompile(`stroke-width:([0-9.]+)`)
	first := func(style string) (at int, w float64) {
		for i, p := range strings.Split(svg, "<path")[1:] {
			if strings.Contains(p, style) && strings.Contains(p, "L") {
				m := width.FindStringSubmatch(p)
				w, _ = strconv.ParseFloat(m[1], 64)
				return i, w
			}
		}
		return -1, 0
	}
	p99At, p99W := first(stroke(palette[1]) + ";stroke-width")
	maxAt, maxW := first("stroke-opacity") // the one pale line
	if p99At < 0 || maxAt < 0 {
		t.Fatalf("p99 line at %d, max at %d (-1: not drawn)", p99At, maxAt)
	}
	if !(maxAt < p99At && maxW > 2*p99W) {
		t.Errorf("max drawn at %d (width %g), p99 at %d (width %g): want max first and wider, under p99", maxAt, maxW, p99At, p99W)
	}
	var legend []string
	for _, tx := range texts(svg) {
		if tx.S == "p50" || tx.S == "p99" || tx.S == "max" {
			legend = append(legend, tx.S)
		}
	}
	if strings.Join(legend, ",") != "p50,p99,max" {
		t.Errorf("legend %v", legend)
	}
}

// TestServerGaugesAreSteps: the server's idle share (and KV cache) is
// drawn as steps at the scrape times, each value held until the next
// scrape and the last a point — as the summary's time-weighted idle
// fraction counts them — never a line interpolated between scrapes.
func TestServerGaugesAreSteps(t *testing.T) {
	s := &metrics.Summary{Completed: 10, Backend: "vllm"}
	var pts []metrics.SeriesPoint
	for i := range 16 {
		pts = append(pts, metrics.SeriesPoint{Start: float64(i) / 2, End: float64(i+1) / 2, AchievedRate: 2, InFlight: 1,
			LagP50: math.NaN(), LagP99: math.NaN(), LagMax: math.NaN(),
			ServerRunning: math.NaN(), ServerWaiting: math.NaN(), KVCache: math.NaN(), ServerIdle: math.NaN()})
	}
	scrape := func(at, running, kv float64) metrics.ServerScrape {
		return metrics.ServerScrape{At: at, ServerSample: metrics.ServerSample{Running: running, Waiting: 0, KVCache: kv}}
	}
	// Four scrapes: idle at the start and at the end; busy between.
	scrapes := []metrics.ServerScrape{scrape(0.1, 0, 0), scrape(2.1, 3, 0.2), scrape(4.1, 5, 0.4), scrape(6.1, 0, 0)}
	var b bytes.Buffer
	if err := WriteHTML(&b, &Data{Summary: s, Series: pts, SeriesNote: "bins of 500ms", Server: scrapes}); err != nil {
		t.Fatal(err)
	}
	svg := plotSVG(b.String(), PlotKVCache)
	if svg == "" {
		t.Fatal("no KV-cache plot")
	}
	for _, c := range []struct {
		name  string
		style string
	}{{"KV-cache usage", fmt.Sprintf("stroke:#%02X%02X%02X;stroke-width:1.4\"", palette[0].R, palette[0].G, palette[0].B)},
		{"idle", fmt.Sprintf("stroke:#%02X%02X%02X;stroke-width:1.4;stroke-dasharray", palette[1].R, palette[1].G, palette[1].B)}} {
		var path string
		for _, p := range strings.Split(svg, "<path")[1:] {
			if strings.Contains(p, c.style) && strings.Count(p, "L") > 2 {
				path = p
				break
			}
		}
		if path == "" {
			t.Fatalf("%s: no line", c.name)
		}
		d := regexp.MustCompile(`d="([^"]*)"`).FindStringSubmatch(path)[1]
		var xy [][2]float64
		for _, m := range regexp.MustCompile(`[ML]([-0-9.]+),([-0-9.]+)`).FindAllStringSubmatch(d, -1) {
			x, _ := strconv.ParseFloat(m[1], 64)
			y, _ := strconv.ParseFloat(m[2], 64)
			xy = append(xy, [2]float64{x, y})
		}
		// 4 scrapes: a value at each, a held step before each but the
		// first; the last scrape's value (held for no time) is a dot, not
		// joined.
		if len(xy) != 6 {
			t.Errorf("%s: %d points, want 6 (steps at 4 scrapes, the last a dot): %s", c.name, len(xy), d)
			continue
		}
		xs := map[float64]bool{}
		for i := 1; i < len(xy); i++ {
			a, b := xy[i-1], xy[i]
			if a[0] != b[0] && a[1] != b[1] {
				t.Errorf("%s: segment %v → %v is slanted: interpolated between scrapes", c.name, a, b)
			}
			xs[b[0]] = true
		}
		if xs[xy[0][0]] = true; len(xs) != 4 {
			t.Errorf("%s: corners at %d times, want the 4 scrape times", c.name, len(xs))
		}
		if last, prev := xy[5], xy[4]; last[1] != prev[1] {
			t.Errorf("%s: the line ends with %v → %v, want the third scrape's value held to the last scrape", c.name, prev, last)
		}
	}
}
