package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// palette colours the series of a plot (and the runs of a comparison).
var palette = []color.RGBA{
	{R: 31, G: 119, B: 180, A: 255},
	{R: 255, G: 127, B: 14, A: 255},
	{R: 44, G: 160, B: 44, A: 255},
	{R: 214, G: 39, B: 40, A: 255},
	{R: 148, G: 103, B: 189, A: 255},
	{R: 140, G: 86, B: 75, A: 255},
}

// plotWidth and plotHeight are the size of every plot.
const (
	plotWidth  = 6.4 * vg.Inch
	plotHeight = 3.2 * vg.Inch
)

// newPlot returns a plot with the report's fonts and grid.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, f := range []*draw.TextStyle{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		f.Font.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.TextStyle.Font.Size = vg.Points(10)
	p.Y.Label.TextStyle.Font.Size = vg.Points(10)
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// svgOf renders p as an inline SVG element (no XML prolog). Every text in a
// plot is escaped by the SVG canvas.
func svgOf(p *plot.Plot, name string) (template.HTML, error) {
	c := vgsvg.New(plotWidth, plotHeight)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("plot %s: %w", name, err)
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("plot %s: no <svg> element", name)
	}
	s = s[i:]
	// Name the element for tests and style sheets, and make it accessible.
	s = strings.Replace(s, "<svg ", fmt.Sprintf(`<svg class="plot" data-plot=%q role="img" aria-label=%q `, name, template.HTMLEscapeString(p.Title.Text)), 1)
	return template.HTML(s), nil
}

// line adds a line series to p, in palette colour i.
func line(p *plot.Plot, pts plotter.XYs, label string, i int, dashed bool) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	l.Color = palette[i%len(palette)]
	l.Width = vg.Points(1.4)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
	return nil
}

// cdfSeries is one CDF to draw: (value in ms, quantile) points.
type cdfSeries struct {
	Label  string
	Points [][2]float64
	Coarse bool // only a few percentiles are known: draw points too
}

// plotCDF draws CDFs: on a logarithmic value axis when the values span
// more than a factor of 20, else on a linear one.
func plotCDF(name, title string, series []cdfSeries) (template.HTML, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			if v := pt[0]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	logX := lo > 0 && hi/lo > 20 || lo <= 0 && hi > 1e-3*20
	xLabel := "ms"
	if logX {
		xLabel = "ms (log scale)"
		lo = math.Max(lo, 1e-3) // a log axis needs values > 0 (1 µs floor)
	}
	p := newPlot(title, xLabel, "share of requests ≤ x")
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max = lo, hi
	} else {
		pad := (hi - lo) * 0.05
		if pad == 0 {
			pad = math.Max(math.Abs(hi)*0.1, 1e-3)
		}
		p.X.Min, p.X.Max = math.Max(lo-pad, 0), hi+pad
	}
	for i, s := range series {
		pts := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			v := pt[0]
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			if logX {
				v = math.Max(v, lo)
			}
			pts = append(pts, plotter.XY{X: v, Y: pt[1]})
		}
		if err := line(p, pts, s.Label, i, false); err != nil {
			return "", err
		}
		if s.Coarse && len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return "", err
			}
			sc.Color = palette[i%len(palette)]
			p.Add(sc)
		}
	}
	return svgOf(p, name)
}

// timeUnit picks seconds, minutes or hours for a time axis of span seconds.
func timeUnit(span float64) (string, float64) {
	switch {
	case span > 3*3600:
		return "h", 3600
	case span > 20*60:
		return "min", 60
	}
	return "s", 1
}

// timeSeries is one series over time: y at the middle of each point's span;
// NaN values break nothing (they are skipped).
type timeSeries struct {
	Label  string
	X      []float64 // nil: the plot's common times
	Y      []float64
	Dashed bool
}

// logFloor is the smallest value a logarithmic time plot shows (1 µs when
// in ms): smaller values, zero included, are drawn at it.
const logFloor = 1e-3

