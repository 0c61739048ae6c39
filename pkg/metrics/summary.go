package metrics

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// Summary is the result of a run: FineServe's summary keys and ours. It
// marshals flat: distribution fields become keys like mean_ttft_ms or
// send_lag_p99_ms (see the Dist fields' comments).
type Summary struct {
	// Run description.
	Backend        string `json:"backend"`
	Mode           string `json:"mode"`
	RequestRate    Rate   `json:"request_rate"`
	MaxConcurrency *int   `json:"max_concurrency"`
	// Burstiness is --burstiness of a Poisson-mode run (1: Poisson; the
	// gaps' Gamma shape), as vLLM's result writes it; null in the other
	// modes, whose gaps come from a trace or a Gamma file.
	Burstiness *float64 `json:"burstiness"`
	Model      string   `json:"model,omitempty"`
	Seed       uint64   `json:"seed"`
	Command    string   `json:"command,omitempty"`
	// Settings are the flags the run was given (on the command line or in
	// a run file) with their values: a run file (--config) that repeats
	// the run (pkg/runfile).
	Settings map[string]any `json:"settings,omitempty"`
	// SettingsFile is the run file (--config) the settings were read
	// from, under the command line's ("": none); FileSettings name the
	// settings it gave (the command line gave the others).
	SettingsFile string   `json:"settings_file,omitempty"`
	FileSettings []string `json:"file_settings,omitempty"`
	// EffectiveSettings are every setting the run ran with — Settings,
	// and every other flag at its default — as config expand writes them
	// (credentials hidden): the run, whatever another version's defaults.
	EffectiveSettings map[string]any `json:"effective_settings,omitempty"`
	StartedAt         string         `json:"started_at,omitempty"`

	// FineServe's results.
	Duration  float64 `json:"duration"`
	Completed int64   `json:"completed"`
	Failed    int64   `json:"failed"`
	// Cancelled counts the requests the client cut at their planned cut
	// (--cancel-share; absent when none): not failures, and none of the
	// completed requests' figures count them. CancelledFirstToken are those
	// that had received a first token, CancelledOutputTokens the tokens
	// they had received.
	Cancelled             int64   `json:"cancelled,omitempty"`
	CancelledFirstToken   int64   `json:"cancelled_first_token,omitempty"`
	CancelledOutputTokens int64   `json:"cancelled_output_tokens,omitempty"`
	TotalInputTokens      int64   `json:"total_input_tokens"`
	TotalOutputTokens     int64   `json:"total_output_tokens"`
	RequestThroughput     float64 `json:"request_throughput"`
	InputThroughput       float64 `json:"input_throughput"`
	OutputThroughput      float64 `json:"output_throughput"`
	TotalThroughput       float64 `json:"total_throughput"`
	Concurrency           float64 `json:"concurrency"`
	// MaxOutputTokensPerS is vLLM's peak output token throughput: the most
	// output tokens of completed requests in one 1-second bucket, counted
	// from the run's start, each token at the time of the chunk that
	// carried it (a request's tokens beyond its chunks at its last chunk,
	// all of a non-streamed answer's at its end). Exact across a merge.
	MaxOutputTokensPerS float64 `json:"max_output_tokens_per_s"`

	// Schedule keeping.
	Scheduled    int64   `json:"scheduled"`
	NotSent      int64   `json:"not_sent"`
	Queued       int64   `json:"queued_for_concurrency"`
	MaxInFlight  int64   `json:"max_in_flight"`
	ScheduleSpan float64 `json:"schedule_span_s"`
	Interrupted  bool    `json:"interrupted"`
	// EndedEarly is when (s after the start) a run ended before its
	// schedule as planned — a sweep's step whose verdict was settled
	// (runner.IO.Stop): its schedule was sent up to then, those in flight
	// completed. 0: it ran its schedule.
	EndedEarly    float64          `json:"ended_early_s,omitempty"`
	ErrorRate     float64          `json:"error_rate"`
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	ErrorSamples  []ErrorSample    `json:"error_samples,omitempty"`
	Retries       int64            `json:"retries"`
	CachedTokens  int64            `json:"cached_prompt_tokens"`
	Images        int64            `json:"total_input_images,omitempty"`
	// Image generation (--backend openai-images): images returned and
	// images/s over the run. Such runs have no tokens: their TTFT, TPOT
	// and ITL keys are left out (see NoTokenMetrics).
	GeneratedImages int64   `json:"total_generated_images,omitempty"`
	ImageThroughput float64 `json:"image_throughput,omitempty"`

	// Prompt sizing against the server's usage.prompt_tokens.
	PromptTokensCounted   int64   `json:"prompt_tokens_counted"`
	PromptTokensErrorMean float64 `json:"prompt_tokens_error_mean"`
	PromptTokensErrorMax  int64   `json:"prompt_tokens_error_max"`
	// OutputTokensFrom counts the completed requests whose output tokens
	// the client counted because the server reported none, by how
	// (record.OutputChunks: the stream's chunks; OutputText: the answer's
	// words or --tokenizer's tokens; OutputRequested: a whole answer
	// without a count, taken at the length asked for). Absent when the
	// server counted every one.
	OutputTokensFrom map[string]int64 `json:"output_tokens_from,omitempty"`
	// PromptUnits is the unit text prompts were sized in (absent for
	// token-id prompts, exact by construction): "words" (whitespace-
	// separated, the built-in server's count; a dataset's prompts are then
	// not sized in a model's tokens), "tokenizer" (--tokenizer's tokens,
	// exactly) or "server" (a dataset's lengths from the server's
	// /tokenize, --tokenize-via-server; other sizes cut in words).
	PromptUnits string `json:"prompt_units,omitempty"`

	// RecordsBacklog is the most per-request records that waited in memory
	// for a results file that fell behind (absent when it kept up).
	RecordsBacklog *RecordsBacklog `json:"records_backlog,omitempty"`

	// Distributions (ms), null when there is no sample (Dist.Empty). TTFT,
	// TPOT, ITL and E2E marshal as
	// {mean,median,std,p90,p95,p99,p999,max}_{ttft,tpot,itl,e2e_latency}_ms;
	// SendLag, TTFTFromScheduled and E2EFromScheduled as
	// {send_lag,ttft_from_scheduled,e2e_from_scheduled}_{mean,p50,std,p90,p95,p99,p999,max}_ms.
	TTFT              Dist `json:"-"`
	TPOT              Dist `json:"-"`
	ITL               Dist `json:"-"`
	E2E               Dist `json:"-"`
	SendLag           Dist `json:"-"`
	TTFTFromScheduled Dist `json:"-"`
	E2EFromScheduled  Dist `json:"-"`
	// TTFTPer1kPrompt marshals as
	// ttft_per_1k_prompt_tokens_{mean,p50,p90,p99}_ms.
	TTFTPer1kPrompt Dist `json:"-"`
	// TTFO (time to first output token: content or a tool call, after any
	// reasoning) and ToolTTFT (time to the first tool-call token) marshal
	// as {mean,median,…}_ttfo_ms and {mean,median,…}_tool_call_ttft_ms,
	// only with Answers (a run that saw reasoning, tool calls or checked
	// structured output).
	TTFO     Dist `json:"-"`
	ToolTTFT Dist `json:"-"`
	// Answers are the answers' reasoning, tool-call and structured-output
	// figures (answers.go; flat keys, nil: none seen).
	Answers *AnswersSummary `json:"-"`
	// Agents are the agentic conversations' figures (agents.go; the
	// "agents" section, nil: none).
	Agents *AgentsSummary `json:"-"`
	// Pooling is a batching backend's section (pooling.go): inputs sent,
	// vectors or scores returned, the vectors' length.
	Pooling *PoolingSummary `json:"-"`
	// HTTPPhases are the requests' HTTP phases (phases.go; the
	// http_phases section, nil: not timed).
	HTTPPhases *HTTPPhasesSummary `json:"-"`

	// Sections, written after the distributions in key order
	// (sectionFields), each absent when unset.

	// WindowSeconds is the length of the windows (window_seconds, > 0 in a
	// run that keeps them); Windows the run's time series (windows).
	WindowSeconds float64       `json:"-"`
	Windows       []WindowStats `json:"-"`
	// ClientCPU is the generator's CPU over the run as a share of
	// GOMAXPROCS cores (client_cpu_mean; nil: not measured).
	ClientCPU *float64 `json:"-"`
	// Saturation is the client's self-check (client_saturated…).
	Saturation *Saturation `json:"-"`
	// Goodput is set with --goodput (request_goodput, goodput_share,
	// goodput_requests, goodput_slo_ms).
	Goodput *GoodputSummary `json:"-"`
	// LatencyCDFs are the latency distributions sampled for plots
	// (latency_cdfs); LengthHistograms the input and output lengths
	// (length_histograms).
	LatencyCDFs      map[string][][2]float64 `json:"-"`
	LengthHistograms map[string]*LengthBins  `json:"-"`
	// ServerMetrics is what the target's /metrics said over the run
	// (server_metrics).
	ServerMetrics *ServerSummary `json:"-"`
	// GPU is what the GPU telemetry said over the run (gpu).
	GPU *GPUSummary `json:"-"`
	// OTLP says how the export to a collector went (otlp).
	OTLP *OTLPSummary `json:"-"`
	// PerModel and PerKind are the breakdowns by served model and by
	// request kind (per_model, per_kind).
	PerModel map[string]GroupSummary `json:"-"`
	PerKind  map[string]GroupSummary `json:"-"`
	// Endpoints is the breakdown by endpoint of a run with several
	// (endpoints; endpoints.go), in the order of --base-url.
	Endpoints []EndpointSummary `json:"-"`
	// Replay describes the replayed trace (replay).
	Replay *ReplayInfo `json:"-"`
	// Load control (loadctl.go): the target profile (target_rate), the
	// length mixture (length_mix) and the shared prefixes (shared_prefix).
	TargetRate   *TargetRate       `json:"-"`
	LengthMix    []LengthMixEntry  `json:"-"`
	SharedPrefix *SharedPrefixInfo `json:"-"`
	// Sessions and PerTurn describe a run of multi-turn sessions
	// (sessions, per_turn; sessions.go).
	Sessions *SessionsSummary `json:"-"`
	PerTurn  []TurnSummary    `json:"-"`

	// SteadyState is the figures over the steady-state window
	// (steady_state; steady.go, --steady-state); Repeats a repeated run's
	// intervals (repeats; repeats.go, --repeat).
	SteadyState *SteadyStateSummary `json:"-"`
	Repeats     *RepeatsSummary     `json:"-"`
	// Thresholds are the --threshold verdicts on the run (thresholds;
	// repeats.go), judged before the summary is written.
	Thresholds []ThresholdVerdict `json:"-"`

	// Scale-out (docs/SCALE_OUT.md): the whole schedule's hash
	// (schedule_hash), the shards covered (shard), --start-at (start_at,
	// RFC 3339 UTC), what merging needs (merge_state), and what a merge
	// adds (merged_from, merge_warnings, merge_notes).
	ScheduleHash  string       `json:"-"`
	Shard         *ShardInfo   `json:"-"`
	StartAt       string       `json:"-"`
	MergeState    *MergeState  `json:"-"`
	MergedFrom    []MergedFrom `json:"-"`
	MergeWarnings []string     `json:"-"`
	MergeNotes    []string     `json:"-"`
}

