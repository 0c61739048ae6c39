// Package runner executes one prepared run: warm-up, dispatch (the
// schedule kept by pkg/arrival's dispatcher, requests sent through a
// client.Pool), collect (each result's Sample to the sinks) and drain, then
// the outputs. pkg/options prepares what it takes: the workload, the
// clients and a narrow Config.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/exposed"
	"github.com/fineserve-gen/fineserve-gen/internal/gcfloor"
	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/internal/wait"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/monitor"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// IO is where a run writes: the result table (Out) and notes, warnings and
// progress (Err).
type IO struct {
	Out, Err io.Writer
	// Terminal reports whether Err is a terminal (draws a progress bar).
	Terminal bool
	// Abort, when set, delivers requests to put every finished record on
	// disk at once because the process is about to exit (a second signal):
	// the run writes the records it has received to the results file and
	// closes the channel it was given.
	Abort <-chan chan<- struct{}
	// Hurry, when set, is closed to cut the drain of a stopped run short
	// (a second signal): the requests in flight are canceled at once, and
	// the run records them and writes its outputs as after a drain.
	Hurry <-chan struct{}
	// Observe, when set, receives every finished request's sample after
	// the run's own sinks, on the collector's goroutine: it must return
	// at once and not keep the sample (a sweep's step watches its
	// verdict settle).
	Observe metrics.Sink
	// Stop, when set, is closed to end the run early as planned: no new
	// request is sent, those in flight complete, and the summary is not
	// interrupted but says when it ended (EndedEarly).
	Stop <-chan struct{}
}

// Config is what the execution of a run reads: the parts of the command
// line's options it needs, mapped by pkg/options.
type Config struct {
	// Summary is the run's identity, copied into its summary: backend,
	// mode, model, seed, command, the asked rates and concurrency bound,
	// the length mixture and shared prefixes, the schedule hash, the shard
	// and --start-at.
	Summary metrics.Summary
	// Prompts configures the prompt builder: format, salt and suffix (the
	// dataset, images and prefixes come from the workload, chat from the
	// clients).
	Prompts prompt.Options
	// Model is the model of requests whose arrival names none.
	Model string
	// WarmupRequests are sent to every live endpoint before the start.
	WarmupRequests int
	// Prewarm is how many connections are opened before the first send
	// (PrewarmAuto: as many as the run's peak in flight; 0: none;
	// prewarm.go), after the warm-up.
	Prewarm int
	// MaxConcurrency bounds the requests in flight (0: no bound);
	// ConcurrencyRamp grows the bound from 1 over this long.
	MaxConcurrency  int
	ConcurrencyRamp time.Duration
	// MaxSessions bounds the live sessions (0: no bound); ContinueOnError
	// keeps a session going after a failed turn; TokenLimit is the most
	// tokens a session's turn may have.
	MaxSessions     int
	ContinueOnError bool
	TokenLimit      int
	// Turns says what a session's history carries besides the messages
	// and answers: reasoning, tool results, chaining (sessions.go).
	Turns TurnOptions
	// StartAt is when the schedule starts (zero: now, after the warm-up).
	StartAt time.Time
	// DrainTimeout is how long a stopped run waits for the requests in
	// flight before canceling them.
	DrainTimeout time.Duration
	// SLO is the --goodput targets each request is judged by.
	SLO metrics.SLO
	// Steady chooses the steady-state window (--steady-state).
	Steady metrics.SteadyConfig
	// Monitor is how the run is watched.
	Monitor monitor.Config
	// Endpoints are the endpoints' URLs as shown (credentials hidden) when
	// the run has several (nil: one endpoint, no per-endpoint section).
	Endpoints []string
	// Outputs ("": none): the records file, the summary file and the file
	// the summary is appended to as one line ("-": stdout); ResultsCSV the
	// records as a CSV table.
	ResultsJSONL, SummaryJSON, OutputFile string
	ResultsCSV                            string
	// ResultsParquet is the records as a Parquet file; BenchmarkReport
	// the llm-d Benchmark Report written at the end (YAML, or JSON by
	// its extension). "": none.
	ResultsParquet, BenchmarkReport string
	// BenchmarkURLs are the endpoints' URLs as the benchmark report
	// shows them (credentials hidden).
	BenchmarkURLs []string
	// ReportHTML is the HTML report written at the end ("": none).
	ReportHTML string
	// Judge, when set, judges the assembled summary (the --threshold
	// verdicts) before it is written, so that every output carries them.
	Judge func(*metrics.Summary)
	// Quiet prints warnings only.
	Quiet bool
}