// plotTime draws series over time. xs are the points' middle times in
// seconds, for the series without times of their own. logY draws y on a
// log scale (values ≤ 0 at logFloor).
func plotTime(name, title, yLabel string, xs []float64, series []timeSeries, logY bool) (template.HTML, error) {
	span := 0.0
	if len(xs) > 0 {
		span = xs[len(xs)-1]
	}
	for _, s := range series {
		if len(s.X) > 0 {
			span = math.Max(span, s.X[len(s.X)-1])
		}
	}
	unit, div := timeUnit(span)
	p := newPlot(title, "time since start ("+unit+")", yLabel)
	if logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	yMin, yMax := math.Inf(1), math.Inf(-1)
	for i, s := range series {
		sx := xs
		if s.X != nil {
			sx = s.X
		}
		pts := make(plotter.XYs, 0, len(sx))
		for j, x := range sx {
			if j >= len(s.Y) {
				break
			}
			y := s.Y[j]
			if math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			if logY {
				y = math.Max(y, logFloor) // zero lag shows at the floor
			}
			pts = append(pts, plotter.XY{X: x / div, Y: y})
			yMin, yMax = math.Min(yMin, y), math.Max(yMax, y)
		}
		if err := line(p, pts, s.Label, i, s.Dashed); err != nil {
			return "", err
		}
		if len(pts) > 0 && len(pts) < 30 { // few points: mark each
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return "", err
			}
			sc.Color = palette[i%len(palette)]
			sc.Radius = vg.Points(1.8)
			p.Add(sc)
		}
	}
	switch {
	case math.IsInf(yMin, 0):
		yMin, yMax = 0, 1
		if logY {
			yMin = logFloor
		}
	case logY:
		if yMax/yMin < 10 {
			mid := math.Sqrt(yMin * yMax)
			yMin, yMax = mid/math.Sqrt(10), mid*math.Sqrt(10)
		}
	default:
		yMin = math.Min(0, yMin)
		yMax = math.Max(yMax*1.1, yMin+1e-9)
		if yMax == 0 {
			yMax = 1
		}
	}
	p.Y.Min, p.Y.Max = yMin, yMax
	p.X.Min, p.X.Max = 0, math.Max(span/div, 1e-9)
	return svgOf(p, name)
}

// plotHistogram draws a length distribution from pre-computed bins.
func plotHistogram(name, title, xLabel string, edges []float64, counts []int64, i int) (template.HTML, error) {
	p := newPlot(title, xLabel, "requests")
	h := &plotter.Histogram{FillColor: palette[i%len(palette)]}
	h.LineStyle.Width = vg.Points(0.5)
	h.LineStyle.Color = color.Gray{Y: 80}
	var top float64
	for j, c := range counts {
		if j+1 >= len(edges) {
			break
		}
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: edges[j], Max: edges[j+1], Weight: float64(c)})
		top = math.Max(top, float64(c))
	}
	if len(h.Bins) == 0 {
		h.Bins = []plotter.HistogramBin{{Min: 0, Max: 1}}
	}
	h.Width = h.Bins[0].Max - h.Bins[0].Min
	p.Add(h)
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.1, 1)
	if lo, hi := edges[0], edges[len(edges)-1]; lo >= 1 && hi/lo > 8 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	return svgOf(p, name)
}

// plotBars draws one bar per label (errors by class).
func plotBars(name, title, yLabel string, labels []string, values []float64) (template.HTML, error) {
	p := newPlot(title, "", yLabel)
	if len(values) == 0 {
		labels, values = []string{"none"}, []float64{0}
	}
	b, err := plotter.NewBarChart(plotter.Values(values), vg.Points(24))
	if err != nil {
		return "", err
	}
	b.Color = palette[3]
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(labels...)
	top := 0.0
	for _, v := range values {
		top = math.Max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.15, 1)
	return svgOf(p, name)
}
