// Package servermetrics polls a serving engine's Prometheus endpoint
// (vLLM's /metrics) during a run and says what the server did: requests
// running and waiting, KV-cache usage, preemptions, and how much of the time
// it had nothing running.
package servermetrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fineserve-gen/fineserve-gen/internal/scrape"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// vLLM's metric names. The KV-cache gauge was renamed in vLLM's V1 engine;
// both names are read (the newer one wins when a server sends both).
const (
	MetricRunning        = "vllm:num_requests_running"
	MetricWaiting        = "vllm:num_requests_waiting"
	MetricKVCache        = "vllm:kv_cache_usage_perc"
	MetricKVCacheV0      = "vllm:gpu_cache_usage_perc"
	MetricPreemptions    = "vllm:num_preemptions_total"
	MetricPreemptionsAlt = "vllm:num_preemptions"
	// Speculative decoding's counters (vLLM's SpecDecodingProm, only when
	// the server has a speculative config), read with or without the
	// exposition's _total suffix; the per-position counter has a position
	// label ("0" … "k-1").
	MetricSpecDrafts      = "vllm:spec_decode_num_drafts"
	MetricSpecDraftTokens = "vllm:spec_decode_num_draft_tokens"
	MetricSpecAccepted    = "vllm:spec_decode_num_accepted_tokens"
	MetricSpecPerPos      = "vllm:spec_decode_num_accepted_tokens_per_pos"
)

// maxSpecPositions bounds the per-position counters read (a server's
// labels are not trusted to be small).
const maxSpecPositions = 64

// Sample is one scrape. Gauges a server did not report are NaN. Values of
// several series of a metric (engines, models) are added up, except KV-cache
// usage, which is their mean.
type Sample struct {
	Running, Waiting, KVCache float64
	// Preemptions is the counter's value (NaN if absent).
	Preemptions float64
	// SpecDrafts, SpecDraftTokens and SpecAccepted are the speculative-
	// decoding counters (NaN if absent), SpecPerPos the accepted tokens
	// by position (nil if absent).
	SpecDrafts, SpecDraftTokens, SpecAccepted float64
	SpecPerPos                                []float64
}

// Parse reads a Prometheus text exposition and returns the vLLM figures
// it holds. An exposition with none of them is not an error: every field
// is NaN.
func Parse(r io.Reader) (Sample, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return Sample{}, fmt.Errorf("parsing metrics: %w", err)
	}
	s := Sample{
		Running: sum(fams[MetricRunning]), Waiting: sum(fams[MetricWaiting]),
		KVCache: mean(fams[MetricKVCache]), Preemptions: sum(fams[MetricPreemptions]),
	}
	if math.IsNaN(s.KVCache) {
		s.KVCache = mean(fams[MetricKVCacheV0])
	}
	if math.IsNaN(s.Preemptions) {
		s.Preemptions = sum(fams[MetricPreemptionsAlt])
	}
	counter := func(name string) *dto.MetricFamily {
		if f := fams[name+"_total"]; f != nil {
			return f
		}
		return fams[name]
	}
	s.SpecDrafts, s.SpecDraftTokens, s.SpecAccepted = sum(counter(MetricSpecDrafts)), sum(counter(MetricSpecDraftTokens)), sum(counter(MetricSpecAccepted))
	s.SpecPerPos = perPosition(counter(MetricSpecPerPos))
	return s, nil
}

// perPosition adds the family's values by their position label (nil
// without one; positions past maxSpecPositions are left out).
func perPosition(f *dto.MetricFamily) []float64 {
	if f == nil {
		return nil
	}
	var out []float64
	for _, m := range f.Metric {
		v, ok := scrape.Value(m)
		if !ok || math.IsNaN(v) {
			continue
		}
		for _, l := range m.Label {
			if l.GetName() != "position" {
				continue
			}
			p, err := strconv.Atoi(l.GetValue())
			if err != nil || p < 0 || p >= maxSpecPositions {
				continue
			}
			for len(out) <= p {
				out = append(out, 0)
			}
			out[p] += v
		}
	}
	return out
}

