// Package workload turns a mode's options into the schedule a run sends and
// everything known about it (count, span, tokens, hash, metadata), measured
// in one pass. It reads input files but never the clock or the network.
package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/note"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/cancel"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// Logger receives the notes and warnings that building a workload prints
// (Infof, Warnf): the one logger interface the run's parts share.
type Logger = note.Logger

// Config is what a workload is built from: the mode and its options, the
// request sizes, the token limit (found by the caller, e.g. from the
// server's model list) and the shard.
type Config struct {
	// Spec is what the command line says of the schedule (options.Options
	// embeds the same struct: nothing is copied field by field).
	Spec
	Seed uint64

	// Sizing is how the dataset's prompts and replies are counted: a
	// tokenizer's tokens, the server's /tokenize (a function: this package
	// sends nothing itself), or words.
	Sizing prompt.Sizing
	// TokenLimit bounds a request's input plus output tokens (0:
	// replay.DefaultTokenLimit); TokenLimitFrom names where it comes from.
	TokenLimit     int
	TokenLimitFrom string

	// API is the API kind the schedule is for: one that generates images
	// makes every request an image generation, and only it takes an
	// image-generation trace (unless DryRun: nothing is sent).
	API    *api.Kind
	DryRun bool

	// Endpoints spreads the requests over several endpoints (endpoints.go).
	Endpoints EndpointOptions

	// Keep the arrivals with Index % ShardCount == ShardIndex.
	ShardIndex, ShardCount int64

	// ScheduleOut, when set, receives the schedule CSV (this shard's
	// arrivals) during the one pass.
	ScheduleOut io.Writer
	// Stop, when set, ends the pass once it is closed (the run was stopped
	// by a signal while a long schedule was walked): Build returns
	// ErrStopped. It is read every 65,536 arrivals, never for the
	// schedule's content.
	Stop <-chan struct{}

	// Resolved load control (loadctl.go), for the mode's schedule.
	profile *arrival.Profile
	mixture *arrival.MixtureLengths
	// Sessions plans multi-turn sessions (sessions.go); SessionsOut, when
	// set, receives the plan's CSV (this shard's sessions).
	Sessions    session.Config
	SessionsOut io.Writer
}

// Spec is a schedule as the command line describes it: the mode (a row of
// the mode table) and its load, the request sizes, the mode's own options,
// models, load control and multi-turn conversations. The command's
// options embed it, and Config carries it with what a run resolves (the
// seed, the token limit, the shard, the sessions' plan).
type Spec struct {
	Mode          string // a row of the mode table (modes.go)
	RequestRate   float64
	Burstiness    float64
	NumPrompts    int64
	NumPromptsSet bool // --num-prompts was given explicitly
	Duration      time.Duration
	TimeScale     float64

	// Request sizes.
	DatasetName        string // sharegpt, sharegpt_pre, random, or ""
	DatasetPath        string
	RandomInputLen     int
	RandomOutputLen    int
	RandomRangeRatio   float64
	SharegptOutputLen  int
	SharegptContextLen int

	Replay     ReplayOptions
	Agentic    AgenticOptions // the replay of agentic traces (agentic.go)
	Parametric ParametricOptions
	Models     ModelOptions
	Load       LoadOptions

	// Media: synthetic images and audio in every request (media.go).
	Media MediaOptions

	// MultiTurn makes the dataset's conversations the sessions
	// (--multi-turn; sessions.go).
	MultiTurn bool
}

