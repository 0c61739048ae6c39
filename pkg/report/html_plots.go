package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
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

// chart is a plot and its legend, which svgOf draws below the plot's axes,
// never over the data.
type chart struct {
	*plot.Plot
	keys []legendKey
}

// legendKey is one entry of a chart's legend.
type legendKey struct {
	label  string
	thumbs []plot.Thumbnailer
}

// addKey adds a legend entry.
func (c *chart) addKey(label string, thumbs ...plot.Thumbnailer) {
	c.keys = append(c.keys, legendKey{label, thumbs})
}

// newPlot returns a chart with the report's fonts and grid.
func newPlot(title, xLabel, yLabel string) *chart {
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
	p.Add(plotter.NewGrid())
	return &chart{Plot: p}
}

// Legend layout: thumbnail width, the gap after it and between entries.
const (
	keyThumb = 18
	keyGap   = 5
	keyAfter = 14
)

// legendLayout places the legend's entries in rows below the plot, left
// to right, each at (x, row); a label too long for a row is wrapped over
// several lines, never cut. It returns the lines of each entry's label,
// their positions and the number of text lines used.
func (c *chart) legendLayout(width vg.Length) (lines [][]string, xs []vg.Length, rows []int, nLines int) {
	sty := c.Legend.TextStyle
	x, row := vg.Length(0), 0
	for _, k := range c.keys {
		ls := wrapText(sty, k.label, width-keyThumb-keyGap)
		w := keyThumb + keyGap + sty.Width(strings.Join(ls, "\n"))
		if x > 0 && (len(ls) > 1 || x+w > width) {
			x, row = 0, nLines
		}
		lines, xs, rows = append(lines, ls), append(xs, x), append(rows, row)
		nLines = max(nLines, row+len(ls))
		x += w + keyAfter
		if len(ls) > 1 {
			x = width // the next entry starts a new row
		}
	}
	return lines, xs, rows, nLines
}

// wrapText splits s into lines no wider than width: at spaces, and inside
// a word longer than a line.
func wrapText(sty draw.TextStyle, s string, width vg.Length) []string {
	if sty.Width(s) <= width {
		return []string{s}
	}
	var lines []string
	cur := ""
	for _, word := range strings.Fields(s) {
		try := word
		if cur != "" {
			try = cur + " " + word
		}
		if sty.Width(try) <= width {
			cur = try
			continue
		}
		if cur != "" {
			lines = append(lines, cur)
		}
		cur = ""
		for _, r := range word { // a word wider than a line: split it
			if cur != "" && sty.Width(cur+string(r)) > width {
				lines = append(lines, cur)
				cur = ""
			}
			cur += string(r)
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

// svgOf renders c as an inline SVG element (no XML prolog): the plot, and
// its legend in a strip below the axes. Every text in a plot is escaped by
// the SVG canvas.
func svgOf(c *chart, name string) (template.HTML, error) {
	p := c.Plot
	sty := p.Legend.TextStyle
	lineH := sty.Height("Mg") * 1.25
	lines, xs, rows, nLines := c.legendLayout(plotWidth - 2*vg.Points(keyGap) - 40)
	legendH := vg.Length(0)
	if nLines > 0 {
		legendH = lineH*vg.Length(nLines) + vg.Points(6)
	}
	cv := vgsvg.New(plotWidth, plotHeight+legendH)
	dc := draw.New(cv)
	p.Draw(draw.Crop(dc, 0, 0, legendH, 0))
	left := dc.Min.X + 40 // under the plotted area, past the y axis' labels
	sty.YAlign = draw.YCenter
	for i, k := range c.keys {
		top := dc.Min.Y + legendH - vg.Points(3) - lineH*vg.Length(rows[i])
		x := left + xs[i]
		icon := &draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: top - lineH}, Max: vg.Point{X: x + keyThumb, Y: top}}}
		for _, t := range k.thumbs {
			t.Thumbnail(icon)
		}
		for j, l := range lines[i] {
			dc.FillText(sty, vg.Point{X: x + keyThumb + keyGap, Y: top - lineH*(vg.Length(j)+0.5)}, l)
		}
	}
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
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

// marks draws a dot of radius r at every point of pts, in palette colour i.
func marks(p *chart, pts plotter.XYs, i int, r vg.Length) error {
	if len(pts) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	sc.Color = palette[i%len(palette)]
	sc.Radius = r
	p.Add(sc)
	return nil
}

// line adds a line series to p, in palette colour i.
func line(p *chart, pts plotter.XYs, label string, i int, dashed bool) error {
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
		p.addKey(label, l)
	}
	return nil
}

// cdfSeries is one CDF to draw: (value in ms, quantile) points.
type cdfSeries struct {
	Label  string
	Points [][2]float64
	Coarse bool // only a few percentiles are known: draw points too
}

// plotCDF draws CDFs: on a logarithmic value axis when the positive
// values span more than a factor of 20, else on a linear one. A log axis
// has no 0: values of 0 are left off it, so a curve starts at the share of
// its values that are 0 (zeroShare; the page says how many there were).
func plotCDF(name, title string, series []cdfSeries) (template.HTML, error) {
	return plotCDFClipped(name, title, series, math.Inf(1))
}

