package metrics

import (
	"fmt"
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
	// GOMAXPROCS cores (-1: not measured — on this platform, or over a
	// run's last, partial window shorter than a quarter second).
	ClientCPU float64 `json:"client_cpu"`
	// Saturated tells the client was the bottleneck in this window (its
	// CPU, or a backlog of due arrivals that grew: see SaturationCheck);
	// Reasons says how it showed.
	Saturated bool     `json:"client_saturated"`
	Reasons   []string `json:"saturation_reasons,omitempty"`
	// Behind is the client's backlog at the window's end — or, when the
	// schedule ran out within the window, at the last moment arrivals were
	// still due — in ms: how late the oldest arrival due and not yet handed
	// to a sender was, the least over the last second (BacklogSpan) up to
	// then, so that a moment's stall does not count (see Backlog). Absent
	// when the client kept up (or it was not measured).
	Behind float64 `json:"client_behind_ms,omitempty"`
	// MachineBusy tells the window's send lag was over SaturationLag while
	// the client was not saturated: the machine's other processes delayed
	// it (see SaturationCheck).
	MachineBusy bool `json:"machine_busy,omitempty"`

	// Server is what the target's /metrics reported during the window.
	Server *ServerStats `json:"server,omitempty"`
	// GPU is what the GPU telemetry reported during the window
	// (--gpu-metrics-url).
	GPU *GPUStats `json:"gpu,omitempty"`
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
	// IdleWithheld says why the table and the report do not show
	// IdleFraction: it rests on fewer than MinIdleScrapes scrapes ("":
	// shown). IdleFraction keeps its value for the readers of the JSON.
	IdleWithheld string `json:"idle_fraction_withheld,omitempty"`
	// SpecDecode holds the speculative-decoding figures (absent when the
	// server exports no spec-decode counters).
	SpecDecode *SpecDecodeStats `json:"spec_decode,omitempty"`
}

// MinIdleScrapes is the fewest scrapes an idle fraction is shown from. The
// fraction is the time-weighted share of scrapes that saw no request
// running: n point samples of the running gauge. Even were they
// independent, its 95 % margin is ±1.96·√(p(1−p)/n): ±18 points at n = 30
// and p = ½, ±31 at n = 10; consecutive scrapes of a busy server are not
// independent, so the true margin is wider. Below 30 scrapes (a minute at
// the default 2 s interval) the figure says too little to print.
const MinIdleScrapes = 30

// IdleWithheldReason is the reason an idle fraction from n scrapes is not
// shown, "" when it is.
func IdleWithheldReason(n int64) string {
	if n >= MinIdleScrapes {
		return ""
	}
	return fmt.Sprintf("%d scrape(s), fewer than the %d an idle share needs", n, MinIdleScrapes)
}

// IdleShown reports whether the idle fraction is shown: it rests on at
// least MinIdleScrapes scrapes (judged from Samples, so a summary written
// before IdleWithheld existed is judged alike).
func (s *ServerStats) IdleShown() bool { return s.Samples >= MinIdleScrapes }

