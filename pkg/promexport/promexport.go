// Package promexport exposes the generator's own figures (requests by
// outcome, errors by class, latency histograms, send lag, requests in
// flight) in the Prometheus format, for dashboards during long runs.
package promexport

import (
	"context"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Namespace prefixes every metric name.
const Namespace = "fineserve_gen"

// Config connects an Exporter to the run's live counters.
type Config struct {
	// InFlight returns the requests in flight now.
	InFlight func() int64
	// Dispatched returns the arrivals handed to a sender so far.
	Dispatched func() int64
	// Scheduled is the number of requests in the schedule.
	Scheduled int64
	// Labels are constant labels added to every metric (e.g. mode, model).
	Labels prometheus.Labels
}

// Exporter holds the metrics on a registry of its own (never the global
// one). Add may be called from one goroutine while the registry is
// scraped from others.
type Exporter struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	errs      *prometheus.CounterVec
	ttft      prometheus.Histogram
	tpot      prometheus.Histogram
	itl       prometheus.Histogram
	e2e       prometheus.Histogram
	lag       prometheus.Histogram
	inTokens  prometheus.Counter
	outTokens prometheus.Counter
	good      prometheus.Counter
	cancelled prometheus.Counter
	saturated prometheus.Gauge
	// Cached children, so Add does not look labels up.
	completed prometheus.Counter
	byClass   map[string]prometheus.Counter
	byCode    map[int][2]prometheus.Counter // [completed, failed]
}

// New returns an Exporter whose registry holds the generator's metrics, the
// Go runtime's and the process's.
func New(cfg Config) *Exporter {
	reg := prometheus.NewRegistry()
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: Namespace, Name: name, Help: help, ConstLabels: cfg.Labels}
	}
	hist := func(name, help string, lo, hi float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: Namespace, Name: name, Help: help, ConstLabels: cfg.Labels,
			Buckets: niceBuckets(lo, hi),
		})
	}
	counterOpts := func(name, help string) prometheus.CounterOpts { return prometheus.CounterOpts(opts(name, help)) }
	e := &Exporter{
		reg: reg,
		requests: prometheus.NewCounterVec(counterOpts("requests_total",
			"Requests finished, by outcome (completed or failed) and HTTP status code (0: no response)."), []string{"outcome", "code"}),
		errs: prometheus.NewCounterVec(counterOpts("request_errors_total",
			"Failed requests by error class (connect, timeout, http_4xx, http_429, http_5xx, reset, protocol, canceled)."), []string{"class"}),
		ttft:      hist("ttft_seconds", "Time to first token of completed requests: send to the first chunk carrying text.", 0.001, 120),
		tpot:      hist("tpot_seconds", "Time per output token of completed requests: (E2E − TTFT)/(output tokens − 1).", 0.0001, 10),
		itl:       hist("itl_seconds", "Inter-token latency: gaps between successive content chunks.", 0.0001, 10),
		e2e:       hist("e2e_latency_seconds", "End-to-end latency of completed requests: send to the last byte.", 0.001, 3600),
		lag:       hist("send_lag_seconds", "Send lag: send time minus scheduled time.", 0.00001, 600),
		inTokens:  prometheus.NewCounter(counterOpts("input_tokens_total", "Prompt tokens of completed requests (target sizes).")),
		outTokens: prometheus.NewCounter(counterOpts("output_tokens_total", "Output tokens of completed requests (server usage, else chunks).")),
		good:      prometheus.NewCounter(counterOpts("goodput_requests_total", "Requests that met every --goodput target.")),
		cancelled: prometheus.NewCounter(counterOpts("requests_cancelled_total",
			"Requests the client cut at their planned time (--cancel-share): neither completed nor failed, so not in requests_total.")),
		saturated: prometheus.NewGauge(prometheus.GaugeOpts(opts("client_saturated",
			"1 while the last closed report interval showed the client saturated (its CPU at 90 % of its cores, or a growing backlog of due arrivals)."))),
		byClass: map[string]prometheus.Counter{},
		byCode:  map[int][2]prometheus.Counter{},
	}
	reg.MustRegister(e.requests, e.errs, e.ttft, e.tpot, e.itl, e.e2e, e.lag, e.inTokens, e.outTokens, e.good, e.cancelled, e.saturated)
	if cfg.InFlight != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("requests_in_flight", "Requests being sent or streamed now.")),
			func() float64 { return float64(cfg.InFlight()) }))
	}
	if cfg.Dispatched != nil {
		reg.MustRegister(prometheus.NewCounterFunc(counterOpts("requests_dispatched_total",
			"Arrivals handed to a sender at their due time (or later, when the client falls behind)."),
			func() float64 { return float64(cfg.Dispatched()) }))
	}
	sched := prometheus.NewGauge(prometheus.GaugeOpts(opts("requests_scheduled", "Requests in the run's schedule.")))
	sched.Set(float64(cfg.Scheduled))
	reg.MustRegister(sched)
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// Every class exists from the start, at 0, so dashboards see them.
	for _, c := range record.ErrorClasses {
		e.byClass[c] = e.errs.WithLabelValues(c)
	}
	e.completed = e.requests.WithLabelValues("completed", "200")
	return e
}

