package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
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
}

// Run performs the run o describes and returns its summary. A run that
// sends nothing (--dry-run) returns a nil summary. Per-request failures are
// in the summary, not in the error; the error reports a run that could not
// be carried out (bad options or input: *UsageError).
func Run(ctx context.Context, o Options, stdio IO) (*metrics.Summary, error) {
	log := &logger{w: stdio.Err, quiet: o.Quiet}
	if err := o.Validate(); err != nil {
		return nil, usage(err)
	}
	if err := checkStartAt(&o, time.Now(), "at launch"); err != nil && !o.DryRun {
		return nil, usage(err)
	}
	seed := uint64(o.Seed)
	if o.Seed == -1 {
		seed = uint64(time.Now().UnixNano()) & (1<<53 - 1)
		log.Infof("seed: %d (pass --seed %d to repeat this schedule)", seed, seed)
	}
	wl, err := buildSchedule(&o, seed, log)
	if err != nil {
		return nil, err
	}
	if o.ScheduleOut != "" {
		n, err := writeSchedule(o.ScheduleOut, wl.schedule)
		if err != nil {
			return nil, err
		}
		log.Infof("schedule: %d arrivals written to %s", n, o.ScheduleOut)
	}
	st := arrival.Summarize(wl.schedule)
	log.Infof("schedule: %d requests over %.3f s (mean %.2f req/s), %d input and %d output tokens",
		st.Count, st.Last.Seconds(), st.MeanRate(), st.Input, st.Output)
	if h, n, ok := wl.hash.result(); ok && o.ShardCount > 1 {
		log.Infof("shard %d/%d: %d of the schedule's %d arrivals; schedule %s", o.ShardIndex, o.ShardCount, st.Count, n, h)
	}
	if o.DryRun {
		return nil, nil
	}
	if st.Count == 0 {
		return nil, usage(errors.New("the schedule is empty: nothing to send"))
	}
	return execute(ctx, &o, seed, wl, st, stdio, log)
}

// execute sends the schedule and reports.
func execute(ctx context.Context, o *Options, seed uint64, wl *workload, st arrival.Stats, stdio IO, log *logger) (*metrics.Summary, error) {
	cli, err := client.New(clientConfig(o))
	if err != nil {
		return nil, usage(err)
	}
	defer cli.CloseIdleConnections() // the server sees the run's connections close with it
	if o.Model == "" {
		ids, err := cli.ListModels(ctx)
		if err != nil {
			return nil, fmt.Errorf("no --model given and the server did not list one: %w", err)
		}
		if len(ids) == 0 {
			return nil, errors.New("no --model given and the server lists no model")
		}
		o.Model = ids[0]
		log.Infof("model: %s (first of /v1/models)", o.Model)
		cli.SetModel(o.Model)
	}
	format, err := prompt.ParseFormat(o.PromptFormat)
	if err != nil {
		return nil, usage(err)
	}
	if o.isImages() {
		format = prompt.Text // an image prompt is text
	}
	salt := uint64(o.PromptSalt)
	if salt == 0 {
		salt = runSalt(o, seed)
	}
	prompts := prompt.New(prompt.Options{
		Format: format, Chat: cli.Chat(), Salt: salt, Suffix: o.PromptSuffix, Dataset: wl.dataset,
		Images: o.Replay.imageOptions(),
	})
	if err := warmup(ctx, o, cli, prompts, wl.schedule, log); err != nil {
		return nil, err
	}

	mon, err := newMonitor(o, st, wl, stdio, log)
	if err != nil {
		return nil, err
	}
	defer mon.close()
	var records *report.RecordWriter
	if o.ResultsJSONL != "" {
		if records, err = report.CreateRecords(o.ResultsJSONL); err != nil {
			return nil, fmt.Errorf("results: %w", err)
		}
	}

	start, err := waitForStart(ctx, o, log)
	if err != nil {
		return nil, err
	}
	cli.SetEpoch(start)
	col := metrics.NewCollector()
	watchShard(o, wl, mon, col)
	results := make(chan *client.Result, 4096)
	var done atomic.Int64
	collected := make(chan error, 1)
	go func() { collected <- collect(results, col, records, &done, stdio.Abort, wl.observe) }()

	snd := &sender{client: cli, prompts: prompts, results: results, model: o.Model, images: o.isImages()}
	d := &arrival.Dispatcher{Start: start, MaxConcurrency: o.MaxConcurrency, Sender: snd}

	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	stopDrain := drainOnStop(ctx, o, cancelRequests, log)
	mon.begin(start, col, d.InFlight, d.Dispatched, &done)
	ds := d.Run(ctx, reqCtx, wl.schedule)
	stopDrain()
	close(results)
	werr := <-collected
	elapsed := time.Since(start)
	mon.stop(elapsed)

	sum := &metrics.Summary{
		Backend: o.Backend, Mode: o.Mode, Model: o.Model, Seed: seed, Command: o.Command,
		StartedAt: start.UTC().Format(time.RFC3339Nano),
	}
	if o.Mode == "poisson" {
		sum.RequestRate = metrics.Rate(o.RequestRate)
	}
	if o.MaxConcurrency > 0 {
		mc := o.MaxConcurrency
		sum.MaxConcurrency = &mc
	}
	col.Summarize(sum, elapsed)
	for _, f := range wl.annotate {
		if err := f(sum, elapsed); err != nil {
			log.Warnf("%v", err)
		}
	}
	sum.Scheduled = st.Count
	sum.NotSent = st.Count - ds.Dispatched // dropped at a stop, or never reached
	sum.Queued, sum.MaxInFlight = ds.Queued, ds.MaxInFlight
	sum.ScheduleSpan = st.Last.Seconds()
	sum.Interrupted = ctx.Err() != nil
	if err := writeOutputs(o, sum, stdio, log); err != nil {
		return sum, err
	}
	if err := mon.finish(sum); err != nil {
		return sum, err
	}
	if werr != nil {
		return sum, fmt.Errorf("results %s: %w", o.ResultsJSONL, werr)
	}
	return sum, nil
}

