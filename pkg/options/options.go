// Package options holds a run's settings: every option with its default and
// its validation, nothing that runs. The command line (and a run file) fill
// them; pkg/launch carries a run out from them.
package options

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/reqid"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// Options is everything a run is configured with; the command line maps
// onto it one flag per field (FineServe's names where FineServe has one).
// It holds settings only: what a run finds out (the server's context
// length, a loaded tokenizer) is pkg/launch's.
type Options struct {
	// Target.
	Backend string // an API kind's name (pkg/api); Kind is its row
	kind    *api.Kind
	BaseURL string // overrides Host and Port
	// BaseURLs lists every endpoint when the run has several (--base-url
	// given more than once or comma-separated; BaseURL is then unused);
	// Balance spreads the requests over them (round-robin,
	// least-inflight, session).
	BaseURLs []string
	Balance  string
	Host     string
	Port     int
	Endpoint string // overrides the backend's path
	Model    string // "" asks the server's /v1/models
	// APIKey comes from OPENAI_API_KEY or --api-key-file; never printed.
	APIKey   string
	Insecure bool
	// CACert is a PEM file of the certificate authorities that verify the
	// server (--ca-cert; default: the system's).
	CACert string
	// HostHeader replaces the base URL's host[:port] in the Host header and
	// as the TLS server name (--host-header).
	HostHeader string

	// The workload: the mode and its load, request sizes, the replay,
	// parametric, model and load-control options and --multi-turn, as the
	// workload package takes them (workload.Spec; see replay.go,
	// parametric.go, models.go, workload/loadctl.go).
	workload.Spec
	Seed int64 // -1: derive from the clock (and report it)

	// Request sizes and prompts.
	// MaxModelLen bounds a request's input plus output tokens
	// (--max-model-len, vLLM's name); 0 takes the served model's
	// max_model_len from /v1/models when the server reports one, else
	// replay.DefaultTokenLimit.
	MaxModelLen       int
	PromptFormat      string // token-ids or text
	PromptSuffix      string
	PromptSalt        int64 // 0: derived per run
	ApplyChatTemplate bool
	// Tokenizer is a Hugging Face tokenizer.json (or a directory holding
	// one) text prompts are counted and cut in (--tokenizer); Run loads
	// it. TokenizeViaServer counts a dataset's prompts and replies with
	// the server's /tokenize instead (--tokenize-via-server).
	Tokenizer         string
	TokenizeViaServer bool
	// (Media — synthetic images and audio in every request's chat
	// content: --images-per-request, --image-format, --audio-seconds — is
	// workload.Spec's.)

	// Request shape.
	Stream           bool
	IgnoreEOS        bool
	ExtraRequestBody string
	// BatchSize is the inputs of a request of a batching backend
	// (--batch-size; 0: 1). The synthetic audio of a backend that sends
	// audio is --audio-seconds (Media.Audio; 0: client.DefaultAudioSeconds).
	BatchSize int
	// BatchSizeSet and AudioSecondsSet tell the flags were given (0 is
	// then out of range, not the default).
	BatchSizeSet, AudioSecondsSet bool
	WarmupRequests                int
	MaxConcurrency                int
	// MaxConcurrencyRamp grows the --max-concurrency bound from 1 to it
	// over this long from the start (0: the full bound at once).
	MaxConcurrencyRamp time.Duration
	RequestTimeout     time.Duration
	StallTimeout       time.Duration
	// HTTPTransport is one of client's Transport* names ("" or "auto": the
	// lean transport for http://, net/http's with HTTP/2 for https://).
	HTTPTransport string
	// PrewarmConnections is --prewarm-connections: "" or "0" none, "auto"
	// or a count of connections opened before the first send
	// (runner.Config.Prewarm).
	PrewarmConnections string
	// HTTPPhases times every request's connect, TLS handshake, write and
	// wait to the first byte (--http-phases; client.Phases): in the
	// records, the summary's http_phases, the table and the HTML report.
	HTTPPhases bool
	// RequestIDPrefix sends each request's X-Request-Id as the prefix and
	// its index, kept in its record (--request-id-prefix;
	// client.Config.RequestIDPrefix).
	RequestIDPrefix string
	// Retries re-sends requests that failed before their first token with
	// a connect, http_429 or http_5xx error (0: never; see client.Do).
	Retries int

	// Stopping and judging the run (see "Failures and exit codes").
	// DrainTimeout is how long a stopped run (SIGINT/SIGTERM) waits for the
	// requests in flight before canceling them.
	DrainTimeout time.Duration
	// MaxErrorRate is the share of failed requests a run may have and still
	// pass (exit code 0); the command checks it.
	MaxErrorRate float64

	// Watching the run: live lines, windows, goodput, HTML report,
	// Prometheus, server metrics (see observe.go).
	Observe ObserveOptions
	// Experiment is --repeat, --until-converged, --threshold and
	// --steady-state (experiment.go).
	Experiment ExperimentOptions
	// What requests ask of the answer: reasoning knobs, tools, a response
	// format (answer.go).
	Answer AnswerOptions
	// ResponsesChain sends a session's later turns with
	// previous_response_id and the new messages only (--responses-chain).
	ResponsesChain bool

	// Multi-turn sessions (docs/SESSIONS.md): each arrival starts a
	// session whose later turns follow the previous answer plus a think
	// time. Sessions.Seed is set from the run's seed. MaxSessions bounds
	// live sessions (0: no bound); ContinueOnError keeps a session going
	// after a failed turn; SessionsOut receives the plan's CSV.
	Sessions        session.Config
	MaxSessions     int
	ContinueOnError bool
	SessionsOut     string

	// Scale-out: keep arrivals with Index % ShardCount == ShardIndex.
	ShardIndex, ShardCount int64
	StartAt                time.Time // zero: start now

	// Outputs.
	OutputFile      string // FineServe: summary appended as one JSON line
	SummaryJSON     string
	ResultsJSONL    string
	ResultsCSV      string // the records as a CSV table (report.AppendRecordCSV)
	ResultsParquet  string // the records as a Parquet file (report.CreateRecordsParquet)
	BenchmarkReport string // the llm-d Benchmark Report (report.BenchmarkReport)
	ScheduleOut     string
	DryRun          bool
	DisableProgress bool
	Quiet           bool
	// NoMergeState: nothing the run writes carries the summary's
	// merge_state (no summary file: the command line's run without
	// --summary-json or --output-file), so it is not encoded. A sweep's
	// or a plan's step keeps it (their JSON holds each step's summary).
	NoMergeState bool
	// Command is the command line, recorded in the summary (secrets are
	// never part of it: the key is read from the environment or a file).
	Command string
	// Settings are the flags given (command line or run file) with their
	// values, recorded in the summary so the run can be repeated from it
	// (pkg/runfile).
	Settings map[string]any
	// SettingsFile and FileSettings are the run file the settings were
	// read from ("": none) and the names of the settings it gave;
	// EffectiveSettings are every flag with the value the run has, given
	// or default: recorded in the summary (metrics.Summary's).
	SettingsFile      string
	FileSettings      []string
	EffectiveSettings map[string]any
}

