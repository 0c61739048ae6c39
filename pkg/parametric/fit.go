package parametric

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat"
)

// FitMethod is how a window's Gamma shape is estimated.
type FitMethod int

const (
	// MethodMoments sets shape = mean²/variance of the window's gaps: the
	// fitted process has the window's gap CV, which is what sets how much
	// its counts vary. Defined with zero gaps.
	MethodMoments FitMethod = iota
	// MethodMLE is the maximum-likelihood shape (log k − ψ(k) = log mean −
	// mean log), over the window's gaps above zero.
	MethodMLE
)

func (m FitMethod) String() string {
	if m == MethodMLE {
		return "mle"
	}
	return "moments"
}

// ParseFitMethod parses "moments" (or "mom") and "mle".
func ParseFitMethod(s string) (FitMethod, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "moments", "mom":
		return MethodMoments, nil
	case "mle":
		return MethodMLE, nil
	}
	return 0, fmt.Errorf("fit method %q: want moments or mle", s)
}

// FitOptions configures Fit.
type FitOptions struct {
	// Window is the window length (default 300 s).
	Window time.Duration
	Method FitMethod
	// BurstBin is the micro-burst width (default 1 ms): a burst is a
	// request and every request less than BurstBin after it, and the NB
	// model is fitted to the burst sizes. Negative: no NB model.
	BurstBin time.Duration
	// GammaOnBursts fits the Gamma shapes to the gaps between bursts rather
	// than between requests: the parameters to generate from together with
	// the fitted NB model. By default the shapes describe request gaps, to
	// generate from without an NB model.
	GammaOnBursts bool
}

// WindowFit is the fit of one window.
type WindowFit struct {
	Index      int
	Start, End time.Duration // End is the trace's end for a last, partial window
	Requests   int           // requests in the window
	Events     int           // events (requests, or bursts) starting in the window
	Gaps       int           // event gaps inside the window the shape was fitted on
	Rate       float64       // requests per second
	CV         float64       // coefficient of variation of the event gaps (NaN below 2 gaps)
	Shape      float64
	ScaleMS    float64 // such that Shape·ScaleMS is the mean request gap
	Note       string  // why a window was not fitted as usual
}

// Fit is the result of fitting a trace.
type Fit struct {
	Options  FitOptions
	Requests int
	Span     time.Duration // first to last request
	Events   int           // what the shapes were fitted on: requests, or bursts
	Bursts   int           // bursts (with a burst width)
	Windows  []WindowFit
	// NB is the zero-truncated NB model of burst sizes; nil without
	// grouping. NBFile holds it in FineServe's format.
	NB     *NB
	NBFile NBFile
	// ZeroGaps counts event gaps of zero left out of an MLE fit.
	ZeroGaps int
}

// maxFitWindows bounds the windows of one fit.
const maxFitWindows = 10_000_000

// minFitGaps is the fewest gaps from which a window's shape is estimated;
// below it the shape is 1 (exponential gaps).
const minFitGaps = 5