// Run executes wl with the clients of pool as cfg says and returns the
// run's summary: warm-up, start, dispatch, collect, drain, outputs.
// Per-request failures are in the summary, not in the error.
func Run(ctx context.Context, cfg Config, wl *workload.Workload, pool *client.Pool, stdio IO) (*metrics.Summary, error) {
	return execute(ctx, &cfg, wl, pool, stdio, NewLogger(stdio.Err, cfg.Quiet))
}

// Logger writes progress notes and warnings to the error stream.
type Logger struct {
	w     io.Writer
	quiet bool
}

// NewLogger returns a Logger that writes to w; quiet drops the notes.
func NewLogger(w io.Writer, quiet bool) *Logger { return &Logger{w: w, quiet: quiet} }

// Infof writes a note. Its values may come from the server or a file (a
// model name, an error message): their control characters are written as
// escapes (termsafe), so they cannot act on the terminal.
func (l *Logger) Infof(format string, a ...any) {
	if !l.quiet {
		fmt.Fprintf(l.w, format+"\n", termsafe.Args(a)...)
	}
}

// Warnf writes a warning, its values made safe as Infof's.
func (l *Logger) Warnf(format string, a ...any) {
	fmt.Fprintf(l.w, "warning: "+format+"\n", termsafe.Args(a)...)
}

var _ workload.Logger = (*Logger)(nil)

