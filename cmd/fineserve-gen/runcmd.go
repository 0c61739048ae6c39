package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// runFlags declares the flags of a run onto o. FineServe's flags keep their
// names, defaults and meanings. finish completes o after parsing.
func runFlags(o *options.Options, prof *profiles) (fs *pflag.FlagSet, finish func() error) {
	fs = newFlagSet("run")
	fs.String(runfile.FlagName, "", "read the settings from a run file (YAML or JSON; keys are flag names, optionally in sections, docs/EXPERIMENTS.md) or from a summary's settings, to repeat its run; flags given here override the file")

	// Target (FineServe).
	fs.StringVar(&o.Backend, "backend", o.Backend, api.Help())
	baseURLs := fs.StringArray("base-url", nil, "server base URL, e.g. http://localhost:8000 (overrides --host/--port); several endpoints: give it more than once or comma-separated")
	fs.StringVar(&o.Balance, "balance", "round-robin", "with several --base-url: round-robin (by request), least-inflight (at send time) or session (a session's turns, or a shared prefix's requests, on one endpoint)")
	fs.StringVar(&o.Host, "host", o.Host, "server host")
	fs.IntVar(&o.Port, "port", o.Port, "server port")
	fs.StringVar(&o.Endpoint, "endpoint", o.Endpoint, "request path, overriding the backend's (e.g. /v1/completions)")
	fs.StringVar(&o.Model, "model", o.Model, "model name (default: the first model the server lists)")
	fs.StringVar(&o.Tokenizer, "tokenizer", o.Tokenizer, "Hugging Face tokenizer.json (or a directory holding one): dataset and text prompts are counted and cut in its tokens, exactly (byte-level BPE, SentencePiece BPE, Unigram and WordPiece; default: words)")
	fs.BoolVar(&o.TokenizeViaServer, "tokenize-via-server", o.TokenizeViaServer, "size --dataset-path's prompts and replies with the server's /tokenize (vLLM) instead of in words; other sizes are still cut in words")
	fs.BoolVar(&o.Insecure, "insecure", o.Insecure, "skip TLS certificate verification (warned)")
	fs.StringVar(&o.CACert, "ca-cert", o.CACert, "verify the server's TLS certificate against the CAs in this PEM file instead of the system's")
	fs.StringVar(&o.HostHeader, "host-header", o.HostHeader, "send this Host header (and TLS server name) instead of the base URL's host, e.g. a gateway's virtual host")
	apiKeyFile := fs.String("api-key-file", "", "read the API key from this file (default: $OPENAI_API_KEY)")

	// Workload (FineServe).
	fs.StringVar(&o.Mode, "mode", o.Mode, "request generation: "+workload.ModeHelp())
	fs.Var(rateValue{&o.RequestRate}, "request-rate", "Poisson mode: mean request rate in req/s, or inf to send all at once")
	fs.Float64Var(&o.Burstiness, "burstiness", o.Burstiness, "Poisson mode: shape of Gamma inter-arrival gaps (1 = Poisson, <1 burstier)")
	fs.Int64Var(&o.NumPrompts, "num-prompts", o.NumPrompts, "number of requests")
	fs.Var(durationValue{&o.Duration}, "duration", "stop scheduling after this long (e.g. 10m; with no --num-prompts, the count is unbounded)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "random seed (-1: time-based, printed and recorded)")
	fs.IntVar(&o.MaxConcurrency, "max-concurrency", o.MaxConcurrency, "maximum requests in flight (0: not set); waiting requests keep their scheduled time")
	fs.Float64Var(&o.TimeScale, "time-scale", o.TimeScale, "replay/parametric: divide every gap by this factor (>1 is faster)")

	// Request sizes and prompts (FineServe).
	fs.StringVar(&o.DatasetName, "dataset-name", o.DatasetName, "sharegpt, sharegpt_pre or random (default: sharegpt with --dataset-path, else random)")
	fs.StringVar(&o.DatasetPath, "dataset-path", o.DatasetPath, "ShareGPT JSON file supplying real prompt text")
	fs.IntVar(&o.RandomInputLen, "random-input-len", o.RandomInputLen, "input length in tokens of random requests")
	fs.IntVar(&o.RandomOutputLen, "random-output-len", o.RandomOutputLen, "output length in tokens of random requests")
	fs.Float64Var(&o.RandomRangeRatio, "random-range-ratio", o.RandomRangeRatio, "random lengths are uniform in [L·(1−r), L·(1+r)]")
	fs.IntVar(&o.SharegptOutputLen, "sharegpt-output-len", o.SharegptOutputLen, "fixed output length for dataset prompts")
	fs.IntVar(&o.SharegptContextLen, "sharegpt-context-len", o.SharegptContextLen, "skip dataset prompts whose input+output exceed this")
	fs.IntVar(&o.MaxModelLen, "max-model-len", o.MaxModelLen, "most input+output tokens of one request; trace rows above it are left out and counted (default: the server's max_model_len from /v1/models, else 1048576)")
	fs.StringVar(&o.PromptFormat, "prompt-format", o.PromptFormat, "completions prompt: token-ids (exact length) or text")
	fs.StringVar(&o.PromptSuffix, "prompt-suffix", o.PromptSuffix, "text appended to text prompts (its tokens come on top of the target input length)")
	fs.Int64Var(&o.PromptSalt, "prompt-salt", o.PromptSalt, "fix the prompt content across runs (0: new content every run, so no prefix cache carries over)")
	fs.BoolVar(&o.ApplyChatTemplate, "apply-chat-template", o.ApplyChatTemplate, "FineServe compatibility: use --backend openai-chat to have the server apply its template")

	// Request shape (FineServe).
	disableStream := fs.Bool("disable-stream", false, "send non-streaming requests")
	disableIgnoreEOS := fs.Bool("disable-ignore-eos", false, "let the server stop at end-of-sequence (no ignore_eos/min_tokens)")
	fs.StringVar(&o.ExtraRequestBody, "extra-request-body", o.ExtraRequestBody, `JSON object merged into every request body, e.g. '{"top_k": 5}'`)
	fs.IntVar(&o.BatchSize, "batch-size", o.BatchSize, fmt.Sprintf("inputs a request, 1 to %d (%s: texts, or a query's documents; default 1): the arrival's input tokens split over them", client.MaxBatchSize, api.WithCaps(api.Batch)))
	fs.IntVar(&o.WarmupRequests, "warmup-requests", o.WarmupRequests, "warm-up requests sent before the run (not measured)")
	fs.Var(durationValue{&o.RequestTimeout}, "request-timeout", "give up on a request after this long (0: never)")
	fs.StringVar(&o.HTTPTransport, "http-transport", api.TransportAuto, "auto (lean for http://, net/http with HTTP/2 for https://), lean (plain HTTP/1.1), net/http, h2 (HTTP/2 only) or http1 (net/http, HTTP/1.1 only)")
	fs.StringVar(&o.PrewarmConnections, "prewarm-connections", o.PrewarmConnections, "open N keep-alive connections (spread over the endpoints) before the first send, 512 at a time so a server's accept backlog never overflows; auto: --max-concurrency, or the schedule's most arrivals within the latency the warm-up predicts (at least 1 s; 2 s without a warm-up; at most 16384); over HTTP/2 one connection (and its TLS handshake) is all there is to open")
	fs.StringVar(&o.RequestIDPrefix, "request-id-prefix", o.RequestIDPrefix, "send every request with the header X-Request-Id: PREFIX<index> and keep it in its record (request_id): vLLM takes it as the request's id, so its logs, traces and the response's id name the request as the record does")
	fs.BoolVar(&o.HTTPPhases, "http-phases", o.HTTPPhases, "time every request's HTTP phases — connect, TLS handshake, request write, wait to the first response byte (none on a reused connection) — into the records, the summary's http_phases and the report")
	fs.Var(durationValue{&o.StallTimeout}, "stall-timeout", "give up on a response that sends no byte for this long, waiting for the first token included (0: never)")
	// Failures and stopping (README "Failures and exit codes").
	fs.IntVar(&o.Retries, "retries", o.Retries, "re-send a request that failed before its first token with connect, http_429 or http_5xx, up to N times (0: never)")
	fs.Var(durationValue{&o.DrainTimeout}, "drain-timeout", "on SIGINT/SIGTERM, wait this long for requests in flight before canceling them")
	fs.Float64Var(&o.MaxErrorRate, "max-error-rate", o.MaxErrorRate, "exit 0 only if at most this share of requests failed (else exit 3)")

	addReplayFlags(fs, o)
	addMediaFlags(fs, o)
	addModelFlags(fs, o)
	addParametricFlags(fs, o)
	addObserveFlags(fs, o)
	addLoadFlags(fs, o)
	addSessionFlags(fs, o)
	addAnswerFlags(fs, o)
	addExperimentFlags(fs, o)

	// Outputs.
	fs.StringVar(&o.OutputFile, "output-file", o.OutputFile, "append the summary as one JSON line (FineServe; -: standard output)")
	fs.StringVar(&o.SummaryJSON, "summary-json", o.SummaryJSON, "write the summary as JSON")
	fs.StringVar(&o.ResultsJSONL, "results-jsonl", o.ResultsJSONL, "stream one JSON record per finished request")
	fs.StringVar(&o.ResultsCSV, "results-csv", o.ResultsCSV, "write one CSV row per finished request (the record's fields; ITL as count, mean and max), with a header row")
	fs.StringVar(&o.ResultsParquet, "results-parquet", o.ResultsParquet, "write one Parquet row per finished request (the record's fields, typed; ITL as a list), in row groups as they fill")
	fs.StringVar(&o.BenchmarkReport, "benchmark-report", o.BenchmarkReport, "write the run as an llm-d Benchmark Report v0.2.1 (YAML; JSON when the name ends in .json)")
	fs.StringVar(&o.ScheduleOut, "schedule-out", o.ScheduleOut, "write the schedule as CSV (index,time_s,input_len,output_len,model,num_images,burst)")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "build (and with --schedule-out write) the schedule; send nothing")
	fs.BoolVar(&o.DisableProgress, "disable-tqdm", o.DisableProgress, "no progress bar (live lines stay: --report-interval 0 stops them)")
	fs.BoolVar(&o.Quiet, "quiet", o.Quiet, "print only warnings and the result table")
	shard := fs.String("shard", "", "keep arrivals with index % N == I of the schedule (I/N)")
	startAt := fs.String("start-at", "", "start the schedule at this wall-clock time, RFC 3339 or Unix seconds (every copy of a sharded run gets the same; docs/SCALE_OUT.md)")
	fs.StringVar(&prof.cpu, "cpu-profile", "", "write a CPU profile of the run (go tool pprof)")
	fs.StringVar(&prof.mem, "mem-profile", "", "write a heap profile at the end of the run")
	fs.StringVar(&prof.mutex, "mutex-profile", "", "write a profile of the run's lock contention (go tool pprof): where goroutines waited for each other's mutexes")

	finish = func() error {
		var errs []error
		o.Stream = !*disableStream
		o.IgnoreEOS = !*disableIgnoreEOS
		o.NumPromptsSet = fs.Changed("num-prompts")
		o.BatchSizeSet, o.AudioSecondsSet = fs.Changed("batch-size"), fs.Changed("audio-seconds")
		finishLoadFlags(fs, o)
		finishBaseURLs(o, *baseURLs)
		if *shard != "" {
			i, n, err := parseShard(*shard)
			if err != nil {
				errs = append(errs, err)
			}
			o.ShardIndex, o.ShardCount = i, n
		}
		if *startAt != "" {
			t, err := options.ParseStartAt(*startAt)
			if err != nil {
				errs = append(errs, err)
			}
			o.StartAt = t
		}
		key, err := apiKey(*apiKeyFile)
		if err != nil {
			errs = append(errs, err)
		}
		o.APIKey = key
		return errors.Join(errs...)
	}
	return fs, finish
}