// plotCDFClipped is plotCDF with the value axis ending at clip (+Inf: at
// the largest value); the curves run to its edge.
func plotCDFClipped(name, title string, series []cdfSeries, clip float64) (template.HTML, error) {
	lo, hi, logX, zeros := cdfRange(series, clip)
	xLabel := "ms"
	if logX {
		xLabel = "ms (log scale)"
	} else if zeros {
		lo = 0
	}
	return drawCDF(name, title, series, lo, hi, logX, xLabel)
}

// cdfRange is the range of the CDFs' positive values up to clip, whether
// they go on a log axis (they span more than a factor of 20), and whether
// any value is 0.
func cdfRange(series []cdfSeries, clip float64) (lo, hi float64, logX, zeros bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			v := pt[0]
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
			case v > clip:
				hi = clip
			case v <= 0:
				zeros = true
			default:
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	return lo, hi, lo > 0 && hi/lo > 20, zeros
}

func drawCDF(name, title string, series []cdfSeries, lo, hi float64, logX bool, xLabel string) (template.HTML, error) {
	p := newPlot(title, xLabel, "share of requests ≤ x")
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top, p.Legend.Left = false, false
	if logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	for i, s := range series {
		pts := make(plotter.XYs, 0, len(s.Points))
		for _, pt := range s.Points {
			v := pt[0]
			if math.IsNaN(v) || math.IsInf(v, 0) || logX && v <= 0 {
				continue
			}
			pts = append(pts, plotter.XY{X: v, Y: pt[1]})
		}
		if err := line(p, pts, s.Label, i, false); err != nil {
			return "", err
		}
		if s.Coarse && len(pts) > 0 {
			pts = slices.DeleteFunc(slices.Clone(pts), func(p plotter.XY) bool { return p.X > hi }) // marks stay inside the axes
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
	// The range last: adding a series widens it to the series' values,
	// and a clipped axis must stay clipped.
	if logX {
		p.X.Min, p.X.Max = lo, hi
	} else {
		pad := (hi - lo) * 0.05
		if pad == 0 {
			pad = math.Max(math.Abs(hi)*0.1, 1e-3)
		}
		p.X.Min, p.X.Max = math.Max(lo-pad, 0), hi+pad
	}
	return svgOf(p, name)
}

// zeroShare is the share of a CDF's values that are 0 (the largest
// quantile at value 0), and whether any is.
func zeroShare(points [][2]float64) (float64, bool) {
	share, any := 0.0, false
	for _, pt := range points {
		if pt[0] <= 0 {
			share, any = math.Max(share, pt[1]), true
		}
	}
	return share, any
}

// intTicks marks a count axis at whole numbers only (no 2.5 requests):
// steps of 1, 2 or 5 × 10^k, at most about six labels.
type intTicks struct{}

func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi >= lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	step := 1.0
	for k := 1.0; ; k *= 10 {
		if step = k; (hi-lo)/step <= 6 {
			break
		}
		if step = 2 * k; (hi-lo)/step <= 6 {
			break
		}
		if step = 5 * k; (hi-lo)/step <= 6 {
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	// Unlabelled minor ticks at whole numbers between the labels.
	if minor := step / 5; minor >= 1 && minor == math.Trunc(minor) {
		for v := math.Ceil(lo/minor) * minor; v <= hi; v += minor {
			if math.Mod(v, step) != 0 {
				ticks = append(ticks, plot.Tick{Value: v})
			}
		}
	}
	return ticks
}

// yAxis is how plotTime draws its y axis.
type yAxis int

const (
	yLinear yAxis = iota
	yLog          // log scale, values ≤ 0 at logFloor
	yCount        // linear, ticks at whole numbers only
)

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
	// Back draws the series first, wide and pale, under the others: a
	// series that often equals another (max and p99 of a few values)
	// then shows as a band around it instead of hiding it.
	Back bool
	// Steps marks a series whose points already draw steps (X and Y
	// as a polyline): its corners are not marked. With EndMark its last
	// point is a dot, not joined to the line: a value held for no time
	// (the last scrape of a run).
	Steps, EndMark bool
}

// logFloor is the smallest value a logarithmic time plot shows (1 µs when
// in ms): smaller values, zero included, are drawn at it.
const logFloor = 1e-3

// plotTime draws series over time. xs are the points' middle times in
// seconds, for the series without times of their own.
func plotTime(name, title, yLabel string, xs []float64, series []timeSeries, axis yAxis) (template.HTML, error) {
	logY := axis == yLog
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
	if axis == yCount {
		p.Y.Tick.Marker = intTicks{}
	}
	yMin, yMax := math.Inf(1), math.Inf(-1)
	// Draw the Back series first; the legend keeps the series' order.
	order := make([]int, 0, len(series))
	for _, back := range []bool{true, false} {
		for i, s := range series {
			if s.Back == back {
				order = append(order, i)
			}
		}
	}
	keys := make([]*legendKey, len(series))
	for _, i := range order {
		s := series[i]
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
		nKeys := len(p.keys)
		if s.EndMark && len(pts) > 1 {
			if err := marks(p, pts[len(pts)-1:], i, vg.Points(2.2)); err != nil {
				return "", err
			}
			pts = pts[:len(pts)-1]
		}
		if s.Back {
			if err := backLine(p, pts, s.Label, i); err != nil {
				return "", err
			}
		} else if err := line(p, pts, s.Label, i, s.Dashed); err != nil {
			return "", err
		}
		if len(p.keys) > nKeys {
			k := p.keys[nKeys]
			keys[i] = &k
		}
		if len(pts) < 30 && !s.Back && !s.Steps { // few points: mark each
			if err := marks(p, pts, i, vg.Points(1.8)); err != nil {
				return "", err
			}
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
		if yMax == 0 || axis == yCount && yMax < 1 {
			yMax = 1 // a count axis shows at least 0 and 1
		}
	}
	p.Y.Min, p.Y.Max = yMin, yMax
	p.X.Min, p.X.Max = 0, math.Max(span/div, 1e-9)
	var inOrder []legendKey
	for _, k := range keys {
		if k != nil {
			inOrder = append(inOrder, *k)
		}
	}
	p.keys = inOrder
	return svgOf(p, name)
}

// backLine adds a wide, pale line in palette colour i: a series drawn
// under the others (timeSeries.Back).
func backLine(p *chart, pts plotter.XYs, label string, i int) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	c := palette[i%len(palette)]
	l.Color = color.NRGBA{R: c.R, G: c.G, B: c.B, A: 100} // not premultiplied: a pale shade
	l.Width = vg.Points(5)
	p.Add(l)
	if label != "" {
		p.addKey(label, l)
	}
	return nil
}

// plotHistogram draws a length distribution from pre-computed bins. Both
// axes count (tokens, requests): their ticks are whole numbers. Bins of one
// value each ([v, v+1)) are drawn centred on v.
func plotHistogram(name, title, xLabel string, edges []float64, counts []int64, i int) (template.HTML, error) {
	p := newPlot(title, xLabel, "requests")
	p.Y.Tick.Marker = intTicks{}
	shift := 0.0
	if unitBins(edges) {
		shift = -0.5
	}
	h := &plotter.Histogram{FillColor: palette[i%len(palette)]}
	h.LineStyle.Width = vg.Points(0.5)
	h.LineStyle.Color = color.Gray{Y: 80}
	var top float64
	for j, c := range counts {
		if j+1 >= len(edges) {
			break
		}
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: edges[j] + shift, Max: edges[j+1] + shift, Weight: float64(c)})
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
	} else {
		p.X.Tick.Marker = intTicks{}
	}
	return svgOf(p, name)
}

