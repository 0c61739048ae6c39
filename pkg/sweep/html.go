package sweep

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// Plot names of a sweep's report (the data-plot attribute of each SVG).
const (
	PlotSweepLatency    = "sweep_latency"
	PlotSweepThroughput = "sweep_throughput"
	PlotSweepGoodput    = "sweep_goodput"
)

// sweepPage is what the sweep template shows.
type sweepPage struct {
	R       *Result
	Command string
	Steps   []sweepRow
	Plots   []report.PlotView
	// Columns shown only when a step has them: cancelled requests
	// (--cancel-share), several endpoints (each one's counts, and whose
	// server figures the step shows).
	Cancelled, Endpoints bool
}

type sweepRow struct {
	Step
	Value, Goodput, Running, Waiting, KV string
	// PerEndpoint is one line per endpoint: "#N URL: completed, failed,
	// cut".
	PerEndpoint []string
}

// perEndpoint gives a step's counts by endpoint (none with one endpoint).
func perEndpoint(st *Step) []string {
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

// WriteHTML writes a sweep's report: the answer and its diagnosis,
// latency percentiles, achieved against offered throughput and goodput
// against load with the capacity marked, and the table of steps. Like a
// run's report it is one self-contained page.
func WriteHTML(w io.Writer, r *Result) error {
	if r == nil {
		return errors.New("sweep: no result")
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
	if r.Variable == Rate {
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
		pg.Plots = append(pg.Plots, report.PlotView{Name: name, Title: title, SVG: svg})
		return nil
	}
	svg, err := report.PlotLoad(PlotSweepLatency, "Latency percentiles against load", xLabel, "ms (log scale)", xs, names, series, capX, math.NaN(), true)
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
	svg, err = report.PlotThroughput(PlotSweepThroughput, off, ach, capRate)
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
		svg, err = report.PlotLoad(PlotSweepGoodput, "Goodput against load", xLabel, "% of requests meeting every SLO", xs, []string{"goodput"}, [][]float64{good}, capX, 100*r.MinGoodput, false)
		if err := add(PlotSweepGoodput, "goodput", svg, err); err != nil {
			return err
		}
	}
	return sweepTemplate.Execute(w, &pg)
}

var sweepTemplate = template.Must(template.New("sweep").Funcs(report.TemplateFuncs()).Parse(report.PageHead + `<title>fineserve-gen capacity sweep{{if .R.Workload}} — {{.R.Workload}}{{end}}</title>
<style>` + report.StyleSheet + `.pass{color:#1e8449}.fail{color:#c0392b}.client{color:#e67e22}</style>
</head>
<body>
<h1>Capacity sweep{{if .R.Workload}} — {{.R.Workload}}{{end}}</h1>
<p class="meta">Variable <b>{{.R.Variable}}</b> · {{len .R.Steps}} step(s) · tolerance {{.R.Tolerance}}</p>
{{if .Command}}<pre class="cmd" id="command">{{.Command}}</pre>{{end}}
<p class="warn" id="answer"><b>{{.R.Line}}</b></p>
{{with .R.Limit}}<p id="limit">Limit: <b>{{.Kind}}</b>{{if .Step}} (read at step {{.Step}}){{end}}: {{.Detail}}.</p>{{end}}
{{range .R.Notes}}<p class="meta">{{.}}</p>
{{end}}{{if .R.StopReason}}<p class="warn" id="stopped">Stopped early ({{.R.Stopped}}): {{.R.StopReason}}</p>{{end}}

<h2>Against load</h2>
<div class="grid">
{{range .Plots}}<figure id="plot-{{.Name}}">{{.SVG}}</figure>
{{end}}</div>

<h2>Steps</h2>
<table id="steps">
<tr><th>Step</th><th>{{.R.Variable}}</th><th>Offered/s</th><th>Achieved/s</th><th>Failed</th>{{if .Cancelled}}<th>Cut</th>{{end}}<th>Goodput</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>TPOT p99</th><th>E2E p50</th><th>E2E p99</th><th>Running max</th><th>Waiting max</th><th>KV max</th>{{if .Endpoints}}<th>Server figures of</th><th>Per endpoint</th>{{end}}<th>Lag p99</th><th>Verdict</th><th>Time</th><th>Ended</th></tr>
{{$p := .}}{{range .Steps}}<tr><td>{{.Index}}</td><td>{{.Value}}</td><td>{{f2 .Figures.Offered}}</td><td>{{f2 .Figures.Achieved}}</td><td>{{.Figures.Failed}}</td>{{if $p.Cancelled}}<td>{{.Figures.Cancelled}}</td>{{end}}<td>{{.Goodput}}</td><td>{{ms .Figures.TTFT.P50}}</td><td>{{ms .Figures.TTFT.P99}}</td><td>{{ms .Figures.TPOT.P50}}</td><td>{{ms .Figures.TPOT.P99}}</td><td>{{ms .Figures.E2E.P50}}</td><td>{{ms .Figures.E2E.P99}}</td><td>{{.Running}}</td><td>{{.Waiting}}</td><td>{{.KV}}</td>{{if $p.Endpoints}}<td>{{or .Figures.ServerEndpoint "–"}}</td><td class="endpoints">{{range $i, $l := .PerEndpoint}}{{if $i}}<br>{{end}}{{$l}}{{end}}</td>{{end}}<td>{{ms .Figures.LagP99}}</td><td class="{{.Verdict}}" title="{{join .Reasons "; "}}">{{.Verdict}}</td><td>{{if .Seconds}}{{printf "%.1f s" .Seconds}}{{else}}–{{end}}</td><td title="{{.Settled}}">{{or .Ended "–"}}</td></tr>
{{end}}</table>
<p class="meta">Latencies in ms, measured as in a run; running, waiting and KV: the server's own maxima over the step{{if .Endpoints}}, read at the busiest endpoint ("server figures of"){{end}}.{{if .Cancelled}} Cut: requests the client cancelled on purpose (--cancel-share), neither completed nor failed; the throughput verdict allows for them.{{end}} Each step is a whole run; its full summary is in the sweep's JSON.</p>
</body>
</html>
`))

// Outputs are a sweep's: its table, and with their paths its JSON
// (--sweep-json) and its HTML report ("": none).
func Outputs(res *Result, jsonPath, htmlPath string) []report.Output {
	outs := []report.Output{{Name: "the sweep's table (standard output)", Write: func(w io.Writer) error { return WriteTable(w, res) }}}
	if jsonPath != "" {
		outs = append(outs, report.JSONOutput("--sweep-json "+jsonPath, jsonPath, res))
	}
	if htmlPath != "" {
		outs = append(outs, report.Output{Name: "--report-html " + htmlPath, Path: htmlPath, Write: func(w io.Writer) error { return WriteHTML(w, res) }})
	}
	return outs
}
