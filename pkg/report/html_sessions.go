package report

import (
	"html/template"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Plot names of a run with sessions.
const (
	PlotTurnTTFT   = "turn_ttft"   // TTFT p50 and p99 against the turn number
	PlotTurnPrompt = "turn_prompt" // prompt, history and cached tokens against the turn number
)

// turnPlots draws the per-turn plots of a run with sessions: TTFT, and the
// prompt size with the part the server's prefix cache served, against the
// turn number. A run without sessions has none.
func turnPlots(turns []metrics.TurnSummary) (ttft, prompt template.HTML, err error) {
	if len(turns) == 0 {
		return "", "", nil
	}
	var p50, p99, size, hist, cached plotter.XYs
	for _, t := range turns {
		x := float64(t.Turn)
		if t.Count > t.Failed {
			p50 = append(p50, plotter.XY{X: x, Y: t.TTFTP50})
			p99 = append(p99, plotter.XY{X: x, Y: t.TTFTP99})
			size = append(size, plotter.XY{X: x, Y: t.PromptTokensMean})
			hist = append(hist, plotter.XY{X: x, Y: t.HistoryTokensMean})
			if t.CachedTokensMean != nil {
				cached = append(cached, plotter.XY{X: x, Y: *t.CachedTokensMean})
			}
		}
	}
	draw := func(name, title, yLabel string, series []plotter.XYs, labels []string) (template.HTML, error) {
		c := newPlot(title, "turn", yLabel)
		c.X.Tick.Marker = intTicks{}
		c.Y.Min = 0
		for i, pts := range series {
			if err := line(c, pts, labels[i], i, false); err != nil {
				return "", err
			}
			if err := marks(c, pts, i, vg.Points(1.8)); err != nil {
				return "", err
			}
		}
		return svgOf(c, name)
	}
	if ttft, err = draw(PlotTurnTTFT, "TTFT by turn", "ms", []plotter.XYs{p50, p99}, []string{"P50 TTFT", "P99 TTFT"}); err != nil {
		return "", "", err
	}
	prompt, err = draw(PlotTurnPrompt, "Prompt size and prefix-cache hits by turn", "tokens (mean)",
		[]plotter.XYs{size, hist, cached}, []string{"prompt tokens", "history tokens", "cached tokens (server)"})
	return ttft, prompt, err
}
