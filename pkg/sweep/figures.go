package sweep

import (
	"fmt"
	"math"
	"slices"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Figures are what the sweep reads of one step's summary: its load, its
// throughput, its latencies, its goodput, the client's self-check and the
// server's own metrics. stepFigures is the only place that knows where they
// live in a metrics.Summary.
type Figures struct {
	// Offered is the schedule's request rate (scheduled requests over the
	// schedule's span), Achieved the rate the server completed them at
	// (see stepFigures), both in req/s.
	Offered  float64 `json:"offered_rate"`
	Achieved float64 `json:"achieved_rate"`

	Scheduled int64 `json:"scheduled"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Cancelled counts the requests the client cut (--cancel-share): they
	// were never meant to complete (see keptShare).
	Cancelled int64   `json:"cancelled,omitempty"`
	NotSent   int64   `json:"not_sent"`
	ErrorRate float64 `json:"error_rate"`
	// Interrupted is true when the step was stopped before its end.
	Interrupted bool `json:"interrupted"`

	// GoodputShare is the share of requests that met every SLO target
	// (nil without --goodput).
	GoodputShare *float64 `json:"goodput_share,omitempty"`

	// Latencies in ms. TTFT and TPOT are 0 for runs without tokens.
	TTFT Quantiles `json:"ttft_ms"`
	TPOT Quantiles `json:"tpot_ms"`
	E2E  Quantiles `json:"e2e_ms"`
	// E2EMin is the shortest end-to-end latency of the step.
	E2EMin float64 `json:"e2e_min_ms"`
	// NoTokens is true for image generations (no TTFT or TPOT).
	NoTokens bool `json:"no_tokens,omitempty"`

	// LagP90 and LagP99 are the client's send lag percentiles (ms);
	// ClientSaturated is the run's client self-check verdict and
	// ClientReason its one-line reason.
	LagP90          float64 `json:"send_lag_p90_ms"`
	LagP99          float64 `json:"send_lag_p99_ms"`
	ClientSaturated bool    `json:"client_saturated"`
	ClientReason    string  `json:"client_saturation_reason,omitempty"`
	// ConcurrencyBound is true when the requests in flight reached the
	// run's --max-concurrency: send lag is then queueing for a slot.
	ConcurrencyBound bool `json:"concurrency_bound,omitempty"`
	// ClientCPUMax is the client's highest CPU share of its cores over the
	// step's windows (-1: not measured).
	ClientCPUMax float64 `json:"client_cpu_max"`

	// Server is the server's own metrics over the step (nil when they
	// were not scraped or no scrape succeeded). With several endpoints it
	// is the busiest one's (busiestEndpoint), which ServerEndpoint names
	// ("#N URL", numbered from 1 as the table does).
	Server         *metrics.ServerStats `json:"server,omitempty"`
	ServerEndpoint string               `json:"server_endpoint,omitempty"`

	// Growth is the slope of the wait over the step with its interval
	// (steps that end when settled: watch.go); the growth check uses it
	// instead of Windows when set.
	Growth *Slope `json:"growth,omitempty"`
	// Windows are the step's windows, for the latency-growth check.
	Windows []Window `json:"windows,omitempty"`
}

// keptShare is the share of the step's finished requests the client did
// not cut (1 without --cancel-share): the share of the offered rate the
// server was asked to complete.
func (f *Figures) keptShare() float64 {
	n := f.Completed + f.Failed + f.Cancelled
	if f.Cancelled <= 0 || n <= 0 {
		return 1
	}
	return float64(n-f.Cancelled) / float64(n)
}

// Quantiles are a distribution's median and 99th percentile.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Window is what the growth check reads of one of a step's windows.
type Window struct {
	Start     float64 `json:"start_s"`
	End       float64 `json:"end_s"`
	Completed int64   `json:"completed"`
	// Wait is the median time to first token counted from the scheduled
	// time (send lag p50 + TTFT p50; E2E p50 for image generations), ms.
	Wait float64 `json:"wait_p50_ms"`
}

// stepFigures reads a step's figures from its summary. Achieved is the
// completed requests over the step's duration less its shortest latency:
// no request can finish sooner than that after the start, so a step whose
// server keeps up reports its offered rate, and an overloaded one the rate
// at which the busy server completed requests.
func stepFigures(s *metrics.Summary) (Figures, error) {
	f := Figures{
		Scheduled: s.Scheduled, Completed: s.Completed, Failed: s.Failed, Cancelled: s.Cancelled, NotSent: s.NotSent,
		ErrorRate: s.ErrorRate, Interrupted: s.Interrupted, NoTokens: s.NoTokenMetrics(),
		TTFT: Quantiles{s.TTFT.Median, s.TTFT.P99}, TPOT: Quantiles{s.TPOT.Median, s.TPOT.P99},
		E2E: Quantiles{s.E2E.Median, s.E2E.P99}, LagP90: s.SendLag.P90, LagP99: s.SendLag.P99,
	}
	f.ConcurrencyBound = s.MaxConcurrency != nil && s.MaxInFlight >= int64(*s.MaxConcurrency)
	if s.ScheduleSpan > 0 {
		f.Offered = float64(s.Scheduled) / s.ScheduleSpan
	}
	if s.EndedEarly > 0 {
		// Ended once settled: the schedule was sent up to then.
		f.Offered = float64(s.Scheduled-s.NotSent) / s.EndedEarly
	}
	if e2e := s.LatencyCDFs["e2e"]; len(e2e) > 0 {
		f.E2EMin = e2e[0][0]
	}
	if busy := s.Duration - f.E2EMin/1e3; busy > 0 {
		f.Achieved = float64(s.Completed) / busy
	}
	if s.Goodput != nil {
		share := s.Goodput.Share
		f.GoodputShare = &share
	}
	if c := s.Saturation; c != nil {
		f.ClientSaturated, f.ClientReason = c.Saturated, c.Reason
	}
	if srv := s.ServerMetrics; srv != nil && srv.Available && srv.ServerStats != nil {
		f.Server = srv.ServerStats
	}
	if i := busiestEndpoint(s.Endpoints); i >= 0 {
		e := &s.Endpoints[i]
		f.Server, f.ServerEndpoint = e.ServerMetrics.ServerStats, fmt.Sprintf("#%d %s", e.Index+1, e.URL)
	}
	f.ClientCPUMax = -1
	for _, w := range s.Windows {
		f.ClientCPUMax = math.Max(f.ClientCPUMax, w.ClientCPU)
		wait := w.LagP50 + w.TTFTP50
		if f.NoTokens {
			wait = w.LagP50 + w.E2EP50
		}
		f.Windows = append(f.Windows, Window{Start: w.Start, End: w.End, Completed: w.Completed, Wait: wait})
	}
	for _, v := range []*float64{&f.Offered, &f.Achieved} {
		if math.IsNaN(*v) || math.IsInf(*v, 0) {
			*v = 0
		}
	}
	return f, nil
}

// busiestEndpoint returns the index in eps of the endpoint whose server was
// under the most pressure over the step, among those whose metrics were
// read: memory first (KV cache full or preemptions), then the longest
// queue, the fullest KV cache and the most requests running. -1: fewer than
// two endpoints, or none read.
func busiestEndpoint(eps []metrics.EndpointSummary) int {
	if len(eps) < 2 {
		return -1
	}
	key := func(sv *metrics.ServerStats) [4]float64 {
		memory := 0.0
		if sv.KVCacheMax >= KVFull || sv.Preemptions > 0 {
			memory = 1
		}
		return [4]float64{memory, sv.WaitingMax, sv.KVCacheMax, sv.RunningMean}
	}
	best := -1
	var bestKey [4]float64
	for i := range eps {
		m := eps[i].ServerMetrics
		if m == nil || !m.Available || m.ServerStats == nil {
			continue
		}
		k := key(m.ServerStats)
		if best < 0 || slices.Compare(k[:], bestKey[:]) > 0 {
			best, bestKey = i, k
		}
	}
	return best
}
