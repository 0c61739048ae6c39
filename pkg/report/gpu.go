package report

import (
	"fmt"
	"html/template"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// writeGPU prints what the GPU telemetry said over the run (--gpu-metrics-url):
// utilisation, memory, power, energy and energy per output token, then
// each GPU's utilisation and power when there are several.
func writeGPU(t *table, s *metrics.Summary) {
	g := s.GPU
	if g == nil {
		return
	}
	t.line("%s", center("GPU Telemetry", '-', 50))
	if !g.Available || g.GPUStats == nil {
		t.row("GPU scrapes:", fmt.Sprintf("none succeeded (%d failed)", g.Failures))
		return
	}
	t.row("GPUs:", g.GPUs)
	t.row("GPU utilisation (mean / max, %):", fmt.Sprintf("%.1f / %.1f", g.UtilMean, g.UtilMax))
	t.row("GPU memory used (mean / max, MiB):", fmt.Sprintf("%.0f / %.0f", g.MemUsedMean, g.MemUsedMax))
	if p := g.Power; p != nil {
		t.row("GPU power (mean / max, W):", fmt.Sprintf("%.1f / %.1f", p.MeanW, p.MaxW))
		t.row("GPU energy (J):", p.EnergyJ)
		if p.JoulesPerOutputToken > 0 {
			t.row("GPU energy per output token (J):", fmt.Sprintf("%.4g", p.JoulesPerOutputToken))
		}
	}
	if len(g.Devices) > 1 {
		for _, d := range g.Devices {
			v := fmt.Sprintf("util %.1f%%, %.0f MiB", d.UtilMean, d.MemUsedMean)
			if d.Power != nil {
				v += fmt.Sprintf(", %.1f W", d.Power.MeanW)
			}
			t.row(fmt.Sprintf("GPU %s:", d.ID), v)
		}
	}
	t.row("GPU scrapes (time covered):", fmt.Sprintf("%d (%.1f s)", g.Samples, g.Observed))
}

// WindowExtras reports whether a window has GPU telemetry or
// speculative-decoding figures: the report then has their table by window.
func (p page) WindowExtras() bool {
	for _, w := range p.Windows {
		if w.GPU != nil || (w.Server != nil && w.Server.SpecDecode != nil) {
			return true
		}
	}
	return false
}

// gpuSpecTemplate is the report's GPU telemetry and speculative-decoding
// sections (nothing when the summary has neither): the run's figures and
// each GPU's, then both by window.
var gpuSpecTemplate = template.Must(pageTemplate.New("gpu-spec").Parse(`{{with .S.GPU}}<h2>GPU telemetry</h2>
<p class="meta">Scraped from {{range $i, $u := .URLs}}{{if $i}}, {{end}}{{$u}}{{end}} every {{.Interval}} s; {{.Failures}} failed scrape(s){{if .LastError}}; last error: {{.LastError}}{{end}}. Utilisation is the GPUs' mean, memory and power their sums; energy is power integrated over time.</p>
{{if .GPUStats}}<table id="gpu">
<tr><th>GPU</th><th>Util mean / max (%)</th><th>Memory mean / max (MiB)</th><th>Power mean / max (W)</th><th>Energy (J)</th><th>J / output token</th></tr>
<tr><td>all ({{.GPUs}})</td><td>{{f1 .UtilMean}} / {{f1 .UtilMax}}</td><td>{{f1 .MemUsedMean}} / {{f1 .MemUsedMax}}</td>{{with .Power}}<td>{{f1 .MeanW}} / {{f1 .MaxW}}</td><td>{{f1 .EnergyJ}}</td><td>{{if .JoulesPerOutputToken}}{{f3 .JoulesPerOutputToken}}{{else}}–{{end}}</td>{{else}}<td>–</td><td>–</td><td>–</td>{{end}}</tr>
{{range .Devices}}<tr><td>{{.ID}}{{with .Model}} ({{.}}){{end}}</td><td>{{f1 .UtilMean}} / {{f1 .UtilMax}}</td><td>{{f1 .MemUsedMean}} / {{f1 .MemUsedMax}}</td>{{with .Power}}<td>{{f1 .MeanW}} / {{f1 .MaxW}}</td><td>{{f1 .EnergyJ}}</td>{{else}}<td>–</td><td>–</td>{{end}}<td></td></tr>
{{end}}</table>{{end}}
{{end}}{{with .S.ServerMetrics}}{{with .ServerStats}}{{with .SpecDecode}}<h2>Speculative decoding</h2>
<table id="spec-decode">
<tr><th>Acceptance rate</th><th>Mean acceptance length</th><th>Drafts</th><th>Draft tokens</th><th>Accepted</th><th>Acceptance by position</th></tr>
<tr><td>{{pct .AcceptanceRate}}</td><td>{{f2 .MeanAcceptanceLength}}</td><td>{{f1 .Drafts}}</td><td>{{f1 .DraftTokens}}</td><td>{{f1 .AcceptedTokens}}</td><td>{{range $i, $v := .PerPosition}}{{if $i}}, {{end}}{{pct $v}}{{end}}</td></tr>
</table>
{{end}}{{end}}{{end}}{{if .WindowExtras}}<h2>GPU and speculative decoding by window</h2>
<table id="gpu-spec-windows">
<tr><th>#</th><th>From–to</th><th>GPU util (%)</th><th>GPU memory (MiB)</th><th>GPU power (W)</th><th>Energy (J)</th><th>J / output token</th><th>Spec acceptance</th><th>Spec mean length</th></tr>
{{range .Windows}}<tr><td>{{.Index}}</td><td>{{clock .Start}}–{{clock .End}}</td>{{with .GPU}}<td>{{f1 .UtilMean}}</td><td>{{f1 .MemUsedMean}}</td>{{with .Power}}<td>{{f1 .MeanW}}</td><td>{{f1 .EnergyJ}}</td><td>{{if .JoulesPerOutputToken}}{{f3 .JoulesPerOutputToken}}{{else}}–{{end}}</td>{{else}}<td>–</td><td>–</td><td>–</td>{{end}}{{else}}<td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>{{end}}{{with .Server}}{{with .SpecDecode}}<td>{{pct .AcceptanceRate}}</td><td>{{f2 .MeanAcceptanceLength}}</td>{{else}}<td>–</td><td>–</td>{{end}}{{else}}<td>–</td><td>–</td>{{end}}</tr>
{{end}}</table>
{{end}}`))
