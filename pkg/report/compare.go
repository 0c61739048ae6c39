package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// label names a run in a comparison.
func (d *Data) label(i int) string {
	switch {
	case d.Label != "":
		return d.Label
	case d.Source != "":
		return d.Source
	}
	return fmt.Sprintf("run %d", i+1)
}

// compareRow is one figure across runs.
type compareRow struct {
	Label  string
	Values []string
	// Deltas are each later run's difference to the first run, with the
	// class "better", "worse" or "" for the page's colours.
	Deltas []delta
}

type delta struct {
	Text, Class string
}

// compareRows reads the runs' extensions and lines up their main figures.
func compareRows(runs []*Data) ([]compareRow, []extras, error) {
	if len(runs) < 2 {
		return nil, nil, errors.New("compare: want at least two runs")
	}
	xs := make([]extras, len(runs))
	all := make([][]figure, len(runs))
	for i, d := range runs {
		xs[i] = readExtras(d.Summary)
		all[i] = figures(d.Summary, &xs[i])
	}
	// Rows in the first run's order, then any figure only later runs have.
	var order []string
	seen := map[string]bool{}
	byLabel := make([]map[string]figure, len(runs))
	for i, fs := range all {
		byLabel[i] = map[string]figure{}
		for _, f := range fs {
			byLabel[i][f.Label] = f
			if !seen[f.Label] {
				seen[f.Label] = true
				order = append(order, f.Label)
			}
		}
	}
	rows := make([]compareRow, 0, len(order))
	for _, l := range order {
		row := compareRow{Label: l}
		base, hasBase := byLabel[0][l]
		for i := range runs {
			f, ok := byLabel[i][l]
			if !ok {
				row.Values = append(row.Values, "–")
				if i > 0 {
					row.Deltas = append(row.Deltas, delta{Text: "–"})
				}
				continue
			}
			row.Values = append(row.Values, intervalText(runs[i].Summary, f))
			if i == 0 {
				continue
			}
			if !hasBase {
				row.Deltas = append(row.Deltas, delta{Text: "–"})
				continue
			}
			d := diff(base, f)
			// Two repeated runs: a difference their intervals could
			// both hold is not coloured as a change.
			if hb, _, ok1 := interval(runs[0].Summary, base); ok1 && d.Text != "–" {
				if hf, _, ok2 := interval(runs[i].Summary, f); ok2 && math.Abs(f.Value-base.Value) <= hb+hf {
					d.Text += " within the intervals"
					d.Class = ""
				}
			}
			row.Deltas = append(row.Deltas, d)
		}
		rows = append(rows, row)
	}
	rows = append(rows, saturationRow(runs))
	return rows, xs, nil
}

// saturationRow says for each run whether the client fell behind its
// schedule (the self-check), "–" when its summary does not say.
func saturationRow(runs []*Data) compareRow {
	row := compareRow{Label: "Client saturated"}
	for i, d := range runs {
		v := "–"
		if c := d.Summary.Saturation; c != nil {
			v = "no"
			if c.Saturated {
				v = "yes"
			}
		}
		row.Values = append(row.Values, v)
		if i > 0 {
			row.Deltas = append(row.Deltas, delta{Text: "–"})
		}
	}
	return row
}

// diff is f − base, absolute and relative, classed by which way is better.
func diff(base, f figure) delta {
	if math.IsNaN(base.Value) || math.IsNaN(f.Value) { // n/a on either side
		return delta{Text: "–"}
	}
	d := f.Value - base.Value
	text := fmtFloat(d, f.Prec)
	if d > 0 {
		text = "+" + text
	}
	if base.Value != 0 {
		text += fmt.Sprintf(" (%+.1f %%)", 100*d/math.Abs(base.Value))
	}
	class := ""
	if rel := math.Abs(d) / math.Max(math.Abs(base.Value), 1e-12); rel > 0.01 && f.Better != 0 {
		if (d > 0) == (f.Better > 0) {
			class = "better"
		} else {
			class = "worse"
		}
	}
	return delta{Text: text, Class: class}
}