// execute sends the schedule and reports.
func execute(ctx context.Context, cfg *Config, wl *workload.Workload, pool *client.Pool, stdio IO, log *Logger) (*metrics.Summary, error) {
	po := cfg.Prompts
	po.Chat, po.Dataset, po.Images, po.Audio, po.Prefix = pool.First().Chat(), wl.Dataset, wl.ImageOptions, wl.Audio, wl.Prefix
	if wl.Agentic != nil {
		po.BlockTokens = wl.Agentic.BlockSize
	}
	prompts := prompt.New(po)
	panics := &requestPanics{log: log}
	probe := &latencyProbe{}
	if err := warmupAll(ctx, cfg.WarmupRequests, pool, wl, prompts, log, panics, probe); err != nil {
		return nil, err
	}
	prewarm(ctx, cfg, pool, wl.Schedule, wl.Stats, probe, log)

	st := wl.Stats
	mon, err := monitor.New(cfg.Monitor)
	if err != nil {
		return nil, err
	}
	defer mon.Close()
	if addr := mon.MetricsAddr(); addr != nil {
		exposed.Warn(stdio.Err, "--metrics-addr "+cfg.Monitor.MetricsAddr, addr)
	}
	var records report.RecordWriters // the results files
	for _, out := range []struct {
		path   string
		create func(string, func() time.Time) (*report.RecordWriter, error)
	}{{cfg.ResultsJSONL, report.CreateRecords}, {cfg.ResultsCSV, report.CreateRecordsCSV}, {cfg.ResultsParquet, report.CreateRecordsParquet}} {
		if out.path == "" {
			continue
		}
		w, err := out.create(out.path, nil)
		if err != nil {
			records.Close()
			return nil, fmt.Errorf("results: %w", err)
		}
		records = append(records, w)
	}

	// Collected now, before the clock starts, and tuned to the heap that
	// is left: the set-up's garbage is not collected while the first
	// requests go out.
	defer gcfloor.Start(gcfloor.DefaultHeadroom)()
	start, err := waitForStart(ctx, cfg.StartAt, log)
	if err != nil {
		return nil, err
	}
	pool.SetEpoch(start)
	// The fan-out: collect derives every finished request's Sample once
	// and hands it to each of these, in this order: the parts (the
	// collector first), the monitor's consumers and the records file.
	parts := metrics.NewParts(metrics.PartsConfig{SLO: cfg.SLO, Breakdowns: wl.Breakdowns, Endpoints: cfg.Endpoints, Sessions: wl.Sessions != nil, Steady: cfg.Steady})
	var sinks []metrics.Sink
	for _, p := range parts {
		sinks = append(sinks, p)
	}
	sinks = append(sinks, mon.Sinks()...)
	if len(records) > 0 {
		sinks = append(sinks, records)
	}
	if stdio.Observe != nil {
		sinks = append(sinks, stdio.Observe)
	}
	results := make(chan *client.Result, 4096)
	var done atomic.Int64
	collected := make(chan error, 1)
	safe.Go(func() {
		collected <- collect(results, cfg.SLO, sinks, records, &done, stdio.Abort, panics)
	})

	snd := &sender{endpoints: pool, plan: wl.Balance, prompts: prompts, results: results, model: cfg.Model, images: wl.Images, panics: panics,
		batch: pool.First().Kind().Has(api.Batch), noImages: !pool.First().Kind().InputImages()}
	d := &arrival.Dispatcher{Start: start, MaxConcurrency: cfg.MaxConcurrency, ConcurrencyRamp: cfg.ConcurrencyRamp, Sender: snd, OnOffer: mon.Offer, Go: safe.Go,
		Unwritten: pool.Unwritten}
	var sessions *sessionSender
	if wl.Sessions != nil {
		// The dispatcher keeps the session starts and bounds the live
		// sessions; the session sender bounds the requests in flight.
		sessions = newSessionSender(snd, wl, cfg, start, ctx)
		sessions.offer = mon.Offer
		d.Sender, d.MaxConcurrency = sessions, cfg.MaxSessions
		if wl.Agentic != nil {
			// A conversation is a session whose steps come from the trace.
			d.Sender = &agenticSender{sessionSender: sessions, plan: wl.Agentic.Plan, cut: wl.Agentic.Cancel}
		}
	}

	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	stopDrain := drainOnStop(ctx, cfg.DrainTimeout, stdio.Hurry, cancelRequests, log)
	inFlight := d.InFlight
	if sessions != nil {
		inFlight = sessions.InFlight
	}
	mon.Begin(start, inFlight, d.Dispatched, d.Behind, &done)
	dispatchCtx, endedEarly, release := stopEarly(ctx, stdio.Stop, start)
	ds := d.Run(dispatchCtx, reqCtx, wl.Schedule)
	release()
	stopDrain()
	close(results)
	werr := <-collected
	elapsed := time.Since(start)
	mon.Stop(elapsed)

	// The summary: the run's own figures (identity, schedule keeping, the
	// monitor's), then every part's.
	facts := cfg.Summary
	facts.StartedAt = start.UTC().Format(time.RFC3339Nano)
	if err := mon.Annotate(&facts, elapsed); err != nil {
		log.Warnf("%v", err)
	}
	facts.Scheduled = st.Count
	facts.NotSent = st.Count - ds.Dispatched // dropped at a stop, or never reached
	facts.Queued, facts.MaxInFlight = ds.Queued, ds.MaxInFlight
	if sessions != nil {
		facts.MaxInFlight = sessions.maxIn.Load() // requests, not sessions
		sessions.finish(parts)
	}
	facts.ScheduleSpan = st.Last.Seconds()
	facts.Interrupted = ctx.Err() != nil
	if at := endedEarly(); at > 0 && !facts.Interrupted && ds.Dispatched < st.Count {
		facts.EndedEarly = at.Seconds()
	}
	var backlog report.Backlog
	if len(records) > 0 {
		if backlog = records.MaxBacklog(); backlog.Records > 0 {
			facts.RecordsBacklog = &metrics.RecordsBacklog{Records: backlog.Records, Bytes: backlog.Bytes}
		}
	}
	windows, stateErr := mon.WindowStates()
	sum, err := metrics.Assemble(metrics.Facts{Summary: facts, Elapsed: elapsed, Parts: parts,
		EndpointServers: mon.EndpointServers(), State: stateErr == nil && !cfg.Monitor.NoStates, Windows: windows})
	if stateErr != nil {
		err = fmt.Errorf("merge state: %w", stateErr)
	}
	if err != nil {
		log.Warnf("%v", err)
	}
	if cfg.Judge != nil {
		cfg.Judge(sum)
	}
	if ds.Waits > 0 || ds.MaxBehind >= time.Second {
		log.Warnf("the client fell behind its schedule: up to %v late handing out an arrival, %d wait(s) for the requests it had handed out to start and be written (%s; the send lag of those requests includes the delay)",
			ds.MaxBehind.Round(time.Millisecond), ds.Waits, behindWhy(sum))
	}
	if backlog.Records > 0 {
		log.Warnf("the results file fell behind the run: up to %d records (%d bytes) waited in memory for the disk (none was lost; the run was not slowed)", backlog.Records, backlog.Bytes)
	}
	// Every output is attempted, and every one that failed is named (a
	// full disk fails them all); then the monitor's closing warnings.
	outErrs := []error{writeOutputs(cfg, sum, mon, stdio), mon.Finish(sum)}
	if werr != nil {
		outErrs = append(outErrs, fmt.Errorf("results: %w", werr))
	}
	if err := errors.Join(outErrs...); err != nil {
		return sum, err
	}
	if cfg.ReportHTML != "" {
		log.Infof("report: %s", cfg.ReportHTML)
	}
	if n := panics.recording.Load(); n > 0 {
		return sum, fmt.Errorf("%d results could not be recorded whole (their records say error_class internal; the summary may count them as they were): %w",
			n, &safe.Panic{Value: "recording a result panicked"})
	}
	return sum, nil
}

