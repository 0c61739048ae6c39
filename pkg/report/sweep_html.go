package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
)

// Plot names of a sweep's report (the data-plot attribute of each SVG).
const (
	PlotSweepLatency    = "sweep_latency"
	PlotSweepThroughput = "sweep_throughput"
	PlotSweepGoodput    = "sweep_goodput"
)

// sweepPage is what the sweep template shows.
type sweepPage struct {
	R       *sweep.Result
	Command string
	Steps   []sweepRow
	Plots   []plotView
	// Columns shown only when a step has them: cancelled requests
	// (--cancel-share), several endpoints (each one's counts, and whose
	// server figures the step shows).
	Cancelled, Endpoints bool
}

type sweepRow struct {
	sweep.Step
	Value, Goodput, Running, Waiting, KV string
	// PerEndpoint is one line per endpoint: "#N URL: completed, failed,
	// cut".
	PerEndpoint []string
}

// perEndpoint gives a step's counts by endpoint (none with one endpoint).
func perEndpoint(st *sweep.Step) []string {
	if st.Summary == nil || len(st.Summary.Endpoints) < 2 {
		return nil
	}
	var lines []string
	for _, e := range st.Summary.Endpoints {
		l := fmt.Sprintf("#%d %s: %d completed, %d failed", e.Index+1, e.URL, e.Completed, e.Failed)
		if e.Cancelled > 0 {
			l += fmt.Sprintf(", %d cut", e.Cancelled)
		}
		lines = append(lines, l)
	}
	return lines
}

// WriteSweepHTML writes a sweep's report: the answer and its diagnosis,
// latency percentiles, achieved against offered throughput and goodput
// against load with the capacity marked, and the table of steps. Like
// WriteHTML it is one self-contained page.
func WriteSweepHTML(w io.Writer, r *sweep.Result) error {
	if r == nil {
		return errors.New("report: no sweep result")
	}
	steps := r.SortedSteps()
	pg := sweepPage{R: r}
	for _, st := range steps {
		row := sweepRow{Step: st, Value: fmt.Sprintf("%g", st.Value), Goodput: "–", Running: "–", Waiting: "–", KV: "–"}
		if g := st.Figures.GoodputShare; g != nil {
			row.Goodput = fmt.Sprintf("%.1f %%", 100**g)
		}
		if sv := st.Figures.Server; sv != nil {
			row.Running, row.Waiting, row.KV = fmt.Sprintf("%.0f", sv.RunningMax), fmt.Sprintf("%.0f", sv.WaitingMax), fmt.Sprintf("%.0f %%", 100*sv.KVCacheMax)
		}
		if pg.Command == "" && st.Summary != nil {
			pg.Command = st.Summary.Command
		}
		row.PerEndpoint = perEndpoint(&st)
		pg.Cancelled = pg.Cancelled || st.Figures.Cancelled > 0
		pg.Endpoints = pg.Endpoints || len(row.PerEndpoint) > 0 || st.Figures.ServerEndpoint != ""
		pg.Steps = append(pg.Steps, row)
	}
	capX := math.NaN()
	capRate := math.NaN()
	if r.Capacity != nil {
		capX, capRate = r.Capacity.Value, r.Capacity.Rate
	}
	xLabel := string(r.Variable)
	if r.Variable == sweep.Rate {
		xLabel = "request rate (req/s)"
	}
	var xs []float64
	var series [][]float64
	names := []string{"TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p50", "E2E p99"}
	series = make([][]float64, len(names))
	for _, st := range steps {
		f := &st.Figures
		xs = append(xs, st.Value)
		for i, v := range []float64{f.TTFT.P50, f.TTFT.P99, f.TPOT.P50, f.TPOT.P99, f.E2E.P50, f.E2E.P99} {
			if f.NoTokens && i < 4 {
				v = math.NaN()
			}
			series[i] = append(series[i], v)
		}
	}
	add := func(name, title string, svg template.HTML, err error) error {
		if err != nil {
			return err
		}
		pg.Plots = append(pg.Plots, plotView{Name: name, Title: title, SVG: svg})
		return nil
	}
	svg, err := plotLoad(PlotSweepLatency, "Latency percentiles against load", xLabel, "ms (log scale)", xs, names, series, capX, math.NaN(), true)
	if err := add(PlotSweepLatency, "latency", svg, err); err != nil {
		return err
	}
	var off, ach []float64
	for _, st := range steps {
		off = append(off, st.Figures.Offered)
		ach = append(ach, st.Figures.Achieved)
	}
	if r.Capacity != nil { // marked at the offered rate of its step
		for _, st := range steps {
			if st.Index == r.Capacity.Step {
				capRate = st.Figures.Offered
			}
		}
	}
	svg, err = plotThroughput(off, ach, capRate)
	if err := add(PlotSweepThroughput, "throughput", svg, err); err != nil {
		return err
	}
	if r.SLO != nil {
		var good []float64
		for _, st := range steps {
			v := math.NaN()
			if g := st.Figures.GoodputShare; g != nil {
				v = 100 * *g
			}
			good = append(good, v)
		}
		svg, err = plotLoad(PlotSweepGoodput, "Goodput against load", xLabel, "% of requests meeting every SLO", xs, []string{"goodput"}, [][]float64{good}, capX, 100*r.MinGoodput, false)
		if err := add(PlotSweepGoodput, "goodput", svg, err); err != nil {
			return err
		}
	}
	return sweepTemplate.Execute(w, &pg)
}

