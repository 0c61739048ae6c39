// Package otlpexport sends a run to an OpenTelemetry collector over
// OTLP/HTTP: the generator's metrics (the figures of its Prometheus
// endpoint, pkg/promexport) and, when asked, one span per request following
// the GenAI semantic conventions.
//
// Nothing here runs on a sender's goroutine. Add is called on the
// collecting goroutine: it records the metrics and hands the request's
// span data to a bounded queue without waiting (a full queue drops the
// span and counts it); a goroutine of the exporter's own builds the spans
// as OTLP messages, reused from one batch to the next (spans.go), and
// sends them in batches with the SDK's OTLP/HTTP client.
package otlpexport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The span attributes (OpenTelemetry's GenAI and HTTP semantic
// conventions, and the generator's own under fineserve_gen.).
const (
	AttrOperation    = "gen_ai.operation.name"
	AttrRequestModel = "gen_ai.request.model"
	AttrInputTokens  = "gen_ai.usage.input_tokens"
	AttrOutputTokens = "gen_ai.usage.output_tokens"
	// AttrTTFT is the time to first token in seconds (also the
	// EventFirstToken event, at the first token's instant).
	AttrTTFT        = "gen_ai.response.time_to_first_chunk"
	AttrServerAddr  = "server.address"
	AttrServerPort  = "server.port"
	AttrStatusCode  = "http.response.status_code"
	AttrErrorType   = "error.type"
	AttrRequestID   = "http.request.header.x-request-id"
	AttrIndex       = "fineserve_gen.request.index"
	AttrTurn        = "fineserve_gen.session.turn" // a session's turn (1, 2, …; absent outside sessions)
	AttrSendLag     = "fineserve_gen.send_lag_s"
	AttrCancelled   = "fineserve_gen.cancelled"
	EventFirstToken = "gen_ai.first_token"
)

// Namespace prefixes every metric name: the Prometheus endpoint's
// (promexport.Namespace, not imported: the layers stay flat).
const Namespace = "fineserve_gen"

// DefaultQueue is the most spans waiting to be built.
const DefaultQueue = 16384

// exportBatch is the most spans one export sends, and yieldEvery how many
// spans the builder makes before it lets other goroutines run: the
// export's work comes in short bursts, so the dispatcher, woken on time,
// does not wait behind it for a processor. flushEvery is the longest a
// span waits for its batch to fill (the SDK's batch span processor's
// default delay); drainEvery how often the builder takes what has queued.
const (
	exportBatch = 256
	yieldEvery  = 32
	flushEvery  = 5 * time.Second
	drainEvery  = 20 * time.Millisecond
)

// Config configures an Exporter.
type Config struct {
	// Endpoint is the collector's base URL (e.g. http://127.0.0.1:4318):
	// metrics go to Endpoint/v1/metrics, spans to Endpoint/v1/traces.
	Endpoint string
	// Headers are sent with every export.
	Headers map[string]string
	// Traces exports one span per request, Sample the share of requests
	// whose span is exported ([0, 1]; which: a function of the index).
	Traces bool
	Sample float64
	// Interval is the time between metric exports (default 10 s).
	Interval time.Duration
	// Queue bounds the spans waiting to be built (default DefaultQueue).
	Queue int
	// Operation is gen_ai.operation.name (chat, text_completion…);
	// ServerURL the target, for server.address and server.port.
	Operation string
	ServerURL string
	// Scheduled, InFlight and Dispatched are the run's live counters, as
	// the Prometheus endpoint has them (nil: not exported).
	Scheduled  int64
	InFlight   func() int64
	Dispatched func() int64
	// Service is the resource's service.name (default fineserve-gen).
	Service string
}

// spanData is what a span is built of: copied out of a sample on the
// collecting goroutine, so the sample is not kept.
type spanData struct {
	index                  int64
	turn                   int
	model, requestID, err  string
	errClass               string
	sent, firstToken, end  time.Duration
	hasTTFT                bool
	ttft, lag              time.Duration
	inTokens, outTokens    int
	status                 int
	ok, cancelled, hasSent bool
}

// Exporter is a metrics.Sink that exports to a collector.
type Exporter struct {
	cfg    Config
	shown  string
	epoch  atomic.Int64 // the run's start, Unix ns (0: not begun)
	mp     *sdkmetric.MeterProvider
	inst   instruments
	traces otlptrace.Client // nil without Traces
	upload context.Context  // the exports', cancelled when Close gives up
	cancel context.CancelFunc
	// serverAddr and serverPort are the target's (server.address,
	// server.port); names the spans' names by model.
	serverAddr string
	serverPort int64
	names      map[string]string
	queue      chan spanData
	done       chan struct{}
	dropped    atomic.Int64
	queued     atomic.Int64
	sampled    atomic.Int64 // left out by Sample
	errs       atomic.Int64
	lastErr    atomic.Pointer[string]
	satur      atomic.Int64 // client_saturated: 1 or 0
	closeMu    sync.Mutex
	closed     bool
	stats      Stats
	closeErr   error
}

// instruments are the metrics, named as the Prometheus endpoint's but for
// the _total of counters (a collector's Prometheus exporter adds it back).
type instruments struct {
	requests, errs, inTokens, outTokens, good, cancelled metric.Int64Counter
	ttft, tpot, itl, e2e, lag                            metric.Float64Histogram
	completed                                            metric.AddOption
}

// Stats says how the export went.
type Stats struct {
	// Spans counts the spans queued for export, Dropped those the full
	// queue dropped, SampledOut those --otlp-sample left out.
	Spans, Dropped, SampledOut int64
	// Errors counts failed exports; LastError is the last one's message.
	Errors    int64
	LastError string
}

// New prepares an exporter; nothing is sent before the first export.
func New(cfg Config) (*Exporter, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultQueue
	}
	if cfg.Service == "" {
		cfg.Service = "fineserve-gen"
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q: want an http:// or https:// URL", secret.URL(cfg.Endpoint))
	}
	e := &Exporter{cfg: cfg, shown: secret.URL(cfg.Endpoint), done: make(chan struct{})}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.Service))
	ctx := context.Background()
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(join(cfg.Endpoint, "/v1/metrics")), otlpmetrichttp.WithHeaders(cfg.Headers))
	if err != nil {
		return nil, errors.New(secret.URLs(err.Error()))
	}
	e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(cfg.Interval))))
	if err := e.register(); err != nil {
		e.mp.Shutdown(ctx)
		return nil, err
	}
	if cfg.Traces {
		c := otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(join(cfg.Endpoint, "/v1/traces")), otlptracehttp.WithHeaders(cfg.Headers))
		if err := c.Start(ctx); err != nil {
			e.mp.Shutdown(ctx)
			return nil, errors.New(secret.URLs(err.Error()))
		}
		e.traces = c
		e.upload, e.cancel = context.WithCancel(context.Background())
		e.serverAddr, e.serverPort = serverOf(cfg.ServerURL)
		e.names = map[string]string{}
		e.queue = make(chan spanData, cfg.Queue)
	}
	handlers.add(e)
	return e, nil
}