// The workload's option groups (pkg/workload), under the names the
// command line knows them by.
type (
	ReplayOptions     = workload.ReplayOptions
	LoadOptions       = workload.LoadOptions
	ParametricOptions = workload.ParametricOptions
	ModelOptions      = workload.ModelOptions
	ReplayInfo        = workload.ReplayInfo
)

// DefaultStallTimeout is --stall-timeout's default: long enough for a
// queued request's first token on a loaded server, short enough that a
// server that stops sending does not hold a run for the hour of
// --request-timeout.
const DefaultStallTimeout = 5 * time.Minute

// Defaults returns FineServe's defaults.
func Defaults() Options {
	return Options{
		Backend: api.VLLM.Name, Host: "127.0.0.1", Port: 8000,
		Spec: workload.Spec{
			Mode: workload.ModePoisson, RequestRate: math.Inf(1), Burstiness: 1, NumPrompts: 100, TimeScale: 1,
			RandomInputLen: 1024, RandomOutputLen: 128,
			Replay: workload.DefaultReplayOptions(), Load: workload.DefaultLoadOptions(), Parametric: workload.DefaultParametricOptions(),
		},
		Seed:         -1,
		PromptFormat: "token-ids",
		Stream:       true, IgnoreEOS: true, WarmupRequests: 1,
		RequestTimeout: time.Hour,
		StallTimeout:   DefaultStallTimeout,
		DrainTimeout:   30 * time.Second,
		Observe:        DefaultObserveOptions(),
		ShardCount:     1,
		Experiment:     ExperimentOptions{Repeat: 1, SteadyState: "off"},
	}
}