// plotLoad draws series against the sweep's load, with the capacity as a
// dashed vertical line and, when hline is a number, a dotted target line.
func plotLoad(name, title, xLabel, yLabel string, xs []float64, names []string, series [][]float64, capX, hline float64, logY bool) (template.HTML, error) {
	p := newPlot(title, xLabel, yLabel)
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	yMin, yMax := math.Inf(1), math.Inf(-1)
	for i, s := range series {
		pts := plotter.XYs{}
		for j, y := range s {
			if math.IsNaN(y) || math.IsInf(y, 0) || logY && y <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: xs[j], Y: y})
			yMin, yMax = math.Min(yMin, y), math.Max(yMax, y)
		}
		if err := line(p, pts, names[i], i, i%2 == 1 && len(series) > 1); err != nil {
			return "", err
		}
		if err := marks(p, pts, i, vg.Points(2)); err != nil {
			return "", err
		}
	}
	if math.IsInf(yMin, 0) {
		yMin, yMax = 1, 10
	}
	if !math.IsNaN(hline) {
		yMin, yMax = math.Min(yMin, hline), math.Max(yMax, hline)
	}
	if logY {
		yMin, yMax = yMin/1.5, yMax*1.5
	} else {
		yMin, yMax = math.Min(0, yMin), yMax*1.05+1e-9
	}
	p.Y.Min, p.Y.Max = yMin, yMax
	if !math.IsNaN(hline) && len(xs) > 0 {
		lo, hi := xs[0], xs[len(xs)-1]
		if err := guide(p, plotter.XYs{{X: lo, Y: hline}, {X: hi, Y: hline}}, "target", false); err != nil {
			return "", err
		}
	}
	if !math.IsNaN(capX) {
		if err := guide(p, plotter.XYs{{X: capX, Y: yMin}, {X: capX, Y: yMax}}, "capacity", true); err != nil {
			return "", err
		}
	}
	return svgOf(p, name)
}