// Workload is a built schedule and what is known about it. The facts are
// measured in one walk of the whole schedule; the schedule can be walked
// again (by the dispatcher) and yields the same arrivals.
type Workload struct {
	// Schedule yields this shard's arrivals.
	Schedule arrival.Schedule
	// Stats are this shard's count, span and token totals.
	Stats arrival.Stats
	// First is the shard's first arrival (zero when the schedule is empty).
	First arrival.Arrival
	// Hash is "sha256:" and the SHA-256 of the schedule CSV of the whole
	// (unsharded) schedule, header included, so `--dry-run --schedule-out
	// s.csv && sha256sum s.csv` gives the same digits (also for a copy of
	// a sharded run, whose round-robin endpoints differ from the whole
	// run's: the hash has the whole run's); Total counts its arrivals.
	Hash  string
	Total int64
	// Dataset is the prompt dataset (--dataset-path), nil without one.
	Dataset *prompt.Dataset
	// Replay describes the replayed trace (replay mode only).
	Replay *ReplayInfo
	// Breakdowns are the summary's breakdowns this workload calls for, in
	// order: BreakdownKind (requests with images vs text) and
	// BreakdownModel (per served model).
	Breakdowns []string
	// Images: every request generates images (openai-images).
	Images bool
	// Answers is what the backend's answers are measured by: a batching
	// backend's (vectors, scores) carry no output tokens.
	Answers api.Measure
	// ImageOptions is how requests with input images are built; Audio the
	// clip every request carries (--audio-seconds; none without).
	ImageOptions prompt.ImageOptions
	Audio        prompt.AudioOptions

	// Profile is the target profile of --stages or a ramp (nil without
	// one) and TargetRate its summary section.
	Profile    *arrival.Profile
	TargetRate *metrics.TargetRate
	// LengthMix is the --lengths mixture as the whole schedule achieved it.
	LengthMix []metrics.LengthMixEntry
	// Prefix are --prefix-len's shared prefixes (nil when off), for the
	// prompt builder; SharedPrefixInfo is what the whole schedule made of
	// them.
	Prefix           *prompt.SharedPrefix
	SharedPrefixInfo *metrics.SharedPrefixInfo
	// Sessions is the plan of this shard's sessions (sessions.go), nil
	// without sessions.
	Sessions *Sessions
	// Cancel is the run's request cancellation (nil when off): every
	// arrival carries its decision (CancelAfter), and so does every
	// planned session turn. Cancelled counts this shard's arrivals it
	// cancels.
	Cancel    *cancel.Policy
	Cancelled int64
	// Conversations are the dataset's conversations (--multi-turn), nil
	// otherwise.
	Conversations *prompt.Conversations
	// Agentic is the plan of an agentic trace's conversations (agentic.go;
	// nil for any other workload): each arrival is a conversation's start.
	Agentic *Agentic
	// Balance is the plan of the requests' endpoints (nil with one
	// endpoint): the schedule's arrivals carry theirs, a session's later
	// turns take theirs from it (balance.Plan.Turn).
	Balance *balance.Plan

	// traceModels are the distinct model names a replayed trace gives, and
	// scheduleModels tells that they are already served names (a schedule
	// CSV): what routing starts from (models.go).
	traceModels    []string
	scheduleModels bool
}

// The breakdowns a workload may call for (the summary keys).
const (
	BreakdownKind  = "per_kind"
	BreakdownModel = "per_model"
)

