// Package launch carries out a run from its settings (pkg/options): it
// checks the outputs and the target, loads the tokenizer, makes the client
// pool, builds the workload and hands them to pkg/runner with the
// monitor's and the outputs' configuration. It is the one place where the
// settings meet the parts that run; the command calls Run (or Schedule).
package launch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/note"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/experiment"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/monitor"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// job is a run's settings with what only the run itself finds out: the
// loaded tokenizer, the server's /tokenize and its model's context length.
type job struct {
	options.Options
	// tok is --tokenizer, loaded; countVia counts with the server's
	// /tokenize (--tokenize-via-server).
	tok      *tokenizer.Tokenizer
	countVia func(string) (int, error)
	// serverLimit is the served model's max_model_len (serverLimitFrom
	// names it), found before the schedule is built (setServerLimit).
	serverLimit     int
	serverLimitFrom string
}

// Run performs the run settings describe and returns its summary: it checks the
// options and the target, builds the workload and has pkg/runner execute
// it. A run that sends nothing (--dry-run) returns a nil summary.
// Per-request failures are in the summary, not in the error; the error
// reports a run that could not be carried out (bad options or input:
// *UsageError).
func Run(ctx context.Context, settings options.Options, stdio runner.IO) (*metrics.Summary, error) {
	o := &job{Options: settings}
	secrets := o.Secrets()
	stdio.Out, stdio.Err = secret.Writer(stdio.Out, secrets), secret.Writer(stdio.Err, secrets)
	o.Command = secrets.String(o.Command)
	log := runner.NewLogger(stdio.Err, o.Quiet)
	if err := o.Validate(); err != nil {
		return nil, options.Usage(err)
	}
	if err := o.loadTokenizer(); err != nil {
		return nil, options.Usage(err)
	}
	if err := runner.CheckStartAt(o.StartAt, time.Now(), "at launch"); err != nil && !o.DryRun {
		return nil, options.Usage(err)
	}
	// Every output is checked before anything is sent, so that a summary
	// is never lost at the end to a missing or read-only directory.
	if err := options.CheckOutputs(o.Outputs()); err != nil {
		return nil, options.Usage(err)
	}
	seed := uint64(o.Seed)
	if o.Seed == -1 {
		seed = uint64(time.Now().UnixNano()) & (1<<53 - 1)
		log.Infof("seed: %d (pass --seed %d to repeat this schedule)", seed, seed)
	}
	// The server is asked for its models (and their context length, the
	// schedule's token limit) before the schedule is built; a dry run asks
	// nothing.
	var pool *client.Pool
	if !o.DryRun {
		var err error
		if pool, err = o.newPool(); err != nil {
			return nil, options.Usage(err)
		}
		defer pool.Close() // the server sees the run's connections close with it
		model, models, err := pool.Check(ctx, o.Model, log)
		if err != nil {
			return nil, err
		}
		o.Model = model
		o.setServerLimit(models, log)
		if o.TokenizeViaServer {
			cli := pool.First()
			o.countVia = func(text string) (int, error) {
				n, err := cli.Tokenize(ctx, o.Model, text)
				if err != nil {
					return 0, fmt.Errorf("--tokenize-via-server: %s/tokenize: %w", secret.URL(o.Root()), err)
				}
				return n, nil
			}
		}
	}
	wl, err := o.build(ctx, seed, log)
	if err != nil || o.DryRun {
		return nil, err
	}
	if wl.Stats.Count == 0 {
		return nil, options.Usage(errors.New("the schedule is empty: nothing to send"))
	}
	cfg, err := o.runConfig(seed, wl, stdio, log)
	if err != nil {
		return nil, options.Usage(err)
	}
	o.Answer.TakeRefused() // this run's only
	sum, err := runner.Run(ctx, cfg, wl, pool, stdio)
	if n, why := o.Answer.TakeRefused(); n > 0 {
		log.Warnf("--response-format %s: %d answer(s) counted invalid without being checked; first: %s", o.Answer.ResponseFormat, n, why)
	}
	if se := (*runner.StartAtError)(nil); errors.As(err, &se) {
		err = options.Usage(err)
	}
	return sum, err
}