// total adds the family's values, returning how many there were.
func total(f *dto.MetricFamily) (float64, int) {
	if f == nil {
		return 0, 0
	}
	t, n := 0.0, 0
	for _, m := range f.Metric {
		if v, ok := scrape.Value(m); ok && !math.IsNaN(v) {
			t += v
			n++
		}
	}
	return t, n
}

// sum is the family's total over its series (NaN without a value).
func sum(f *dto.MetricFamily) float64 {
	t, n := total(f)
	if n == 0 {
		return math.NaN()
	}
	return t
}

// mean is the family's mean over its series (NaN without a value).
func mean(f *dto.MetricFamily) float64 {
	t, n := total(f)
	if n == 0 {
		return math.NaN()
	}
	return t / float64(n)
}

// totals accumulates samples over time. Each sample's gauges are held from
// its time to the next sample's (a step function), so means are weighted by
// time and the idle fraction is the share of the time covered during which
// the last sample showed no request running.
type totals struct {
	Samples                  int64
	Weight                   float64 // seconds covered by gauges (running known)
	Idle                     float64 // seconds with nothing running
	RunningArea, WaitingArea float64 // request-seconds
	WaitingWeight            float64
	KVArea, KVWeight         float64
	peak                     peaks
	Preemptions              float64
	last                     Sample
	lastAt                   time.Duration
	started                  bool
	lastCounter              float64
	haveCounter              bool
	spec                     specTotals
}

// growth adds up a counter's increases between samples; a value below the
// last one is a restarted server, whose counter began again.
type growth struct {
	Total, last float64
	seen        bool
}

func (g *growth) add(v float64) {
	if math.IsNaN(v) {
		return
	}
	if g.seen {
		if d := v - g.last; d >= 0 {
			g.Total += d
		} else {
			g.Total += v
		}
	}
	g.last, g.seen = v, true
}

// specTotals are the speculative-decoding counters' increases.
type specTotals struct {
	drafts, draftTokens, accepted growth
	perPos                        []growth
}

func (t *specTotals) add(s Sample) {
	t.drafts.add(s.SpecDrafts)
	t.draftTokens.add(s.SpecDraftTokens)
	t.accepted.add(s.SpecAccepted)
	for len(t.perPos) < len(s.SpecPerPos) {
		t.perPos = append(t.perPos, growth{})
	}
	for i, v := range s.SpecPerPos {
		t.perPos[i].add(v)
	}
}

// stats returns the figures of the increases since o (nil: the server
// exports no spec-decode counters).
func (t *specTotals) stats(o *specTotals) *metrics.SpecDecodeStats {
	if !t.drafts.seen || !t.draftTokens.seen || !t.accepted.seen {
		return nil
	}
	var perPos []float64
	for i, g := range t.perPos {
		d := g.Total
		if o != nil && i < len(o.perPos) {
			d -= o.perPos[i].Total
		}
		perPos = append(perPos, d)
	}
	var od, odt, oa float64
	if o != nil {
		od, odt, oa = o.drafts.Total, o.draftTokens.Total, o.accepted.Total
	}
	return metrics.NewSpecDecodeStats(t.drafts.Total-od, t.draftTokens.Total-odt, t.accepted.Total-oa, perPos)
}

// peaks are the largest gauges of the samples seen (0 when none reported
// one).
type peaks struct{ Running, Waiting, KVCache float64 }

func (p *peaks) add(s Sample) {
	if !math.IsNaN(s.Running) {
		p.Running = max(p.Running, s.Running)
	}
	if !math.IsNaN(s.Waiting) {
		p.Waiting = max(p.Waiting, s.Waiting)
	}
	if !math.IsNaN(s.KVCache) {
		p.KVCache = max(p.KVCache, s.KVCache)
	}
}