// WriteCompareTable prints the runs' main figures side by side, with each
// later run's difference to the first.
func WriteCompareTable(w io.Writer, runs []*Data) error {
	rows, _, err := compareRows(runs)
	if err != nil {
		return err
	}
	const labelW, colW = 32, 18
	var b strings.Builder
	// The runs' names in full, once; the columns are headed by number.
	for i, d := range runs {
		fmt.Fprintf(&b, "[%d] %s\n", i+1, d.label(i))
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "%-*s", labelW, "")
	for i := range runs {
		fmt.Fprintf(&b, " %*s", colW, fmt.Sprintf("[%d]", i+1))
	}
	for i := 1; i < len(runs); i++ {
		fmt.Fprintf(&b, " %*s", colW+4, fmt.Sprintf("[%d] − [1]", i+1))
	}
	b.WriteByte('\n')
	for _, r := range rows {
		fmt.Fprintf(&b, "%-*s", labelW, clip(r.Label, labelW))
		for _, v := range r.Values {
			fmt.Fprintf(&b, " %*s", colW, v)
		}
		for _, d := range r.Deltas {
			fmt.Fprintf(&b, " %*s", colW+4, d.Text)
		}
		b.WriteByte('\n')
	}
	_, err = io.WriteString(w, b.String())
	return err
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// comparePage is the comparison template's data.
type comparePage struct {
	Runs []compareRun
	// Saturated are the runs whose client fell behind its schedule.
	Saturated []compareRun
	Rows      []compareRow
	Rates     plotView
	Plots     []plotView
	Notes     []string
}

type compareRun struct {
	N                     int
	Label, Command, Model string
	Seed                  uint64
	Started               string
	// The run's rates, as text for the rates table.
	RateSet, Offered, Achieved, Goodput, OutputTok string
	// Saturated: the client fell behind its schedule (SatReason says
	// where and why).
	Saturated bool
	SatReason string
}

// runRates are a run's request rates for the comparison's bar chart: NaN
// when the run does not say.
type runRates struct {
	offered, achieved, goodput float64
}

func ratesOf(s *metrics.Summary, x *extras) runRates {
	r := runRates{offered: math.NaN(), achieved: s.RequestThroughput, goodput: math.NaN()}
	if s.ScheduleSpan > 0 && s.Scheduled > 1 {
		r.offered = float64(s.Scheduled-1) / s.ScheduleSpan // arrivals after the first over the span
	}
	if x.Goodput != nil {
		r.goodput = *x.Goodput
	}
	return r
}

func rateCell(v float64, unit string) string {
	if math.IsNaN(v) {
		return "–"
	}
	return fmtFloat(v, 2) + " " + unit
}

// plotRunRates draws each run's offered, achieved and goodput request
// rates as grouped bars, the runs numbered as in the tables.
func plotRunRates(rates []runRates) (template.HTML, error) {
	p := newPlot("Request rate by run", "run", "requests/s")
	names := make([]string, len(rates))
	for i := range rates {
		names[i] = fmt.Sprintf("[%d]", i+1)
	}
	kinds := []struct {
		label string
		get   func(r runRates) float64
	}{
		{"offered (scheduled)", func(r runRates) float64 { return r.offered }},
		{"achieved (completed)", func(r runRates) float64 { return r.achieved }},
		{"goodput (met every SLO)", func(r runRates) float64 { return r.goodput }},
	}
	var shown []int
	for k, kind := range kinds {
		for _, r := range rates {
			if !math.IsNaN(kind.get(r)) {
				shown = append(shown, k)
				break
			}
		}
	}
	const barW = 14
	top := 0.0
	for j, k := range shown {
		vals := make(plotter.Values, len(rates))
		for i, r := range rates {
			if v := kinds[k].get(r); !math.IsNaN(v) {
				vals[i] = v
				top = math.Max(top, v)
			}
		}
		b, err := plotter.NewBarChart(vals, vg.Points(barW))
		if err != nil {
			return "", err
		}
		b.Color = palette[k%len(palette)]
		b.LineStyle.Width = 0
		b.Offset = vg.Points(barW * (float64(j) - float64(len(shown)-1)/2))
		p.Add(b)
		p.addKey(kinds[k].label, b)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(rates))-0.5
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.15, 1)
	return svgOf(p, PlotRunRates)
}

