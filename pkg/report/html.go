package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Data is what an HTML report shows: a run's summary (with the extensions
// the run wrote: windows, latency CDFs, length histograms, server metrics,
// goodput, the client self-check) and, when per-request data was at hand, a
// fine time series.
type Data struct {
	Summary *metrics.Summary
	// Series is a time series finer than the summary's windows (the live
	// run's timeline, or bins built from per-request records). Nil: the
	// summary's windows are plotted.
	Series []metrics.SeriesPoint
	// SeriesNote says what Series is made of (e.g. "bins of 1s").
	SeriesNote string
	// Server are the server's scrapes (the live run's): its gauges are
	// drawn as steps at the scrape times, each held until the next, as
	// the summary's time-weighted figures hold them. Nil: the series'
	// (or windows') server figures, held over each bin or window.
	Server []metrics.ServerScrape
	// Source says what the report was built from (a file name, "live run").
	Source string
	// Label names the run in comparisons (default: Source).
	Label string
	// Notes are further remarks on what the data lacks.
	Notes []string
}

// Plot names, in page order: the data-plot attribute of each SVG.
const (
	PlotTTFT     = "ttft_cdf"
	PlotTTFO     = "ttfo_cdf" // runs with reasoning or tool calls only
	PlotITL      = "itl_cdf"
	PlotE2E      = "e2e_cdf"
	PlotTPOT     = "tpot_cdf"
	PlotRate     = "rate"
	PlotLag      = "send_lag"
	PlotInFlight = "in_flight"
	PlotKVCache  = "kv_cache"
	PlotInput    = "input_len"
	PlotOutput   = "output_len"
	PlotErrors   = "errors"
	// PlotRunRates is the comparison's bar chart of each run's rates.
	PlotRunRates = "run_rates"
)

// extras are the summary sections the report reads, in the shape its
// templates use.
type extras struct {
	Windows       []metrics.WindowStats
	WindowSeconds float64
	CDFs          map[string][][2]float64
	Lengths       map[string]*metrics.LengthBins
	Server        *metrics.ServerSummary
	Saturated     bool
	SatWindows    []int
	SatReason     string
	BusyNote      string
	Goodput       *float64
	GoodputShare  *float64
	GoodputCount  *int64
	GoodputSLO    map[string]float64
	ClientCPU     *float64
}

func readExtras(s *metrics.Summary) extras {
	e := extras{
		Windows: s.Windows, WindowSeconds: s.WindowSeconds, CDFs: s.LatencyCDFs, Lengths: s.LengthHistograms,
		Server: s.ServerMetrics, ClientCPU: s.ClientCPU,
	}
	if c := s.Saturation; c != nil {
		e.Saturated, e.SatWindows, e.SatReason, e.BusyNote = c.Saturated, c.Windows, c.Reason, c.BusyNote
	}
	if g := s.Goodput; g != nil {
		rate, share, n := g.Rate, g.Share, g.Requests
		e.Goodput, e.GoodputShare, e.GoodputCount, e.GoodputSLO = &rate, &share, &n, g.SLO
	}
	return e
}

// figure is one line of the summary table (and of a comparison).
type figure struct {
	Label string
	Value float64
	Unit  string
	// Better is the direction a comparison colours as better: -1 lower,
	// +1 higher, 0 neither.
	Better int
	Prec   int
}

func (f figure) Text() string {
	if math.IsNaN(f.Value) {
		return "n/a"
	}
	s := fmtFloat(f.Value, f.Prec)
	if f.Unit != "" {
		s += " " + f.Unit
	}
	return s
}

// figureKey is the summary key of a main figure and the factor from the
// key's value to the figure's ("" when it has none a repeated run gives
// an interval for).
func figureKey(label string) (key string, scale float64) {
	switch label {
	case "Request throughput":
		return "request_throughput", 1
	case "Output token throughput":
		return "output_throughput", 1
	case "Total token throughput":
		return "total_throughput", 1
	case "Request goodput":
		return metrics.KeyRequestGoodput, 1
	case "Share meeting every SLO":
		return metrics.KeyGoodputShare, 100
	}
	for _, d := range []struct{ name, key string }{{"TTFT", "ttft"}, {"TPOT", "tpot"}, {"ITL", "itl"}, {"E2E latency", "e2e_latency"}} {
		for _, st := range []struct{ name, key string }{{"Mean ", "mean"}, {"Median ", "median"}, {"P99 ", "p99"}} {
			if label == st.name+d.name {
				return st.key + "_" + d.key + "_ms", 1
			}
		}
	}
	return "", 0
}

// interval is f's confidence interval's half-width in a repeated run's
// summary (ok false: none) and whether it is wide.
func interval(s *metrics.Summary, f figure) (hw float64, wide, ok bool) {
	key, scale := figureKey(f.Label)
	if s.Repeats == nil || key == "" {
		return 0, false, false
	}
	r, ok := s.Repeats.Figures[key]
	if !ok || r.N < 2 {
		return 0, false, false
	}
	return scale * r.HalfWidth, r.Wide, true
}

// intervalText is f as a repeated run shows it, "212.40 ± 8.10 ms", else
// f.Text().
func intervalText(s *metrics.Summary, f figure) string {
	hw, wide, ok := interval(s, f)
	if !ok || math.IsNaN(f.Value) {
		return f.Text()
	}
	t := fmtFloat(f.Value, f.Prec) + " ± " + fmtFloat(hw, f.Prec)
	if f.Unit != "" {
		t += " " + f.Unit
	}
	if wide {
		t += " WIDE"
	}
	return t
}

// stat is a figure of d, NaN (shown "n/a") when d has no sample.
func stat(d metrics.Dist, v float64) float64 {
	if d.Empty() {
		return math.NaN()
	}
	return v
}

