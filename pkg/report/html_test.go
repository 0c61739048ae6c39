package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// page is an HTML report parsed with a real HTML5 parser.
type parsedPage struct {
	root *html.Node
}

func parseHTML(t *testing.T, b []byte) parsedPage {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the report does not parse as HTML: %v", err)
	}
	return parsedPage{root}
}

func (p parsedPage) each(f func(n *html.Node)) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		f(n)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(p.root)
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// plots returns the page's plot SVGs by name, with the number of drawn
// paths in each.
func (p parsedPage) plots() map[string]int {
	out := map[string]int{}
	p.each(func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "svg" {
			return
		}
		name, _ := attr(n, "data-plot")
		paths := 0
		parsedPage{n}.each(func(c *html.Node) {
			if c.Type == html.ElementNode && c.Data == "path" {
				paths++
			}
		})
		out[name] = paths
	})
	return out
}

// text returns the text content of the element with the given id.
func (p parsedPage) text(id string) string {
	var b strings.Builder
	p.each(func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == id {
			parsedPage{n}.each(func(c *html.Node) {
				if c.Type == html.TextNode {
					b.WriteString(c.Data)
				}
			})
		}
	})
	return b.String()
}

// checkSafe fails if the page could run code or fetch anything: no script
// element, no event handler attribute, no reference outside the page.
func (p parsedPage) checkSafe(t *testing.T) {
	t.Helper()
	p.each(func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		if n.Data == "script" || n.Data == "iframe" || n.Data == "object" || n.Data == "embed" {
			t.Errorf("the page holds a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("<%s %s=%q>: an event handler", n.Data, a.Key, a.Val)
			}
			if (a.Key == "src" || a.Key == "href" || a.Key == "xlink:href") && !strings.HasPrefix(a.Val, "#") && !strings.HasPrefix(a.Val, "data:") {
				t.Errorf("<%s %s=%q>: a reference outside the page", n.Data, a.Key, a.Val)
			}
		}
	})
}