// stopEarly returns the context that dispatches: ctx, also done once stop
// is closed (nil: never); ended returns how long after start stop was
// closed (0: it was not); release ends the watch once dispatching is over.
func stopEarly(ctx context.Context, stop <-chan struct{}, start time.Time) (dispatch context.Context, ended func() time.Duration, release func()) {
	if stop == nil {
		return ctx, func() time.Duration { return 0 }, func() {}
	}
	dctx, cancel := context.WithCancel(ctx)
	var at atomic.Int64
	safe.Go(func() {
		select {
		case <-stop:
			at.Store(int64(max(time.Since(start), 1)))
			cancel()
		case <-dctx.Done():
		}
	})
	return dctx, func() time.Duration { return time.Duration(at.Load()) }, cancel
}

// drainOnStop cancels the requests in flight once ctx is done (the run was
// stopped: no new request is sent) and timeout has passed, or hurry
// is closed. The returned function stops the watch and returns once the
// watch has ended (so nothing it logs comes after the run's own output).
func drainOnStop(ctx context.Context, timeout time.Duration, hurry <-chan struct{}, cancel context.CancelFunc, log *Logger) func() {
	quit, ended := make(chan struct{}), make(chan struct{})
	var once sync.Once
	safe.Go(func() {
		defer close(ended)
		select {
		case <-quit:
			return
		case <-ctx.Done():
		}
		if timeout <= 0 {
			log.Warnf("stopping: no new requests; canceling those in flight (--drain-timeout 0)")
			cancel()
			return
		}
		log.Warnf("stopping: no new requests; waiting up to %v for those in flight (--drain-timeout), then canceling them", timeout)
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-quit:
		case <-t.C:
			log.Warnf("drain timeout: canceling the requests still in flight")
			cancel()
		case <-hurry:
			log.Warnf("canceling the requests still in flight")
			cancel()
		}
	})
	return func() {
		once.Do(func() { close(quit) })
		<-ended
	}
}

