// Package gputelemetry polls NVIDIA's DCGM exporter (Prometheus text) during
// a run and says what the GPUs did: utilisation, frame buffer used, power
// and the energy it adds up to, per window and over the run.
package gputelemetry

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fineserve-gen/fineserve-gen/internal/scrape"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// DCGM's field names, as the dcgm-exporter writes them.
const (
	MetricUtil    = "DCGM_FI_DEV_GPU_UTIL"    // percent
	MetricFBUsed  = "DCGM_FI_DEV_FB_USED"     // MiB
	MetricPower   = "DCGM_FI_DEV_POWER_USAGE" // W
	MetricSMClock = "DCGM_FI_DEV_SM_CLOCK"    // MHz
)

// The figures a Reading holds, in this order.
const (
	util = iota
	mem
	power
	clock
	nFigures
)

var figureNames = [nFigures]string{MetricUtil, MetricFBUsed, MetricPower, MetricSMClock}

// maxGPUs bounds the GPUs read from one answer (an exporter's labels are
// not trusted to be few).
const maxGPUs = 1024

// Reading is one GPU's figures in one scrape (NaN: not exported).
type Reading struct {
	// ID is the gpu label (else the UUID), UUID and Model the UUID and
	// modelName labels.
	ID, UUID, Model string
	Values          [nFigures]float64
}

// Parse reads a DCGM exporter's answer: one Reading per GPU, in the order
// of their ids. An answer with none of DCGM's figures is an error.
func Parse(r io.Reader) ([]Reading, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	byID := map[string]*Reading{}
	for fi, name := range figureNames {
		f := fams[name]
		if f == nil {
			continue
		}
		for _, m := range f.Metric {
			v, ok := scrape.Value(m)
			if !ok || math.IsNaN(v) {
				continue
			}
			var id, uuid, mdl string
			for _, l := range m.Label {
				switch l.GetName() {
				case "gpu":
					id = l.GetValue()
				case "UUID":
					uuid = l.GetValue()
				case "modelName":
					mdl = l.GetValue()
				}
			}
			if id == "" {
				id = uuid
			}
			rd := byID[id]
			if rd == nil {
				if len(byID) >= maxGPUs {
					continue
				}
				rd = &Reading{ID: id, UUID: uuid, Model: mdl}
				for i := range rd.Values {
					rd.Values[i] = math.NaN()
				}
				byID[id] = rd
			}
			if math.IsNaN(rd.Values[fi]) {
				rd.Values[fi] = v
			} else {
				rd.Values[fi] += v // several series of one GPU (e.g. MIG instances)
			}
		}
	}
	if len(byID) == 0 {
		return nil, fmt.Errorf("no DCGM figure (%s, %s, %s) in the answer", MetricUtil, MetricFBUsed, MetricPower)
	}
	out := make([]Reading, 0, len(byID))
	for _, rd := range byID {
		out = append(out, *rd)
	}
	sort.Slice(out, func(i, j int) bool { return idLess(out[i].ID, out[j].ID) })
	return out, nil
}