// UsageError is a problem with the options or input files (exit code 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usage wraps err as a *UsageError (nil stays nil; a usage error is kept
// as it is).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	return &UsageError{err}
}

// Validate returns every problem of o at once.
func (o *Options) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	row := o.Kind()
	if row == nil {
		add("--backend %q: want %s", o.Backend, api.Names())
	}
	if err := o.Models.Validate(); err != nil {
		errs = append(errs, err)
	}
	if _, ok := workload.LookupMode(o.Mode); !ok {
		add("--mode %q: want %s", o.Mode, workload.ModeNames())
	}
	if o.BaseURL == "" && len(o.BaseURLs) == 0 && (o.Port < 1 || o.Port > 65535) {
		add("--port %d: want 1–65535", o.Port)
	}
	if o.BaseURL != "" && len(o.BaseURLs) == 0 && !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		add("--base-url %q: must start with http:// or https://", o.BaseURL)
	}
	if _, err := o.Experiment.Parse(); err != nil {
		errs = append(errs, err)
	}
	if o.Experiment.Repeat > 1 && (o.ShardCount > 1 || !o.StartAt.IsZero()) {
		add("--repeat with --shard or --start-at: a repeated run's runs start one after another, from one machine")
	}
	if err := o.validateEndpoints(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Answer.validate(row); err != nil {
		errs = append(errs, err)
	}
	if err := o.validateRequestShape(row); err != nil {
		errs = append(errs, err)
	}
	if err := o.validateSessions(); err != nil {
		errs = append(errs, err)
	}
	if err := o.validateLengths(); err != nil {
		errs = append(errs, err)
	}
	if o.NumPromptsSet && (o.NumPrompts < 1 || o.NumPrompts > arrival.MaxRequests) {
		add("--num-prompts %d: want 1 to %d (the most requests one run may have)", o.NumPrompts, int64(arrival.MaxRequests))
	}
	if o.Duration < 0 || o.Duration > arrival.MaxSpan {
		add("--duration %v: want > 0 and at most %v (366 days)", o.Duration, arrival.MaxSpan)
	}
	if o.MaxConcurrencyRamp < 0 {
		add("--max-concurrency-ramp %v: want a duration > 0", o.MaxConcurrencyRamp)
	} else if o.MaxConcurrencyRamp > 0 && o.MaxConcurrency <= 0 {
		add("--max-concurrency-ramp needs --max-concurrency N (the bound it grows to)")
	}
	if o.MaxConcurrency < 0 {
		add("--max-concurrency %d: want ≥ 1 (or leave unset)", o.MaxConcurrency)
	}
	if _, _, err := ParsePrewarm(o.PrewarmConnections); err != nil {
		add("--prewarm-connections: %w", err)
	}
	if o.WarmupRequests < 0 {
		add("--warmup-requests %d: want ≥ 0", o.WarmupRequests)
	}
	if !(o.TimeScale > 0) || math.IsInf(o.TimeScale, 0) {
		add("--time-scale %g: want a finite number > 0", o.TimeScale)
	}
	if o.Seed < -1 {
		add("--seed %d: want ≥ 0, or -1 for a time-based seed", o.Seed)
	}
	if o.ShardCount < 1 || o.ShardIndex < 0 || o.ShardIndex >= o.ShardCount {
		add("--shard %d/%d: want I/N with 0 ≤ I < N", o.ShardIndex, o.ShardCount)
	}
	if err := o.validateScaleOut(); err != nil {
		errs = append(errs, err)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--request-timeout", o.RequestTimeout}, {"--stall-timeout", o.StallTimeout}, {"--drain-timeout", o.DrainTimeout}} {
		if d.v < 0 {
			add("%s %v: want ≥ 0", d.flag, d.v)
		}
	}
	if o.Retries < 0 {
		add("--retries %d: want ≥ 0", o.Retries)
	}
	if err := o.Observe.validate(); err != nil {
		errs = append(errs, err)
	}
	if !(o.MaxErrorRate >= 0 && o.MaxErrorRate <= 1) {
		add("--max-error-rate %g: want a share of requests in [0, 1]", o.MaxErrorRate)
	}
	if err := api.CheckExtraBody([]byte(o.ExtraRequestBody)); err != nil {
		add("--extra-request-body: %w", err)
	}
	for _, u := range o.EndpointURLs() {
		if err := api.CheckTransport(o.HTTPTransport, u); err != nil {
			add("--http-transport: %w", err)
			break
		}
	}
	if o.Insecure && o.CACert != "" {
		add("--insecure and --ca-cert: choose one (--insecure verifies no certificate at all)")
	}
	if err := api.CheckHost(o.HostHeader); err != nil {
		add("--host-header %w", err)
	}
	if err := checkRequestIDPrefix(o.RequestIDPrefix); err != nil {
		add("--request-id-prefix %w", err)
	}
	switch o.DatasetName {
	case "", "random", "sharegpt", "sharegpt_pre":
	default:
		add("--dataset-name %q: want sharegpt, sharegpt_pre or random", o.DatasetName)
	}
	if (o.DatasetName == "sharegpt" || o.DatasetName == "sharegpt_pre") && o.DatasetPath == "" {
		add("--dataset-name %s needs --dataset-path FILE (nothing is downloaded at run time)", o.DatasetName)
	}
	if err := o.Media.Validate(); err != nil {
		errs = append(errs, err)
	} else if o.Media.On() {
		// Media are chat content parts. (A backend that sends --audio-seconds'
		// clip as its file, transcription, takes the flag too: its row is
		// to be let through here for Audio alone.)
		media := func(b *api.Kind) bool {
			return b.InputImages() && !b.Has(api.HistoryItems) && !b.Has(api.GeneratesImages)
		}
		audioOnly := o.Media.ImagesPerRequest == 0
		if b := row; b != nil && !media(b) && !(b.Has(api.Audio) && audioOnly) {
			add("--images-per-request and --audio-seconds put chat content parts in requests: --backend %s (not %s); --audio-seconds alone is also the file of --backend %s",
				api.With(media), o.Backend, api.WithCaps(api.Audio))
		}
	}
	if o.TokenizeViaServer {
		switch {
		case o.Tokenizer != "":
			add("--tokenizer and --tokenize-via-server: choose one (--tokenizer counts here, exactly; the server's /tokenize only sizes a dataset)")
		case o.DatasetPath == "":
			add("--tokenize-via-server sizes --dataset-path's prompts with the server's /tokenize: give a dataset, or --tokenizer for synthetic text")
		case o.DryRun:
			add("--tokenize-via-server asks the server, and --dry-run sends nothing: use --tokenizer FILE to size the prompts offline")
		}
	}
	if workload.Rated(o.Mode) {
		if !(o.RequestRate > 0) {
			add("--request-rate %g: want > 0, or inf", o.RequestRate)
		}
		if !(o.Burstiness > 0) || math.IsInf(o.Burstiness, 0) {
			add("--burstiness %g: want a finite number > 0", o.Burstiness)
		}
		if math.IsInf(o.RequestRate, 1) && o.Duration > 0 && !o.NumPromptsSet && !o.Profiled() {
			add("--request-rate inf sends every request at once: give --num-prompts, not --duration")
		}
		if n := o.RequestRate * o.Duration.Seconds(); !math.IsInf(o.RequestRate, 1) && !o.NumPromptsSet && n > arrival.MaxRequests {
			add("--request-rate %g for --duration %v is %.3g requests: at most %d a run (lower one, or give --num-prompts)", o.RequestRate, o.Duration, n, int64(arrival.MaxRequests))
		}
	}
	if err := o.Load.Validate(o.Mode); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Kind is --backend's API kind, looked up once (nil for an unknown name,
// which Validate reports): everything downstream takes the row.
func (o *Options) Kind() *api.Kind {
	if o.kind == nil || o.kind.Name != o.Backend {
		o.kind, _ = api.Lookup(o.Backend)
	}
	return o.kind
}

// Profiled reports whether a target profile (--stages, a ramp) sets the
// rate instead of --request-rate.
func (o *Options) Profiled() bool { return o.Load.Stages != "" || o.Load.RampStrategy != "" }

// Root is the server root the client talks to.
func (o *Options) Root() string {
	if o.Several() {
		return strings.TrimRight(o.BaseURLs[0], "/") // the first of several
	}
	if o.BaseURL != "" {
		return strings.TrimRight(o.BaseURL, "/")
	}
	host := o.Host
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("http://%s:%d", host, o.Port)
}

// Secrets returns what a run must never print or write: the API key, and
// the users and passwords of the base URL, the server-metrics URL and the
// proxies set in the environment. URL credentials are hidden wherever a
// URL is printed, whoever's they are.
func (o *Options) Secrets() *secret.Redactor {
	r := secret.New(o.APIKey)
	r.AddURL(o.BaseURL)
	for _, u := range o.BaseURLs {
		r.AddURL(u)
	}
	r.AddURL(o.Observe.ServerMetricsURL)
	for _, u := range append([]string{o.Observe.OTLP.Endpoint}, o.Observe.GPUMetricsURLs...) {
		r.AddURL(u)
	}
	for _, v := range o.Observe.OTLP.HeaderMap() {
		r.Add(v)
	}
	r.AddProxyEnv()
	return r
}

// Targets returns what the run must meet to pass (metrics.Verdict).
func (o *Options) Targets() metrics.Targets {
	return metrics.Targets{MaxErrorRate: o.MaxErrorRate, MinGoodput: o.Observe.MinGoodput, SLO: o.Observe.Goodput}
}

// validateRequestShape checks --batch-size and --audio-seconds: in range,
// and given only with a backend whose row batches or sends audio (the
// error names the rows that do).
func (o *Options) validateRequestShape(b *api.Kind) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if o.BatchSize != 0 || o.BatchSizeSet {
		if o.BatchSize < 1 || o.BatchSize > api.MaxBatchSize {
			add("--batch-size %d: want 1 to %d inputs a request", o.BatchSize, api.MaxBatchSize)
		}
		if b != nil && !b.Has(api.Batch) {
			add("--batch-size: --backend %s sends one prompt a request (use --backend %s)", b.Name, api.WithCaps(api.Batch))
		}
	}
	// A clip's range is the media options' check; a backend that sends
	// the clip as its file also needs one.
	if b.Has(api.Audio) && o.AudioSecondsSet && o.Media.Audio.Seconds == 0 {
		add("--audio-seconds 0: --backend %s sends the clip as its file: want more than 0 and at most %g seconds", b.Name, api.MaxAudioSeconds)
	}
	return errors.Join(errs...)
}