// Build returns the schedule of c's mode, routed to models, cut to its
// length and sharded, with its facts. It reads input files but never the
// clock. A failure to write c.ScheduleOut is a *WriteError; every other
// error is a problem of the options or input.
func Build(c Config, log Logger) (*Workload, error) {
	w := &Workload{Images: c.images(), ImageOptions: c.Replay.imageOptions(), Audio: c.Media.Audio}
	if c.API != nil {
		w.Answers = c.API.Measure
	}
	w.ImageOptions.Format = c.Media.ImageFormat
	ds, err := loadDataset(&c, log)
	if err != nil {
		return nil, err
	}
	w.Dataset = ds
	if err := c.Load.Validate(c.Mode); err != nil {
		return nil, err
	}
	var source string
	if c.profile, source, err = c.Load.profile(&c); err != nil {
		return nil, err
	}
	if c.mixture, err = c.Load.mixture(&c); err != nil {
		return nil, err
	}
	if w.Prefix, err = c.Load.sharedPrefix(&c); err != nil {
		return nil, err
	}
	if w.Cancel, err = c.Load.cancelPolicy(&c); err != nil {
		return nil, err
	}
	if w.Cancel.On() {
		c.Sessions.Cancel = w.Cancel.Cut // later turns (sessions.go)
	}
	// In replay and parametric mode the profile multiplies the speed: the
	// mode's schedule is built for the workload time the profile covers,
	// then warped and cut at --duration.
	wall := c.Duration
	mode, ok := LookupMode(c.Mode)
	if !ok {
		return nil, fmt.Errorf("--mode %q: want %s", c.Mode, ModeNames())
	}
	warp := c.profile != nil && !mode.Rated
	if warp {
		c.Duration = arrival.Seconds(c.profile.Total())
	}
	if err := w.loadConversations(&c, log); err != nil {
		return nil, err
	}
	s, err := mode.schedule(&c, w, log)
	if err != nil {
		return nil, err
	}
	s = c.Media.apply(s, w.ImageOptions)
	if warp {
		s = arrival.Limit(arrival.Warp(s, c.profile), 0, wall)
		c.Duration = wall
	}
	if c.profile != nil {
		w.Profile, w.TargetRate = c.profile, targetRate(c.profile, source, c.Mode)
		log.Infof("target: %s over %.6g s, %s (∫ %.6g)", source, c.profile.End(), w.TargetRate.Unit, c.profile.Total())
	}
	if s, err = routeModels(&c, c.Seed, log, w, s); err != nil {
		return nil, err
	}
	s = balanceEndpoints(&c, w, s)
	// Decided last, on a stream of its own, from the index alone: turning
	// cancellation on changes nothing else of the schedule.
	s = w.Cancel.Apply(s)
	if err := w.measure(s, &c); err != nil {
		return nil, err
	}
	w.Schedule = arrival.Shard(s, c.ShardIndex, c.ShardCount)
	if err := w.agenticSessions(&c, s); err != nil {
		return nil, err
	}
	return w, nil
}

// ErrStopped is Build's error when Config.Stop closed during its pass.
var ErrStopped = errors.New("stopped while the schedule was built")

// WriteError is a failure to write the schedule CSV.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// measure walks the whole schedule s once: its hash and count, and this
// shard's stats, first arrival and CSV rows.
func (w *Workload) measure(s arrival.Schedule, c *Config) error {
	cols := arrival.CSVColumns{Endpoint: c.Endpoints.column(), Cancel: w.Cancel.On()}
	header := cols.Header()
	d := sha256.New()
	d.Write([]byte(header + "\n"))
	var out *csvOut
	if c.ScheduleOut != nil {
		out = newCSVOut(c.ScheduleOut, header)
	}
	plan := newPlanPass(c)
	var line, whole []byte
	// A sharded copy deals round-robin over its own arrivals (the
	// endpoint column depends on the number of copies): the hash is the
	// whole schedule's as one copy would send it, the same for every way
	// the run is split.
	var unsharded *balance.Plan
	if w.Balance != nil && c.ShardCount > 1 && cols.Endpoint {
		u := *w.Balance
		u.Shards = 0
		unsharded = &u
	}
	facts := newLoadFacts(c.mixture, w.Prefix, w.ImageOptions)
	for a := range s {
		if err := c.checkArrival(&a, w.Total); err != nil {
			return err
		}
		if w.Total&0xffff == 0xffff && c.Stop != nil {
			select {
			case <-c.Stop:
				return ErrStopped
			default:
			}
		}
		plan.add(&a, c)
		line = cols.AppendRow(line[:0], a)
		if unsharded != nil {
			h := a
			h.Endpoint = unsharded.Endpoint(a.Index)
			whole = cols.AppendRow(whole[:0], h)
			d.Write(whole)
		} else {
			d.Write(line)
		}
		w.Total++
		facts.add(&a)
		if c.ShardCount > 1 && a.Index%c.ShardCount != c.ShardIndex {
			continue
		}
		if w.Stats.Count == 0 {
			w.First = a
		}
		w.Stats.Count++
		w.Stats.Last = a.At
		w.Stats.Input += int64(a.InputTokens)
		w.Stats.Output += int64(a.OutputTokens)
		w.Stats.Images += int64(a.Images)
		if a.CancelAfter > 0 {
			w.Cancelled++
		}
		out.write(line)
	}
	facts.set(w)
	w.Hash = "sha256:" + hex.EncodeToString(d.Sum(nil))
	w.Sessions = plan.finish()
	if err := out.close(); err != nil {
		return &WriteError{err}
	}
	if err := plan.closeOut(); err != nil {
		return &WriteError{err}
	}
	return nil
}