// WriteCompareHTML writes a self-contained page comparing runs: their
// figures side by side with differences to the first run, and their
// latency CDFs and achieved rates overlaid.
func WriteCompareHTML(w io.Writer, runs []*Data) error {
	rows, xs, err := compareRows(runs)
	if err != nil {
		return err
	}
	pg := comparePage{Rows: rows}
	var rates []runRates
	for i, d := range runs {
		s := d.Summary
		r := ratesOf(s, &xs[i])
		rates = append(rates, r)
		pg.Runs = append(pg.Runs, compareRun{N: i + 1, Label: d.label(i), Command: s.Command, Model: s.Model, Seed: s.Seed, Started: s.StartedAt,
			RateSet: rateText(s.RequestRate), Offered: rateCell(r.offered, "req/s"), Achieved: rateCell(r.achieved, "req/s"),
			Goodput: rateCell(r.goodput, "req/s"), OutputTok: rateCell(s.OutputThroughput, "tok/s")})
		if c := s.Saturation; c != nil && c.Saturated {
			run := &pg.Runs[len(pg.Runs)-1]
			run.Saturated, run.SatReason = true, c.Reason
			pg.Saturated = append(pg.Saturated, *run)
		}
	}
	svg, err := plotRunRates(rates)
	if err != nil {
		return err
	}
	pg.Rates = plotView{Name: PlotRunRates, Title: "Request rate by run", SVG: svg}
	for _, c := range []struct{ name, key, title string }{
		{PlotTTFT, "ttft", "TTFT: CDF"}, {PlotITL, "itl", "ITL: CDF"}, {PlotE2E, "e2e", "E2E latency: CDF"}, {PlotTPOT, "tpot", "TPOT: CDF"},
	} {
		var series []cdfSeries
		for i, d := range runs {
			pts, coarse := cdfFor(d.Summary, &xs[i], c.key)
			if len(pts) == 0 {
				continue
			}
			if coarse {
				pg.Notes = append(pg.Notes, fmt.Sprintf("[%d] %s: %s CDF from the summary's percentiles only", i+1, d.label(i), strings.ToUpper(c.key)))
			}
			series = append(series, cdfSeries{Label: fmt.Sprintf("[%d] %s", i+1, d.label(i)), Points: pts, Coarse: coarse})
		}
		clip, clipNote := outlierClip(series, runs, c.key)
		_, _, logX, _ := cdfRange(series, clip)
		for i, d := range runs {
			pts, _ := cdfFor(d.Summary, &xs[i], c.key)
			if n := zeroNote(c.key, pts, distCount(d.Summary, c.key), logX); n != "" {
				pg.Notes = append(pg.Notes, fmt.Sprintf("[%d] %s: %s: %s", i+1, d.label(i), strings.ToUpper(c.key), n))
			}
		}
		if len(series) == 0 {
			pg.Plots = append(pg.Plots, plotView{Name: c.name, Title: c.title, Missing: "no run has these values"})
			continue
		}
		svg, err := plotCDFClipped(c.name, c.title, series, clip)
		if err != nil {
			return err
		}
		pg.Plots = append(pg.Plots, plotView{Name: c.name, Title: c.title, SVG: svg, Note: clipNote})
	}
	// Achieved rate over time, each run on its own time axis from its
	// start, each bin or window's rate held over its span (steps): a run
	// of one summary window is a level line, not a lone dot. When no run
	// has two points the plot would only repeat the rates above: it is
	// left out, saying why.
	var ts []timeSeries
	over := false
	for i, d := range runs {
		pts := d.Series
		if pts == nil {
			pts = windowPoints(xs[i].Windows)
		}
		if len(pts) == 0 {
			pg.Notes = append(pg.Notes, fmt.Sprintf("[%d] %s: no time series (no windows, no per-request records)", i+1, d.label(i)))
			continue
		}
		over = over || len(pts) > 1
		x, y := pointSteps(pts, func(p *metrics.SeriesPoint) float64 { return p.AchievedRate })
		ts = append(ts, timeSeries{Label: fmt.Sprintf("[%d] %s", i+1, d.label(i)), X: x, Y: y, Steps: true})
	}
	switch {
	case over:
		svg, err := plotTime(PlotRate, "Achieved request rate", "completed requests/s", nil, ts, yLinear)
		if err != nil {
			return err
		}
		pg.Plots = append(pg.Plots, plotView{Name: PlotRate, Title: "Achieved request rate", SVG: svg})
	case len(ts) > 0:
		pg.Plots = append(pg.Plots, plotView{Name: PlotRate, Title: "Achieved request rate over time",
			Missing: "not drawn: each run's summary has one window only, so its rate over time is its achieved rate in the table above; the runs' results JSONL give a rate over time"})
	}
	return compareTemplate.Execute(w, &pg)
}