// join appends path to the endpoint's path.
func join(endpoint, path string) string {
	u, _ := url.Parse(endpoint)
	u.Path = trimSlash(u.Path) + path
	return u.String()
}

func trimSlash(p string) string {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

// serverOf is server.address and server.port of the target ("", 0: none;
// a port of 0: not known).
func serverOf(raw string) (string, int64) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", 0
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p, _ := strconv.ParseInt(port, 10, 64)
	return u.Hostname(), p
}

// spanName is the name of a span of model: "{operation} {model}" (kept
// by model, so that building a span does not concatenate them again).
func (e *Exporter) spanName(model string) string {
	if model == "" {
		return e.cfg.Operation
	}
	n, ok := e.names[model]
	if !ok {
		n = e.cfg.Operation + " " + model
		if len(e.names) < 1024 {
			e.names[model] = n
		}
	}
	return n
}

func (e *Exporter) register() error {
	m := e.mp.Meter("github.com/fineserve-gen/fineserve-gen")
	name := func(n string) string { return Namespace + "_" + n }
	var errs []error
	counter := func(n, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name(n), metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	hist := func(n, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name(n), metric.WithUnit("s"), metric.WithDescription(desc))
		errs = append(errs, err)
		return h
	}
	e.inst = instruments{
		requests:  counter("requests", "{request}", "Requests finished, by outcome (completed or failed) and HTTP status code (0: no response)."),
		errs:      counter("request_errors", "{request}", "Failed requests by error class."),
		inTokens:  counter("input_tokens", "{token}", "Prompt tokens of completed requests (target sizes)."),
		outTokens: counter("output_tokens", "{token}", "Output tokens of completed requests."),
		good:      counter("goodput_requests", "{request}", "Requests that met every --goodput target."),
		cancelled: counter("requests_cancelled", "{request}", "Requests the client cut at their planned time."),
		ttft:      hist("ttft_seconds", "Time to first token of completed requests."),
		tpot:      hist("tpot_seconds", "Time per output token of completed requests."),
		itl:       hist("itl_seconds", "Inter-token latency: gaps between successive content chunks."),
		e2e:       hist("e2e_latency_seconds", "End-to-end latency of completed requests."),
		lag:       hist("send_lag_seconds", "Send lag: send time minus scheduled time."),
		completed: metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", "completed"), attribute.String("code", "200"))),
	}
	_, err := m.Int64ObservableGauge(name("requests_scheduled"), metric.WithDescription("Requests in the run's schedule."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(e.cfg.Scheduled); return nil }))
	errs = append(errs, err)
	_, err = m.Int64ObservableGauge(name("client_saturated"),
		metric.WithDescription("1 while the last closed report interval showed the client saturated (its CPU at 90 % of its cores, or a growing backlog of due arrivals)."),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(e.satur.Load()); return nil }))
	errs = append(errs, err)
	if f := e.cfg.InFlight; f != nil {
		_, err := m.Int64ObservableGauge(name("requests_in_flight"), metric.WithDescription("Requests being sent or streamed now."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(f()); return nil }))
		errs = append(errs, err)
	}
	if f := e.cfg.Dispatched; f != nil {
		_, err := m.Int64ObservableCounter(name("requests_dispatched"), metric.WithDescription("Arrivals handed to a sender."),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error { o.Observe(f()); return nil }))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SetSaturated sets the client_saturated gauge (as the Prometheus
// endpoint's: the last closed report interval's self-check).
func (e *Exporter) SetSaturated(v bool) {
	var n int64
	if v {
		n = 1
	}
	e.satur.Store(n)
}

// Begin starts the span builder; offsets of the run's records count from
// epoch.
func (e *Exporter) Begin(epoch time.Time) {
	e.epoch.Store(epoch.UnixNano())
	if e.queue != nil {
		safe.Go(e.build)
	}
}

// Keep reports whether the request of index i has its span exported when
// a share sample of the requests has: a pure function of i (splitmix64's
// finalizer over the index, compared with the share).
func Keep(i int64, sample float64) bool {
	if sample >= 1 {
		return true
	}
	if sample <= 0 {
		return false
	}
	h := uint64(i) + 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	return float64(h>>11)/(1<<53) < sample
}

var bg = context.Background()

// Add records one finished request (on the collecting goroutine): the
// metrics, and its span's data queued without waiting.
func (e *Exporter) Add(s *metrics.Sample) {
	in := &e.inst
	if s.HasLag {
		in.lag.Record(bg, s.Lag.Seconds())
	}
	if s.Good {
		in.good.Add(bg, 1)
	}
	switch {
	case s.Cancelled:
		in.cancelled.Add(bg, 1)
	case !s.OK:
		in.requests.Add(bg, 1, metric.WithAttributes(attribute.String("outcome", "failed"), attribute.String("code", strconv.Itoa(s.Status))))
		in.errs.Add(bg, 1, metric.WithAttributes(attribute.String("class", s.ErrorClass)))
	default:
		if s.Status == 200 {
			in.requests.Add(bg, 1, in.completed)
		} else {
			in.requests.Add(bg, 1, metric.WithAttributes(attribute.String("outcome", "completed"), attribute.String("code", strconv.Itoa(s.Status))))
		}
		in.inTokens.Add(bg, int64(s.InputLen))
		in.outTokens.Add(bg, int64(s.OutputTokens))
		if s.HasTTFT {
			in.ttft.Record(bg, s.TTFT.Seconds())
		}
		if s.HasE2E {
			in.e2e.Record(bg, s.E2E.Seconds())
		}
		if s.HasTPOT {
			in.tpot.Record(bg, s.TPOT.Seconds())
		}
		for i := 1; i < len(s.ITLTimes); i++ {
			in.itl.Record(bg, (s.ITLTimes[i] - s.ITLTimes[i-1]).Seconds())
		}
	}
	if e.queue == nil {
		return
	}
	if !Keep(s.Index, e.cfg.Sample) {
		e.sampled.Add(1)
		return
	}
	d := spanData{
		index: s.Index, turn: s.Turn, model: s.Model, requestID: s.RequestID, errClass: s.ErrorClass, err: s.Error,
		sent: s.Sent, firstToken: s.FirstToken, end: s.End, hasTTFT: s.HasTTFT, ttft: s.TTFT, lag: s.Lag,
		inTokens: s.InputLen, outTokens: s.OutputTokens, status: s.Status, ok: s.OK, cancelled: s.Cancelled, hasSent: s.HasLag,
	}
	if s.PromptTokens > 0 {
		d.inTokens = s.PromptTokens // the server's count
	}
	if !d.hasSent {
		d.sent = s.Scheduled
	}
	select {
	case e.queue <- d:
		e.queued.Add(1)
	default:
		e.dropped.Add(1)
	}
}

var _ metrics.Sink = (*Exporter)(nil)

// build makes the queued spans and sends them, a batch at a time (a full
// batch, or what there is every flushEvery), until the queue is closed.
// It takes what has queued every drainEvery rather than waiting on the
// queue: woken once a span, it would wake a thread for every request,
// and the dispatcher would find the processor taken more often.
func (e *Exporter) build() {
	defer close(e.done)
	epoch := time.Unix(0, e.epoch.Load())
	b := newSpanBatch(e.cfg.Service, exportBatch)
	tick := time.NewTicker(drainEvery)
	defer tick.Stop()
	sent := time.Now()
	n := 0
	for {
		for more := true; more; {
			select {
			case d, ok := <-e.queue:
				if !ok {
					e.send(b)
					return
				}
				if n++; n%yieldEvery == 0 {
					runtime.Gosched()
				}
				b.add(e, epoch, &d)
				if b.full() {
					e.send(b)
					sent = time.Now()
				}
			default:
				more = false
			}
		}
		if b.n > 0 && time.Since(sent) >= flushEvery {
			e.send(b)
			sent = time.Now()
		}
		<-tick.C
	}
}

// send exports the batch's spans (a failed export is counted) and empties
// it.
func (e *Exporter) send(b *spanBatch) {
	if b.n == 0 {
		return
	}
	if err := e.traces.UploadTraces(e.upload, b.request()); err != nil {
		e.noteErr(fmt.Errorf("traces export: %w", err))
	}
	b.reset()
}

// noteErr counts a failed export and keeps its message.
func (e *Exporter) noteErr(err error) {
	msg := secret.URLs(err.Error())
	e.errs.Add(1)
	e.lastErr.Store(&msg)
}

// Close sends what is left (waiting up to timeout) and stops exporting;
// calling it again returns the first call's result.
func (e *Exporter) Close(timeout time.Duration) (Stats, error) {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return e.stats, e.closeErr
	}
	e.closed = true
	defer handlers.remove(e)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var errs []error
	if e.queue != nil {
		close(e.queue)
		if e.epoch.Load() != 0 {
			select {
			case <-e.done:
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("traces: %w", ctx.Err()))
			}
		}
		e.cancel() // an export still going, and those left, give up
		errs = append(errs, e.traces.Stop(ctx))
	}
	errs = append(errs, e.mp.Shutdown(ctx))
	e.stats = Stats{Spans: e.queued.Load(), Dropped: e.dropped.Load(), SampledOut: e.sampled.Load(), Errors: e.errs.Load()}
	if p := e.lastErr.Load(); p != nil {
		e.stats.LastError = *p
	}
	if err := errors.Join(errs...); err != nil {
		e.closeErr = errors.New(secret.URLs(err.Error()))
	}
	return e.stats, e.closeErr
}