// collect consumes results on one goroutine: it derives each result's
// Sample once and hands it to the sinks in order (the run's fan-out, which
// includes records, the results files). records (none: no file) only encodes a
// record: its own goroutine writes them, so a slow disk never holds this
// loop, nor the workers behind it, and it writes every record within
// report.FlushInterval by itself; a request on abort waits until every
// record received so far is written. When recording a result panics, the
// sink that panicked and those after it take it as an internal error
// instead (those before it have taken it as it was), and the panic is
// counted in panics.recording.
func collect(results <-chan *client.Result, slo metrics.SLO, sinks []metrics.Sink, records report.RecordWriters, done *atomic.Int64, abort <-chan chan<- struct{}, panics *requestPanics) error {
	var s metrics.Sample // reused: sinks do not keep it
	// record derives r's sample and gives it to the sinks from the from-th
	// on; a panic returns the sink it happened in.
	record := func(r *client.Result, from int) (at int, p *safe.Panic) {
		defer func() {
			if v := recover(); v != nil {
				p = &safe.Panic{Value: v, Stack: debug.Stack()}
			}
		}()
		at = from
		s.From(r, slo)
		for ; at < len(sinks); at++ {
			sinks[at].Add(&s)
		}
		return at, nil
	}
	add := func(r *client.Result) {
		if at, p := record(r, 0); p != nil {
			panics.recording.Add(1)
			panics.record(r, p.Value, p.Stack)
			if _, p := record(r, at); p != nil {
				panic(p) // recording a failure panics too: the process's trap takes it
			}
		}
		done.Add(1)
		resultPool.Put(r)
	}
	// drain takes every result already finished; it reports false once
	// results is closed.
	drain := func() bool {
		for {
			select {
			case r, ok := <-results:
				if !ok {
					return false
				}
				add(r)
			default:
				return true
			}
		}
	}
	end := func() error {
		return records.Close()
	}
	// answer takes every result already finished, writes them out, then
	// answers an abort's request.
	answer := func(reply chan<- struct{}) {
		drain()
		records.Sync()
		close(reply)
	}
	pause := time.NewTimer(time.Hour)
	pause.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				return end()
			}
			add(r)
			if !drain() {
				return end()
			}
			// While results keep coming, take them every collectEvery
			// instead of being woken by each: a worker's send to a
			// collector that is not waiting wakes no thread.
			pause.Reset(collectEvery)
			select {
			case <-pause.C:
			case reply := <-abort:
				pause.Stop()
				answer(reply)
			}
		case reply := <-abort:
			answer(reply)
		}
	}
}

// collectEvery is how often the collector takes the finished results while
// they keep coming (see collect): at most this late in the live figures,
// and one wake-up of the collector per collectEvery instead of one per
// request.
const collectEvery = time.Millisecond

var resultPool = sync.Pool{New: func() any { return &client.Result{TokenTimes: make([]time.Duration, 0, 64)} }}

// sender turns arrivals into requests on the dispatcher's workers.
type sender struct {
	// endpoints are the clients the requests go to; plan (nil: one
	// endpoint) gives a session's later turns theirs.
	endpoints *client.Pool
	plan      *balance.Plan
	prompts   *prompt.Builder
	results   chan<- *client.Result
	model     string
	images    bool // openai-images: every request generates images
	batch     bool // the row batches inputs (api.Batch)
	noImages  bool // the row sends no input images (!api.Kind.InputImages)
	panics    *requestPanics
}

var _ arrival.Sender = (*sender)(nil)