func fmtFloat(v float64, prec int) string {
	if prec < 0 {
		prec = 2
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// figures lists a summary's main figures. Token latencies (TTFT, TPOT,
// ITL) are left out of a run that streamed no tokens (image generation).
func figures(s *metrics.Summary, e *extras) []figure {
	const lower, higher, neither = -1, 1, 0
	tokens := s.TTFT.P99 > 0 || s.E2E.P99 == 0
	f := []figure{
		{"Successful requests", float64(s.Completed), "", higher, 0},
		{"Failed requests", float64(s.Failed), "", lower, 0},
		{"Error rate", 100 * s.ErrorRate, "%", lower, 2},
		{"Benchmark duration", s.Duration, "s", neither, 2},
		{"Request throughput", s.RequestThroughput, "req/s", higher, 2},
	}
	if s.Cancelled > 0 { // cut by the client (--cancel-share): not errors
		f = append(f, figure{"Cancelled by the client", float64(s.Cancelled), "", neither, 0},
			figure{"Cancelled after a first token", float64(s.CancelledFirstToken), "", neither, 0})
	}
	if tokens {
		f = append(f,
			figure{"Output token throughput", s.OutputThroughput, "tok/s", higher, 1},
			figure{"Total token throughput", s.TotalThroughput, "tok/s", higher, 1})
	}
	f = append(f, figure{"Concurrency", s.Concurrency, "", neither, 2})
	if tokens {
		f = append(f, figure{"Peak output token throughput (busiest second)", s.MaxOutputTokensPerS, "tok/s", higher, 0})
	}
	f = append(f, figure{"Peak concurrent requests", float64(s.MaxInFlight), "", neither, 0})
	if tokens {
		f = append(f, meanMedianP99("TTFT", s.TTFT)...)
		if a := s.Answers; a != nil && (a.ReasoningRequests > 0 || a.ToolRequests > 0) {
			f = append(f, meanMedianP99("TTFO (first output token)", s.TTFO)...)
		}
		f = append(f, meanMedianP99("TPOT", s.TPOT)...)
		f = append(f, meanMedianP99("ITL", s.ITL)...)
	}
	f = append(f, meanMedianP99("E2E latency", s.E2E)...)
	f = append(f,
		figure{"Send lag p50", stat(s.SendLag, s.SendLag.Median), "ms", lower, 3},
		figure{"Send lag p99", stat(s.SendLag, s.SendLag.P99), "ms", lower, 3},
		figure{"Send lag max", stat(s.SendLag, s.SendLag.Max), "ms", lower, 3})
	if tokens {
		f = append(f, figure{"P99 TTFT from scheduled time", stat(s.TTFTFromScheduled, s.TTFTFromScheduled.P99), "ms", lower, 2})
	} else {
		f = append(f, figure{"P99 E2E from scheduled time", stat(s.E2EFromScheduled, s.E2EFromScheduled.P99), "ms", lower, 2})
	}
	f = append(f, answerFigures(s)...)
	if e.Goodput != nil {
		f = append(f, figure{"Request goodput", *e.Goodput, "req/s", higher, 2})
	}
	if e.GoodputShare != nil {
		f = append(f, figure{"Share meeting every SLO", 100 * *e.GoodputShare, "%", higher, 2})
	}
	if e.Server != nil && e.Server.ServerStats != nil {
		idle := math.NaN() // withheld: too few scrapes (see the server section)
		if e.Server.IdleShown() {
			idle = 100 * e.Server.IdleFraction
		}
		f = append(f, figure{"Server idle fraction", idle, "%", neither, 1},
			figure{"Server running (mean)", e.Server.RunningMean, "", neither, 2},
			figure{"Server waiting (mean)", e.Server.WaitingMean, "", neither, 2},
			figure{"Server KV-cache usage (mean)", 100 * e.Server.KVCacheMean, "%", neither, 1})
	}
	return f
}

// answerFigures are the answers' headline figures: the reasoning share
// of the output, the share of requests that called a tool and of tool
// arguments that parse, and the share of structured answers that are
// valid; none for a run that saw none of them.
func answerFigures(s *metrics.Summary) []figure {
	a := s.Answers
	if a == nil {
		return nil
	}
	var f []figure
	if a.ReasoningRequests > 0 {
		f = append(f, figure{"Reasoning share of output", 100 * a.ReasoningShare, "%", 0, 1})
	}
	if a.ToolRequests > 0 {
		f = append(f, figure{"Requests that called a tool", 100 * a.ToolCallShare, "%", 0, 1})
		if a.ToolArgsValidShare != nil {
			f = append(f, figure{"Tool arguments that parse as JSON", 100 * *a.ToolArgsValidShare, "%", 1, 1})
		}
	}
	if a.StructuredValidShare != nil {
		f = append(f, figure{"Structured answers valid against the format", 100 * *a.StructuredValidShare, "%", 1, 1})
	}
	return f
}

// meanMedianP99 are the mean, median and p99 of the latency d (ms, lower is
// better), named as FineServe's table names them.
func meanMedianP99(name string, d metrics.Dist) []figure {
	return []figure{
		{"Mean " + name, stat(d, d.Mean), "ms", -1, 2},
		{"Median " + name, stat(d, d.Median), "ms", -1, 2},
		{"P99 " + name, stat(d, d.P99), "ms", -1, 2},
	}
}

// plotView is one plot of the page, or the reason it is missing.
type plotView struct {
	Name, Title string
	SVG         template.HTML
	Missing     string
	// Note says what the plot cannot show (values of 0 on a log axis).
	Note string
}

// page is the template's data.
type page struct {
	Title   string
	Source  string
	S       *metrics.Summary
	X       extras
	Figures []figure
	// FigureTexts are the figures as shown: with their interval in a
	// repeated run's report (intervalText).
	FigureTexts []string
	Rate        string
	MaxConc     string
	Latency     []plotView
	Time        []plotView
	Requests    []plotView
	SeriesNote  string
	Windows     []metrics.WindowStats
	OpenWindows bool
	Notes       []string
	Errors      []errorRow
	SLO         string
	Server      *metrics.ServerSummary
	// Table is every section of the console table (tableSections).
	Table []tableSection
	// Thresholds are the --threshold verdicts as lines; Breached: one
	// did not hold.
	Thresholds []string
	Breached   bool
	// Settings are the run's settings (settingRows), the first
	// SettingsGiven of them given, the rest at their defaults.
	Settings      []settingRow
	SettingsGiven int
}

type errorRow struct {
	Class string
	Count int64
}

// WriteHTMLFile writes d's report to path, through a temporary file
// renamed into place (a device is written directly): a failed write (a
// full disk) leaves neither a partial report nor the temporary file.
func WriteHTMLFile(path string, d *Data) error {
	return WriteFileAtomic(path, func(w io.Writer) error { return WriteHTML(w, d) })
}

// WriteHTML writes d's report: one self-contained HTML page (inline SVG
// plots and styles, no script, nothing fetched when viewed). Every string
// that came from the server or the command line is escaped.
func WriteHTML(w io.Writer, d *Data) error {
	if d.Summary == nil {
		return errors.New("report: no summary")
	}
	s := d.Summary
	x := readExtras(s)
	pg := page{
		Title: "fineserve-gen report", Source: d.Source, S: s, X: x, Figures: figures(s, &x),
		Rate: rateText(s.RequestRate), MaxConc: "not set", Windows: x.Windows, OpenWindows: len(x.Windows) <= 60,
		Server: x.Server, Notes: append([]string(nil), d.Notes...), Table: tableSections(s),
	}
	for _, f := range pg.Figures {
		pg.FigureTexts = append(pg.FigureTexts, intervalText(s, f))
	}
	pg.Settings, pg.SettingsGiven = settingRows(s)
	if s.Model != "" {
		pg.Title += " — " + s.Model
	}
	for _, v := range s.Thresholds {
		pg.Thresholds = append(pg.Thresholds, v.Threshold+": "+ThresholdText(v))
		pg.Breached = pg.Breached || !v.Pass
	}
	if s.MaxConcurrency != nil {
		pg.MaxConc = fmt.Sprint(*s.MaxConcurrency)
	}
	if len(x.GoodputSLO) > 0 {
		var parts []string
		for _, k := range []string{"ttft", "tpot", "e2el"} {
			if v, ok := x.GoodputSLO[k]; ok {
				parts = append(parts, fmt.Sprintf("%s ≤ %g ms", k, v))
			}
		}
		pg.SLO = strings.Join(parts, ", ")
	}
	note := func(format string, a ...any) { pg.Notes = append(pg.Notes, fmt.Sprintf(format, a...)) }
	add := func(list *[]plotView, name, title string, svg template.HTML, err error, missing string) error {
		if err != nil {
			return err
		}
		*list = append(*list, plotView{Name: name, Title: title, SVG: svg, Missing: missing})
		return nil
	}

	// Latency CDFs.
	cdfs := []struct{ name, key, title string }{
		{PlotTTFT, "ttft", "Time to first token (TTFT)"},
		{PlotITL, "itl", "Inter-token latency (ITL)"},
		{PlotE2E, "e2e", "End-to-end latency (E2E)"},
		{PlotTPOT, "tpot", "Time per output token (TPOT)"},
	}
	if a := s.Answers; a != nil && (a.ReasoningRequests > 0 || a.ToolRequests > 0) {
		// After any reasoning: a reasoning benchmark's headline.
		cdfs = slices.Insert(cdfs, 1, struct{ name, key, title string }{PlotTTFO, "ttfo", "Time to first output token (TTFO)"})
	}
	for _, c := range cdfs {
		series, coarse := cdfFor(s, &x, c.key)
		if len(series) == 0 {
			missing := "no " + strings.ToUpper(c.key) + " values in this run"
			if c.key != "e2e" && s.NoTokenMetrics() {
				missing = "not applicable: " + s.Measure().String() + " have no tokens (end-to-end only)"
			}
			if err := add(&pg.Latency, c.name, c.title+": CDF", "", nil, missing); err != nil {
				return err
			}
			continue
		}
		if coarse {
			note("%s CDF: drawn from the summary's percentiles only (the summary has no latency_cdfs)", strings.ToUpper(c.key))
		}
		svg, err := plotCDF(c.name, c.title+": CDF", []cdfSeries{{Points: series, Coarse: coarse}})
		if err := add(&pg.Latency, c.name, c.title+": CDF", svg, err, ""); err != nil {
			return err
		}
		_, _, logX, _ := cdfRange([]cdfSeries{{Points: series}}, math.Inf(1))
		pg.Latency[len(pg.Latency)-1].Note = zeroNote(c.key, series, distCount(s, c.key), logX)
	}

	// Time series.
	pts, from := d.Series, d.SeriesNote
	if pts == nil {
		pts = windowPoints(x.Windows)
		if len(pts) > 0 {
			from = fmt.Sprintf("the summary's windows of %g s", x.WindowSeconds)
			if len(pts) < 10 {
				note("Time series: only %d window(s) of %g s in the summary; per-request records (--results-jsonl) give finer plots", len(pts), x.WindowSeconds)
			}
		}
	}
	pg.SeriesNote = from
	if err := timePlots(&pg, pts, d.Server, s.TargetRate, add); err != nil {
		return err
	}

	// Requests: lengths and errors.
	for i, l := range []struct{ name, key, title, axis string }{
		{PlotInput, "input", "Input length distribution", "prompt tokens (target)"},
		{PlotOutput, "output", "Output length distribution", "output tokens"},
	} {
		b := x.Lengths[l.key]
		if b == nil || len(b.Counts) == 0 {
			if err := add(&pg.Requests, l.name, l.title, "", nil, "not in this summary (written by runs of this version, or built from per-request records)"); err != nil {
				return err
			}
			continue
		}
		svg, err := plotHistogram(l.name, l.title, l.axis, b.Edges, b.Counts, i) // palette colour: input 0, output 1
		if err := add(&pg.Requests, l.name, l.title, svg, err, ""); err != nil {
			return err
		}
	}
	if ttft, prompt, err := turnPlots(s.PerTurn); err != nil {
		return err
	} else if ttft != "" {
		pg.Requests = append(pg.Requests, plotView{Name: PlotTurnTTFT, Title: "TTFT by turn", SVG: ttft},
			plotView{Name: PlotTurnPrompt, Title: "Prompt size and prefix-cache hits by turn", SVG: prompt})
	}
	if lanes, drawn, err := agentLanes(s.Agents); err != nil {
		return err
	} else if lanes != "" {
		pg.Requests = append(pg.Requests, plotView{Name: PlotAgentLanes, Title: "Agentic conversations: steps, tool waits, subagents", SVG: lanes})
		if n := len(s.Agents.List); drawn < n || int64(n) < s.Agents.Conversations {
			note("Agentic swim-lanes: %d of %d conversation(s) drawn (the summary lists the first %d)", drawn, s.Agents.Conversations, n)
		}
	}
	labels, values := errorBars(s.ErrorsByClass)
	for i, l := range labels {
		pg.Errors = append(pg.Errors, errorRow{Class: l, Count: int64(values[i])})
	}
	none := "none failed"
	if s.Completed > 0 {
		none = fmt.Sprintf("none failed (%d completed)", s.Completed)
	}
	svg, err := plotBars(PlotErrors, "Failed requests by error class", "requests", labels, values, none)
	if err := add(&pg.Requests, PlotErrors, "Failed requests by error class", svg, err, ""); err != nil {
		return err
	}
	if x.Server == nil {
		note("Server metrics: not scraped in this run (--scrape-server-metrics)")
	} else if !x.Server.Available {
		note("Server metrics: no sample could be taken from %s", x.Server.URL)
	}
	return pageTemplate.Execute(w, &pg)
}

// targetSeries is the target request rate of --stages or a ramp (Poisson
// mode), sampled finely enough to draw its ramps and steps; nil without one
// or when the target is a speed multiplier, not a rate.
func targetSeries(t *metrics.TargetRate) *timeSeries {
	if t == nil || t.Unit != "req/s" || len(t.Stages) == 0 {
		return nil
	}
	const perStage = 64
	ts := &timeSeries{Label: "target (" + t.Source + ")", Dashed: true}
	start, from := 0.0, 0.0
	for _, st := range t.Stages {
		if st.DurationS <= 0 {
			ts.X, ts.Y = append(ts.X, start), append(ts.Y, st.Target)
			from = st.Target
			continue
		}
		for i := range perStage + 1 {
			x := start + st.DurationS*float64(i)/perStage
			y := from + (st.Target-from)*float64(i)/perStage
			if st.Exponential && from > 0 && st.Target > 0 {
				y = from * math.Pow(st.Target/from, float64(i)/perStage)
			}
			ts.X, ts.Y = append(ts.X, x), append(ts.Y, y)
		}
		start += st.DurationS
		from = st.Target
	}
	return ts
}

// timePlots adds the plots over time.
func timePlots(pg *page, pts []metrics.SeriesPoint, scrapes []metrics.ServerScrape, target *metrics.TargetRate, add func(*[]plotView, string, string, template.HTML, error, string) error) error {
	const none = "no time series: the summary has no windows and no per-request records were given"
	if len(pts) == 0 {
		for _, n := range [][2]string{{PlotRate, "Offered and achieved request rate"}, {PlotLag, "Send lag"}, {PlotInFlight, "Requests in flight"}} {
			if err := add(&pg.Time, n[0], n[1], "", nil, none); err != nil {
				return err
			}
		}
		return nil
	}
	xs := make([]float64, len(pts))
	col := func(f func(p *metrics.SeriesPoint) float64) []float64 {
		out := make([]float64, len(pts))
		for i := range pts {
			out[i] = f(&pts[i])
		}
		return out
	}
	for i, p := range pts {
		xs[i] = (p.Start + p.End) / 2
	}
	rates := []timeSeries{
		{Label: "offered (by scheduled time)", Y: col(func(p *metrics.SeriesPoint) float64 { return p.OfferedRate })},
		{Label: "achieved (completed, by end time)", Y: col(func(p *metrics.SeriesPoint) float64 { return p.AchievedRate })},
		{Label: "failed", Y: col(func(p *metrics.SeriesPoint) float64 { return p.FailedRate }), Dashed: true},
	}
	if t := targetSeries(target); t != nil {
		rates = append(rates, *t)
	}
	svg, err := plotTime(PlotRate, "Offered and achieved request rate", "requests/s", xs, rates, yLinear)
	if err := add(&pg.Time, PlotRate, "Offered and achieved request rate", svg, err, ""); err != nil {
		return err
	}
	svg, err = plotTime(PlotLag, "Send lag (send time − scheduled time)", "ms (log scale)", xs, []timeSeries{
		{Label: "p50", Y: col(func(p *metrics.SeriesPoint) float64 { return p.LagP50 })},
		{Label: "p99", Y: col(func(p *metrics.SeriesPoint) float64 { return p.LagP99 })},
		// max is often p99 (few sends a bin): a wide band under p99.
		{Label: "max", Y: col(func(p *metrics.SeriesPoint) float64 { return p.LagMax }), Back: true},
	}, yLog)
	if err := add(&pg.Time, PlotLag, "Send lag", svg, err, ""); err != nil {
		return err
	}
	flight := []timeSeries{{Label: "client: in flight", Y: col(func(p *metrics.SeriesPoint) float64 { return p.InFlight })}}
	// The server's gauges as steps: at the scrape times when the scrapes
	// are at hand, else held over each bin or window.
	server := func(label string, fromScrape func(*metrics.ServerScrape) float64, fromPoint func(*metrics.SeriesPoint) float64, dashed bool) timeSeries {
		ts := timeSeries{Label: label, Dashed: dashed, Steps: true}
		if len(scrapes) > 0 {
			ts.X, ts.Y = scrapeSteps(scrapes, fromScrape)
			ts.EndMark = true // the last scrape is held for no time
		} else {
			ts.X, ts.Y = pointSteps(pts, fromPoint)
		}
		if ts.X == nil {
			ts.X = []float64{} // no value: nothing drawn, not the common times
		}
		return ts
	}
	running := server("server: running", func(c *metrics.ServerScrape) float64 { return c.Running },
		func(p *metrics.SeriesPoint) float64 { return p.ServerRunning }, false)
	kv := server("KV-cache usage", func(c *metrics.ServerScrape) float64 { return c.KVCache },
		func(p *metrics.SeriesPoint) float64 { return p.KVCache }, false)
	if len(running.Y) > 0 {
		flight = append(flight, running,
			server("server: waiting", func(c *metrics.ServerScrape) float64 { return c.Waiting },
				func(p *metrics.SeriesPoint) float64 { return p.ServerWaiting }, true))
	}
	svg, err = plotTime(PlotInFlight, "Requests in flight", "requests", xs, flight, yCount)
	if err := add(&pg.Time, PlotInFlight, "Requests in flight", svg, err, ""); err != nil {
		return err
	}
	if len(kv.Y) > 0 {
		idle := server("idle (nothing running)", func(c *metrics.ServerScrape) float64 {
			switch {
			case math.IsNaN(c.Running):
				return math.NaN()
			case c.Running == 0:
				return 1
			}
			return 0
		}, func(p *metrics.SeriesPoint) float64 { return p.ServerIdle }, true)
		svg, err = plotTime(PlotKVCache, "Server KV-cache usage and idle share", "share (1 = 100 %)", xs, []timeSeries{kv, idle}, yLinear)
		if err := add(&pg.Time, PlotKVCache, "Server KV-cache usage", svg, err, ""); err != nil {
			return err
		}
	}
	return nil
}

// scrapeSteps draws a gauge of the server's scrapes as steps: each value
// held from its scrape to the next (as the summary's time-weighted means
// and idle fraction hold it), the last one a point at its scrape (drawn as
// a dot: timeSeries.EndMark). Scrapes without the gauge (NaN) are left
// out.
func scrapeSteps(scrapes []metrics.ServerScrape, get func(*metrics.ServerScrape) float64) (xs, ys []float64) {
	for i := range scrapes {
		v := get(&scrapes[i])
		if math.IsNaN(v) {
			continue
		}
		if n := len(ys); n > 0 {
			xs, ys = append(xs, scrapes[i].At), append(ys, ys[n-1])
		}
		xs, ys = append(xs, scrapes[i].At), append(ys, v)
	}
	return xs, ys
}

// pointSteps draws a figure of bins or windows as steps: each value held
// over its bin's span [Start, End]; bins without it (NaN) are left out.
func pointSteps(pts []metrics.SeriesPoint, get func(*metrics.SeriesPoint) float64) (xs, ys []float64) {
	for i := range pts {
		v := get(&pts[i])
		if math.IsNaN(v) {
			continue
		}
		xs, ys = append(xs, pts[i].Start, pts[i].End), append(ys, v, v)
	}
	return xs, ys
}

// distCount is the number of values of a latency distribution, 0 when the
// summary does not say (one read from JSON).
func distCount(s *metrics.Summary, key string) int64 {
	switch key {
	case "ttft":
		return s.TTFT.Count
	case "itl":
		return s.ITL.Count
	case "e2e":
		return s.E2E.Count
	case "tpot":
		return s.TPOT.Count
	case "ttfo":
		return s.TTFO.Count
	}
	return 0
}

// zeroNote says how many values of a CDF are 0 ms, "" when none is. ITL
// has them when chunks arrive together (in one read); a log axis cannot
// show 0, so the plot's curve starts at their share.
func zeroNote(key string, points [][2]float64, n int64, logX bool) string {
	share, ok := zeroShare(points)
	if !ok {
		return ""
	}
	what := "values"
	if key == "itl" {
		what = "gaps"
	}
	var text string
	switch {
	case share == 0: // only the minimum is 0
		text = fmt.Sprintf("Some %s of 0 ms (under 1 %% of them)", what)
	case n > 0:
		text = fmt.Sprintf("%d %s of 0 ms (%.1f %% of %d)", int64(math.Round(share*float64(n))), what, 100*share, n)
	default:
		text = fmt.Sprintf("%.1f %% of the %s are 0 ms", 100*share, what)
	}
	if key == "itl" {
		text += ": chunks that arrived together, under 1 µs apart"
	}
	if logX {
		text += ". A log axis has no 0: the curve starts at their share"
	}
	return text + "."
}

// cdfFor returns the CDF points of a metric: the summary's latency_cdfs,
// else a coarse CDF from its percentiles (coarse = true).
func cdfFor(s *metrics.Summary, x *extras, key string) ([][2]float64, bool) {
	if c := x.CDFs[key]; len(c) > 0 {
		return c, false
	}
	var d metrics.Dist
	switch key {
	case "ttft":
		d = s.TTFT
	case "itl":
		d = s.ITL
	case "e2e":
		d = s.E2E
	case "tpot":
		d = s.TPOT
	case "ttfo":
		d = s.TTFO
	}
	if d.Max == 0 && d.Median == 0 {
		return nil, false
	}
	return [][2]float64{{d.Median, 0.5}, {d.P90, 0.9}, {d.P95, 0.95}, {d.P99, 0.99}, {d.P999, 0.999}, {d.Max, 1}}, true
}

// windowPoints turns the summary's windows into series points.
func windowPoints(ws []metrics.WindowStats) []metrics.SeriesPoint {
	out := make([]metrics.SeriesPoint, 0, len(ws))
	for _, w := range ws {
		secs := w.End - w.Start
		p := metrics.SeriesPoint{
			Start: w.Start, End: w.End, OfferedRate: w.OfferedRate, AchievedRate: w.AchievedRate,
			LagP50: math.NaN(), LagP99: math.NaN(), LagMax: math.NaN(), InFlight: w.InFlightMean,
			ServerRunning: math.NaN(), ServerWaiting: math.NaN(), KVCache: math.NaN(), ServerIdle: math.NaN(),
		}
		if secs > 0 {
			p.FailedRate = float64(w.Failed) / secs
		}
		if w.Completed+w.Failed > 0 {
			p.LagP50, p.LagP99, p.LagMax = w.LagP50, w.LagP99, w.LagMax
		}
		if sv := w.Server; sv != nil && sv.Samples > 0 {
			p.ServerRunning, p.ServerWaiting, p.KVCache, p.ServerIdle = sv.RunningMean, sv.WaitingMean, sv.KVCacheMean, sv.IdleFraction
		}
		out = append(out, p)
	}
	return out
}

// errorBars returns the error classes in report order with their counts:
// every known class, and any other the summary holds.
func errorBars(m map[string]int64) ([]string, []float64) {
	var labels []string
	var values []float64
	for _, c := range record.ErrorClasses {
		labels = append(labels, c)
		values = append(values, float64(m[c]))
	}
	var other []string
	for c := range m {
		if !slices.Contains(record.ErrorClasses, c) {
			other = append(other, c)
		}
	}
	sort.Strings(other)
	for _, c := range other {
		labels = append(labels, c)
		values = append(values, float64(m[c]))
	}
	return labels, values
}

var funcs = template.FuncMap{
	"ms":    func(v float64) string { return fmtFloat(v, 2) },
	"f1":    func(v float64) string { return fmtFloat(v, 1) },
	"f2":    func(v float64) string { return fmtFloat(v, 2) },
	"f3":    func(v float64) string { return fmtFloat(v, 3) },
	"inc":   func(i int) int { return i + 1 },
	"pct":   func(v float64) string { return fmtFloat(100*v, 1) + " %" },
	"clock": clockText,
	"cpu": func(v float64) string {
		if v < 0 {
			return "–"
		}
		return fmtFloat(100*v, 0) + " %"
	},
	"join":  strings.Join,
	"args":  cmdArgs,
	"deref": func(p *float64) float64 { return *p },
}

// cmdArgs splits a command line into the pieces a page may wrap between:
// the program with its subcommand, then each flag with its values (a
// value that looks like a negative number stays with its flag). The
// pieces joined by single spaces give the command back.
func cmdArgs(cmd string) []string {
	var out []string
	from := 0
	for i := 1; i+1 < len(cmd); i++ {
		if cmd[i-1] != ' ' || cmd[i] != '-' {
			continue
		}
		if c := cmd[i+1]; c >= '0' && c <= '9' || c == '.' || c == ' ' {
			continue // a negative number, or a lone "-" (stdout): a value
		}
		if i-1 > from {
			out = append(out, cmd[from:i-1])
		}
		from = i
	}
	if from < len(cmd) {
		out = append(out, cmd[from:])
	}
	return out
}

// clockText formats seconds as mm:ss (h:mm:ss from an hour).
func clockText(secs float64) string {
	s := int64(math.Round(math.Max(secs, 0)))
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// styleSheet is the page's whole style: the report loads nothing.
const styleSheet = `
body{font-family:system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0 auto;max-width:1400px;padding:1em 2em;color:#222;background:#fff}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.meta{color:#555}.cmd{background:#f5f5f5;padding:.6em;white-space:pre-wrap;font-size:.9em}
.arg{display:inline-block;max-width:100%;white-space:pre-wrap;overflow-wrap:anywhere;word-break:normal}
table{border-collapse:collapse;font-size:.9em}td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#fafafa}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:1em}
figure{margin:0;border:1px solid #eee;padding:.4em}figure svg{width:100%;height:auto;display:block}
.missing{color:#777;font-style:italic;padding:2em 1em}.plot-note{color:#555;font-size:.85em;padding:.3em .5em}
.warn{background:#fff4e5;border-left:4px solid #e67e22;padding:.6em 1em}
.note{background:#eef5fb;border-left:4px solid #5b8db8;padding:.6em 1em}
.sat{color:#c0392b;font-weight:bold}.notes li{color:#555}
.msg{text-align:left;font-family:monospace;white-space:pre-wrap;word-break:break-all}
.grid.tt{grid-template-columns:repeat(auto-fill,minmax(420px,1fr));align-items:start}
table.tt{width:100%}table.tt caption{text-align:left;font-weight:bold;padding:.3em 0}
.tt-text{text-align:left;margin:0;font-size:.85em;overflow-x:auto}
`

// pageHead opens every page this package writes: self-contained, so its
// Content-Security-Policy allows no network access, only inline styles and
// data: images.
const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
`

var pageTemplate = template.Must(template.New("report").Funcs(funcs).Parse(pageHead + `<title>{{.Title}}</title>
<style>` + styleSheet + `</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="meta">{{if .S.Backend}}Backend <b>{{.S.Backend}}</b> · mode <b>{{.S.Mode}}</b> · request rate <b>{{.Rate}}</b> · max concurrency <b>{{.MaxConc}}</b> · seed <b id="seed">{{.S.Seed}}</b>{{else}}Run settings unknown: per-request records do not carry them (render the run's summary JSON for them){{end}}{{if .S.StartedAt}} · started {{.S.StartedAt}}{{end}}{{if .Source}} · from {{.Source}}{{end}}</p>
{{if .S.Command}}<pre class="cmd" id="command">{{range $i, $a := args .S.Command}}{{if $i}} {{end}}<span class="arg">{{$a}}</span>{{end}}</pre>{{end}}
{{if .Settings}}<details id="settings"><summary>Settings: {{.SettingsGiven}} given{{with .S.SettingsFile}} (run file {{.}}){{end}}{{if gt (len .Settings) .SettingsGiven}}, the others at their defaults{{end}}</summary>
<table class="settings">
<tr><th>Setting</th><th>From</th></tr>
{{range .Settings}}<tr><td class="msg">{{.Name}} = {{.Value}}</td><td>{{.From}}</td></tr>
{{end}}</table></details>{{end}}
{{if .X.Saturated}}<p class="warn" id="client-saturated"><span class="sat">The client fell behind its schedule</span>{{if .X.SatWindows}} in window(s) {{range $i, $w := .X.SatWindows}}{{if $i}}, {{end}}{{$w}}{{end}}{{end}}: {{.X.SatReason}}. Latencies there include the client's own delay; do not read them as the server's.</p>{{end}}
{{if .X.BusyNote}}<p class="note" id="machine-busy">The machine was busy, not the client: {{.X.BusyNote}}.</p>{{end}}
{{if .S.Interrupted}}<p class="warn">The run was interrupted: {{.S.NotSent}} scheduled request(s) were not sent.</p>{{end}}
{{if .Thresholds}}<div class="{{if .Breached}}warn{{else}}note{{end}}" id="thresholds"><b>Thresholds: {{if .Breached}}BREACHED{{else}}all held{{end}}</b><ul>{{range .Thresholds}}<li>{{.}}</li>{{end}}</ul></div>{{end}}

<h2>Summary</h2>
<table id="summary">
<tr><th>Figure</th><th>Value</th></tr>
{{range $i, $f := .Figures}}<tr><td>{{$f.Label}}</td><td>{{index $.FigureTexts $i}}</td></tr>
{{end}}{{if .SLO}}<tr><td>Goodput SLOs</td><td>{{.SLO}}</td></tr>{{end}}
<tr><td>Scheduled / not sent</td><td>{{.S.Scheduled}} / {{.S.NotSent}}</td></tr>
<tr><td>Client saturated</td><td>{{if .X.Saturated}}<span class="sat">yes</span>{{else}}no{{end}}</td></tr>
{{if .X.ClientCPU}}<tr><td>Client CPU (share of cores)</td><td>{{cpu (deref .X.ClientCPU)}}</td></tr>{{end}}
</table>

<h2>Latency</h2>
<div class="grid">
{{range .Latency}}<figure id="plot-{{.Name}}">{{if .SVG}}{{.SVG}}{{with .Note}}<figcaption class="plot-note">{{.}}</figcaption>{{end}}{{else}}<figcaption>{{.Title}}</figcaption><p class="missing">{{.Missing}}</p>{{end}}</figure>
{{end}}</div>

<h2>Over time</h2>
{{if .SeriesNote}}<p class="meta">From {{.SeriesNote}}. Offered counts requests by scheduled time; achieved and failed by end time; send lag by send time (windows: by end time).</p>{{end}}
<div class="grid">
{{range .Time}}<figure id="plot-{{.Name}}">{{if .SVG}}{{.SVG}}{{else}}<figcaption>{{.Title}}</figcaption><p class="missing">{{.Missing}}</p>{{end}}</figure>
{{end}}</div>

<h2>Requests</h2>
<div class="grid">
{{range .Requests}}<figure id="plot-{{.Name}}">{{if .SVG}}{{.SVG}}{{else}}<figcaption>{{.Title}}</figcaption><p class="missing">{{.Missing}}</p>{{end}}</figure>
{{end}}</div>
{{if .S.ErrorSamples}}
<h3>Error samples</h3>
<table id="error-samples"><tr><th>Request</th><th>Class</th><th>Message</th></tr>
{{range .S.ErrorSamples}}<tr><td>{{.Index}}{{if .RequestID}} ({{.RequestID}}){{end}}</td><td>{{.Class}}</td><td class="msg">{{.Message}}</td></tr>
{{end}}</table>
{{end}}

{{if .S.Endpoints}}<h2>Endpoints</h2>
<table id="endpoints">
<tr><th>Endpoint</th>{{range .S.Endpoints}}<th>#{{inc .Index}} {{.URL}}</th>{{end}}</tr>
<tr><td>Requests</td>{{range .S.Endpoints}}<td>{{.Requests}}</td>{{end}}</tr>
<tr><td>Completed</td>{{range .S.Endpoints}}<td>{{.Completed}}</td>{{end}}</tr>
<tr><td>Failed</td>{{range .S.Endpoints}}<td>{{.Failed}}{{range $k, $v := .ErrorsByClass}} ({{$k}} {{$v}}){{end}}</td>{{end}}</tr>
{{if .S.Cancelled}}<tr><td>Cancelled</td>{{range .S.Endpoints}}<td>{{.Cancelled}}</td>{{end}}</tr>
{{end}}<tr><td>Requests/s</td>{{range .S.Endpoints}}<td>{{f2 .RequestThroughput}}</td>{{end}}</tr>
<tr><td>Output tokens/s</td>{{range .S.Endpoints}}<td>{{f2 .OutputThroughput}}</td>{{end}}</tr>
<tr><td>TTFT median / p99 (ms)</td>{{range .S.Endpoints}}<td>{{f2 .MedianTTFT}} / {{f2 .P99TTFT}}</td>{{end}}</tr>
<tr><td>E2E median / p99 (ms)</td>{{range .S.Endpoints}}<td>{{f2 .MedianE2E}} / {{f2 .P99E2E}}</td>{{end}}</tr>
<tr><td>Server running (mean)</td>{{range .S.Endpoints}}<td>{{with .ServerMetrics}}{{with .ServerStats}}{{f2 .RunningMean}}{{else}}–{{end}}{{else}}–{{end}}</td>{{end}}</tr>
<tr><td>Server KV cache (max)</td>{{range .S.Endpoints}}<td>{{with .ServerMetrics}}{{with .ServerStats}}{{pct .KVCacheMax}}{{else}}–{{end}}{{else}}–{{end}}</td>{{end}}</tr>
</table>
{{end}}

{{with .S.HTTPPhases}}<h2>HTTP phases</h2>
<p class="meta">{{.Requests}} request(s): {{.NewConnections}} on a new connection, {{.Reused}} on a reused one (reused: no connect, no TLS handshake). Wait: from the end of the request's write to the response's first byte. A TTFT made by connection set-up shows here, not at the server.</p>
<table id="http-phases">
<tr><th>Phase (ms)</th><th>Count</th><th>Mean</th><th>p50</th><th>p90</th><th>p99</th><th>Max</th></tr>
{{with .ConnectMS}}<tr><td>Connect</td><td>{{.Count}}</td><td>{{f3 .Mean}}</td><td>{{f3 .P50}}</td><td>{{f3 .P90}}</td><td>{{f3 .P99}}</td><td>{{f3 .Max}}</td></tr>
{{end}}{{with .TLSMS}}<tr><td>TLS handshake</td><td>{{.Count}}</td><td>{{f3 .Mean}}</td><td>{{f3 .P50}}</td><td>{{f3 .P90}}</td><td>{{f3 .P99}}</td><td>{{f3 .Max}}</td></tr>
{{end}}{{with .WriteMS}}<tr><td>Request write</td><td>{{.Count}}</td><td>{{f3 .Mean}}</td><td>{{f3 .P50}}</td><td>{{f3 .P90}}</td><td>{{f3 .P99}}</td><td>{{f3 .Max}}</td></tr>
{{end}}{{with .WaitMS}}<tr><td>Wait to first byte</td><td>{{.Count}}</td><td>{{f3 .Mean}}</td><td>{{f3 .P50}}</td><td>{{f3 .P90}}</td><td>{{f3 .P99}}</td><td>{{f3 .Max}}</td></tr>
{{end}}</table>
{{end}}

{{with .Server}}<h2>Server metrics</h2>
<p class="meta">Scraped from {{.URL}} every {{.Interval}} s; {{.Failures}} failed scrape(s){{if .LastError}}; last error: {{.LastError}}{{end}}.</p>
{{if .ServerStats}}<table id="server">
<tr><th>Figure</th><th>Mean</th><th>Max</th></tr>
<tr><td>Requests running</td><td>{{f2 .RunningMean}}</td><td>{{f1 .RunningMax}}</td></tr>
<tr><td>Requests waiting</td><td>{{f2 .WaitingMean}}</td><td>{{f1 .WaitingMax}}</td></tr>
<tr><td>KV-cache usage</td><td>{{pct .KVCacheMean}}</td><td>{{pct .KVCacheMax}}</td></tr>
<tr><td>Preemptions</td><td>{{f1 .Preemptions}}</td><td></td></tr>
<tr><td>Idle fraction (nothing running)</td><td id="server-idle">{{.IdleText}}</td><td></td></tr>
<tr><td>Samples / time covered</td><td>{{.Samples}}</td><td>{{f1 .Observed}} s</td></tr>
</table>{{end}}
{{end}}

{{template "gpu-spec" .}}{{if .Table}}<h2 id="terminal-table">Every figure of the console table</h2>
<p class="meta">The sections the run printed (or <code>fineserve-gen report</code> prints) for this summary, figure for figure.</p>
<div class="grid tt">
{{range .Table}}<table class="tt">{{with .Title}}<caption>{{.}}</caption>{{end}}
{{range .Rows}}<tr><td>{{.Label}}</td><td>{{.Value}}</td></tr>
{{end}}{{if .Text}}<tr><td colspan="2"><pre class="tt-text">{{range .Text}}{{.}}
{{end}}</pre></td></tr>{{end}}</table>
{{end}}</div>
{{end}}

{{if .Windows}}<h2>Windows</h2>
<details{{if .OpenWindows}} open{{end}}><summary>{{len .Windows}} window(s)</summary>
<table id="windows">
<tr><th>#</th><th>From–to</th><th>Offered/s</th><th>Achieved/s</th><th>Failed</th><th>In flight</th><th>TTFT p50</th><th>TTFT p99</th><th>ITL p99</th><th>E2E p99</th><th>Lag p99</th><th>Client CPU</th><th>Server idle</th><th>Client</th></tr>
{{range .Windows}}<tr><td>{{.Index}}</td><td>{{clock .Start}}–{{clock .End}}</td><td>{{f2 .OfferedRate}}</td><td>{{f2 .AchievedRate}}</td><td>{{.Failed}}</td><td>{{f1 .InFlightMean}}</td><td>{{ms .TTFTP50}}</td><td>{{ms .TTFTP99}}</td><td>{{ms .ITLP99}}</td><td>{{ms .E2EP99}}</td><td>{{ms .LagP99}}</td><td>{{cpu .ClientCPU}}</td><td>{{with .Server}}{{if .IdleShown}}{{pct .IdleFraction}}{{else}}<span title="{{.IdleText}}">–</span>{{end}}{{else}}–{{end}}</td><td>{{if .Saturated}}<span class="sat" title="{{join .Reasons "; "}}">saturated</span>{{else if .MachineBusy}}<span title="send lag from a busy machine, not the client">ok (machine busy)</span>{{else}}ok{{end}}</td></tr>
{{end}}</table></details>
{{end}}

{{if .Notes}}<h2>Not available</h2>
<ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p class="meta">fineserve-gen · latencies in ms · TTFT: send → first chunk with text; ITL: gaps between content chunks; TPOT: (E2E − TTFT)/(output tokens − 1); E2E: send → last byte; send lag: send − scheduled.</p>
</body>
</html>
`))