// FitTimes fits Gamma windows (and, with a burst bin, an NB burst model) to
// sorted arrival offsets. Window w's row has shape fitted to the gaps
// between the events that start in it and scale such that shape·scale is
// the window's mean request gap (its length over its request count), so
// generating from the fit reproduces every window's request rate, with or
// without the NB model.
func FitTimes(times []time.Duration, o FitOptions) (*Fit, error) {
	if o.Window == 0 {
		o.Window = 300 * time.Second
	}
	if o.BurstBin == 0 {
		o.BurstBin = time.Millisecond
	}
	if o.Window < time.Millisecond {
		return nil, fmt.Errorf("fit: window %v: want ≥ 1ms", o.Window)
	}
	if len(times) < 2 {
		return nil, fmt.Errorf("fit: %d requests: want at least 2", len(times))
	}
	if !slices.IsSorted(times) || times[0] < 0 {
		return nil, errors.New("fit: times must be sorted and ≥ 0")
	}
	f := &Fit{Options: o, Requests: len(times), Span: times[len(times)-1] - times[0]}
	t0 := times[0]

	// Bursts: a request and every request less than BurstBin after it (the
	// generator's rule: a burst's requests follow its first within 1 ms).
	var bursts []time.Duration
	sizes := map[int]int64{}
	var sizeList []float64
	if o.BurstBin > 0 {
		for i := 0; i < len(times); {
			j := i + 1
			for j < len(times) && times[j]-times[i] < o.BurstBin {
				j++
			}
			bursts = append(bursts, times[i]-t0)
			sizes[j-i]++
			sizeList = append(sizeList, float64(j-i))
			i = j
		}
	}
	// Events: what the Gamma shape describes.
	events := bursts
	if !o.GammaOnBursts || o.BurstBin <= 0 {
		events = make([]time.Duration, len(times))
		for i, t := range times {
			events[i] = t - t0
		}
	}
	f.Events, f.Bursts = len(events), len(bursts)

	if f.Span/o.Window >= maxFitWindows {
		return nil, fmt.Errorf("fit: %v of trace in windows of %v is over %d windows: use longer windows", f.Span, o.Window, maxFitWindows)
	}
	nw := int(f.Span/o.Window) + 1
	f.Windows = make([]WindowFit, nw)
	for w := range f.Windows {
		f.Windows[w] = WindowFit{Index: w, Start: time.Duration(w) * o.Window, End: min(time.Duration(w+1)*o.Window, f.Span)}
	}
	if f.Windows[nw-1].End == f.Windows[nw-1].Start { // the last request opens a window
		f.Windows[nw-1].End = f.Windows[nw-1].Start + o.Window
	}
	first := make([]time.Duration, nw) // first request in each window
	last := make([]time.Duration, nw)
	for _, t := range times {
		w := int((t - t0) / o.Window)
		if f.Windows[w].Requests == 0 {
			first[w] = t - t0
		}
		last[w] = t - t0
		f.Windows[w].Requests++
	}
	gaps := make([][]float64, nw) // seconds, of gaps that end in the window they start in
	for i := 0; i+1 < len(events); i++ {
		w := int(events[i] / o.Window)
		if int(events[i+1]/o.Window) == w {
			gaps[w] = append(gaps[w], (events[i+1] - events[i]).Seconds())
		}
	}
	for i := range events {
		f.Windows[int(events[i]/o.Window)].Events++
	}
	for w := range f.Windows {
		fw := &f.Windows[w]
		fw.Gaps = len(gaps[w])
		fw.CV = math.NaN()
		if fw.Gaps >= 2 {
			m, sd := stat.MeanStdDev(gaps[w], nil)
			fw.CV = sd / m
		}
		// The mean request gap: the window's length over its count; for a
		// partial last window, the mean of the gaps observed in it.
		var meanGap float64
		partial := w == nw-1 && fw.End-fw.Start < o.Window
		switch {
		case fw.Requests == 0:
			meanGap = o.Window.Seconds()
			fw.Note = "no request: rate floored to 1 per window"
		case partial && fw.Requests >= 2:
			meanGap = (last[w] - first[w]).Seconds() / float64(fw.Requests-1)
			fw.Note = "partial window: rate from its gaps"
		case partial:
			meanGap = (fw.End - fw.Start).Seconds()
			fw.Note = "partial window with 1 request"
		default:
			meanGap = o.Window.Seconds() / float64(fw.Requests)
		}
		meanGap = max(meanGap, MinMeanGapMS/1e3)
		fw.Rate = 1 / meanGap
		shape := 1.0
		if fw.Gaps >= minFitGaps {
			var zeros int
			shape, zeros = FitGammaShape(gaps[w], o.Method)
			f.ZeroGaps += zeros
		} else if fw.Note == "" {
			fw.Note = fmt.Sprintf("%d gaps: shape 1", fw.Gaps)
		}
		fw.Shape = min(max(shape, MinShape), MaxShape)
		fw.ScaleMS = min(meanGap*1e3/fw.Shape, MaxScaleMS)
	}

	if o.BurstBin > 0 {
		nb, file := FitNB(sizes)
		m, v := stat.MeanVariance(sizeList, nil)
		file.Mean, file.Variance = m, v
		if len(sizeList) < 2 {
			file.Variance = 0
		}
		f.NB, f.NBFile = &nb, file
	}
	return f, nil
}