// Send implements arrival.Sender.
func (s *sender) Send(ctx context.Context, a arrival.Arrival) {
	res := resultPool.Get().(*client.Result)
	res.Reset()
	s.do(ctx, a, res)
	s.results <- res
}

// do performs a's request into res; a panic makes it res's failure.
func (s *sender) do(ctx context.Context, a arrival.Arrival, res *client.Result) {
	defer s.panics.recoverInto(res)
	res.Index, res.Scheduled = a.Index, a.At
	res.InputLen, res.OutputLen, res.Images = a.InputTokens, a.OutputTokens, a.Images
	res.Model = a.Model
	if res.Model == "" {
		res.Model = s.model
	}
	switch {
	case s.images:
		res.Generate = imagesAsked(&a)
		a.Images = 0 // no input images: the prompt is text
	case s.noImages:
		res.Images, a.Images = 0, 0 // the row sends none: none counted
	}
	req := client.Request{Model: a.Model, MaxTokens: max(a.OutputTokens, 1), Chat: s.prompts.Multimodal(&a), Gen: a.Gen,
		CancelAfter:  a.CancelAfter,
		AppendPrompt: func(dst []byte) []byte { return appendPrompt(s.prompts, dst, &a) }}
	if s.batch {
		batchInputs(&req, s.prompts, &a)
	}
	cli := s.endpoints.Acquire(a.Endpoint, res)
	defer s.endpoints.Release(res)
	cli.Do(ctx, &req, res)
}

// WarmupAttempts is how many times a warm-up request is sent at most: a
// failed one is sent again after WarmupBackoff, twice as long before each
// further attempt, so that one fault of a server that fails a share of its
// requests does not stop the run.
const WarmupAttempts = 4

// WarmupBackoff is the wait before a failed warm-up request's second
// attempt.
var WarmupBackoff = 100 * time.Millisecond

// warmup sends n requests shaped like the first arrival (at most 32 output
// tokens), each failed one again up to WarmupAttempts times, and fails the
// run only if none succeeds — nothing works; failures a retry overcame are
// a warning. images: the run generates images (the prompt is text).
func warmup(ctx context.Context, n int, images bool, cli *client.Client, prompts *prompt.Builder, first arrival.Arrival, log *Logger, panics *requestPanics, probe *latencyProbe) error {
	if n == 0 {
		return nil
	}
	first.OutputTokens = min(max(first.OutputTokens, 1), 32)
	log.Infof("warm-up: %d request(s)", n)
	var wg sync.WaitGroup
	res := make([]client.Result, n)
	failed := make([]warmupFailure, n) // each request's first failure
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := first
			a.Index = -1 - int64(i)
			a.PrefixBlocks = nil // the warm-up must not put the first request's prefix in the server's cache
			if images {
				a.Images = 0
			}
			backoff := WarmupBackoff
			for attempt := range WarmupAttempts {
				if attempt > 0 && !wait.Sleep(ctx, backoff) {
					return
				}
				backoff *= 2
				res[i].Reset()
				res[i].Index = a.Index // negative: a warm-up's request id is not a record's
				func() {
					defer panics.recoverInto(&res[i])
					req := client.Request{Model: a.Model, MaxTokens: a.OutputTokens, Prompt: appendPrompt(prompts, nil, &a), Chat: prompts.Multimodal(&a), Gen: a.Gen}
					if cli.Kind().Has(api.Batch) {
						batchInputs(&req, prompts, &a)
					}
					cli.Do(ctx, &req, &res[i])
				}()
				if res[i].OK() || res[i].ErrorClass == record.ErrInternal || ctx.Err() != nil {
					return
				}
				if failed[i].n++; failed[i].n == 1 {
					failed[i].class, failed[i].msg = res[i].ErrorClass, res[i].Error
				}
			}
		}()
	}
	wg.Wait()
	probe.add(res)
	ok, tries := 0, 0
	var firstFail *warmupFailure
	for i := range res {
		if res[i].OK() {
			ok++
		}
		tries += failed[i].n
		if failed[i].n > 0 && firstFail == nil {
			firstFail = &failed[i]
		}
	}
	if ok > 0 {
		if firstFail != nil {
			log.Warnf("warm-up: %d of %d request(s) succeeded after %d failed attempt(s) (the first: %s: %s); the run goes on",
				ok, n, tries, firstFail.class, firstFail.msg)
		}
		return nil
	}
	what := fmt.Sprintf("the warm-up request failed %d times", WarmupAttempts)
	if len(res) > 1 {
		what = fmt.Sprintf("all %d warm-up requests failed, each %d times", len(res), WarmupAttempts)
	}
	if res[0].ErrorClass == record.ErrInternal {
		return fmt.Errorf("warm-up failed: %s: %w", what, &safe.Panic{Value: res[0].Error})
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("warm-up failed: %w", err)
	}
	cls, msg := res[0].ErrorClass, res[0].Error
	if firstFail != nil {
		cls, msg = firstFail.class, firstFail.msg
	}
	return fmt.Errorf("warm-up failed: %s; first error (%s): %s (--warmup-requests N sends more, 0 none: a server meant to fail some requests needs one of them)",
		what, cls, termsafe.String(msg))
}