// build builds the workload of a run of seed, writes --schedule-out and
// --sessions-out, and logs what it is.
func (o *job) build(ctx context.Context, seed uint64, log note.Logger) (*workload.Workload, error) {
	cfg := o.workloadConfig(seed)
	cfg.Stop = ctx.Done()
	var schedOut *os.File
	if o.ScheduleOut != "" {
		var err error
		if schedOut, err = os.Create(o.ScheduleOut); err != nil {
			return nil, err
		}
		cfg.ScheduleOut = schedOut
	}
	var sessOut *os.File
	if o.SessionsOut != "" && (cfg.Sessions.On() || cfg.MultiTurn || cfg.ReplaysAgentic()) {
		var err error
		if sessOut, err = os.Create(o.SessionsOut); err != nil {
			if schedOut != nil {
				schedOut.Close()
			}
			return nil, err
		}
		cfg.SessionsOut = sessOut
	}
	wl, err := workload.Build(cfg, log)
	if schedOut != nil {
		if cerr := schedOut.Close(); err == nil && cerr != nil {
			err = &workload.WriteError{Err: cerr}
		}
	}
	var sessErr error
	if sessOut != nil {
		sessErr = sessOut.Close()
	}
	if we := (*workload.WriteError)(nil); errors.As(err, &we) {
		return nil, fmt.Errorf("schedule %s: %w", o.ScheduleOut, we.Err)
	}
	if sessErr != nil {
		return nil, fmt.Errorf("sessions %s: %w", o.SessionsOut, sessErr)
	}
	if errors.Is(err, workload.ErrStopped) {
		return nil, fmt.Errorf("%w: %w", err, context.Cause(ctx))
	}
	if err != nil {
		return nil, options.Usage(err)
	}
	if o.ScheduleOut != "" {
		log.Infof("schedule: %d arrivals written to %s", wl.Stats.Count, o.ScheduleOut)
	}
	log.Infof("%s", wl.Line())
	if l := wl.CancelLine(); l != "" {
		log.Infof("%s", l)
	}
	if ws := wl.Sessions; ws != nil {
		log.Infof("%s: %d sessions, %d planned turns, plan %s", ws.Describe(), ws.Sessions, ws.Turns, ws.Hash)
		if o.SessionsOut != "" {
			log.Infof("sessions: %d planned turns written to %s", ws.Turns, o.SessionsOut)
		}
	}
	if o.ShardCount > 1 {
		log.Infof("shard %d/%d: %d of the schedule's %d arrivals; schedule %s", o.ShardIndex, o.ShardCount, wl.Stats.Count, wl.Total, wl.Hash)
	}
	return wl, nil
}

// runConfig is the part of o that executes wl, a run of seed.
func (o *job) runConfig(seed uint64, wl *workload.Workload, stdio runner.IO, log note.Logger) (runner.Config, error) {
	format, err := prompt.ParseFormat(o.PromptFormat)
	if err != nil {
		return runner.Config{}, err
	}
	if o.Kind().Has(api.TextPrompts) || wl.Sessions != nil {
		format = prompt.Text // an image prompt, a rerank's documents are text; a session's completion prompt is its conversation's text
	}
	limit, _ := o.tokenLimit()
	judge, err := o.judge()
	if err != nil {
		return runner.Config{}, err
	}
	prewarm, auto, err := options.ParsePrewarm(o.PrewarmConnections)
	if err != nil {
		return runner.Config{}, err
	}
	if auto {
		prewarm = runner.PrewarmAuto
	}
	return runner.Config{
		Summary:        o.summary(seed, wl),
		Prompts:        prompt.Options{Format: format, Salt: o.Salt(seed), Suffix: o.PromptSuffix, Tokens: o.tokens()},
		Model:          o.Model,
		WarmupRequests: o.WarmupRequests,
		Prewarm:        prewarm,
		MaxConcurrency: o.MaxConcurrency, ConcurrencyRamp: o.MaxConcurrencyRamp,
		MaxSessions: o.MaxSessions, ContinueOnError: o.ContinueOnError, TokenLimit: limit,
		Turns:        runner.TurnOptions{KeepReasoning: o.Answer.KeepReasoning, ToolResultLen: o.Answer.ToolResultLen, Chain: o.ResponsesChain},
		StartAt:      o.StartAt,
		DrainTimeout: o.DrainTimeout,
		SLO:          o.Observe.Goodput,
		Steady:       o.SteadyConfig(),
		Monitor:      o.monitorConfig(wl.Stats, stdio, log),
		Endpoints:    o.ShownURLs(),
		ResultsJSONL: o.ResultsJSONL, SummaryJSON: o.SummaryJSON, OutputFile: o.OutputFile,
		ResultsCSV: o.ResultsCSV, ReportHTML: o.Observe.ReportHTML,
		ResultsParquet: o.ResultsParquet, BenchmarkReport: o.BenchmarkReport, BenchmarkURLs: shownURLs(o),
		Judge: judge,
		Quiet: o.Quiet,
	}, nil
}

