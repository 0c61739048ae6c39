// Package metrics accumulates per-request results into streaming
// distributions (HdrHistogram) whose memory does not grow with the run.
package metrics

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: 1 µs to 1 day, 3 significant digits (values are exact
// below 2.048 ms and within 0.1 % above).
const (
	histMaxMicros = int64(24 * time.Hour / time.Microsecond)
	histSigFigs   = 3
)

// Hist is a latency distribution: an HdrHistogram in microseconds for
// quantiles, and exact running moments (Welford) for mean and standard
// deviation.
type Hist struct {
	h       *hdrhistogram.Histogram
	n       int64
	mean    float64 // ms
	m2      float64
	max     time.Duration
	clamped int64
}

// NewHist returns an empty distribution.
func NewHist() *Hist {
	return newHistWith(histMaxMicros, histSigFigs)
}

// Record adds one value; negative values count as 0 and values beyond a
// day are clamped (and counted in Clamped).
func (h *Hist) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	us := int64(d / time.Microsecond)
	if us > histMaxMicros {
		us = histMaxMicros
		h.clamped++
	}
	_ = h.h.RecordValue(us)
	h.n++
	x := float64(d) / 1e6
	delta := x - h.mean
	h.mean += delta / float64(h.n)
	h.m2 += delta * (x - h.mean)
	h.max = max(h.max, d)
}

// Count is the number of values recorded.
func (h *Hist) Count() int64 { return h.n }

// Clamped is the number of values beyond the histogram's range.
func (h *Hist) Clamped() int64 { return h.clamped }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) in milliseconds.
func (h *Hist) Quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	// A bucket reports its upper edge, which may lie above the largest value
	// recorded: never report a quantile above the maximum.
	return min(float64(h.h.ValueAtPercentile(q*100))/1e3, float64(h.max)/1e6)
}

// Dist summarises the distribution in milliseconds.
func (h *Hist) Dist() Dist {
	if h.n == 0 {
		return Dist{}
	}
	return Dist{
		Count:  h.n,
		Mean:   h.mean,
		Std:    math.Sqrt(h.m2 / float64(h.n)), // population, as numpy.std
		Median: h.Quantile(0.5),
		P90:    h.Quantile(0.90),
		P95:    h.Quantile(0.95),
		P99:    h.Quantile(0.99),
		P999:   h.Quantile(0.999),
		Max:    float64(h.max) / 1e6,
	}
}

// Merge adds o's values to h. Moments combine exactly (Chan et al.).
func (h *Hist) Merge(o *Hist) {
	if o.n == 0 {
		return
	}
	h.h.Merge(o.h)
	n := h.n + o.n
	delta := o.mean - h.mean
	h.m2 += o.m2 + delta*delta*float64(h.n)*float64(o.n)/float64(n)
	h.mean += delta * float64(o.n) / float64(n)
	h.n = n
	h.max = max(h.max, o.max)
	h.clamped += o.clamped
}

// Histogram exposes the underlying HdrHistogram (values in µs).
func (h *Hist) Histogram() *hdrhistogram.Histogram { return h.h }

// Dist is a distribution's summary, in milliseconds.
type Dist struct {
	Count                                       int64
	Mean, Std, Median, P90, P95, P99, P999, Max float64
}

// Empty reports whether d has no sample (a run whose every request failed
// has no TTFT): its figures are absent, not 0. A Dist read back from a
// summary has no Count; it is empty when every figure is 0 (null).
func (d Dist) Empty() bool { return d == Dist{} }