// add folds in a sample taken at offset at (non-decreasing).
func (t *totals) add(at time.Duration, s Sample) {
	t.extend(at)
	t.Samples++
	t.peak.add(s)
	t.spec.add(s)
	if !math.IsNaN(s.Preemptions) {
		if t.haveCounter {
			if d := s.Preemptions - t.lastCounter; d >= 0 {
				t.Preemptions += d
			} else { // the server restarted: its counter began again
				t.Preemptions += s.Preemptions
			}
		}
		t.lastCounter, t.haveCounter = s.Preemptions, true
	}
	t.last, t.lastAt, t.started = s, at, true
}

// extend counts the last sample's values as held up to offset at (a
// window's cut): the time after it is the next window's.
func (t *totals) extend(at time.Duration) {
	if t.started {
		dt := (at - t.lastAt).Seconds()
		if dt > 0 {
			l := t.last
			if !math.IsNaN(l.Running) {
				t.Weight += dt
				t.RunningArea += dt * l.Running
				if l.Running == 0 {
					t.Idle += dt
				}
			}
			if !math.IsNaN(l.Waiting) {
				t.WaitingWeight += dt
				t.WaitingArea += dt * l.Waiting
			}
			if !math.IsNaN(l.KVCache) {
				t.KVWeight += dt
				t.KVArea += dt * l.KVCache
			}
			t.lastAt = at
		}
	}
}