// clientConfig maps o onto the client's configuration.
func clientConfig(o *Options) client.Config {
	return client.Config{
		BaseURL: o.baseURL(), Backend: o.Backend, Endpoint: o.Endpoint, Model: o.Model,
		APIKey: o.APIKey, Stream: o.Stream, IgnoreEOS: o.IgnoreEOS,
		ExtraBody: []byte(o.ExtraRequestBody), MaxConns: o.MaxConcurrency,
		RequestTimeout: o.RequestTimeout, StallTimeout: o.StallTimeout,
		Insecure: o.Insecure, CACert: o.CACert, Host: o.HostHeader, HTTPTransport: o.HTTPTransport,
		Retries:   o.Retries,
		ImageSize: fmt.Sprintf("%dx%d", o.Replay.ImageWidth, o.Replay.ImageHeight),
	}
}

// drainOnStop cancels the requests in flight once ctx is done (the run was
// stopped: no new request is sent) and o.DrainTimeout has passed. The
// returned function stops the watch.
func drainOnStop(ctx context.Context, o *Options, cancel context.CancelFunc, log *logger) func() {
	quit := make(chan struct{})
	var once sync.Once
	go func() {
		select {
		case <-quit:
			return
		case <-ctx.Done():
		}
		if o.DrainTimeout <= 0 {
			log.Warnf("stopping: no new requests; canceling those in flight (--drain-timeout 0)")
			cancel()
			return
		}
		log.Warnf("stopping: no new requests; waiting up to %v for those in flight (--drain-timeout), then canceling them", o.DrainTimeout)
		t := time.NewTimer(o.DrainTimeout)
		defer t.Stop()
		select {
		case <-quit:
		case <-t.C:
			log.Warnf("drain timeout: canceling the requests still in flight")
			cancel()
		}
	}()
	return func() { once.Do(func() { close(quit) }) }
}

// collect consumes results on one goroutine: metrics and the JSONL stream.
// A record reaches the file at most report.FlushInterval after its request
// finished (the ticker flushes even when no result arrives); a request on
// abort writes every record received so far at once.
func collect(results <-chan *client.Result, col *metrics.Collector, records *report.RecordWriter, done *atomic.Int64, abort <-chan chan<- struct{}, observe []func(*client.Result)) error {
	var werr error
	tick := time.NewTicker(report.FlushInterval)
	defer tick.Stop()
	add := func(r *client.Result) {
		col.Add(r)
		for _, f := range observe {
			f(r)
		}
		if records != nil && werr == nil {
			werr = records.Write(r)
		}
		done.Add(1)
		resultPool.Put(r)
	}
	for {
		select {
		case r, ok := <-results:
			if !ok {
				if records != nil {
					if err := records.Close(); werr == nil {
						werr = err
					}
				}
				return werr
			}
			add(r)
		case <-tick.C:
			if records != nil && werr == nil {
				werr = records.Flush()
			}
		case reply := <-abort:
			// Take every result already finished, then write them out.
		queued:
			for {
				select {
				case r, ok := <-results:
					if !ok {
						break queued
					}
					add(r)
				default:
					break queued
				}
			}
			if records != nil && werr == nil {
				werr = records.Flush()
			}
			close(reply)
		}
	}
}