// unitBins reports whether edges are consecutive whole numbers (one bin
// per length).
func unitBins(edges []float64) bool {
	for j, e := range edges {
		if e != math.Trunc(e) || j > 0 && e-edges[j-1] != 1 {
			return false
		}
	}
	return len(edges) > 1
}

// plotBars draws one bar per label (errors by class); with no value above
// 0 there is nothing to draw, and the plot says none instead: a panel
// with the title and that line, no axes.
func plotBars(name, title, yLabel string, labels []string, values []float64, none string) (template.HTML, error) {
	if !slices.ContainsFunc(values, func(v float64) bool { return v > 0 }) {
		return textPanel(name, title, none), nil
	}
	p := newPlot(title, "", yLabel)
	b, err := plotter.NewBarChart(plotter.Values(values), vg.Points(24))
	if err != nil {
		return "", err
	}
	b.Color = palette[3]
	b.LineStyle.Width = 0
	p.Add(b)
	p.NominalX(labels...)
	p.Y.Tick.Marker = intTicks{}
	top := 0.0
	for _, v := range values {
		top = math.Max(top, v)
	}
	p.Y.Min, p.Y.Max = 0, math.Max(top*1.15, 1)
	return svgOf(p, name)
}

// textPanel is an SVG in place of a plot with nothing to draw: its title
// and one line saying why, in the plots' fonts (name and texts escaped).
func textPanel(name, title, line string) template.HTML {
	esc := template.HTMLEscapeString
	w, h := plotWidth.Points(), 1.1*vg.Inch.Points()
	return template.HTML(fmt.Sprintf(`<svg class="plot" data-plot=%q role="img" aria-label="%s: %s" xmlns="http://www.w3.org/2000/svg" width="%.0fpt" height="%.0fpt" viewBox="0 0 %.0f %.0f">`+
		`<text x="%.0f" y="22" text-anchor="middle" font-family="Liberation Sans, Helvetica, Arial, sans-serif" font-size="11">%s</text>`+
		`<text class="none" x="%.0f" y="%.0f" text-anchor="middle" font-family="Liberation Sans, Helvetica, Arial, sans-serif" font-size="13" fill="#2c7a2c">%s</text></svg>`,
		name, esc(title), esc(line), w, h, w, h, w/2, esc(title), w/2, h/2+12, esc(line)))
}