// RecordsBacklog is an amount of records waiting for the disk.
type RecordsBacklog struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// Rate is a request rate that marshals +Inf as the string "inf" (JSON has
// no infinity) and 0 as null (no rate: replay and parametric modes).
type Rate float64

// MarshalJSON implements json.Marshaler.
func (r Rate) MarshalJSON() ([]byte, error) {
	switch {
	case math.IsInf(float64(r), 1):
		return []byte(`"inf"`), nil
	case r == 0 || math.IsNaN(float64(r)):
		return []byte("null"), nil
	}
	return json.Marshal(float64(r))
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *Rate) UnmarshalJSON(b []byte) error {
	switch string(b) {
	case `"inf"`, `"Infinity"`, "Infinity":
		*r = Rate(math.Inf(1))
		return nil
	case "null":
		*r = 0
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("request_rate: %w", err)
	}
	*r = Rate(f)
	return nil
}

type distField struct {
	get    func(*Summary) *Dist
	name   string
	prefix bool // FineServe style: mean_ttft_ms; else send_lag_mean_ms
	tokens bool // measured on tokens: absent from image-generation runs
	// only lists the figures written, by their suffix name (nil: all).
	only []string
	// answers: written only with Summary.Answers (answers.go).
	answers bool
}

// NoTokenMetrics reports whether the run's backend measures no tokens
// (image generation, pooling): TTFT, TPOT and ITL do not apply and are left out of
// the summary and the table.
func (s *Summary) NoTokenMetrics() bool { return !s.Measure().Tokens() }