// finishBaseURLs takes the --base-url values (each may list several,
// comma-separated): one is BaseURL, as a single endpoint always was;
// several are BaseURLs.
func finishBaseURLs(o *options.Options, given []string) {
	var urls []string
	for _, v := range given {
		for _, u := range strings.Split(v, ",") {
			urls = append(urls, strings.TrimSpace(u))
		}
	}
	switch {
	case len(urls) == 1:
		o.BaseURL = urls[0]
	case len(urls) > 1:
		o.BaseURLs = urls
	}
}

// profiles are the paths of --cpu-profile, --mem-profile and
// --mutex-profile.
type profiles struct{ cpu, mem, mutex string }

// apiKey reads the API key from a file or $OPENAI_API_KEY.
func apiKey(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--api-key-file: %w", err)
		}
		return checkKey("--api-key-file "+file, strings.TrimSpace(string(b)))
	}
	return checkKey("$OPENAI_API_KEY", os.Getenv("OPENAI_API_KEY"))
}

// checkKey rejects a key that cannot be sent in a header, without quoting it.
func checkKey(from, key string) (string, error) {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("%s: the API key contains a control character at byte %d (two lines in the file?)", from, i)
		}
	}
	return key, nil
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	terminal := false
	if f, ok := stderr.(*os.File); ok {
		terminal = term.IsTerminal(int(f.Fd()))
	}
	// Everything printed goes through the run's secrets: URL credentials
	// from the start, the API key and the credentials of the flags and the
	// environment once they are parsed.
	secrets := &secret.Redactor{}
	stdout, stderr = secret.Writer(stdout, secrets), secret.Writer(stderr, secrets)
	o := options.Defaults()
	var prof profiles
	// Every problem is reported at once: bad flag values, then what finish
	// and Validate find.
	args = joinGoodputArgs(args) // vLLM's --goodput ttft:500 tpot:50 (flags_observe.go)
	fs, file, errs, code, ok := parseRunSeries(args, &o, &prof, nil, "Usage: fineserve-gen [run] [flags]\n\n", stdout, stderr)
	if !ok {
		return code
	}
	*secrets = *o.Secrets()
	if len(errs) > 0 {
		return usageExit(stderr, located(file, append(errs, o.Validate()))...)
	}
	if file != nil && file.Series != nil {
		// Every run of the series is checked before the first sends.
		if errs := seriesErrors(args, file, nil); len(errs) > 0 {
			return usageExit(stderr, errs...)
		}
		return runSeries(ctx, args, &o, file.Series, stdout, stderr)
	}
	if o.ApplyChatTemplate {
		fmt.Fprintln(stderr, "warning: --apply-chat-template: no tokenizer is loaded; use --backend openai-chat to have the server apply the model's chat template")
	}
	if o.Insecure {
		fmt.Fprintln(stderr, "warning: --insecure: TLS certificates are not verified")
	}
	o.Command = commandLine(safeArgs(args, secrets))
	o.Settings = settingsOf(fs, secrets)
	o.SettingsFile, o.FileSettings = fileSettings(file, o.Settings, secrets)
	o.EffectiveSettings = runfile.Effective(fs, nil, secrets.String)
	o.NoMergeState = o.SummaryJSON == "" && o.OutputFile == ""
	stopProfiles, err := startProfiles(prof)
	if err != nil {
		return exitCode(&options.UsageError{Err: err}, stderr)
	}
	rc := runExperiment(ctx, &o, file, runner.IO{Out: stdout, Err: stderr, Terminal: terminal, Abort: abortFrom(ctx), Hurry: hurryFrom(ctx)}, stderr)
	perr := stopProfiles()
	if perr != nil {
		fmt.Fprintf(stderr, "fineserve-gen: %v\n", perr)
	}
	if perr != nil && rc == exitOK {
		rc = exitFailure // an output could not be written at the end
	}
	return rc
}

