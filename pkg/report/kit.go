package report

import (
	"html/template"
	"maps"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The page kit: what the pages of other packages (a sweep's, pkg/sweep; a
// plan's, pkg/plan) are drawn with, so every page of the tool looks and
// reads the same while the report knows nothing of those packages.
type (
	// PlotView is one plot of a page, or the reason it is missing.
	PlotView = plotView
	// TimeSeries is one series of PlotTime.
	TimeSeries = timeSeries
	// YAxis is how PlotTime draws its y axis.
	YAxis = yAxis
)

// The y axes of PlotTime.
const (
	YLinear = yLinear
	YLog    = yLog
	YCount  = yCount
)

// PageHead opens a page (doctype, charset, viewport); StyleSheet is the
// pages' style.
const (
	PageHead   = pageHead
	StyleSheet = styleSheet
)

// TemplateFuncs are the pages' template functions (f2, ms, pct, join, …).
func TemplateFuncs() template.FuncMap { return maps.Clone(funcs) }

// FmtFloat formats v with prec decimals ("–" when not a number); FmtSig
// with the significant digits a note needs.
func FmtFloat(v float64, prec int) string { return fmtFloat(v, prec) }
func FmtSig(v float64) string             { return fmtSig(v) }

// PlotTime draws series over time (xs: the points' middle times in
// seconds, for the series without times of their own).
func PlotTime(name, title, yLabel string, xs []float64, series []TimeSeries, axis YAxis) (template.HTML, error) {
	return plotTime(name, title, yLabel, xs, series, axis)
}

// PlotLoad draws series against a load (a sweep's steps, a plan's
// burstiness), with capX as a dashed vertical line and, when hline is a
// number, a dotted target line.
func PlotLoad(name, title, xLabel, yLabel string, xs []float64, names []string, series [][]float64, capX, hline float64, logY bool) (template.HTML, error) {
	return plotLoad(name, title, xLabel, yLabel, xs, names, series, capX, hline, logY)
}

// PlotThroughput draws achieved against offered throughput, with the
// capacity marked; name is the plot's data-plot attribute.
func PlotThroughput(name string, off, ach []float64, capRate float64) (template.HTML, error) {
	return plotThroughput(name, off, ach, capRate)
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
func plotThroughput(name string, off, ach []float64, capRate float64) (template.HTML, error) {
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
	return svgOf(p, name)
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