// niceBuckets returns bucket bounds 1, 2.5, 5 × 10^k from lo up to hi.
func niceBuckets(lo, hi float64) []float64 {
	var out []float64
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2.5, 5} {
			v := math.Round(m*d*1e9) / 1e9 // no float noise in the labels
			if v >= lo*0.9999 && v <= hi*1.0001 {
				out = append(out, v)
			}
		}
	}
	return out
}

// Registry returns the exporter's registry.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Add records one finished request (s.Good: it met the run's SLO).
func (e *Exporter) Add(s *metrics.Sample) {
	if s.HasLag {
		e.lag.Observe(s.Lag.Seconds())
	}
	if s.Good {
		e.good.Inc()
	}
	if s.Cancelled { // cut by the client (--cancel-share): neither completed nor an error
		e.cancelled.Inc()
		return
	}
	if !s.OK {
		e.code(s.Status)[1].Inc()
		c, ok := e.byClass[s.ErrorClass]
		if !ok {
			c = e.errs.WithLabelValues(s.ErrorClass)
			e.byClass[s.ErrorClass] = c
		}
		c.Inc()
		return
	}
	if s.Status == 200 {
		e.completed.Inc()
	} else {
		e.code(s.Status)[0].Inc()
	}
	e.inTokens.Add(float64(s.InputLen))
	e.outTokens.Add(float64(s.OutputTokens))
	if s.HasTTFT {
		e.ttft.Observe(s.TTFT.Seconds())
	}
	if s.HasE2E {
		e.e2e.Observe(s.E2E.Seconds())
	}
	if s.HasTPOT {
		e.tpot.Observe(s.TPOT.Seconds())
	}
	for i := 1; i < len(s.ITLTimes); i++ {
		e.itl.Observe((s.ITLTimes[i] - s.ITLTimes[i-1]).Seconds())
	}
}

var _ metrics.Sink = (*Exporter)(nil)

func (e *Exporter) code(status int) [2]prometheus.Counter {
	c, ok := e.byCode[status]
	if !ok {
		s := strconv.Itoa(status)
		c = [2]prometheus.Counter{e.requests.WithLabelValues("completed", s), e.requests.WithLabelValues("failed", s)}
		e.byCode[status] = c
	}
	return c
}

// SetSaturated sets the client_saturated gauge.
func (e *Exporter) SetSaturated(v bool) {
	if v {
		e.saturated.Set(1)
	} else {
		e.saturated.Set(0)
	}
}

// Handler serves the registry in the Prometheus exposition formats.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{Registry: e.reg, ErrorHandling: promhttp.ContinueOnError})
}

// Server serves an Exporter's /metrics.
type Server struct {
	// URL is the address of the metrics page, e.g. http://127.0.0.1:9090/metrics.
	URL string
	// Addr is the address the server is bound to.
	Addr     net.Addr
	srv      *http.Server
	done     chan error
	once     sync.Once
	closeErr error
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves
// /metrics until Close.
func Serve(addr string, e *Exporter) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", e.Handler())
	s := &Server{URL: "http://" + ln.Addr().String() + "/metrics", Addr: ln.Addr(), done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Close stops serving, letting a scrape in progress finish (up to 2 s).
// Calling it again returns the first call's result.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.closeErr = err
	})
	return s.closeErr
}