// Endpoint is the collector's URL as shown (without credentials).
func (e *Exporter) Endpoint() string { return e.shown }

// handlers passes the SDK's errors (failed metric exports, reported
// through otel's global error handler) to the exporters open.
var handlers = &errorRoute{open: map[*Exporter]bool{}}

type errorRoute struct {
	once sync.Once
	mu   sync.Mutex
	open map[*Exporter]bool
}

func (r *errorRoute) add(e *Exporter) {
	r.once.Do(func() { otel.SetErrorHandler(r) })
	r.mu.Lock()
	r.open[e] = true
	r.mu.Unlock()
}

func (r *errorRoute) remove(e *Exporter) {
	r.mu.Lock()
	delete(r.open, e)
	r.mu.Unlock()
}

// Handle counts err in every open exporter (the SDK does not say whose).
func (r *errorRoute) Handle(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for e := range r.open {
		e.noteErr(err)
	}
}

// statusText is a failed span's status description: the error class and
// the start of the error (URL credentials hidden).
func statusText(class, err string) string {
	err = secret.URLs(err)
	if len(err) > 200 {
		err = err[:200] + "…"
	}
	if err == "" {
		return class
	}
	return class + ": " + err
}

// Operation is gen_ai.operation.name for requests of kind k posted to
// path (--endpoint; "": the kind's): chat (chat completions, Responses,
// Anthropic's Messages), text_completion (completions, SGLang's and
// KServe's generate), embeddings, or the path's last part for others.
func Operation(k *api.Kind, path string) string {
	if path == "" && k != nil {
		path = k.Path
	}
	switch {
	case strings.HasSuffix(path, "/chat/completions"), strings.HasSuffix(path, "/responses"), strings.HasSuffix(path, "/messages"):
		return "chat"
	case strings.HasSuffix(path, "/completions"), strings.HasSuffix(path, "/generate"), strings.HasSuffix(path, "/generate_stream"):
		return "text_completion"
	case strings.HasSuffix(path, "/embeddings"):
		return "embeddings"
	}
	if i := strings.LastIndexByte(path, '/'); i >= 0 && i < len(path)-1 {
		return path[i+1:]
	}
	return k.String()
}