// judge records the --threshold verdicts in the summary before it is
// written (nil: no thresholds). The command judges the same thresholds
// again for its exit code.
func (o *job) judge() (func(*metrics.Summary), error) {
	if len(o.Experiment.Thresholds) == 0 {
		return nil, nil
	}
	x, err := o.Experiment.Parse()
	if err != nil {
		return nil, err
	}
	return func(s *metrics.Summary) {
		if vs, err := experiment.Judge(x.Thresholds, s); err == nil {
			s.Thresholds = experiment.Verdicts(vs)
		}
	}, nil
}

// summary is the run's identity as its summary shows it: what was asked
// (backend, mode, model, seed, command, rates, concurrency bound), the
// workload's shape, and the scale-out fields fineserve-gen merge matches
// copies by (schedule hash, shard, --start-at).
func (o *job) summary(seed uint64, wl *workload.Workload) metrics.Summary {
	sum := metrics.Summary{Backend: o.Backend, Mode: o.Mode, Model: o.Model, Seed: seed, Command: o.Command, Settings: o.Settings,
		SettingsFile: o.SettingsFile, FileSettings: o.FileSettings, EffectiveSettings: o.EffectiveSettings}
	if workload.Rated(o.Mode) && wl.Profile == nil {
		sum.RequestRate = metrics.Rate(o.RequestRate)
	}
	if o.Mode == "poisson" {
		b := o.Burstiness
		sum.Burstiness = &b
	}
	sum.TargetRate, sum.LengthMix, sum.SharedPrefix = wl.TargetRate, wl.LengthMix, wl.SharedPrefixInfo
	if o.MaxConcurrency > 0 {
		mc := o.MaxConcurrency
		sum.MaxConcurrency = &mc
	}
	sum.ScheduleHash = wl.Hash
	sum.Shard = &metrics.ShardInfo{Count: o.ShardCount, Indices: []int64{o.ShardIndex}}
	if !o.StartAt.IsZero() {
		sum.StartAt = o.StartAt.UTC().Format(time.RFC3339Nano)
	}
	sum.Replay = wl.Replay
	sum.PromptUnits = o.promptUnits(wl)
	return sum
}

// promptUnits is the unit the run's text prompts are sized in ("" when
// every prompt is token ids).
func (o *job) promptUnits(wl *workload.Workload) string {
	if wl.Dataset != nil {
		return wl.Dataset.Units
	}
	text := o.PromptFormat == "text" || wl.Sessions != nil || wl.Stats.Images > 0 || o.Media.On() || o.Kind().Has(api.Messages)
	switch {
	case !text || wl.Images:
		return ""
	case o.tok != nil:
		return prompt.UnitTokenizer
	}
	return prompt.UnitWords
}