// Stats returns the figures of the period t covers. Maxima are those of the
// whole period t has seen (see Scraper.Window for per-window maxima).
func (t *totals) Stats() metrics.ServerStats {
	st := metrics.ServerStats{Samples: t.Samples, Observed: t.Weight, Preemptions: t.Preemptions,
		RunningMax: t.peak.Running, WaitingMax: t.peak.Waiting, KVCacheMax: t.peak.KVCache}
	if t.Weight > 0 {
		st.RunningMean = t.RunningArea / t.Weight
		st.IdleFraction = t.Idle / t.Weight
	}
	if t.WaitingWeight > 0 {
		st.WaitingMean = t.WaitingArea / t.WaitingWeight
	}
	if t.KVWeight > 0 {
		st.KVCacheMean = t.KVArea / t.KVWeight
	}
	if t.Weight == 0 && t.Samples > 0 {
		// No time covered yet (one sample): its values are all that is known.
		l := t.last
		st.RunningMean, st.WaitingMean, st.KVCacheMean = finite(l.Running), finite(l.Waiting), finite(l.KVCache)
		if l.Running == 0 {
			st.IdleFraction = 1
		}
	}
	st.IdleWithheld = metrics.IdleWithheldReason(st.Samples)
	st.SpecDecode = t.spec.stats(nil)
	return st
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// sub returns the figures of the period between o (earlier) and t.
func (t *totals) sub(o *totals) metrics.ServerStats {
	d := totals{
		Samples: t.Samples - o.Samples, Weight: t.Weight - o.Weight, Idle: t.Idle - o.Idle,
		RunningArea: t.RunningArea - o.RunningArea, WaitingArea: t.WaitingArea - o.WaitingArea,
		WaitingWeight: t.WaitingWeight - o.WaitingWeight, KVArea: t.KVArea - o.KVArea, KVWeight: t.KVWeight - o.KVWeight,
		Preemptions: t.Preemptions - o.Preemptions, last: t.last,
	}
	st := d.Stats()
	st.SpecDecode = t.spec.stats(&o.spec)
	return st
}

// Config configures a Scraper.
type Config struct {
	// URL is the metrics endpoint, e.g. http://127.0.0.1:8000/metrics.
	URL string
	// Interval is the time between scrapes (default 2 s).
	Interval time.Duration
	// Epoch is the instant sample times are measured from (the run's start).
	Epoch time.Time
	// Now reads the clock sample times and due times are taken from
	// (default time.Now). The waits between scrapes are the runtime's
	// timers: a test fakes both at once with testing/synctest.
	Now func() time.Time
	// Client does the requests (default: a client whose timeout is the
	// interval, between 1 s and 10 s).
	Client *http.Client
	// OnSample, when set, receives every sample with its offset from Epoch
	// (called on the scraper's goroutine).
	OnSample func(at time.Duration, s Sample)
	// Warnf reports the first failure and a recovery after failures (a
	// missing or failing endpoint is a warning, never an error of the run).
	Warnf func(format string, a ...any)
}

// Scraper polls a metrics endpoint on its own goroutine.
type Scraper struct {
	cfg Config
	// shown is the URL as printed and recorded: without credentials.
	shown string

	mu      sync.Mutex
	total   totals
	mark    totals // totals at the start of the current window
	winPeak peaks
	health  scrape.Health
	poller  *scrape.Poller
}

// Start begins polling at once and every Interval after.
func Start(cfg Config) *Scraper {
	scrape.Defaults(&cfg.Interval, &cfg.Client, &cfg.Warnf, &cfg.Now)
	s := &Scraper{cfg: cfg, shown: secret.URL(cfg.URL)}
	s.poller = scrape.Poll(cfg.Interval, cfg.Now, s.scrapeOnce)
	return s
}

// scrapeOnce fetches and folds in one sample.
func (s *Scraper) scrapeOnce(ctx context.Context) {
	sample, err := s.fetch(ctx)
	at := s.cfg.Now().Sub(s.cfg.Epoch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.health.Failed(err, s.cfg.Warnf, "server metrics")
		return
	}
	s.health.Answered(s.cfg.Warnf, s.total.Samples > 0, "server metrics: "+s.shown+" answers again")
	s.total.add(at, sample)
	s.winPeak.add(sample)
	if s.cfg.OnSample != nil {
		s.cfg.OnSample(at, sample)
	}
}

func (s *Scraper) fetch(ctx context.Context) (Sample, error) {
	smp, err := scrape.Fetch(ctx, s.cfg.Client, s.cfg.URL, s.shown, Parse)
	if err != nil {
		return Sample{}, err
	}
	if math.IsNaN(smp.Running) && math.IsNaN(smp.Waiting) && math.IsNaN(smp.KVCache) {
		return Sample{}, fmt.Errorf("GET %s: no vLLM metric (%s, %s, %s) in the answer", s.shown, MetricRunning, MetricWaiting, MetricKVCache)
	}
	return smp, nil
}

// Window returns the figures since the previous call (or the start),
// cut at offset at, and begins a new window there. The value a sample
// holds until the next is split at the cut: a window covers no more than
// its own time, and the value held into it from the window before counts
// in its maxima as in its means. It returns nil when no sample was taken
// in the window.
func (s *Scraper) Window(at time.Duration) *metrics.ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.extend(at)
	defer func() {
		s.mark = s.total
		s.mark.spec.perPos = slices.Clone(s.total.spec.perPos) // not shared: add changes it in place
		s.winPeak = peaks{}
		if s.total.started {
			s.winPeak.add(s.total.last) // held into the next window
		}
	}()
	if s.total.Samples == s.mark.Samples {
		return nil
	}
	st := s.total.sub(&s.mark)
	st.RunningMax, st.WaitingMax, st.KVCacheMax = s.winPeak.Running, s.winPeak.Waiting, s.winPeak.KVCache
	return &st
}

// Result is the whole run's server figures for the summary (its
// server_metrics section).
type Result = metrics.ServerSummary

// Stop ends polling, takes a last sample so the period covered reaches the
// end of the run, and returns the run's figures.
func (s *Scraper) Stop() Result {
	s.poller.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	res := Result{URL: s.shown, Interval: s.cfg.Interval.Seconds(), Failures: s.health.Failures, Available: s.total.Samples > 0, LastError: s.health.LastError()}
	if res.Available {
		st := s.total.Stats()
		res.ServerStats = &st
	}
	return res
}