// IdleText is the idle fraction as the table and the report print it, with
// the scrapes it rests on ("12.3% (45 scrapes)"), or why it is withheld.
func (s *ServerStats) IdleText() string {
	if !s.IdleShown() {
		return "not shown: " + IdleWithheldReason(s.Samples)
	}
	return fmt.Sprintf("%.1f%% (%d scrapes)", 100*s.IdleFraction, s.Samples)
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

// Thresholds of the client self-check.
const (
	// SaturationCPU is the share of GOMAXPROCS cores the generator's CPU
	// time must reach over a window for the client to count as saturated:
	// every core it may use busy with its own work.
	SaturationCPU = 0.90
	// SaturationBehind is the backlog (WindowStats.Behind) a window must
	// end with, and grow to from the previous window's, for the client to
	// count as saturated: arrivals due this long ago are still not sent,
	// for a whole BacklogSpan, and more so than a window earlier.
	SaturationBehind = 100 * time.Millisecond
	// BacklogSpan is how long a backlog must last to be one: a window's
	// Behind is the least backlog seen over its last BacklogSpan.
	BacklogSpan = time.Second
	// SaturationLag is the send lag above which a window's lag is noted:
	// as the machine being busy when the client is not saturated. The p99
	// is judged over at least SaturationMinSends sends; a window with fewer
	// (but at least SaturationMinSends/10) is judged by its p90, so a
	// single late send among a handful does not count; fewer sends are not
	// judged on lag.
	SaturationLag      = time.Millisecond
	SaturationMinSends = 100
	// MachineBusyShare is how large the send lag must also be against the
	// window's latencies for it to be noted: a share of its TTFT p99 (its
	// E2E p99 without tokens). Below it, the lag moves the latencies
	// measured from the schedule by less than that share: milliseconds
	// beside hundreds of milliseconds are not worth a note.
	MachineBusyShare = 0.10
)

// SaturationCheck is the client's self-check of a window: whether the
// client itself was the bottleneck (saturated), or its send lag came from
// a machine kept busy by other processes.
//
// The client is saturated when its CPU over the window reached
// SaturationCPU of its cores, or when it ended the window behind its
// schedule by at least SaturationBehind (for all of the window's last
// BacklogSpan) and further behind than it ended the previous window: a
// backlog of due arrivals that grows. Send lag alone does not make it
// saturated: a client with CPU to spare and no backlog whose requests
// still leave late (p99, or p90 on few sends, over SaturationLag, and
// over MachineBusyShare of the window's TTFT p99) was woken late by the
// operating system — the machine is busy — and the window is marked
// MachineBusy. Latencies measured from the scheduled
// time include that lag; the server's own figures (TTFT, ITL, E2E from
// the send) do not.
type SaturationCheck struct {
	// MaxConcurrency is the run's --max-concurrency (0: none). When the
	// requests in flight reached it, send lag is queueing for a slot, not
	// the machine or the client, and is not noted.
	MaxConcurrency int
	// AllAtOnce is true when every request is due at the start (request
	// rate inf): lag and backlog are then the time to send the burst, by
	// design.
	AllAtOnce bool
	// Cores is GOMAXPROCS.
	Cores int
}

// Check sets w.Saturated, w.Reasons and w.MachineBusy from w's CPU,
// backlog, send lag and in-flight figures (w must be filled). prevBehind is
// the backlog the previous window (or live interval) ended with, in ms (0
// for the first).
func (c SaturationCheck) Check(w *WindowStats, prevBehind float64) {
	w.Saturated, w.Reasons, w.MachineBusy = false, nil, false
	if w.ClientCPU >= SaturationCPU {
		w.Reasons = append(w.Reasons, "client CPU "+fmtPct(w.ClientCPU)+" of "+strconv.Itoa(c.Cores)+" cores ≥ "+fmtPct(SaturationCPU))
	}
	behindLimit := float64(SaturationBehind) / 1e6
	if !c.AllAtOnce && w.Behind >= behindLimit && w.Behind > prevBehind {
		w.Reasons = append(w.Reasons, "a growing backlog: "+fmtMS(w.Behind)+" ms behind the schedule (was "+fmtMS(prevBehind)+" ms)")
	}
	w.Saturated = len(w.Reasons) > 0
	if w.Saturated || c.AllAtOnce || (c.MaxConcurrency > 0 && w.InFlightMax >= int64(c.MaxConcurrency)) {
		return
	}
	if _, lag := LagJudged(w); lag > float64(SaturationLag)/1e6 && lag > MachineBusyShare*LagScale(w) {
		w.MachineBusy = true
	}
}

// LagScale is the latency a window's send lag is weighed against, in ms:
// its TTFT p99, or its E2E p99 when it has no token latency (0 when
// nothing completed in it).
func LagScale(w *WindowStats) float64 {
	if w.TTFTP99 > 0 {
		return w.TTFTP99
	}
	return w.E2EP99
}

// BacklogLook is one look at how far behind its schedule the client was
// (the arrival due and not yet handed to a sender, how late), at an offset
// of the run, taken while arrivals were still due.
type BacklogLook struct {
	At, Behind time.Duration
}

// Backlog returns the backlog a period starting at start is judged by, in
// ms, from the looks taken while arrivals were still due (in time order):
// the least of those over the BacklogSpan up to the last of them — so that
// a moment's stall does not count — when that last look falls in the
// period, else 0. While the schedule runs, the last look is the period's
// end; when the schedule ran out earlier in the period, it is the last
// moment arrivals were still due: a backlog the client worked off only
// because no arrival was left to fall behind on still counts.
func Backlog(looks []BacklogLook, start time.Duration) float64 {
	if len(looks) == 0 || looks[len(looks)-1].At < start {
		return 0
	}
	last := looks[len(looks)-1]
	least := last.Behind
	for _, l := range looks {
		if l.At >= last.At-BacklogSpan {
			least = min(least, l.Behind)
		}
	}
	return float64(least) / 1e6
}

// LagJudged returns the send-lag quantile the self-check judges a window
// by and its value in ms: the p99 over SaturationMinSends sends or more,
// the p90 over a tenth of that, else none ("", 0).
func LagJudged(w *WindowStats) (string, float64) {
	switch {
	case w.Sent >= SaturationMinSends:
		return "p99", w.LagP99
	case w.Sent >= SaturationMinSends/10:
		return "p90", w.LagP90
	}
	return "", 0
}

// MachineBusyNote says once, in one line, that a busy machine delayed the
// client's sends in the windows marked MachineBusy among ws, by how much,
// and what that does to the figures ("" when none was).
func MachineBusyNote(ws []WindowStats) string {
	n, worst, q, cpu := 0, 0.0, "", -1.0
	for i := range ws {
		w := &ws[i]
		if !w.MachineBusy {
			continue
		}
		n++
		if wq, lag := LagJudged(w); lag > worst {
			worst, q = lag, wq
		}
		cpu = max(cpu, w.ClientCPU)
	}
	if n == 0 {
		return ""
	}
	kept := "no backlog"
	if cpu >= 0 {
		kept = "CPU at most " + fmtPct(cpu) + " of its cores, " + kept
	}
	return "send lag " + q + " up to " + fmtMS(worst) + " ms in " + strconv.Itoa(n) + " of " + strconv.Itoa(len(ws)) +
		" windows while the client kept up (" + kept + "): the machine is busy with other processes, which delay the client's sends. " +
		"Latencies measured from the schedule (ttft_from_scheduled, e2e_from_scheduled) include this lag; the server's own figures (TTFT, ITL, TPOT, E2E from the send) do not"
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