// Schedule builds the workload o describes and sends nothing, as --dry-run
// does (--schedule-out is written): for commands that read a whole
// schedule (plan). A seed of -1 is taken from the clock and logged.
func Schedule(settings options.Options, stdio runner.IO) (*workload.Workload, uint64, error) {
	o := &job{Options: settings}
	o.DryRun = true
	log := runner.NewLogger(secret.Writer(stdio.Err, o.Secrets()), o.Quiet)
	if err := o.Validate(); err != nil {
		return nil, 0, options.Usage(err)
	}
	seed := uint64(o.Seed)
	if o.Seed == -1 {
		seed = uint64(time.Now().UnixNano()) & (1<<53 - 1)
		log.Infof("seed: %d (pass --seed %d to repeat this schedule)", seed, seed)
	}
	wl, err := o.build(context.Background(), seed, log)
	if err != nil {
		return nil, 0, err
	}
	if wl.Stats.Count == 0 {
		return nil, 0, options.Usage(errors.New("the schedule is empty: nothing to plan"))
	}
	return wl, seed, nil
}

// monitorConfig is the part of o that the monitor watches a run with: st
// is the workload's (what is scheduled, over what span); the monitor writes
// to stdio and log.
func (o *job) monitorConfig(st arrival.Stats, stdio runner.IO, log monitor.Logger) monitor.Config {
	c := monitor.Config{
		Scheduled: st.Count, Span: st.Last,
		Window: o.Observe.Window, ReportInterval: o.Observe.ReportInterval, Goodput: o.Observe.Goodput,
		MaxConcurrency: o.MaxConcurrency, AllAtOnce: workload.Rated(o.Mode) && math.IsInf(o.RequestRate, 1) && !o.Profiled(),
		MetricsAddr: o.Observe.MetricsAddr, ServerMetricsInterval: o.Observe.ServerMetricsInterval,
		Quiet: o.Quiet, Bar: stdio.Terminal && !o.DisableProgress, NoStates: o.NoMergeState,
		Out: stdio.Out, Err: stdio.Err, Log: log,
	}
	if k := o.Kind(); k != nil {
		c.NoTokens = !k.Measure.Tokens()
	}
	if url, ok := o.ServerMetricsTarget(); ok {
		c.ServerMetricsURL = url
	}
	c.GPUMetricsURLs = o.Observe.GPUMetricsURLs
	if ot := o.Observe.OTLP; ot.On() {
		c.OTLP = otlpexport.Config{Endpoint: ot.Endpoint, Headers: ot.HeaderMap(), Traces: ot.Traces, Sample: ot.Sample,
			Operation: otlpexport.Operation(o.Kind(), o.Endpoint), ServerURL: o.Root()}
	}
	if o.Several() && o.ScrapeServer() {
		for _, u := range o.EndpointURLs() {
			c.EndpointMetricsURLs = append(c.EndpointMetricsURLs, u+"/metrics")
		}
	}
	return c
}

// NewPool makes the client of every endpoint of o.
func (o *job) newPool() (*client.Pool, error) {
	st, _ := balance.Parse(o.Balance) // checked by Validate
	return client.NewPool(o.clientConfig(), o.EndpointURLs(), func(n int) client.Picker { return balance.NewPicker(n, st) })
}

// WorkloadConfig is the part of o that builds the workload; seed is the
// run's resolved seed.
func (o *job) workloadConfig(seed uint64) workload.Config {
	limit, from := o.tokenLimit()
	return workload.Config{
		Spec: o.Spec, Seed: seed,
		TokenLimit: limit, TokenLimitFrom: from,
		API: o.Kind(), DryRun: o.DryRun,
		ShardIndex: o.ShardIndex, ShardCount: o.ShardCount,
		Sessions:  o.SessionsConfig(seed),
		Endpoints: o.EndpointOptions(),
		Sizing:    o.sizing(),
	}
}

// sizing is how text prompts are counted: --tokenizer's tokens, the
// server's (--tokenize-via-server, once Run has the server), or words.
func (o *job) sizing() prompt.Sizing {
	sz := prompt.Sizing{Count: o.countVia}
	if o.tok != nil {
		sz.Tokens = o.tok
	}
	return sz
}

// LoadTokenizer reads --tokenizer (nothing without it). Its error names the
// file and, for a file it cannot use, what is unsupported.
func (o *job) loadTokenizer() error {
	if o.Tokenizer == "" || o.tok != nil {
		return nil
	}
	tk, err := tokenizer.Load(o.Tokenizer)
	if err != nil {
		return fmt.Errorf("--tokenizer: %w", err)
	}
	o.tok = tk
	return nil
}

