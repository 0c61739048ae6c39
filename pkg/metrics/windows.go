package metrics

import (
	"math"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// WindowStats is one window of a run's time series (the summary's windows:
// [...]): what was offered, what finished and how, what the client and the
// server were doing. Offered counts arrivals by their scheduled time; every
// other figure counts requests by the time they finished, so a window is
// closed for good at its end. Latencies are in milliseconds.
type WindowStats struct {
	Index int     `json:"index"`
	Start float64 `json:"start_s"`
	End   float64 `json:"end_s"`

	Offered     int64   `json:"offered"`
	OfferedRate float64 `json:"offered_rate"`
	Completed   int64   `json:"completed"`
	Failed      int64   `json:"failed"`
	// Cancelled counts the requests the client cut (--cancel-share):
	// neither completed nor failed (absent when none).
	Cancelled    int64   `json:"cancelled,omitempty"`
	AchievedRate float64 `json:"achieved_rate"` // completed requests per second
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	OutputRate   float64 `json:"output_throughput"`
	// InFlightMean and InFlightMax are sampled requests in flight.
	InFlightMean  float64          `json:"in_flight_mean"`
	InFlightMax   int64            `json:"in_flight_max"`
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`

	// Token latencies are absent where no request of the window streamed
	// tokens (image generations, or only failures).
	TTFTP50 float64 `json:"ttft_p50_ms,omitempty"`
	TTFTP99 float64 `json:"ttft_p99_ms,omitempty"`
	ITLP50  float64 `json:"itl_p50_ms,omitempty"`
	ITLP99  float64 `json:"itl_p99_ms,omitempty"`
	TPOTP50 float64 `json:"tpot_p50_ms,omitempty"`
	TPOTP99 float64 `json:"tpot_p99_ms,omitempty"`
	E2EP50  float64 `json:"e2e_p50_ms"`
	E2EP99  float64 `json:"e2e_p99_ms"`
	// Sent counts the requests whose send lag is in the window's figures.
	Sent   int64   `json:"sent"`
	LagP50 float64 `json:"send_lag_p50_ms"`
	LagP90 float64 `json:"send_lag_p90_ms"`
	LagP99 float64 `json:"send_lag_p99_ms"`
	LagMax float64 `json:"send_lag_max_ms"`

	// Goodput is the number of requests that met every --goodput target
	// (absent without --goodput).
	Goodput *int64 `json:"goodput_requests,omitempty"`

	// ClientCPU is the generator's CPU time over the window as a share of
	// GOMAXPROCS cores (-1: not measured on this platform).
	ClientCPU float64 `json:"client_cpu"`
	// Saturated tells the client fell behind in this window; Reasons says
	// how it showed.
	Saturated bool     `json:"client_saturated"`
	Reasons   []string `json:"saturation_reasons,omitempty"`

	// Server is what the target's /metrics reported during the window.
	Server *ServerStats `json:"server,omitempty"`
}

// SaturatedInterval is a live report interval where the client fell behind
// (the same check as a window's, over the interval).
type SaturatedInterval struct {
	Start   float64  `json:"start_s"`
	End     float64  `json:"end_s"`
	Reasons []string `json:"saturation_reasons"`
}

// MaxSaturatedIntervals bounds the intervals a summary lists.
const MaxSaturatedIntervals = 1000

// ServerStats is what a server's own metrics said over a period:
// time-weighted means of its gauges between scrapes, the preemptions
// counted, and the share of the time it had no request running.
type ServerStats struct {
	Samples      int64   `json:"samples"`
	RunningMean  float64 `json:"running_mean"`
	RunningMax   float64 `json:"running_max"`
	WaitingMean  float64 `json:"waiting_mean"`
	WaitingMax   float64 `json:"waiting_max"`
	KVCacheMean  float64 `json:"kv_cache_usage_mean"`
	KVCacheMax   float64 `json:"kv_cache_usage_max"`
	Preemptions  float64 `json:"preemptions"`
	IdleFraction float64 `json:"idle_fraction"`
	// Observed is the time covered by the samples, in seconds.
	Observed float64 `json:"observed_s"`
}

// WindowAcc accumulates the results of one window. Its distributions keep
// two significant digits (quantiles within 1 %), so a window costs a few
// tens of kilobytes whatever its number of requests; Reset makes it ready
// for the next window without allocating. It is used by one goroutine.
type WindowAcc struct {
	TTFT, TPOT, ITL, E2E, Lag *Hist
	Completed, Failed         int64
	Cancelled                 int64
	InputTokens, OutputTokens int64
	Good                      int64
	ErrorsByClass             map[string]int64
}

// NewWindowAcc returns an empty accumulator.
func NewWindowAcc() *WindowAcc {
	nh := func() *Hist { return newHistWith(histMaxMicros, windowSigFigs) }
	return &WindowAcc{TTFT: nh(), TPOT: nh(), ITL: nh(), E2E: nh(), Lag: nh(), ErrorsByClass: map[string]int64{}}
}

// newHistWith returns an empty Hist of the given range and precision.
func newHistWith(maxMicros int64, sigFigs int) *Hist {
	return &Hist{h: hdrhistogram.New(0, maxMicros, sigFigs)}
}

// reset empties h, keeping its storage.
func (h *Hist) reset() {
	h.h.Reset()
	h.n, h.mean, h.m2, h.max, h.clamped = 0, 0, 0, 0, 0
}

// Add records s.
func (a *WindowAcc) Add(s *Sample) {
	if s.HasLag {
		a.Lag.Record(s.Lag)
	}
	if s.Good {
		a.Good++
	}
	if s.Cancelled {
		a.Cancelled++ // neither completed nor failed
		return
	}
	if !s.OK {
		a.Failed++
		a.ErrorsByClass[s.ErrorClass]++
		return
	}
	a.Completed++
	a.InputTokens += int64(s.InputLen)
	a.OutputTokens += int64(s.OutputTokens)
	latencyHists{TTFT: a.TTFT, TPOT: a.TPOT, ITL: a.ITL, E2E: a.E2E}.add(s)
}

// Reset empties a for the next window.
func (a *WindowAcc) Reset() {
	for _, h := range []*Hist{a.TTFT, a.TPOT, a.ITL, a.E2E, a.Lag} {
		h.reset()
	}
	a.Completed, a.Failed, a.Cancelled, a.InputTokens, a.OutputTokens, a.Good = 0, 0, 0, 0, 0, 0
	clear(a.ErrorsByClass)
}

// Fill writes a's figures into w, whose Start and End must be set (rates
// are per second of End − Start). withGoodput sets w.Goodput.
func (a *WindowAcc) Fill(w *WindowStats, withGoodput bool) {
	secs := w.End - w.Start
	per := func(n int64) float64 {
		if secs <= 0 {
			return 0
		}
		return float64(n) / secs
	}
	w.Completed, w.Failed, w.Cancelled = a.Completed, a.Failed, a.Cancelled
	w.AchievedRate = per(a.Completed)
	w.InputTokens, w.OutputTokens = a.InputTokens, a.OutputTokens
	w.OutputRate = per(a.OutputTokens)
	w.OfferedRate = per(w.Offered)
	if len(a.ErrorsByClass) > 0 {
		w.ErrorsByClass = make(map[string]int64, len(a.ErrorsByClass))
		for k, v := range a.ErrorsByClass {
			w.ErrorsByClass[k] = v
		}
	}
	w.TTFTP50, w.TTFTP99 = a.TTFT.Quantile(0.5), a.TTFT.Quantile(0.99)
	w.ITLP50, w.ITLP99 = a.ITL.Quantile(0.5), a.ITL.Quantile(0.99)
	w.TPOTP50, w.TPOTP99 = a.TPOT.Quantile(0.5), a.TPOT.Quantile(0.99)
	w.E2EP50, w.E2EP99 = a.E2E.Quantile(0.5), a.E2E.Quantile(0.99)
	w.Sent = a.Lag.Count()
	w.LagP50, w.LagP90, w.LagP99 = a.Lag.Quantile(0.5), a.Lag.Quantile(0.9), a.Lag.Quantile(0.99)
	w.LagMax = float64(a.Lag.max) / 1e6
	if withGoodput {
		g := a.Good
		w.Goodput = &g
	}
}

// Saturation thresholds of the client self-check.
const (
	// SaturationLag is the send-lag p99 above which a window counts as one
	// where the client fell behind its schedule. The p99 is judged over at
	// least SaturationMinSends sends; a window with fewer (but at least
	// SaturationMinSends/10) is judged by its p90, so a single late send
	// among a handful does not flag it; fewer sends are not judged on lag.
	SaturationLag      = time.Millisecond
	SaturationMinSends = 100
	// SaturationCPU is the share of GOMAXPROCS cores the generator's CPU
	// time must reach over a window to count as saturated.
	SaturationCPU = 0.90
)

// SaturationCheck decides whether the client fell behind in a window.
type SaturationCheck struct {
	// MaxConcurrency is the run's --max-concurrency (0: none). When the
	// requests in flight reached it, send lag is queueing for a slot, not
	// the client falling behind, and is not held against the client.
	MaxConcurrency int
	// AllAtOnce is true when every request is due at the start (request
	// rate inf): lag is then the time to send the burst, by design.
	AllAtOnce bool
	// Cores is GOMAXPROCS.
	Cores int
}

// Check sets w.Saturated and w.Reasons from w's send lag, in-flight and CPU
// figures (w must be filled).
func (c SaturationCheck) Check(w *WindowStats) {
	w.Saturated, w.Reasons = false, nil
	lagLimit := float64(SaturationLag) / 1e6
	q, lag := "", 0.0
	switch {
	case w.Sent >= SaturationMinSends:
		q, lag = "p99", w.LagP99
	case w.Sent >= SaturationMinSends/10:
		q, lag = "p90", w.LagP90
	}
	concurrencyBound := c.MaxConcurrency > 0 && w.InFlightMax >= int64(c.MaxConcurrency)
	if q != "" && lag > lagLimit && !concurrencyBound && !c.AllAtOnce {
		w.Reasons = append(w.Reasons, "send lag "+q+" "+fmtMS(lag)+" ms > "+fmtMS(lagLimit)+" ms")
	}
	if w.ClientCPU >= SaturationCPU {
		w.Reasons = append(w.Reasons, "client CPU "+fmtPct(w.ClientCPU)+" of "+strconv.Itoa(c.Cores)+" cores ≥ "+fmtPct(SaturationCPU))
	}
	w.Saturated = len(w.Reasons) > 0
}

func fmtMS(v float64) string {
	switch {
	case v >= 100:
		return ftoa(v, 0)
	case v >= 10:
		return ftoa(v, 1)
	}
	return ftoa(v, 2)
}

func fmtPct(v float64) string { return ftoa(100*v, 0) + " %" }

func ftoa(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