var resultPool = sync.Pool{New: func() any { return &client.Result{TokenTimes: make([]time.Duration, 0, 64)} }}

// sender turns arrivals into requests on the dispatcher's workers.
type sender struct {
	client  *client.Client
	prompts *prompt.Builder
	results chan<- *client.Result
	model   string
	images  bool // openai-images: every request generates images
}

var _ arrival.Sender = (*sender)(nil)

// Send implements arrival.Sender.
func (s *sender) Send(ctx context.Context, a arrival.Arrival) {
	res := resultPool.Get().(*client.Result)
	res.Reset()
	res.Index, res.Scheduled = a.Index, a.At
	res.InputLen, res.OutputLen, res.Images = a.InputTokens, a.OutputTokens, a.Images
	res.Model = a.Model
	if res.Model == "" {
		res.Model = s.model
	}
	if s.images {
		res.Generate = imagesAsked(&a)
		a.Images = 0 // no input images: the prompt is text
	}
	req := client.Request{Model: a.Model, MaxTokens: max(a.OutputTokens, 1), Chat: a.Images > 0, Gen: a.Gen,
		AppendPrompt: func(dst []byte) []byte { return s.prompts.Append(dst, &a) }}
	s.client.Do(ctx, &req, res)
	s.results <- res
}

// warmup sends o.WarmupRequests requests shaped like the first arrival (at
// most 32 output tokens) and fails the run if none succeeds.
func warmup(ctx context.Context, o *Options, cli *client.Client, prompts *prompt.Builder, s arrival.Schedule, log *logger) error {
	if o.WarmupRequests == 0 {
		return nil
	}
	var first arrival.Arrival
	for a := range s {
		first = a
		break
	}
	first.OutputTokens = min(max(first.OutputTokens, 1), 32)
	log.Infof("warm-up: %d request(s)", o.WarmupRequests)
	var wg sync.WaitGroup
	res := make([]client.Result, o.WarmupRequests)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i].Reset()
			a := first
			a.Index = -1 - int64(i)
			a.PrefixBlocks = nil // the warm-up must not put the first request's prefix in the server's cache
			if o.isImages() {
				a.Images = 0
			}
			req := client.Request{Model: a.Model, MaxTokens: a.OutputTokens, Prompt: prompts.Append(nil, &a), Chat: a.Images > 0, Gen: a.Gen}
			cli.Do(ctx, &req, &res[i])
		}()
	}
	wg.Wait()
	for i := range res {
		if res[i].OK() {
			return nil
		}
	}
	what := "the warm-up request failed"
	if len(res) > 1 {
		what = fmt.Sprintf("all %d warm-up requests failed", len(res))
	}
	return fmt.Errorf("warm-up failed: %s; first error (%s): %s (--warmup-requests N sends more, 0 none: a server meant to fail some requests needs one of them)",
		what, res[0].ErrorClass, res[0].Error)
}

// writeOutputs prints the table and writes the summary files.
func writeOutputs(o *Options, sum *metrics.Summary, stdio IO, log *logger) error {
	if err := report.WriteTable(stdio.Out, sum); err != nil {
		return err
	}
	if err := report.WriteBreakdowns(stdio.Out, sum); err != nil {
		return err
	}
	var errs []error
	if o.SummaryJSON != "" {
		b, err := json.MarshalIndent(sum, "", "  ")
		if err == nil {
			err = writeFileAtomic(o.SummaryJSON, append(b, '\n'))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("summary %s: %w", o.SummaryJSON, err))
		}
	}
	if o.OutputFile != "" {
		if err := appendLine(o.OutputFile, sum, stdio.Out); err != nil {
			errs = append(errs, fmt.Errorf("output file %s: %w", o.OutputFile, err))
		}
	}
	return errors.Join(errs...)
}

// writeFileAtomic writes b to path through a temporary file renamed into
// place, so a process killed meanwhile leaves no half-written file (a
// device or pipe is written directly).
func writeFileAtomic(path string, b []byte) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return os.WriteFile(path, b, 0o644) // e.g. /dev/stdout
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// appendLine appends the summary as one JSON line, as FineServe does; to
// stdout when path is "-" (a container's log: docs/SCALE_OUT.md).
func appendLine(path string, sum *metrics.Summary, stdout io.Writer) error {
	b, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	if path == "-" {
		_, err := stdout.Write(append(b, '\n'))
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