// Tokens is the loaded --tokenizer (nil without one) as pkg/prompt takes it.
func (o *job) tokens() prompt.Tokens {
	if o.tok == nil {
		return nil
	}
	return o.tok
}

// ClientConfig maps o onto the client's configuration (the first
// endpoint's URL; NewPool makes one client per endpoint).
func (o *job) clientConfig() client.Config {
	return client.Config{
		BaseURL: o.Root(), API: o.Kind(), Endpoint: o.Endpoint, Model: o.Model,
		APIKey: o.APIKey, Stream: o.Stream, IgnoreEOS: o.IgnoreEOS,
		ExtraBody: []byte(o.ExtraRequestBody), MaxConns: o.MaxConcurrency,
		RequestTimeout: o.RequestTimeout, StallTimeout: o.StallTimeout,
		Insecure: o.Insecure, CACert: o.CACert, Host: o.HostHeader, HTTPTransport: o.HTTPTransport, HTTPPhases: o.HTTPPhases,
		RequestIDPrefix: o.RequestIDPrefix,
		Secrets:         o.Secrets(),
		Retries:         o.Retries,
		ImageSize:       fmt.Sprintf("%dx%d", o.Replay.ImageWidth, o.Replay.ImageHeight),
		Answer:          o.Answer.Loaded(),
		BatchSize:       o.BatchSize, AudioSeconds: o.Media.Audio.Seconds, AudioSeed: uint64(max(o.Seed, 0)),
		CountTokens: o.countTokens(),
	}
}

// countTokens counts an answer's text in --tokenizer's tokens, for an API
// whose answers may carry no count (nil without a tokenizer: words).
func (o *job) countTokens() func([]byte) int {
	if o.tok == nil {
		return nil
	}
	tk := o.tok
	return func(b []byte) int { return tk.Count(string(b)) }
}

// TokenLimit is the most tokens (input plus output) one request may have,
// and where that limit comes from: --max-model-len, else the served
// model's max_model_len (SetServerLimit), else replay.DefaultTokenLimit.
// The schedule is built with it, so a request above it is never built:
// trace rows are left out and counted, length flags are a usage error.
func (o *job) tokenLimit() (int, string) {
	switch {
	case o.MaxModelLen > 0:
		return o.MaxModelLen, "--max-model-len"
	case o.serverLimit > 0:
		return o.serverLimit, o.serverLimitFrom
	}
	return replay.DefaultTokenLimit, "the built-in cap"
}

// SetServerLimit takes the served model's max_model_len from the server's
// model list (client.Pool.Check) as the token limit, when --max-model-len
// is not given: that of --model, else (no --model, or one the list does
// not name) the smallest listed, which holds for every model. It says
// which limit holds.
func (o *job) setServerLimit(models []client.ModelInfo, log note.Logger) {
	if o.MaxModelLen == 0 {
		var from string
		exact := false // the limit is --model's own
		for _, m := range models {
			if m.MaxModelLen == 0 {
				continue
			}
			if m.ID == o.Model {
				// Several endpoints list --model: the smallest limit holds.
				if !exact || m.MaxModelLen < o.serverLimit {
					o.serverLimit, from = m.MaxModelLen, m.ID
				}
				exact = true
				continue
			}
			if exact {
				continue
			}
			if o.serverLimit == 0 || m.MaxModelLen < o.serverLimit || (m.MaxModelLen == o.serverLimit && m.ID < from) {
				o.serverLimit, from = m.MaxModelLen, m.ID
			}
		}
		if o.serverLimit > 0 {
			o.serverLimitFrom = fmt.Sprintf("the server's max_model_len for %s", from)
		}
	}
	n, how := o.tokenLimit()
	log.Infof("token limit: %d tokens a request (input + output; %s)", n, how)
}

// shownURLs are the endpoints' URLs with their credentials hidden.
func shownURLs(o *job) []string {
	urls := o.EndpointURLs()
	for i, u := range urls {
		urls[i] = secret.URL(u)
	}
	return urls
}