// plotThroughput draws achieved against offered request rate, with the
// diagonal a server keeping up follows and the capacity marked.
func plotThroughput(off, ach []float64, capRate float64) (template.HTML, error) {
	p := newPlot("Achieved against offered throughput", "offered (req/s)", "achieved (req/s)")
	pts := plotter.XYs{}
	hi := 0.0
	for i := range off {
		pts = append(pts, plotter.XY{X: off[i], Y: ach[i]})
		hi = math.Max(hi, math.Max(off[i], ach[i]))
	}
	// In load order, which is offered order for rate and time-scale.
	if err := line(p, pts, "achieved", 0, false); err != nil {
		return "", err
	}
	if err := marks(p, pts, 0, vg.Points(2)); err != nil {
		return "", err
	}
	hi = math.Max(hi*1.05, 1e-9)
	if err := guide(p, plotter.XYs{{X: 0, Y: 0}, {X: hi, Y: hi}}, "achieved = offered", false); err != nil {
		return "", err
	}
	if !math.IsNaN(capRate) {
		if err := guide(p, plotter.XYs{{X: capRate, Y: 0}, {X: capRate, Y: hi}}, "capacity", true); err != nil {
			return "", err
		}
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, hi, 0, hi
	return svgOf(p, PlotSweepThroughput)
}

// guide draws a grey reference line (red for the capacity).
func guide(p *chart, pts plotter.XYs, label string, capacity bool) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = palette[5]
	l.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	if capacity {
		l.Color = palette[3]
		l.Width = vg.Points(1.6)
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(l)
	p.addKey(label, l)
	return nil
}

var sweepTemplate = template.Must(template.New("sweep").Funcs(funcs).Parse(pageHead + `<title>fineserve-gen capacity sweep{{if .R.Workload}} — {{.R.Workload}}{{end}}</title>
<style>` + styleSheet + `.pass{color:#1e8449}.fail{color:#c0392b}.client{color:#e67e22}</style>
</head>
<body>
<h1>Capacity sweep{{if .R.Workload}} — {{.R.Workload}}{{end}}</h1>
<p class="meta">Variable <b>{{.R.Variable}}</b> · {{len .R.Steps}} step(s) · tolerance {{.R.Tolerance}}</p>
{{if .Command}}<pre class="cmd" id="command">{{.Command}}</pre>{{end}}
<p class="warn" id="answer"><b>{{.R.Line}}</b></p>
{{with .R.Limit}}<p id="limit">Limit: <b>{{.Kind}}</b>{{if .Step}} (read at step {{.Step}}){{end}}: {{.Detail}}.</p>{{end}}
{{if .R.StopReason}}<p class="warn" id="stopped">Stopped early ({{.R.Stopped}}): {{.R.StopReason}}</p>{{end}}

<h2>Against load</h2>
<div class="grid">
{{range .Plots}}<figure id="plot-{{.Name}}">{{.SVG}}</figure>
{{end}}</div>

<h2>Steps</h2>
<table id="steps">
<tr><th>Step</th><th>{{.R.Variable}}</th><th>Offered/s</th><th>Achieved/s</th><th>Failed</th>{{if .Cancelled}}<th>Cut</th>{{end}}<th>Goodput</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>E2E p50</th><th>E2E p99</th><th>Running max</th><th>Waiting max</th><th>KV max</th>{{if .Endpoints}}<th>Server figures of</th><th>Per endpoint</th>{{end}}<th>Lag p99</th><th>Verdict</th></tr>
{{$p := .}}{{range .Steps}}<tr><td>{{.Index}}</td><td>{{.Value}}</td><td>{{f2 .Figures.Offered}}</td><td>{{f2 .Figures.Achieved}}</td><td>{{.Figures.Failed}}</td>{{if $p.Cancelled}}<td>{{.Figures.Cancelled}}</td>{{end}}<td>{{.Goodput}}</td><td>{{ms .Figures.TTFT.P50}}</td><td>{{ms .Figures.TTFT.P99}}</td><td>{{ms .Figures.TPOT.P50}}</td><td>{{ms .Figures.TPOT.P99}}</td><td>{{ms .Figures.E2E.P50}}</td><td>{{ms .Figures.E2E.P99}}</td><td>{{.Running}}</td><td>{{.Waiting}}</td><td>{{.KV}}</td>{{if $p.Endpoints}}<td>{{or .Figures.ServerEndpoint "–"}}</td><td class="endpoints">{{range $i, $l := .PerEndpoint}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td>{{end}}<td>{{ms .Figures.LagP99}}</td><td class="{{.Verdict}}" title="{{join .Reasons "; "}}">{{.Verdict}}</td></tr>
{{end}}</table>
<p class="meta">Latencies in ms, measured as in a run; running, waiting and KV: the server's own maxima over the step{{if .Endpoints}}, read at the busiest endpoint ("server figures of"){{end}}.{{if .Cancelled}} Cut: requests the client cancelled on purpose (--cancel-share), neither completed nor failed; the throughput verdict allows for them.{{end}} Each step is a whole run; its full summary is in the sweep's JSON.</p>
</body>
</html>
`))