// summaryPage writes a summary file holding b, loads it as the report
// command does and returns the HTML page made from it.
func summaryPage(t *testing.T, b []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Load(path, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteHTML(&out, d); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func loadFixture(t *testing.T, slo string) *Data {
	t.Helper()
	opt := LoadOptions{SLO: metrics.NoSLO}
	if slo != "" {
		s, err := metrics.ParseSLO([]string{slo})
		if err != nil {
			t.Fatal(err)
		}
		opt.SLO = s
	}
	d, err := Load(filepath.Join("testdata", "goodput.jsonl"), opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestGoodputFixtureByHand: testdata/goodput.jsonl holds eight requests;
// with targets ttft ≤ 100 ms, tpot ≤ 20 ms, e2el ≤ 1000 ms:
//
//	index ttft  tpot           e2e    meets
//	0      50   90/9 = 10      140    yes
//	1     100   180/9 = 20     280    yes (targets are inclusive)
//	2     101   10             191    no: ttft
//	3      50   225/9 = 25     275    no: tpot
//	4     500   0 (1 token)    500    no: ttft
//	5      90   900/45 = 20    990    yes
//	6     failed (HTTP 500)           no: a failed request never meets SLOs
//	7      40   961/49 ≈ 19.6  1001   no: e2el
//
// 3 of 8 meet every target; the run lasts from 0 to the last end, 0.7 s +
// 1001 ms = 1.701 s, so request_goodput = 3 / 1.701 req/s.
func TestGoodputFixtureByHand(t *testing.T) {
	d := loadFixture(t, "ttft:100,tpot:20,e2el:1000")
	s := d.Summary
	var rate, share float64
	var good int64
	if g := s.Goodput; g != nil {
		rate, share, good = g.Rate, g.Share, g.Requests
	}
	if good != 3 || share != 3.0/8 {
		t.Errorf("goodput %d requests, share %v; want 3 and 3/8", good, share)
	}
	if math.Abs(s.Duration-1.701) > 1e-9 || math.Abs(rate-3/1.701) > 1e-9 {
		t.Errorf("duration %v s, request_goodput %v; want 1.701 and %v", s.Duration, rate, 3/1.701)
	}
	if s.Completed != 7 || s.Failed != 1 || s.ErrorsByClass["http_5xx"] != 1 {
		t.Errorf("completed %d failed %d errors %v", s.Completed, s.Failed, s.ErrorsByClass)
	}
}

// TestHTMLReportFromRecords: every plot is drawn from per-request records,
// the page is self-contained and runs nothing, and strings that came from
// the server (an error message, a model name) are shown as text, escaped.
func TestHTMLReportFromRecords(t *testing.T) {
	d := loadFixture(t, "ttft:100 tpot:20 e2el:1000")
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	raw := b.String()
	p := parseHTML(t, b.Bytes())
	p.checkSafe(t)
	plots := p.plots()
	want := []string{PlotTTFT, PlotITL, PlotE2E, PlotTPOT, PlotRate, PlotLag, PlotInFlight, PlotInput, PlotOutput, PlotErrors}
	for _, name := range want {
		if n, ok := plots[name]; !ok {
			t.Errorf("no %s plot", name)
		} else if n < 5 {
			t.Errorf("%s plot has %d paths: nothing drawn", name, n)
		}
	}
	if len(plots) != len(want) {
		t.Errorf("plots %v, want %v", plots, want)
	}
	// The server's strings are text, never markup.
	if got := p.text("error-samples"); !strings.Contains(got, `"message":"<script>alert(1)</script>"`) {
		t.Errorf("error samples %q: the message must show verbatim", got)
	}
	if strings.Contains(raw, "<script>") || strings.Contains(raw, `"><script>`) {
		t.Error("an unescaped <script> in the page")
	}
	if !strings.Contains(raw, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the error message is not HTML-escaped")
	}
	var title string
	p.each(func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
			title = n.FirstChild.Data
		}
	})
	if title != `fineserve-gen report — mock"><script>alert(2)</script>` {
		t.Errorf("title %q: the model name must show verbatim", title)
	}
	summary := p.text("summary")
	for _, s := range []string{"Request goodput", "1.76 req/s", "Share meeting every SLO", "37.50 %", "ttft ≤ 100 ms, tpot ≤ 20 ms, e2el ≤ 1000 ms"} {
		if !strings.Contains(summary, s) {
			t.Errorf("summary table lacks %q:\n%s", s, summary)
		}
	}
	if !strings.Contains(raw, "Content-Security-Policy") {
		t.Error("no content security policy")
	}
}

// TestHTMLReportFromSummary: a summary alone has windows and distributions
// but no per-request data; the report plots what it has and says what it
// lacks. A FineServe summary (no extensions) still gives a page.
func TestHTMLReportFromSummary(t *testing.T) {
	s := &metrics.Summary{Backend: "vllm", Mode: "parametric", Model: "m", Seed: 7, Command: "fineserve-gen --mode parametric --seed 7",
		Completed: 100, Duration: 120, ErrorsByClass: map[string]int64{"timeout": 2}}
	s.TTFT = metrics.Dist{Count: 100, Mean: 30, Median: 25, P90: 40, P95: 50, P99: 80, P999: 90, Max: 95}
	s.E2E = metrics.Dist{Count: 100, Mean: 300, Median: 250, P90: 400, P95: 500, P99: 800, P999: 900, Max: 950}
	var ws []metrics.WindowStats
	for i := 0; i < 12; i++ {
		ws = append(ws, metrics.WindowStats{Index: i, Start: float64(10 * i), End: float64(10*i + 10), Offered: 10, OfferedRate: 1, Completed: 9, AchievedRate: 0.9,
			Sent: 10, LagP50: 0.1, LagP90: 0.2, LagP99: 0.3, LagMax: 0.4, InFlightMean: 2, InFlightMax: 4,
			Server: &metrics.ServerStats{Samples: 5, RunningMean: 2, KVCacheMean: 0.3, IdleFraction: 0.2}})
	}
	ws[3].Saturated, ws[3].Reasons = true, []string{"client CPU 95 % of 2 cores ≥ 90 %"}
	ws[1].MachineBusy = true
	s.Windows, s.WindowSeconds = ws, 10
	s.Saturation = &metrics.Saturation{Saturated: true, Windows: []int{3}, Reason: "window 3 (00:30–00:40): client CPU 95 % of 2 cores ≥ 90 %",
		MachineBusy: true, BusyWindows: []int{1}, BusyNote: "send lag p99 up to 5.21 ms in 1 of 4 windows while the client kept up"}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	page := summaryPage(t, b)
	p := parseHTML(t, page)
	p.checkSafe(t)
	plots := p.plots()
	for _, name := range []string{PlotTTFT, PlotE2E, PlotRate, PlotLag, PlotInFlight, PlotKVCache, PlotErrors} {
		if plots[name] < 5 {
			t.Errorf("%s: %d paths, want a drawn plot", name, plots[name])
		}
	}
	for _, name := range []string{PlotITL, PlotInput} {
		if _, ok := plots[name]; ok {
			t.Errorf("%s drawn without data", name)
		}
	}
	if !strings.Contains(p.text("plot-"+PlotInput), "not in this summary") {
		t.Errorf("input lengths: the page must say they are missing")
	}
	if !strings.Contains(p.text("client-saturated"), "fell behind") || !strings.Contains(p.text("windows"), "saturated") {
		t.Error("the client self-check is not shown")
	}
	if !strings.Contains(p.text("machine-busy"), "The machine was busy, not the client: send lag p99 up to 5.21 ms") ||
		!strings.Contains(p.text("windows"), "ok (machine busy)") {
		t.Error("the busy machine's note is not shown")
	}
	if p.text("command") != s.Command || p.text("seed") != "7" {
		t.Errorf("command %q seed %q", p.text("command"), p.text("seed"))
	}
	all := p.text("") + string(page)
	for _, note := range []string{"percentiles only", "Per-request data: not in a summary"} {
		if !strings.Contains(all, note) {
			t.Errorf("no note %q", note)
		}
	}

	// A FineServe summary line: no extensions at all.
	fs := `{"backend":"vllm","duration":10,"completed":5,"mean_ttft_ms":20,"median_ttft_ms":20,"p99_ttft_ms":30}` + "\n"
	if !strings.Contains(string(summaryPage(t, []byte(fs+fs))), "holds 2 summaries") {
		t.Error("a file of several summary lines: the page must say the last is shown")
	}
}

// TestRecordsRebuildTheRunsFigures: per-request records written by the run
// (AppendRecord) give back the run's figures when read for a report.
func TestRecordsRebuildTheRunsFigures(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	col := metrics.NewCollector()
	var jsonl []byte
	for i := 0; i < 500; i++ {
		r := &record.Request{}
		r.Reset()
		at := ms(float64(i) * 7.3)
		r.Index, r.Scheduled, r.Sent = int64(i), at, at+ms(0.05*float64(i%7))
		r.FirstToken = r.Sent + ms(20+float64(i%13))
		for k := 0; k < 1+i%9; k++ {
			r.TokenTimes = append(r.TokenTimes, r.FirstToken+ms(float64(k)*(4+float64(i%5))))
		}
		r.End = r.TokenTimes[len(r.TokenTimes)-1] + ms(0.2)
		r.InputLen, r.OutputLen, r.CompletionTokens, r.PromptTokens, r.Status = 50+i, 9, len(r.TokenTimes), 50+i, 200
		if i%50 == 0 {
			r.FirstToken, r.TokenTimes, r.CompletionTokens, r.Status = 0, nil, 0, 429
			r.ErrorClass, r.Error = record.ErrHTTP429, "slow down"
		}
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		col.Add(&s)
		jsonl = AppendRecord(jsonl, &s)
	}
	var want metrics.Summary
	col.Summarize(&want, col.LastEnd)
	d, err := FromRecords(bytes.NewReader(jsonl), LoadOptions{SLO: metrics.NoSLO})
	if err != nil {
		t.Fatal(err)
	}
	got := d.Summary
	if got.Completed != want.Completed || got.Failed != want.Failed || got.TotalOutputTokens != want.TotalOutputTokens {
		t.Fatalf("completed %d/%d failed %d/%d output %d/%d", got.Completed, want.Completed, got.Failed, want.Failed, got.TotalOutputTokens, want.TotalOutputTokens)
	}
	for _, c := range []struct {
		name      string
		got, want metrics.Dist
	}{{"ttft", got.TTFT, want.TTFT}, {"itl", got.ITL, want.ITL}, {"tpot", got.TPOT, want.TPOT}, {"e2e", got.E2E, want.E2E}, {"lag", got.SendLag, want.SendLag}} {
		// Records keep microseconds: figures agree within 1 µs.
		if math.Abs(c.got.Mean-c.want.Mean) > 1e-3 || math.Abs(c.got.P99-c.want.P99) > 1e-3 || math.Abs(c.got.Max-c.want.Max) > 1e-3 {
			t.Errorf("%s: mean %v p99 %v max %v; the run had %v %v %v", c.name, c.got.Mean, c.got.P99, c.got.Max, c.want.Mean, c.want.P99, c.want.Max)
		}
	}
	if math.Abs(got.Duration-want.Duration) > 1e-6 {
		t.Errorf("duration %v, want %v", got.Duration, want.Duration)
	}
	var offered float64
	for _, p := range d.Series {
		offered += p.OfferedRate * (p.End - p.Start)
	}
	if math.Abs(offered-500) > 1e-6 {
		t.Errorf("the time series offers %v requests, want 500", offered)
	}
	if len(d.Series) > SeriesPoints {
		t.Errorf("%d points, want at most %d", len(d.Series), SeriesPoints)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty.json":   "",
		"bad.jsonl":    `{"index":0,"scheduled_s":0}` + "\nnot json\n",
		"garbage.json": "<html>",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := Load(p, LoadOptions{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	p := filepath.Join(dir, "bad.jsonl")
	if _, err := Load(p, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("the error must name the line: %v", err)
	}
}

func TestCompare(t *testing.T) {
	a := loadFixture(t, "")
	b := loadFixture(t, "")
	b.Label = `<b>faster</b>`
	// Make run B faster: halve its TTFT distribution.
	cdfs := b.Summary.LatencyCDFs
	for i := range cdfs["ttft"] {
		cdfs["ttft"][i][0] /= 2
	}
	b.Summary.TTFT.Mean /= 2

	var text bytes.Buffer
	if err := WriteCompareTable(&text, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "[2] − [1]") || !strings.Contains(text.String(), "(-50.0 %)") {
		t.Errorf("comparison table:\n%s", text.String())
	}
	var out bytes.Buffer
	if err := WriteCompareHTML(&out, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	p := parseHTML(t, out.Bytes())
	p.checkSafe(t)
	plots := p.plots()
	for _, name := range []string{PlotTTFT, PlotITL, PlotE2E, PlotTPOT, PlotRate} {
		if plots[name] < 5 {
			t.Errorf("%s: %d paths", name, plots[name])
		}
	}
	if !strings.Contains(p.text("compare"), "better") && !strings.Contains(out.String(), `class="better"`) {
		t.Error("the lower TTFT of run 2 is not marked better")
	}
	if strings.Contains(out.String(), "<b>faster</b>") {
		t.Error("a run label is not escaped")
	}
	if err := WriteCompareTable(&text, []*Data{a}); err == nil {
		t.Error("comparing one run must fail")
	}
}

// TestHTMLRatePlotDrawsTarget: with a target profile in the summary, the
// offered/achieved rate plot draws the target curve as one more line with
// its legend; a speed multiplier (replay, parametric) is not drawn as a
// rate.
func TestHTMLRatePlotDrawsTarget(t *testing.T) {
	render := func(tr *metrics.TargetRate) (int, string) {
		d := loadFixture(t, "")
		d.Summary.TargetRate = tr
		var b bytes.Buffer
		if err := WriteHTML(&b, d); err != nil {
			t.Fatal(err)
		}
		return parseHTML(t, b.Bytes()).plots()[PlotRate], b.String()
	}
	stages := []metrics.TargetStage{{DurationS: 0, Target: 2}, {DurationS: 1, Target: 8}, {DurationS: 1, Target: 8}}
	if _, page := render(nil); strings.Contains(page, "target (") {
		t.Error("a target legend without a target")
	}
	if n, page := render(&metrics.TargetRate{Unit: "req/s", Source: "--stages", Stages: stages}); n < 5 || !strings.Contains(page, "target (--stages)") {
		t.Errorf("rate plot with a target: %d paths, legend present: %v", n, strings.Contains(page, "target (--stages)"))
	}
	if _, page := render(&metrics.TargetRate{Unit: "x time scale", Source: "--stages", Stages: stages}); strings.Contains(page, "target (--stages)") {
		t.Error("a speed multiplier was drawn as a rate")
	}
	ts := targetSeries(&metrics.TargetRate{Unit: "req/s", Stages: []metrics.TargetStage{{DurationS: 10, Target: 100, Exponential: false}, {DurationS: 10, Target: 1000, Exponential: true}}})
	if ts.Y[0] != 0 || ts.Y[32] != 50 || math.Abs(ts.Y[65+32]-math.Sqrt(100*1000)) > 1e-9 || ts.X[len(ts.X)-1] != 20 {
		t.Errorf("target series: start %g, middle of the linear stage %g, of the exponential one %g, end at %g s", ts.Y[0], ts.Y[32], ts.Y[65+32], ts.X[len(ts.X)-1])
	}
}

// TestHTMLReportEndpoints: a summary with several endpoints gets their
// table, a column each; one without gets none.
func TestHTMLReportEndpoints(t *testing.T) {
	for _, eps := range [][]metrics.EndpointSummary{nil, {
		{Index: 0, URL: "http://127.0.0.1:8001", Requests: 10, Completed: 10, ErrorsByClass: map[string]int64{}, P99TTFT: 21.5},
		{Index: 1, URL: "http://127.0.0.1:8009", Requests: 10, Failed: 10, ErrorsByClass: map[string]int64{"connect": 10}},
	}} {
		s := &metrics.Summary{Backend: "vllm", Mode: "poisson", Completed: 10, Failed: 10, Duration: 1, Endpoints: eps}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		html := string(summaryPage(t, b))
		has := strings.Contains(html, `<table id="endpoints">`)
		if has != (eps != nil) {
			t.Fatalf("endpoints table present %v with %d endpoints", has, len(eps))
		}
		for _, want := range []string{"#2 http://127.0.0.1:8009", "(connect 10)", "21.50"} {
			if eps != nil && !strings.Contains(html, want) {
				t.Errorf("no %q in the endpoints table", want)
			}
		}
	}
}

// TestHTMLIdleShareNeedsScrapes: the report shows the server's idle
// fraction with the scrapes it rests on, and withholds it (saying why)
// below metrics.MinIdleScrapes, in the summary, the server section and
// the windows alike.
func TestHTMLIdleShareNeedsScrapes(t *testing.T) {
	for _, tc := range []struct {
		n          int64
		want, lack string
	}{
		{5, `<td id="server-idle">not shown: 5 scrape(s), fewer than the 30 an idle share needs</td>`, "34.3 %"},
		{metrics.MinIdleScrapes, `<td id="server-idle">34.3% (30 scrapes)</td>`, "not shown"},
	} {
		st := &metrics.ServerStats{Samples: tc.n, IdleFraction: 0.343, Observed: 60}
		s := &metrics.Summary{Backend: "vllm", Completed: 3, ServerMetrics: &metrics.ServerSummary{URL: "http://127.0.0.1:1/metrics", Available: true, ServerStats: st},
			Windows: []metrics.WindowStats{{Index: 0, Start: 0, End: 60, Server: st}}}
		var b strings.Builder
		if err := WriteHTML(&b, &Data{Summary: s}); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if !strings.Contains(page, tc.want) {
			t.Errorf("%d scrapes: the page lacks %s", tc.n, tc.want)
		}
		if strings.Contains(page, tc.lack) {
			t.Errorf("%d scrapes: the page shows %q", tc.n, tc.lack)
		}
	}
}
