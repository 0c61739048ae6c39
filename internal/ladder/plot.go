package main

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotLag draws send lag (p50, p99, max) against the offered rate, with the
// goals, as an SVG.
func plotLag(steps []step, path string) error {
	rates := make([]float64, len(steps))
	for i, st := range steps {
		rates[i] = st.Rate
	}
	p := lagPlot("fineserve-gen: send lag vs request rate", "send lag (ms, log scale)", rates)
	series := []struct {
		name  string
		get   func(step) float64
		color color.RGBA
	}{
		{"p50", func(s step) float64 { return s.LagP50 }, color.RGBA{R: 31, G: 119, B: 180, A: 255}},
		{"p99", func(s step) float64 { return s.LagP99 }, color.RGBA{R: 255, G: 127, B: 14, A: 255}},
		{"max", func(s step) float64 { return s.LagMax }, color.RGBA{R: 214, G: 39, B: 40, A: 255}},
	}
	for _, s := range series {
		ys := make([]float64, len(steps))
		for i, st := range steps {
			ys[i] = s.get(st)
		}
		if err := addLagLine(p, rates, ys, "lag "+s.name, s.color, false); err != nil {
			return err
		}
	}
	goal := func(y float64, label string) error {
		lo, hi := steps[0].Rate, steps[len(steps)-1].Rate
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: y}, {X: hi, Y: y}})
		if err != nil {
			return err
		}
		l.Color = color.RGBA{R: 120, G: 120, B: 120, A: 255}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(label, l)
		return nil
	}
	if err := goal(1, "goal: p99 ≤ 1 ms at 1,000 req/s"); err != nil {
		return err
	}
	if err := goal(5, "goal: p99 ≤ 5 ms at 3,000 req/s"); err != nil {
		return err
	}
	p.Add(plotter.NewGrid())
	// Leave the top decade free for the legend.
	top := 5.0
	for _, st := range steps {
		top = max(top, st.LagMax)
	}
	p.Y.Min, p.Y.Max = 0.05, top*30
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// lagPlot returns a plot of lags (ms) against the offered rates, both on
// log scales, every rate labelled, the legend at the top left.
func lagPlot(title, yLabel string, rates []float64) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = yLabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Label.Text = "offered rate (req/s, log scale)"
	p.X.Scale = plot.LogScale{}
	ticks := make([]plot.Tick, 0, len(rates))
	for _, r := range rates {
		ticks = append(ticks, plot.Tick{Value: r, Label: fmt.Sprintf("%g", r)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// addLagLine adds a line with points of ys (ms, at least 0.001 so the log
// scale can show it) against rates, with its legend entry.
func addLagLine(p *plot.Plot, rates, ys []float64, name string, c color.RGBA, dashed bool) error {
	pts := make(plotter.XYs, len(rates))
	for i := range rates {
		pts[i] = plotter.XY{X: rates[i], Y: max(ys[i], 1e-3)}
	}
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return err
	}
	l.Color, sc.Color = c, c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, sc)
	p.Legend.Add(name, l, sc)
	return nil
}

// plotSideBySide draws the server-side send lag (p50 and p99) of
// fineserve-gen and vegeta against the offered rate, with the 2 ms goal at
// 10,000 req/s, as an SVG.
func plotSideBySide(steps []sideStep, path string) error {
	rates := make([]float64, len(steps))
	for i, st := range steps {
		rates[i] = st.Rate
	}
	p := lagPlot("send lag at the server: fineserve-gen and vegeta, constant rate", "lag at the server (ms, log scale)", rates)
	fine := color.RGBA{R: 31, G: 119, B: 180, A: 255}
	veg := color.RGBA{R: 214, G: 39, B: 40, A: 255}
	series := []struct {
		name   string
		get    func(sideStep) float64
		color  color.RGBA
		dashed bool
	}{
		{"fineserve-gen p99", func(s sideStep) float64 { return s.Fine.P99 }, fine, false},
		{"vegeta p99", func(s sideStep) float64 { return s.Vegeta.P99 }, veg, false},
		{"fineserve-gen p50", func(s sideStep) float64 { return s.Fine.P50 }, fine, true},
		{"vegeta p50", func(s sideStep) float64 { return s.Vegeta.P50 }, veg, true},
	}
	top := 2.0
	for _, s := range series {
		ys := make([]float64, len(steps))
		for i, st := range steps {
			ys[i] = s.get(st)
			top = max(top, ys[i])
		}
		if err := addLagLine(p, rates, ys, s.name, s.color, s.dashed); err != nil {
			return err
		}
	}
	if steps[0].Rate <= 10000 && steps[len(steps)-1].Rate >= 10000 {
		goal, err := plotter.NewScatter(plotter.XYs{{X: 10000, Y: 2}})
		if err != nil {
			return err
		}
		goal.Color = color.RGBA{R: 120, G: 120, B: 120, A: 255}
		goal.Shape = draw.PlusGlyph{}
		goal.Radius = vg.Points(5)
		p.Add(goal)
		p.Legend.Add("goal: p99 ≤ 2 ms at 10,000 req/s", goal)
	}
	p.Add(plotter.NewGrid())
	p.Y.Min, p.Y.Max = 0.01, top*30 // the top decade is the legend's
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