// Measure is what the run's API kind measures, by the name it records
// (tokens for an unknown name).
func (s *Summary) Measure() api.Measure {
	if b, ok := api.Lookup(s.Backend); ok {
		return b.Measure
	}
	return api.MeasureTokens
}

var distFields = []distField{
	{func(s *Summary) *Dist { return &s.E2E }, "e2e_latency", true, false, nil, false},
	{func(s *Summary) *Dist { return &s.TTFT }, "ttft", true, true, nil, false},
	{func(s *Summary) *Dist { return &s.TPOT }, "tpot", true, true, nil, false},
	{func(s *Summary) *Dist { return &s.ITL }, "itl", true, true, nil, false},
	{func(s *Summary) *Dist { return &s.SendLag }, "send_lag", false, false, nil, false},
	{func(s *Summary) *Dist { return &s.TTFTFromScheduled }, "ttft_from_scheduled", false, true, nil, false},
	{func(s *Summary) *Dist { return &s.E2EFromScheduled }, "e2e_from_scheduled", false, false, nil, false},
	{func(s *Summary) *Dist { return &s.TTFTPer1kPrompt }, "ttft_per_1k_prompt_tokens", false, true, []string{"mean", "p50", "p90", "p99"}, false},
	{get: func(s *Summary) *Dist { return &s.TTFO }, name: "ttfo", prefix: true, tokens: true, answers: true},
	{get: func(s *Summary) *Dist { return &s.ToolTTFT }, name: "tool_call_ttft", prefix: true, tokens: true, answers: true},
}