// parseRunFlags parses args into o with the run's flags and those extra
// adds (nil: none), as run and sweep do. It returns the flag set, the run
// file read (nil: none) and every problem found (bad values, extra
// arguments, what finishing o finds, a run file's series, which only run
// makes), or ok false and the exit code when the command ends here:
// --help (usage, then the flags) or flags that cannot be parsed.
func parseRunFlags(args []string, o *options.Options, prof *profiles, extra func(*pflag.FlagSet), usage string, stdout, stderr io.Writer) (fs *pflag.FlagSet, file *runfile.File, errs []error, code int, ok bool) {
	fs, file, errs, code, ok = parseRunSeries(args, o, prof, extra, usage, stdout, stderr)
	if ok && file != nil && file.Series != nil {
		series := file.Series
		errs = append(errs, fmt.Errorf("--%s: line %d: a list of %s values is a series of runs, which fineserve-gen run makes (a sweep's loads: --sweep-values)",
			runfile.FlagName, series.Line, series.Flag))
	}
	return fs, file, errs, code, ok
}

// settleRunOptions ends a subcommand's reading of the run's flags (plan,
// sweep): the problems found (errs) and those of o.Validate end the command
// with a usage error, those of file's settings at their lines, else o gets
// the command line (its credentials hidden) and the settings its outputs
// record. ok false: the exit code.
func settleRunOptions(name string, args []string, fs *pflag.FlagSet, file *runfile.File, o *options.Options, errs []error, stderr io.Writer) (code int, ok bool) {
	if len(errs) > 0 {
		return usageExit(stderr, located(file, errs)...), false
	}
	if err := o.Validate(); err != nil {
		return usageExit(stderr, located(file, []error{err})...), false
	}
	o.Command = commandLine(append([]string{name}, safeArgs(args, o.Secrets())...))
	o.Settings = settingsOf(fs, o.Secrets())
	return 0, true
}