// warmupFailure is how often a warm-up request failed, and its first
// error.
type warmupFailure struct {
	n          int
	class, msg string
}

// writeOutputs prints the table and writes the summary files and the HTML
// report (the outputs table: report.WriteOutputs).
func writeOutputs(cfg *Config, sum *metrics.Summary, mon *monitor.Monitor, stdio IO) error {
	return report.WriteOutputs(stdio.Out, report.SummaryOutputs(sum, report.SummaryPaths{
		SummaryJSON: cfg.SummaryJSON, OutputFile: cfg.OutputFile,
		BenchmarkReport: cfg.BenchmarkReport, Target: report.BenchmarkTarget{URLs: cfg.BenchmarkURLs},
		ReportHTML: cfg.ReportHTML, HTML: func() *report.Data {
			pts, note, scrapes := mon.Series()
			return &report.Data{Summary: sum, Series: pts, SeriesNote: note, Server: scrapes, Source: "live run"}
		},
	})...)
}

// batchInputs makes req a batch of a's prompts (api.Batch):
// the client splits a's input tokens over the batch's parts and asks for
// each part's prompt, a different one per part (an index of its own).
func batchInputs(req *client.Request, prompts *prompt.Builder, a *arrival.Arrival) {
	req.InputTokens = a.InputTokens
	req.AppendInput = func(dst []byte, part, tokens int) []byte {
		p := *a
		p.Index, p.InputTokens, p.Images = a.Index*batchIndexStride+int64(part), tokens, 0
		return appendPrompt(prompts, dst, &p)
	}
}

// batchIndexStride spaces the prompt indices of a batch's parts: more
// than a query and client.MaxBatchSize documents.
const batchIndexStride = 4096

// imagesAsked is the number of images an arrival asks to generate: its
// Generation's, else 1.
func imagesAsked(a *arrival.Arrival) int {
	if a.Gen != nil && a.Gen.Images > 0 {
		return a.Gen.Images
	}
	return 1
}

// behindWhy says why a client fell behind its schedule, from the
// self-check's verdict: short of CPU when it found the client saturated,
// or when it could not measure the client's CPU; else the operating
// system ran it late (the machine was busy).
func behindWhy(sum *metrics.Summary) string {
	switch {
	case sum.Saturation == nil || sum.ClientCPU == nil || *sum.ClientCPU >= metrics.SaturationCPU:
		return "it is short of CPU"
	case sum.Saturation.Saturated:
		// Its own work did not fill its cores, yet it fell behind: the
		// self-check's warning, next, says what the evidence tells.
		return "it is short of CPU: see the next warning"
	}
	return "its own CPU was not the limit: the machine was busy with other processes"
}
