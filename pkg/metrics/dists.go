package metrics

import (
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// cdfGrid are the quantiles at which a CDF is sampled: every percent, and
// the tail more finely.
var cdfGrid = func() []float64 {
	g := make([]float64, 0, 110)
	for i := 0; i <= 99; i++ {
		g = append(g, float64(i)/100)
	}
	return append(g, 0.995, 0.999, 0.9995, 0.9999, 1)
}()

// CDF samples h's distribution: pairs of (value in ms, quantile), value
// non-decreasing. An empty h gives nil.
func CDF(h *Hist) [][2]float64 {
	if h == nil || h.n == 0 {
		return nil
	}
	out := make([][2]float64, 0, len(cdfGrid))
	for _, q := range cdfGrid {
		v := h.Quantile(q)
		if q == 0 {
			v = min(float64(h.h.Min())/1e3, v)
		}
		out = append(out, [2]float64{math.Round(v*1e3) / 1e3, q})
	}
	// Values of 0 (under 1 µs: ITL gaps between chunks that arrived
	// together) get an exact point, (0, their share), so a plot can say
	// how many there were, not just to the nearest percent.
	if z := h.zeros(); z > 0 && z < h.n {
		share := float64(z) / float64(h.n)
		i := 0
		for i < len(out) && out[i][0] <= 0 && out[i][1] < share {
			i++
		}
		if i == len(out) || out[i] != [2]float64{0, share} {
			out = append(out[:i], append([][2]float64{{0, share}}, out[i:]...)...)
		}
	}
	return out
}

// zeros is the number of values of 0 recorded (under 1 µs).
func (h *Hist) zeros() int64 {
	if h.h.Min() > 0 {
		return 0
	}
	for _, b := range h.h.Distribution() {
		if b.From == 0 && b.To == 0 {
			return b.Count
		}
		break
	}
	return 0
}

// CDFs samples c's latency distributions for the summary's KeyCDFs entry,
// leaving out those that are empty.
func (c *Collector) CDFs() map[string][][2]float64 {
	cdfs := map[string][][2]float64{}
	for k, h := range map[string]*Hist{"ttft": c.TTFT, "tpot": c.TPOT, "itl": c.ITL, "e2e": c.E2E, "send_lag": c.Lag} {
		if cdf := CDF(h); cdf != nil {
			cdfs[k] = cdf
		}
	}
	return cdfs
}

// LengthHistograms bins the input and output length distributions for the
// summary's KeyLengths entry, leaving out those that are empty.
func LengthHistograms(in, out *LengthHist) map[string]*LengthBins {
	bins := map[string]*LengthBins{}
	if b := in.Bins(40); b != nil {
		bins["input"] = b
	}
	if b := out.Bins(40); b != nil {
		bins["output"] = b
	}
	return bins
}

// LengthHist is a distribution of token counts (prompt or output lengths),
// exact below 100 and within 1 % above, in constant memory.
type LengthHist struct {
	h *hdrhistogram.Histogram
}

// NewLengthHist returns an empty length distribution (0 to 100 million).
func NewLengthHist() *LengthHist {
	return &LengthHist{h: hdrhistogram.New(0, 100_000_000, 2)}
}

// Record adds one length (negative lengths count as 0).
func (l *LengthHist) Record(n int) {
	_ = l.h.RecordValue(int64(max(n, 0)))
}

// Count is the number of lengths recorded.
func (l *LengthHist) Count() int64 { return l.h.TotalCount() }

// LengthBins is a histogram for plotting: Counts[i] lengths lay in
// [Edges[i], Edges[i+1]).
type LengthBins struct {
	Edges  []float64 `json:"edges"`
	Counts []int64   `json:"counts"`
	Total  int64     `json:"total"`
	Mean   float64   `json:"mean"`
	Max    int64     `json:"max"`
}

// Bins returns at most n bins covering the recorded lengths: linear when
// the range is narrow, logarithmic otherwise. An empty distribution gives
// nil.
func (l *LengthHist) Bins(n int) *LengthBins {
	total := l.h.TotalCount()
	if total == 0 {
		return nil
	}
	lo, hi := float64(l.h.Min()), float64(l.h.Max())+1
	logScale := lo >= 1 && hi/lo > 8
	edges := make([]float64, n+1)
	for i := range edges {
		f := float64(i) / float64(n)
		if logScale {
			edges[i] = lo * math.Pow(hi/lo, f)
		} else {
			edges[i] = lo + (hi-lo)*f
		}
	}
	if !logScale && hi-lo <= float64(n) {
		// Narrow integer range: one bin per value.
		n = int(hi - lo)
		edges = edges[:n+1]
		for i := range edges {
			edges[i] = lo + float64(i)
		}
	}
	counts := make([]int64, n)
	for _, b := range l.h.Distribution() {
		if b.Count == 0 {
			continue
		}
		// A bucket's values are within 1 %: place it by its midpoint.
		v := (float64(b.From) + float64(b.To)) / 2
		i := 0
		for i < n-1 && v >= edges[i+1] {
			i++
		}
		counts[i] += b.Count
	}
	for i := range edges {
		edges[i] = math.Round(edges[i]*100) / 100
	}
	return &LengthBins{Edges: edges, Counts: counts, Total: total, Mean: l.h.Mean(), Max: l.h.Max()}
}