// located gives the problems of errs that name a setting of the run file
// (nil: none) its line (runfile.File.Locate): the file's problems have
// theirs, and the checks of the options name flags, not lines.
func located(file *runfile.File, errs []error) []error {
	out := make([]error, len(errs))
	for i, err := range errs {
		out[i] = locate(file, err)
	}
	return out
}

// locate is file.Locate(err) that keeps a usage error one.
func locate(file *runfile.File, err error) error {
	l := file.Locate(err)
	var ue *options.UsageError
	if l != err && errors.As(err, &ue) {
		return options.Usage(l)
	}
	return l
}

// parseRunSeries is parseRunFlags that leaves a run file's series of runs
// (file.Series) to the caller instead of refusing it.
func parseRunSeries(args []string, o *options.Options, prof *profiles, extra func(*pflag.FlagSet), usage string, stdout, stderr io.Writer) (fs *pflag.FlagSet, file *runfile.File, errs []error, code int, ok bool) {
	fs, finish := runFlags(o, prof)
	if extra != nil {
		extra(fs)
	}
	errs, err := parseAll(fs, args)
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "%s%s", usage, fs.FlagUsages())
			return nil, nil, nil, exitOK, false
		}
		return nil, nil, nil, usageExit(stderr, append(errs, err)...), false
	}
	if path := fs.Lookup(runfile.FlagName).Value.String(); path != "" {
		f, err := runfile.Apply(fs, path, func(name string) string { return nearestFlag(fs, name) })
		if err != nil {
			errs = append(errs, err)
		}
		file = f
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := finish(); err != nil {
		errs = append(errs, err)
	}
	return fs, file, errs, 0, true
}

// settingsOf is what a summary records of fs: the flags given, on the
// command line or in a run file, with their values, credentials hidden.
func settingsOf(fs *pflag.FlagSet, secrets *secret.Redactor) map[string]any {
	return runfile.Settings(fs, nil, secrets.String)
}

// fileSettings are the run file's path (credentials hidden) and the names
// of settings it gave, in order (file nil: none).
func fileSettings(file *runfile.File, settings map[string]any, secrets *secret.Redactor) (string, []string) {
	if file == nil {
		return "", nil
	}
	var names []string
	for name := range file.Lines {
		if _, ok := settings[name]; ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return secrets.String(file.Path), names
}

// commandLine rebuilds the command line for the summary, quoting arguments
// that need it.
func commandLine(args []string) string {
	parts := []string{"fineserve-gen"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'\\$`!*?[]{}()<>|&;") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