// distStat is one figure of a Dist with its name in both key styles.
type distStat struct {
	prefix, suffix string
	v              *float64
}

// stats lists a Dist's figures.
func (d *Dist) stats() []distStat {
	return []distStat{
		{"mean", "mean", &d.Mean}, {"median", "p50", &d.Median}, {"std", "std", &d.Std},
		{"p90", "p90", &d.P90}, {"p95", "p95", &d.P95}, {"p99", "p99", &d.P99},
		{"p999", "p999", &d.P999}, {"max", "max", &d.Max},
	}
}

func (f distField) key(stat distStat) string {
	if f.prefix {
		return stat.prefix + "_" + f.name + "_ms"
	}
	return f.name + "_" + stat.suffix + "_ms"
}

// vllmAliases are the names vLLM's serving benchmark (vllm bench serve)
// gives figures the summary holds under FineServe's or its own names:
// num_prompts (scheduled), total_token_throughput (total_throughput),
// max_concurrent_requests (max_in_flight) and
// {mean,median,std,p90,p95,p99}_e2el_ms ({…}_e2e_latency_ms, null when
// there is no sample). They are written too, after the summary's own
// fields and before the distributions, so a script written for either tool
// reads the file; each equals the value under the other name. Reading
// takes one only when the summary's own key is absent (a file vLLM
// wrote). This table is the one definition behind writing and reading.
func (s *Summary) vllmAliases() []vllmAlias {
	a := []vllmAlias{
		{"num_prompts", "scheduled", &s.Scheduled, nil, nil},
		{"total_token_throughput", "total_throughput", nil, &s.TotalThroughput, nil},
		{"max_concurrent_requests", "max_in_flight", &s.MaxInFlight, nil, nil},
	}
	e2e := distFields[0] // e2e_latency
	for _, st := range s.E2E.stats() {
		switch st.prefix {
		case "mean", "median", "std", "p90", "p95", "p99":
			a = append(a, vllmAlias{st.prefix + "_e2el_ms", e2e.key(st), nil, st.v, &s.E2E})
		}
	}
	return a
}

// vllmAlias is one vLLM name: the summary's own key for the figure, the
// figure (a count or a float), and the distribution it is a figure of
// (nil: none).
type vllmAlias struct {
	theirs, ours string
	count        *int64
	value        *float64
	of           *Dist
}