// csvOut writes schedule rows through a buffer, keeping the first error.
type csvOut struct {
	w   io.Writer
	buf []byte
	err error
}

func newCSVOut(w io.Writer, header string) *csvOut {
	return &csvOut{w: w, buf: append(make([]byte, 0, 1<<16), header+"\n"...)}
}

func (o *csvOut) write(line []byte) {
	if o == nil || o.err != nil {
		return
	}
	if len(o.buf)+len(line) > cap(o.buf) {
		o.flush()
	}
	o.buf = append(o.buf, line...)
}

func (o *csvOut) flush() {
	if o.err == nil && len(o.buf) > 0 {
		_, o.err = o.w.Write(o.buf)
	}
	o.buf = o.buf[:0]
}

func (o *csvOut) close() error {
	if o == nil {
		return nil
	}
	o.flush()
	return o.err
}

// checkArrival stops a schedule that no run could keep: an arrival due
// later than arrival.MaxSpan (an offset that overflowed: a tiny
// --request-rate or --time-scale), or more than arrival.MaxRequests
// arrivals. n is how many came before a.
func (c *Config) checkArrival(a *arrival.Arrival, n int64) error {
	if n >= arrival.MaxRequests {
		return fmt.Errorf("the schedule has more than %d requests, the most one run may have: lower --num-prompts or --duration (or split the run into several)", int64(arrival.MaxRequests))
	}
	if a.At >= 0 && a.At <= arrival.MaxSpan {
		return nil
	}
	due := "after " + arrival.MaxSpan.String()
	if a.At > 0 && a.At < math.MaxInt64 {
		due = fmt.Sprintf("at %.0f s", a.At.Seconds())
	}
	hint := fmt.Sprintf("raise --request-rate (now %g)", c.RequestRate)
	if c.Mode != "poisson" || c.profile != nil {
		hint = fmt.Sprintf("raise --time-scale (now %g)", c.TimeScale)
	}
	return fmt.Errorf("request %d is due %s, later than the longest schedule (%.0f days): %s, or send fewer requests (--num-prompts)", a.Index, due, arrival.MaxSpan.Hours()/24, hint)
}

// images reports whether every request generates images.
// mode is c's row of the mode table (an empty row for an unknown name).
func (c *Config) mode() *Mode {
	if m, ok := LookupMode(c.Mode); ok {
		return m
	}
	return &Mode{}
}

func (c *Config) images() bool {
	return c.API.Has(api.GeneratesImages)
}

// tokenLimit is the most tokens (input plus output) one request may have,
// and where that limit comes from. The schedule is built with it, so a
// request above it is never built: trace rows are left out and counted,
// length flags are an error.
func (c *Config) tokenLimit() (int, string) {
	if c.TokenLimit > 0 {
		return c.TokenLimit, c.TokenLimitFrom
	}
	return replay.DefaultTokenLimit, "the built-in cap"
}

// loadDataset reads --dataset-path when given.
func loadDataset(c *Config, log Logger) (*prompt.Dataset, error) {
	if c.DatasetPath == "" {
		return nil, nil
	}
	kind := c.DatasetName
	if kind == "" || kind == "random" {
		kind = "sharegpt"
	}
	ds, err := prompt.LoadDatasetSized(c.DatasetPath, kind, 0, c.Sizing)
	if err != nil {
		return nil, err
	}
	if ds.Skipped > 0 {
		log.Warnf("dataset %s: skipped %d entries without a prompt and a reply", c.DatasetPath, ds.Skipped)
	}
	log.Infof("dataset %s: %d prompts, sized in %s", c.DatasetPath, ds.Len(), unitsLine(ds.Units))
	return ds, nil
}

// unitsLine says what a dataset's lengths count.
func unitsLine(units string) string {
	switch units {
	case prompt.UnitTokenizer:
		return "the tokenizer's tokens (--tokenizer)"
	case prompt.UnitServer:
		return "the server's tokens (--tokenize-via-server)"
	}
	return "words (give --tokenizer or --tokenize-via-server for tokens)"
}