// FitGammaShape estimates the Gamma shape of gaps (≥ 0, at least 2) by m.
// zeros counts the gaps an MLE fit left out (log 0 is undefined). The
// result is +Inf for equal gaps; callers clamp it.
func FitGammaShape(gaps []float64, m FitMethod) (shape float64, zeros int) {
	if m == MethodMLE {
		var sum, sumLog float64
		n := 0
		for _, g := range gaps {
			if g <= 0 {
				zeros++
				continue
			}
			sum += g
			sumLog += math.Log(g)
			n++
		}
		if n >= 2 {
			s := math.Log(sum/float64(n)) - sumLog/float64(n)
			return gammaShapeMLE(s), zeros
		}
	}
	mean, v := stat.MeanVariance(gaps, nil)
	if !(v > 0) {
		return math.Inf(1), zeros
	}
	return mean * mean / v, zeros
}

// gammaShapeMLE solves log k − ψ(k) = s (s > 0) for k by bisection on
// log k; the left side decreases from +∞ to 0.
func gammaShapeMLE(s float64) float64 {
	if !(s > 0) {
		return math.Inf(1)
	}
	lo, hi := math.Log(MinShape/10), math.Log(MaxShape*10)
	for range 200 {
		mid := (lo + hi) / 2
		k := math.Exp(mid)
		if math.Log(k)-mathext.Digamma(k) > s {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp((lo + hi) / 2)
}

// FitNB fits the zero-truncated NB model to a histogram of burst sizes
// (size → number of bins) by maximum likelihood: for a given Alpha the
// likelihood is largest where the model's E[K | K ≥ 1] equals the sample
// mean, which fixes Mu; Alpha is then found by a golden-section search of
// that profile likelihood over log Alpha, Alpha = 0 (Poisson) included.
func FitNB(hist map[int]int64) (NB, NBFile) {
	var n int64
	var sum float64
	for k, c := range hist {
		n += c
		sum += float64(k) * float64(c)
	}
	file := NBFile{NumSamples: n}
	if n == 0 {
		return NB{Mu: 1e-6}, file
	}
	mean := sum / float64(n)
	if mean <= 1+1e-9 { // no burst at all: the limit Mu → 0
		nb := NB{Mu: 1e-6}
		file.NBMu, file.KSStat, file.KSPValue = nb.Mu, 0, 1
		return nb, file
	}
	ll := func(nb NB) float64 {
		var s float64
		for k, c := range hist {
			s += float64(c) * nb.LogProb(k)
		}
		return s
	}
	profile := func(alpha float64) (NB, float64) {
		nb := NB{Mu: muForMean(mean, alpha), Alpha: alpha}
		return nb, ll(nb)
	}
	best, bestLL := profile(0)
	lo, hi := math.Log(1e-6), math.Log(MaxNBAlpha)
	const phi = 0.6180339887498949
	a, b := hi-phi*(hi-lo), lo+phi*(hi-lo)
	_, fa := profile(math.Exp(a))
	_, fb := profile(math.Exp(b))
	for range 100 {
		if fa > fb {
			hi, b, fb = b, a, fa
			a = hi - phi*(hi-lo)
			_, fa = profile(math.Exp(a))
		} else {
			lo, a, fa = a, b, fb
			b = lo + phi*(hi-lo)
			_, fb = profile(math.Exp(b))
		}
	}
	if nb, l := profile(math.Exp((lo + hi) / 2)); l > bestLL && nb.Validate() == nil {
		best, bestLL = nb, l
	}
	file.NBMu, file.NBAlpha = best.Mu, best.Alpha
	file.KSStat = ksDistance(hist, n, best)
	file.KSPValue = kolmogorovQ((math.Sqrt(float64(n)) + 0.12 + 0.11/math.Sqrt(float64(n))) * file.KSStat)
	return best, file
}

// muForMean is the Mu whose zero-truncated mean is mean (> 1), for alpha.
func muForMean(mean, alpha float64) float64 {
	lo, hi := 1e-12, mean
	for range 200 {
		mid := (lo + hi) / 2
		if (NB{Mu: mid, Alpha: alpha}).Mean() < mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// ksDistance is the largest gap between the histogram's CDF and nb's.
func ksDistance(hist map[int]int64, n int64, nb NB) float64 {
	kmax := 0
	for k := range hist {
		kmax = max(kmax, k)
	}
	var d, emp, model float64
	for k := 1; k <= kmax; k++ {
		emp += float64(hist[k]) / float64(n)
		model += math.Exp(nb.LogProb(k))
		d = max(d, math.Abs(emp-model))
	}
	return d
}

// kolmogorovQ is P(K > x) of the Kolmogorov distribution.
func kolmogorovQ(x float64) float64 {
	if x < 0.2 {
		return 1
	}
	var s float64
	for j := 1; j <= 100; j++ {
		term := math.Exp(-2 * float64(j*j) * x * x)
		if j%2 == 1 {
			s += term
		} else {
			s -= term
		}
		if term < 1e-16 {
			break
		}
	}
	return min(max(2*s, 0), 1)
}

// Table returns the fit as a Gamma window table; with bounds, the rows
// carry window_start_ms and window_end_ms (the last window ending with the
// trace).
func (f *Fit) Table(bounds bool) *Table {
	t := &Table{Name: "fit", Bounds: bounds}
	for _, w := range f.Windows {
		r := Row{Shape: w.Shape, ScaleMS: w.ScaleMS}
		if bounds {
			r.StartMS, r.EndMS = float64(w.Start)/1e6, float64(w.End)/1e6
		}
		t.Rows = append(t.Rows, r)
	}
	return t
}

// WriteSummary writes a one-page account of the fit: totals, the NB model
// and one line per window (rate, CV, parameters).
func (f *Fit) WriteSummary(w io.Writer, source string) error {
	o := f.Options
	var b strings.Builder
	fmt.Fprintf(&b, "fit of %s\n", source)
	fmt.Fprintf(&b, "requests: %d over %s (mean %.4g req/s)\n", f.Requests, f.Span.Round(time.Millisecond), float64(f.Requests-1)/max(f.Span.Seconds(), 1e-9))
	on := "requests"
	if o.GammaOnBursts && f.NB != nil {
		on = "bursts (generate with the NB file)"
	}
	fmt.Fprintf(&b, "windows: %d of %s; Gamma shape by %s on the gaps between %s inside each window; scale = mean request gap / shape\n",
		len(f.Windows), o.Window, map[FitMethod]string{MethodMoments: "the method of moments", MethodMLE: "maximum likelihood"}[o.Method], on)
	if f.NB != nil {
		fmt.Fprintf(&b, "bursts: %d (a request and those less than %s after it); size mean %.4f, variance %.4f\n", f.Bursts, o.BurstBin, f.NBFile.Mean, f.NBFile.Variance)
		fmt.Fprintf(&b, "NB (zero-truncated MLE): nb_mu %.6g, nb_alpha %.6g, E[K] %.4f, KS %.4f\n", f.NB.Mu, f.NB.Alpha, f.NB.Mean(), f.NBFile.KSStat)
		if f.NBFile.Mean < 1.01 {
			b.WriteString("micro-bursts: negligible (under 1 extra request per 100 bursts): the Gamma file alone describes this trace\n")
		}
	}
	if f.ZeroGaps > 0 {
		fmt.Fprintf(&b, "zero gaps left out of the MLE: %d\n", f.ZeroGaps)
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window\tstart\trequests\treq/s\tCV\tshape\tscale_ms\t  note")
	for _, x := range f.Windows {
		cv := "-"
		if !math.IsNaN(x.CV) {
			cv = fmt.Sprintf("%.3f", x.CV)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%.4g\t%s\t%.4g\t%.5g\t  %s\n", x.Index, clock(x.Start), x.Requests, x.Rate, cv, x.Shape, x.ScaleMS, x.Note)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func clock(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}