// MarshalJSON writes the summary as one flat JSON object.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	b, err := json.Marshal(plain(s))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, a := range s.vllmAliases() {
		fmt.Fprintf(&buf, ",%q:", a.theirs)
		switch {
		case a.count != nil:
			buf.WriteString(strconv.FormatInt(*a.count, 10))
		case a.of != nil && a.of.Empty():
			buf.WriteString("null") // no sample: null, not 0
		default:
			v, err := json.Marshal(finite(*a.value))
			if err != nil {
				return nil, err
			}
			buf.Write(v)
		}
	}
	for _, f := range distFields {
		if s.NoTokenMetrics() && f.tokens {
			continue // absent, not zero: image generations have no tokens
		}
		if f.answers && s.Answers == nil {
			continue
		}
		d := f.get(&s)
		empty := d.Empty() // no sample: null, not 0
		for _, st := range d.stats() {
			if f.only != nil && !slices.Contains(f.only, st.suffix) {
				continue
			}
			fmt.Fprintf(&buf, ",%q:", f.key(st))
			if empty {
				buf.WriteString("null")
				continue
			}
			v, err := json.Marshal(finite(*st.v))
			if err != nil {
				return nil, err
			}
			buf.Write(v)
		}
	}
	if s.Answers != nil { // flat keys, after the distributions
		b, err := json.Marshal(s.Answers)
		if err != nil {
			return nil, err
		}
		if len(b) > 2 {
			buf.WriteByte(',')
			buf.Write(b[1 : len(b)-1])
		}
	}
	out, err := s.writeSections(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// decodeKeyed decodes the JSON object b as a P, and returns it with b's
// keys and their raw values: for an UnmarshalJSON that reads its struct
// tags' keys through P (its type without the method) and the keys the
// tags cannot name from the map.
func decodeKeyed[P any](b []byte) (P, map[string]json.RawMessage, error) {
	var p P
	if err := json.Unmarshal(b, &p); err != nil {
		return p, nil, err
	}
	var keys map[string]json.RawMessage
	err := json.Unmarshal(b, &keys)
	return p, keys, err
}

// UnmarshalJSON reads a summary written by MarshalJSON (or FineServe's line,
// whose missing keys stay zero). Unknown keys are ignored.
func (s *Summary) UnmarshalJSON(b []byte) error {
	type plain Summary
	p, all, err := decodeKeyed[plain](b)
	if err != nil {
		return err
	}
	*s = Summary(p)
	for _, f := range distFields {
		d := f.get(s)
		for _, st := range d.stats() {
			k := f.key(st)
			if raw, ok := all[k]; ok {
				if err := json.Unmarshal(raw, st.v); err != nil {
					return fmt.Errorf("%s: %w", k, err)
				}
			}
		}
	}
	var ans AnswersSummary
	if err := json.Unmarshal(b, &ans); err != nil {
		return err
	}
	if ans != (AnswersSummary{}) {
		s.Answers = &ans
	}
	for _, a := range s.vllmAliases() {
		raw, ok := all[a.theirs]
		if _, own := all[a.ours]; own || !ok || string(raw) == "null" {
			continue
		}
		var err error
		if a.count != nil {
			err = json.Unmarshal(raw, a.count)
		} else {
			err = json.Unmarshal(raw, a.value)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", a.theirs, err)
		}
	}
	return s.readSections(all)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// Summarize computes the summary figures of c over a run of the given
// duration (FineServe's benchmark duration: start to last completion).
func (c *Collector) Summarize(s *Summary, dur time.Duration) {
	secs := dur.Seconds()
	per := func(v float64) float64 {
		if secs <= 0 {
			return 0
		}
		return v / secs
	}
	s.Duration = secs
	s.Completed, s.Failed = c.Completed, c.Failed
	s.Cancelled, s.CancelledFirstToken, s.CancelledOutputTokens = c.Cancelled, c.CancelledFirstToken, c.CancelledOutputTokens
	s.TotalInputTokens, s.TotalOutputTokens = c.InputTokens, c.OutputTokens
	s.RequestThroughput = per(float64(c.Completed))
	s.InputThroughput = per(float64(c.InputTokens))
	s.OutputThroughput = per(float64(c.OutputTokens))
	s.TotalThroughput = per(float64(c.InputTokens + c.OutputTokens))
	s.MaxOutputTokensPerS = float64(c.MaxOutputPerSecond())
	s.TTFT, s.TPOT, s.ITL, s.E2E = c.TTFT.Dist(), c.TPOT.Dist(), c.ITL.Dist(), c.E2E.Dist()
	s.SendLag, s.TTFTFromScheduled, s.E2EFromScheduled = c.Lag.Dist(), c.TTFTSched.Dist(), c.E2ESched.Dist()
	s.TTFTPer1kPrompt = c.TTFTPer1k.Dist()
	s.Concurrency = per(s.E2E.Mean * float64(s.E2E.Count) / 1e3)
	s.ErrorsByClass = map[string]int64{}
	for k, v := range c.ErrorsByClass {
		s.ErrorsByClass[k] = v
	}
	s.ErrorSamples = append([]ErrorSample(nil), c.ErrorSamples...)
	if n := c.Completed + c.Failed; n > 0 {
		s.ErrorRate = float64(c.Failed) / float64(n)
	}
	s.Retries, s.CachedTokens, s.Images = c.Retries, c.CachedTokens, c.Images
	s.GeneratedImages, s.ImageThroughput = c.GeneratedImages, per(float64(c.GeneratedImages))
	s.PromptTokensCounted = c.PromptCounted
	s.PromptTokensErrorMax = c.PromptErrMax
	if len(c.OutputFrom) > 0 {
		s.OutputTokensFrom = maps.Clone(c.OutputFrom)
	}
	if c.PromptCounted > 0 {
		s.PromptTokensErrorMean = float64(c.PromptErrSum) / float64(c.PromptCounted)
	}
}
