package plan

import (
	"errors"
	"html/template"
	"io"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// Plot names of a plan's report.
const (
	PlotPlanRate     = "plan_rate"
	PlotPlanReplicas = "plan_replicas"
	PlotPlanCurve    = "plan_curve"
)

// Page is what a plan's report shows besides the plan.
type Page struct {
	Workload, Command string
	// Verify is the verification's lines (none without --verify).
	Verify []string
	// Measured says how the curve was measured and how long it took
	// (empty when it was read from files); Notes are its sweeps' caveats.
	Measured string
	Notes    []string
}

type planPage struct {
	Page
	R     *Result
	Plots []report.PlotView
}

// WriteHTML writes a planned day's report: the offered rate against
// the planned capacity, the replicas over the day against static peak
// provisioning (and a reactive autoscaler's, with a scale-up delay), the
// capacity curve, and the table of windows. One self-contained page.
func WriteHTML(w io.Writer, r *Result, page Page) error {
	if r == nil || len(r.Windows) == 0 {
		return errors.New("plan: no windows")
	}
	pg := planPage{Page: page, R: r}
	steps := func(y func(Window) float64) ([]float64, []float64) {
		var xs, ys []float64
		for _, w := range r.Windows {
			xs = append(xs, w.StartS, w.EndS)
			ys = append(ys, y(w), y(w))
		}
		return xs, ys
	}
	add := func(name, title string, svg template.HTML, err error) error {
		if err != nil {
			return err
		}
		pg.Plots = append(pg.Plots, report.PlotView{Name: name, Title: title, SVG: svg})
		return nil
	}
	rx, ry := steps(func(w Window) float64 { return w.OfferedRate })
	cx, cy := steps(func(w Window) float64 { return float64(w.Stabilized) * w.Capacity })
	svg, err := report.PlotTime(PlotPlanRate, "Offered rate and the planned replicas' capacity", "req/s", nil, []report.TimeSeries{
		{Label: "offered rate", X: rx, Y: ry, Steps: true},
		{Label: "planned capacity (replicas × capacity at the window's burstiness)", X: cx, Y: cy, Steps: true, Dashed: true},
	}, report.YLinear)
	if err := add(PlotPlanRate, "rate", svg, err); err != nil {
		return err
	}
	sx, sy := steps(func(w Window) float64 { return float64(w.Stabilized) })
	series := []report.TimeSeries{{Label: "planned replicas", X: sx, Y: sy, Steps: true}}
	if r.ScaleDownDelayS > 0 {
		series[0].Label = "planned replicas (a scale-down held " + report.FmtSig(r.ScaleDownDelayS/60) + " min)"
		nx, ny := steps(func(w Window) float64 { return float64(w.Replicas) })
		series = append(series, report.TimeSeries{Label: "each window's own need", X: nx, Y: ny, Steps: true, Back: true})
	}
	if r.ScaleUp != nil {
		ax, ay := steps(func(w Window) float64 { return float64(*w.Reactive) })
		series = append(series, report.TimeSeries{Label: "reactive autoscaler (at each window's start)", X: ax, Y: ay, Steps: true, Dashed: true})
	}
	end := r.Windows[len(r.Windows)-1].EndS
	series = append(series, report.TimeSeries{Label: "static peak provisioning", X: []float64{0, end}, Y: []float64{float64(r.PeakReplicas), float64(r.PeakReplicas)}, Steps: true, Back: true})
	svg, err = report.PlotTime(PlotPlanReplicas, "Replicas over the day", "replicas", nil, series, report.YCount)
	if err := add(PlotPlanReplicas, "replicas", svg, err); err != nil {
		return err
	}
	var xs, ys []float64
	for _, p := range r.Curve.Points {
		xs = append(xs, p.CV)
		ys = append(ys, p.Rate)
	}
	svg, err = report.PlotLoad(PlotPlanCurve, "One replica's capacity against burstiness", "burstiness (CV of the gaps)", "req/s within the SLO", xs, []string{"capacity"}, [][]float64{ys}, math.NaN(), math.NaN(), false)
	if err := add(PlotPlanCurve, "curve", svg, err); err != nil {
		return err
	}
	return planTemplate.Execute(w, &pg)
}

var planTemplate = template.Must(template.New("plan").Funcs(report.TemplateFuncs()).Funcs(template.FuncMap{
	"hm":   ClockTime,
	"reps": func(p *int) int { return *p },
	"f0":   func(v float64) string { return report.FmtFloat(v, 0) },
}).Parse(report.PageHead + `<title>fineserve-gen plan{{if .Workload}} — {{.Workload}}{{end}}</title>
<style>` + report.StyleSheet + `</style>
</head>
<body>
<h1>Capacity plan{{if .Workload}} — {{.Workload}}{{end}}</h1>
{{if .Command}}<pre class="cmd" id="command">{{.Command}}</pre>{{end}}
<p id="answer"><b>Peak: {{.R.PeakReplicas}} replicas; {{if .R.ScaleDownDelayS}}{{f2 .R.StabilizedReplicaHours}} replica-hours planned, a scale-down held {{f0 .R.ScaleDownDelayS}} s ({{f2 .R.ReplicaHours}} were every window at its own need), against {{f2 .R.StaticReplicaHours}} at static peak provisioning ({{pct .R.StabilizedSaving}} saved).{{else}}{{f2 .R.ReplicaHours}} replica-hours planned against {{f2 .R.StaticReplicaHours}} at static peak provisioning ({{pct .R.Saving}} saved).{{end}}</b>
Utilisation {{pct .R.MeanUtilization}} of the planned replicas' capacity ({{pct .R.StaticMeanUtilization}} with static provisioning); each replica idle {{pct .R.MeanIdleShare}} of its time.
{{with .R.ScaleUp}}With a scale-up delay of {{.DelayS}} s, a reactive autoscaler is under-provisioned {{f2 .UnderMinutes}} min in {{.UnderWindows}} window(s), ~{{f0 .RequestsAtRisk}} requests at risk of missing the SLO.{{end}}</p>
{{with .R.Curve.BusyText}}<p class="note" id="machine-busy">Note: {{.}}.</p>
{{end}}{{with .Measured}}<p class="meta" id="measured">{{.}}</p>
{{end}}{{range .Notes}}<p class="note">Note: {{.}}.</p>
{{end}}{{range .Verify}}<p class="meta verify">{{.}}</p>
{{end}}<h2>Over the day</h2>
<div class="grid">
{{range .Plots}}<figure id="plot-{{.Name}}">{{.SVG}}</figure>
{{end}}</div>
<h2>Capacity curve</h2>
<table id="curve"><tr><th>CV</th><th>req/s</th><th>measured</th><th>source</th></tr>
{{range .R.Curve.Points}}<tr><td>{{f2 .CV}}</td><td>{{f2 .Rate}}</td><td>{{if .Measured}}{{f2 .Measured}}{{else}}–{{end}}</td><td>{{.Source}}</td></tr>
{{end}}</table>
<p class="meta">{{with .R.Curve.SLO}}SLO: {{.}}. {{end}}Burstiness: the coefficient of variation of a window's gaps between arrivals; with n replicas served round-robin, each sees every n-th arrival, whose gaps have the CV shown as "CV each" (measured from the schedule), and the capacity is taken there; between measured points the capacity is interpolated, beyond them held flat.</p>
<h2>Replicas</h2>
<table id="runs"><tr><th>From</th><th>To</th><th>Replicas</th><th>Windows</th><th>Peak rate/s</th><th>Need</th>{{if .R.ScaleUp}}<th>Under (min)</th>{{end}}</tr>
{{$p := .}}{{range .R.Runs}}<tr><td>{{hm .FromS}}</td><td>{{hm .ToS}}</td><td>{{.Replicas}}</td><td>{{.Windows}}</td><td>{{f2 .PeakRate}}</td><td>{{if eq .NeedMin .NeedMax}}{{.NeedMax}}{{else}}{{.NeedMin}}–{{.NeedMax}}{{end}}{{if .Beyond}}*{{end}}</td>{{if $p.R.ScaleUp}}<td>{{f2 .UnderMinutes}}</td>{{end}}</tr>
{{end}}</table>
<p class="meta">Runs of consecutive windows the plan holds at one count{{if .R.ScaleDownDelayS}}: a window's replicas rise to its need at once and fall only once the lower count has sufficed {{f0 .R.ScaleDownDelayS}} s (--scale-down-delay){{end}}. Need: the fewest and most replicas the run's windows need on their own{{if .R.BeyondCurve}}; *: some window burstier than the curve's last point (optimistic){{end}}.</p>
<details><summary>{{len .R.Windows}} window(s)</summary>
<table id="windows"><tr><th>Start</th><th>Requests</th><th>Rate/s</th><th>CV</th><th>Need</th><th>Held</th><th>CV each</th><th>Capacity/s</th><th>Utilisation</th><th>Idle</th>{{if .R.ScaleUp}}<th>Reactive</th><th>Under (min)</th>{{end}}</tr>
{{range .R.Windows}}<tr><td>{{hm .StartS}}</td><td>{{.Requests}}</td><td>{{f2 .OfferedRate}}</td><td>{{f2 .Burstiness}}</td><td>{{.Replicas}}</td><td>{{.Stabilized}}</td><td>{{f2 .ReplicaBurstiness}}</td><td>{{f2 .Capacity}}</td><td>{{pct .Utilization}}</td><td>{{pct .IdleShare}}</td>{{if $p.R.ScaleUp}}<td>{{reps .Reactive}}</td><td>{{f2 .UnderMinutes}}</td>{{end}}</tr>
{{end}}</table></details>
</body>
</html>
`))