// idLess orders GPU ids numerically when both are numbers.
func idLess(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// step integrates figures held from one scrape to the next (a step
// function): time-weighted means, maxima, and power's integral, energy.
type step struct {
	samples int64
	last    [nFigures]float64
	lastAt  time.Duration
	started bool
	area    [nFigures]float64
	weight  [nFigures]float64
	peak    [nFigures]float64
	seen    [nFigures]bool
}

func (s *step) add(at time.Duration, v [nFigures]float64) {
	s.extend(at)
	s.samples++
	s.hold(v)
	s.last, s.lastAt, s.started = v, at, true
}

// hold counts v in the maxima.
func (s *step) hold(v [nFigures]float64) {
	for i, x := range v {
		if !math.IsNaN(x) {
			if !s.seen[i] || x > s.peak[i] {
				s.peak[i] = x
			}
			s.seen[i] = true
		}
	}
}

func (s *step) extend(at time.Duration) {
	if !s.started {
		return
	}
	dt := (at - s.lastAt).Seconds()
	if dt <= 0 {
		return
	}
	for i, x := range s.last {
		if !math.IsNaN(x) {
			s.area[i] += dt * x
			s.weight[i] += dt
		}
	}
	s.lastAt = at
}

// stats returns the figures since o (the zero step: since the start),
// with peak as the maxima.
func (s *step) stats(o *step, gpus int) *metrics.GPUStats {
	st := &metrics.GPUStats{Samples: s.samples - o.samples, GPUs: gpus}
	mean := func(i int) float64 {
		w := s.weight[i] - o.weight[i]
		if w <= 0 {
			return finite(s.last[i]) // one sample: its value is all that is known
		}
		return (s.area[i] - o.area[i]) / w
	}
	st.Observed = max(s.weight[util]-o.weight[util], s.weight[mem]-o.weight[mem], s.weight[power]-o.weight[power])
	st.UtilMean, st.UtilMax = mean(util), s.peak[util]
	st.MemUsedMean, st.MemUsedMax = mean(mem), s.peak[mem]
	if s.seen[clock] {
		st.SMClockMean = mean(clock)
	}
	if s.seen[power] {
		st.Power = &metrics.GPUPower{MeanW: mean(power), MaxW: s.peak[power], EnergyJ: s.area[power] - o.area[power]}
	}
	return st
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Config configures a Scraper.
type Config struct {
	// URLs are the exporters, e.g. http://node:9400/metrics.
	URLs []string
	// Interval is the time between scrapes (default 2 s).
	Interval time.Duration
	// Epoch is the instant sample times count from (the run's start).
	Epoch time.Time
	// Now reads the clock (default time.Now); the waits are the runtime's
	// timers, so testing/synctest fakes both.
	Now func() time.Time
	// Client does the requests (default: a timeout of the interval,
	// between 1 s and 10 s).
	Client *http.Client
	// Warnf reports the first failure and a recovery (a missing exporter
	// is a warning, never an error of the run).
	Warnf func(format string, a ...any)
}

// device is one GPU's state over the run.
type device struct {
	metrics.GPUDevice
	acc  step
	last [nFigures]float64
}

// Scraper polls the exporters on its own goroutine.
type Scraper struct {
	cfg   Config
	shown []string

	mu      sync.Mutex
	devices map[string]*device // by id
	order   []string
	total   step // the aggregate over the GPUs
	mark    step // total at the start of the current window
	winPeak step // the current window's maxima
	health  scrape.Health
	poller  *scrape.Poller
}

// Start begins polling at once and every Interval after.
func Start(cfg Config) *Scraper {
	scrape.Defaults(&cfg.Interval, &cfg.Client, &cfg.Warnf, &cfg.Now)
	s := &Scraper{cfg: cfg, devices: map[string]*device{}}
	for _, u := range cfg.URLs {
		s.shown = append(s.shown, secret.URL(u))
	}
	s.poller = scrape.Poll(cfg.Interval, cfg.Now, s.scrapeOnce)
	return s
}

// scrapeOnce reads every exporter and folds in what answered; an exporter
// that did not answer keeps its GPUs' last readings in the aggregate.
func (s *Scraper) scrapeOnce(ctx context.Context) {
	type answer struct {
		rd  []Reading
		err error
	}
	answers := make([]answer, len(s.cfg.URLs))
	for i := range s.cfg.URLs {
		answers[i].rd, answers[i].err = s.fetch(ctx, i)
	}
	at := s.cfg.Now().Sub(s.cfg.Epoch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	ok := false
	for i, a := range answers {
		if a.err != nil {
			s.health.Failed(a.err, s.cfg.Warnf, "GPU metrics")
			continue
		}
		ok = true
		for _, rd := range a.rd {
			id := rd.ID
			if len(s.cfg.URLs) > 1 {
				id = strconv.Itoa(i) + "/" + id
			}
			d := s.devices[id]
			if d == nil {
				if len(s.devices) >= maxGPUs {
					continue
				}
				d = &device{GPUDevice: metrics.GPUDevice{ID: id, UUID: rd.UUID, Model: rd.Model}}
				s.devices[id] = d
				s.order = append(s.order, id)
			}
			d.acc.add(at, rd.Values)
			d.last = rd.Values
		}
	}
	if !ok {
		return
	}
	s.health.Answered(s.cfg.Warnf, s.total.samples > 0, "GPU metrics answer again")
	agg := s.aggregate()
	s.total.add(at, agg)
	s.winPeak.hold(agg)
}

// aggregate is the GPUs' last readings together: the mean utilisation and
// SM clock, the sums of memory and power.
func (s *Scraper) aggregate() [nFigures]float64 {
	var sum, n [nFigures]float64
	for _, d := range s.devices {
		for i, v := range d.last {
			if !math.IsNaN(v) {
				sum[i] += v
				n[i]++
			}
		}
	}
	var out [nFigures]float64
	for i := range out {
		switch {
		case n[i] == 0:
			out[i] = math.NaN()
		case i == util || i == clock:
			out[i] = sum[i] / n[i]
		default:
			out[i] = sum[i]
		}
	}
	return out
}

func (s *Scraper) fetch(ctx context.Context, i int) ([]Reading, error) {
	return scrape.Fetch(ctx, s.cfg.Client, s.cfg.URLs[i], s.shown[i], Parse)
}

// Window returns the GPUs' figures since the previous call (or the start),
// cut at offset at, and begins a new window there (nil: no scrape in the
// window). The reading held across the cut counts in both windows' maxima.
func (s *Scraper) Window(at time.Duration) *metrics.GPUStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.extend(at)
	defer func() {
		s.mark = s.total
		s.winPeak = step{}
		if s.total.started {
			s.winPeak.hold(s.total.last)
		}
	}()
	if s.total.samples == s.mark.samples {
		return nil
	}
	w := s.total
	w.peak, w.seen = s.winPeak.peak, s.winPeak.seen
	return w.stats(&s.mark, len(s.devices))
}

// Stop ends polling, takes a last sample so the period covered reaches the
// end of the run, and returns the run's figures.
func (s *Scraper) Stop() metrics.GPUSummary {
	s.poller.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	res := metrics.GPUSummary{URLs: slices.Clone(s.shown), Interval: s.cfg.Interval.Seconds(), Failures: s.health.Failures, Available: s.total.samples > 0, LastError: s.health.LastError()}
	if !res.Available {
		return res
	}
	res.GPUStats = s.total.stats(&step{}, len(s.devices))
	for _, id := range s.order {
		d := s.devices[id]
		d.GPUStats = *d.acc.stats(&step{}, 1)
		res.Devices = append(res.Devices, d.GPUDevice)
	}
	return res
}
