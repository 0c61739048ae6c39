package options

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// Logger takes a run's notes and warnings.
type Logger = workload.Logger

// Run performs the run o describes and returns its summary: it checks the
// options and the target, builds the workload and has pkg/runner execute
// it. A run that sends nothing (--dry-run) returns a nil summary.
// Per-request failures are in the summary, not in the error; the error
// reports a run that could not be carried out (bad options or input:
// *UsageError).
func Run(ctx context.Context, o Options, stdio runner.IO) (*metrics.Summary, error) {
	secrets := o.Secrets()
	stdio.Out, stdio.Err = secret.Writer(stdio.Out, secrets), secret.Writer(stdio.Err, secrets)
	o.Command = secrets.String(o.Command)
	log := runner.NewLogger(stdio.Err, o.Quiet)
	if err := o.Validate(); err != nil {
		return nil, Usage(err)
	}
	if err := o.LoadTokenizer(); err != nil {
		return nil, Usage(err)
	}
	if err := runner.CheckStartAt(o.StartAt, time.Now(), "at launch"); err != nil && !o.DryRun {
		return nil, Usage(err)
	}
	// Every output is checked before anything is sent, so that a summary
	// is never lost at the end to a missing or read-only directory.
	if err := CheckOutputs(o.Outputs()); err != nil {
		return nil, Usage(err)
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
		if pool, err = o.NewPool(); err != nil {
			return nil, Usage(err)
		}
		defer pool.Close() // the server sees the run's connections close with it
		model, models, err := pool.Check(ctx, o.Model, log)
		if err != nil {
			return nil, err
		}
		o.Model = model
		o.SetServerLimit(models, log)
		if o.TokenizeViaServer {
			cli := pool.First()
			o.countVia = func(text string) (int, error) {
				n, err := cli.Tokenize(ctx, o.Model, text)
				if err != nil {
					return 0, fmt.Errorf("--tokenize-via-server: %s/tokenize: %w", secret.URL(o.baseURL()), err)
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
		return nil, Usage(errors.New("the schedule is empty: nothing to send"))
	}
	cfg, err := o.runConfig(seed, wl, stdio, log)
	if err != nil {
		return nil, Usage(err)
	}
	sum, err := runner.Run(ctx, cfg, wl, pool, stdio)
	if se := (*runner.StartAtError)(nil); errors.As(err, &se) {
		err = Usage(err)
	}
	return sum, err
}

// build builds the workload of a run of seed, writes --schedule-out and
// --sessions-out, and logs what it is.
func (o *Options) build(ctx context.Context, seed uint64, log Logger) (*workload.Workload, error) {
	cfg := o.WorkloadConfig(seed)
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
		return nil, Usage(err)
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
func (o *Options) runConfig(seed uint64, wl *workload.Workload, stdio runner.IO, log Logger) (runner.Config, error) {
	format, err := prompt.ParseFormat(o.PromptFormat)
	if err != nil {
		return runner.Config{}, err
	}
	if o.Kind().Has(api.TextPrompts) || wl.Sessions != nil {
		format = prompt.Text // an image prompt, a rerank's documents are text; a session's completion prompt is its conversation's text
	}
	limit, _ := o.TokenLimit()
	prewarm, err := ParsePrewarm(o.PrewarmConnections)
	if err != nil {
		return runner.Config{}, err
	}
	return runner.Config{
		Summary:        o.summary(seed, wl),
		Prompts:        prompt.Options{Format: format, Salt: o.salt(seed), Suffix: o.PromptSuffix, Tokens: o.Tokens()},
		Model:          o.Model,
		WarmupRequests: o.WarmupRequests,
		Prewarm:        prewarm,
		MaxConcurrency: o.MaxConcurrency, ConcurrencyRamp: o.MaxConcurrencyRamp,
		MaxSessions: o.MaxSessions, ContinueOnError: o.ContinueOnError, TokenLimit: limit,
		Turns:        runner.TurnOptions{KeepReasoning: o.Answer.KeepReasoning, ToolResultLen: o.Answer.ToolResultLen, Chain: o.ResponsesChain},
		StartAt:      o.StartAt,
		DrainTimeout: o.DrainTimeout,
		SLO:          o.Observe.Goodput,
		Monitor:      o.MonitorConfig(wl.Stats, stdio, log),
		Endpoints:    o.shownURLs(),
		ResultsJSONL: o.ResultsJSONL, SummaryJSON: o.SummaryJSON, OutputFile: o.OutputFile,
		ResultsCSV: o.ResultsCSV, ReportHTML: o.Observe.ReportHTML,
		Quiet: o.Quiet,
	}, nil
}

// summary is the run's identity as its summary shows it: what was asked
// (backend, mode, model, seed, command, rates, concurrency bound), the
// workload's shape, and the scale-out fields fineserve-gen merge matches
// copies by (schedule hash, shard, --start-at).
func (o *Options) summary(seed uint64, wl *workload.Workload) metrics.Summary {
	sum := metrics.Summary{Backend: o.Backend, Mode: o.Mode, Model: o.Model, Seed: seed, Command: o.Command}
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
func (o *Options) promptUnits(wl *workload.Workload) string {
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

// ParsePrewarm reads --prewarm-connections: "" (none), auto
// (runner.PrewarmAuto) or a count ≥ 0.
func ParsePrewarm(s string) (int, error) {
	switch s {
	case "":
		return 0, nil
	case "auto":
		return runner.PrewarmAuto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q: want a number of connections ≥ 0 or auto", s)
	}
	return n, nil
}

// Schedule builds the workload o describes and sends nothing, as --dry-run
// does (--schedule-out is written): for commands that read a whole
// schedule (plan). A seed of -1 is taken from the clock and logged.
func Schedule(o Options, stdio runner.IO) (*workload.Workload, uint64, error) {
	o.DryRun = true
	log := runner.NewLogger(secret.Writer(stdio.Err, o.Secrets()), o.Quiet)
	if err := o.Validate(); err != nil {
		return nil, 0, Usage(err)
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
		return nil, 0, Usage(errors.New("the schedule is empty: nothing to plan"))
	}
	return wl, seed, nil
}