// lengthSource picks how a synthetic schedule sizes its requests: the
// dataset's own lengths (sharegpt modes) or --random-* lengths.
func lengthSource(c *Config, ds *prompt.Dataset, log Logger) (arrival.Lengths, error) {
	if c.mixture != nil {
		if ds != nil && c.DatasetName != "random" {
			return nil, errors.New("--lengths and --dataset-path: choose one (the dataset gives its own lengths; --dataset-name random keeps its text with --lengths)")
		}
		log.Infof("request sizes: --lengths %s", c.mixture)
		return c.mixture, nil
	}
	if ds != nil && c.DatasetName != "random" {
		pairs := ds.Lengths(c.SharegptOutputLen)
		if c.SharegptContextLen > 0 {
			kept := pairs[:0]
			for _, p := range pairs {
				if p[0]+p[1] <= c.SharegptContextLen {
					kept = append(kept, p)
				}
			}
			if len(kept) == 0 {
				return nil, fmt.Errorf("--sharegpt-context-len %d leaves no prompt of the dataset", c.SharegptContextLen)
			}
			pairs = kept
		}
		pairs, err := limitPairs(c, log, "dataset "+c.DatasetPath, pairs)
		if err != nil {
			return nil, err
		}
		return arrival.SequenceLengths{Pairs: pairs}, nil
	}
	u := arrival.UniformLengths{Input: c.RandomInputLen, Output: c.RandomOutputLen, RangeRatio: c.RandomRangeRatio}
	if err := u.Validate(); err != nil {
		return nil, err
	}
	if err := checkUniform(c, u); err != nil {
		return nil, err
	}
	return u, nil
}

func poissonSchedule(c *Config, ds *prompt.Dataset, log Logger) (arrival.Schedule, error) {
	lengths, err := lengthSource(c, ds, log)
	if err != nil {
		return nil, err
	}
	if c.TimeScale != 1 {
		// Not an error: FineServe's own command lines pass it with
		// poisson (its Generator.py ignores it there too); but not
		// silent either.
		log.Warnf("--time-scale %g is ignored in --mode poisson: its arrivals come at --request-rate %g, with no trace gaps to scale; set the load with --request-rate (--time-scale speeds up --mode replay and parametric)",
			c.TimeScale, c.RequestRate)
	}
	pc := arrival.PoissonConfig{
		Rate: c.RequestRate, Burstiness: c.Burstiness, Seed: c.Seed, Lengths: lengths,
		Duration: c.Duration, Profile: c.profile,
	}
	// A staged run ends with its stages, or earlier at an explicit
	// --num-prompts or --duration.
	if c.NumPromptsSet || c.Duration <= 0 && c.Load.Stages == "" {
		pc.Count = c.NumPrompts
	}
	if err := pc.Validate(); err != nil {
		return nil, err
	}
	return arrival.Poisson(pc), nil
}

// Line describes the schedule in one line; a rate only when it has one
// (two arrivals or more, not all due at once), output tokens only when the
// answers are tokens or images (a batching backend's are vectors or
// scores: the arrivals' output lengths are not asked for).
func (w *Workload) Line() string {
	st := w.Stats
	tokens := fmt.Sprintf("%d input and %d output tokens", st.Input, st.Output)
	if w.Answers.Batches() {
		tokens = fmt.Sprintf("%d input tokens (answered with %s, no output tokens)", st.Input, w.Answers)
	}
	switch {
	case st.Count == 1:
		return fmt.Sprintf("schedule: 1 request at %.3f s, %s", st.Last.Seconds(), tokens)
	case st.Count == 0 || st.Last <= 0:
		return fmt.Sprintf("schedule: %d requests, all due at the start, %s", st.Count, tokens)
	}
	return fmt.Sprintf("schedule: %d requests over %.3f s (mean %.2f req/s), %s", st.Count, st.Last.Seconds(), st.MeanRate(), tokens)
}

// CancelLine says how many of this shard's arrivals are to be cancelled
// ("" when cancellation is off).
func (w *Workload) CancelLine() string {
	if !w.Cancel.On() {
		return ""
	}
	return fmt.Sprintf("cancel: %d of %d requests planned to be cut (%s)", w.Cancelled, w.Stats.Count, w.Cancel)
}