var compareTemplate = template.Must(template.New("compare").Funcs(funcs).Parse(pageHead + `<title>fineserve-gen comparison</title>
<style>` + styleSheet + `.better{color:#1e8449}.worse{color:#c0392b}td.run{text-align:left;overflow-wrap:anywhere;min-width:12em}td.cmdline{text-align:left;font-family:monospace;white-space:pre-wrap}</style>
</head>
<body>
<h1>fineserve-gen comparison</h1>
{{range .Saturated}}<p class="warn client-saturated"><span class="sat">[{{.N}}] {{.Label}}: the client fell behind its schedule</span>{{with .SatReason}} ({{.}}){{end}}. Its latencies there include the client's own delay; do not compare them as the server's.</p>
{{end}}<table id="runs"><tr><th>Run</th><th>Model</th><th>Seed</th><th>Started</th><th>Client</th><th>Command</th></tr>
{{range .Runs}}<tr><td class="run">[{{.N}}] {{.Label}}</td><td>{{.Model}}</td><td>{{.Seed}}</td><td>{{.Started}}</td><td>{{if .Saturated}}<span class="sat">saturated</span>{{else}}ok{{end}}</td><td class="cmdline">{{range $i, $a := args .Command}}{{if $i}} {{end}}<span class="arg">{{$a}}</span>{{end}}</td></tr>
{{end}}</table>
<h2>Rates</h2>
<table id="rates"><tr><th>Run</th><th>Request rate set</th><th>Offered</th><th>Achieved</th><th>Goodput</th><th>Output tokens</th></tr>
{{range .Runs}}<tr><td class="run">[{{.N}}] {{.Label}}</td><td>{{.RateSet}}</td><td>{{.Offered}}</td><td>{{.Achieved}}</td><td>{{.Goodput}}</td><td>{{.OutputTok}}</td></tr>
{{end}}</table>
<p class="meta">Offered: the scheduled requests over the schedule's span; achieved: completed requests per second of the run; goodput: those meeting every SLO (--goodput).</p>
<div class="grid">{{with .Rates}}<figure id="plot-{{.Name}}">{{.SVG}}</figure>{{end}}</div>
<h2>Figures</h2>
<table id="compare">
<tr><th>Figure</th>{{range .Runs}}<th>[{{.N}}]</th>{{end}}{{range $i, $r := .Runs}}{{if $i}}<th>[{{$r.N}}] − [1]</th>{{end}}{{end}}</tr>
{{range .Rows}}<tr><td>{{.Label}}</td>{{range .Values}}<td>{{.}}</td>{{end}}{{range .Deltas}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{end}}</table>
<h2>Distributions and rate</h2>
<div class="grid">
{{range .Plots}}<figure id="plot-{{.Name}}">{{if .SVG}}{{.SVG}}{{with .Note}}<figcaption class="plot-note">{{.}}</figcaption>{{end}}{{else}}<figcaption>{{.Title}}</figcaption><p class="missing">{{.Missing}}</p>{{end}}</figure>
{{end}}</div>
{{if .Notes}}<h2>Not available</h2><ul class="notes">{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body>
</html>
`))

// clipFactor is how far beyond the p99.9 of the runs' values together the
// largest value must lie for a comparison's CDF to be clipped there: one
// outlier would otherwise squeeze every curve into the axis' first part.
const clipFactor = 1.5

// outlierClip returns where to clip a comparison CDF's value axis — the
// p99.9 of the runs' values together (each run weighted by its number of
// values when the summary says it) — when the largest value lies more than
// clipFactor beyond it, with the note that says so; else +Inf and "".
func outlierClip(series []cdfSeries, runs []*Data, key string) (float64, string) {
	var xs []float64
	top, topRun := math.Inf(-1), ""
	for _, s := range series {
		for _, pt := range s.Points {
			if v := pt[0]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				xs = append(xs, v)
				if v > top {
					top, topRun = v, s.Label
				}
			}
		}
	}
	if len(xs) == 0 {
		return math.Inf(1), ""
	}
	weights := make([]float64, len(series))
	for i, s := range series {
		weights[i] = 1
		for j, d := range runs { // series are labelled "[N] label"
			if strings.HasPrefix(s.Label, fmt.Sprintf("[%d] ", j+1)) {
				if n := distCount(d.Summary, key); n > 0 {
					weights[i] = float64(n)
				}
			}
		}
	}
	slices.Sort(xs)
	p999 := top
	for _, x := range xs { // the smallest value at which the union reaches 0.999
		var got, all float64
		for i, s := range series {
			got += weights[i] * cdfAt(s.Points, x)
			all += weights[i]
		}
		if got >= 0.999*all {
			p999 = x
			break
		}
	}
	if !(p999 > 0) || top <= clipFactor*p999 {
		return math.Inf(1), ""
	}
	return p999, fmt.Sprintf("The value axis ends at %s ms, the p99.9 of the runs' values together: the values above it "+
		"(at most 0.1 %%, up to %s ms, in %s) are off the plot; the table has every run's maximum.", fmtSig(p999), fmtSig(top), topRun)
}

// cdfAt is the share of a CDF's values at most x: the largest quantile of
// its points at or below x (0 below its first).
func cdfAt(points [][2]float64, x float64) float64 {
	q := 0.0
	for _, pt := range points {
		if pt[0] <= x {
			q = math.Max(q, pt[1])
		}
	}
	return q
}

// fmtSig writes v with three significant digits, or as a whole number
// from 1,000.
func fmtSig(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