// SessionsConfig is the plan's configuration for a run of seed.
func (o *Options) SessionsConfig(seed uint64) session.Config {
	c := o.Sessions
	c.Seed = seed
	return c
}

// validateSessions checks the session options.
func (o *Options) validateSessions() error {
	var errs []error
	if err := o.Sessions.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.MaxSessions < 0 {
		errs = append(errs, fmt.Errorf("--max-sessions %d: want ≥ 0", o.MaxSessions))
	}
	if !o.Sessions.On() && !o.MultiTurn {
		if o.ResponsesChain {
			errs = append(errs, errors.New("--responses-chain chains a session's turns: give --turns or --multi-turn"))
		}
		return errors.Join(errs...)
	}
	if b := o.Kind(); b != nil && !b.Has(api.Sessions) {
		errs = append(errs, fmt.Errorf("--turns: --backend %s has no conversation; sessions need a text backend", b.Name))
	}
	if o.ResponsesChain {
		if b := o.Kind(); b != nil && !b.Has(api.Chains) {
			errs = append(errs, fmt.Errorf("--responses-chain: --backend %s has no previous_response_id (use --backend %s)", b.Name, api.WithCaps(api.Chains)))
		}
		if o.Several() && o.Balance != "session" {
			errs = append(errs, fmt.Errorf("--responses-chain with several endpoints needs --balance session: a response is kept by the server that made it (--balance %s)", o.Balance))
		}
	}
	return errors.Join(errs...)
}

// maxRequestIDPrefix bounds --request-id-prefix: an id is a log's word,
// not a payload.
const maxRequestIDPrefix = 64

// checkRequestIDPrefix checks --request-id-prefix: letters, digits and
// "-_.:", at most 64 of them, so that every id is one token in a header
// and in the server's logs.
func checkRequestIDPrefix(p string) error {
	if len(p) > maxRequestIDPrefix {
		return fmt.Errorf("%d characters: want at most %d", len(p), maxRequestIDPrefix)
	}
	if !reqid.Plain(p) {
		return fmt.Errorf("%q: want letters, digits and - _ . : only (each request adds its index, e.g. run7- gives run7-0, run7-1, …)", p)
	}
	return nil
}
