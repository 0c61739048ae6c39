package metrics

import (
	"encoding/json"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// The summary's section keys: what follows the distributions in a summary,
// in this (sorted) order, but for merge_state, which comes last. Each is a typed field of Summary; sectionFields
// maps one to the other.
const (
	KeyClientCPU          = "client_cpu_mean"             // CPU over the run, share of GOMAXPROCS cores
	KeyMachineBusy        = "client_machine_busy"         // bool: send lag from a busy machine (absent when not)
	KeyMachineBusyNote    = "client_machine_busy_note"    // one line: the lag and what it does to the figures
	KeyMachineBusyWindows = "client_machine_busy_windows" // window indices
	KeyClientSaturated    = "client_saturated"            // bool
	KeySaturatedIntervals = "client_saturated_intervals"  // []SaturatedInterval, the live intervals flagged
	KeySaturatedWindows   = "client_saturated_windows"    // window indices
	KeySaturationReason   = "client_saturation_reason"    // one line
	KeyGoodputCount       = "goodput_requests"            // requests meeting every SLO
	KeyGoodputShare       = "goodput_share"               // their share of the finished requests
	KeyGoodputSLO         = "goodput_slo_ms"              // the targets, by metric
	KeyGPU                = "gpu"                         // the GPU telemetry over the run (GPUSummary)
	// KeyHTTPPhases holds the requests' HTTP phases (HTTPPhasesSummary).
	KeyHTTPPhases = "http_phases"
	// KeyCDFs holds latency CDFs: {"ttft": [[ms, q], …], "tpot", "itl",
	// "e2e", "send_lag", and "ttfo" when reasoning or tool calls made the
	// first output token differ from the first token}.
	KeyCDFs = "latency_cdfs"
	// KeyLengths holds length histograms: {"input": LengthBins, "output": …}.
	KeyLengths = "length_histograms"
	// KeyMergeNotes says how the figures that cannot be merged exactly were
	// combined ([]string).
	KeyMergeNotes = "merge_notes"
	// KeyMergeState holds what merging needs exactly (MergeState).
	KeyMergeState = "merge_state"
	// KeyMergeWarnings lists what the merged summaries disagreed on, and
	// missing or duplicated shards ([]string).
	KeyMergeWarnings = "merge_warnings"
	// KeyMergedFrom lists the summaries a merged summary was made of
	// ([]MergedFrom).
	KeyMergedFrom = "merged_from"
	KeyOTLP       = "otlp"      // the export to an OpenTelemetry collector (OTLPSummary)
	KeyPerKind    = "per_kind"  // breakdown by request kind (image, text)
	KeyPerModel   = "per_model" // breakdown by served model
	KeyReplay     = "replay"    // the replayed trace (ReplayInfo)
	// KeyRequestGoodput is requests meeting every SLO per second (vLLM's
	// key).
	KeyRequestGoodput = "request_goodput"
	// KeyScheduleHash is "sha256:" and the SHA-256 of the whole schedule
	// (before sharding) as --schedule-out writes it, header included.
	KeyScheduleHash = "schedule_hash"
	// KeySendRate* are the send rate that fell short of the schedule's
	// (SendRate; absent when it did not): the rate achieved and the rate
	// scheduled (req/s), how late the last request was sent (s) and the
	// share the rate fell short by.
	KeySendRateAchieved  = "send_rate_achieved"
	KeySendRateLastLate  = "send_rate_last_late_s"
	KeySendRateScheduled = "send_rate_scheduled"
	KeySendRateShortfall = "send_rate_shortfall"
	KeyServerMetrics     = "server_metrics" // the server's figures over the run
	// KeyShard is the part of the schedule the summary covers (ShardInfo).
	KeyShard = "shard"
	// KeyStartAt is the --start-at every copy started its schedule at
	// (RFC 3339, UTC; absent without --start-at).
	KeyStartAt       = "start_at"
	KeyWindowSeconds = "window_seconds"
	KeyWindows       = "windows"
)

// Saturation is the client's self-check over a run (SaturationCheck):
// whether the client was the bottleneck, in which windows and live
// intervals, and why, in one line; and whether a busy machine delayed its
// sends though it was not.
type Saturation struct {
	Saturated bool
	// Intervals are the live report intervals flagged CLIENT SATURATED on
	// the live output (at most MaxSaturatedIntervals).
	Intervals []SaturatedInterval
	// Windows are the indices of the windows where it fell behind.
	Windows []int
	Reason  string
	// MachineBusy is true when some window's send lag was over
	// SaturationLag while the client was not saturated (WindowStats.
	// MachineBusy): BusyWindows are those windows, BusyNote says so once,
	// with what it does to the figures.
	MachineBusy bool
	BusyWindows []int
	BusyNote    string
	// SendRate is the send rate over the run when it fell short of the
	// schedule's (Pace.Short; nil when it did not): the run is then
	// Saturated too.
	SendRate *SendRate
}

func (c *Saturation) sendRate() *SendRate {
	if c.SendRate == nil {
		c.SendRate = &SendRate{}
	}
	return c.SendRate
}

// rate adapts a send_rate_* key's getter.
func rate(f func(*SendRate) float64) func(*Summary) (any, bool) {
	return sat(func(c *Saturation) (any, bool) {
		if c.SendRate == nil {
			return nil, false
		}
		return f(c.SendRate), true
	})
}

// GoodputSummary is goodput over a run: its keys are flat in the summary
// (request_goodput, goodput_share, goodput_requests, goodput_slo_ms, as
// vLLM names them).
type GoodputSummary struct {
	// Rate is the requests meeting every SLO per second of the run.
	Rate float64
	// Share is their share of the finished requests, Requests their
	// number.
	Share    float64
	Requests int64
	// SLO are the targets in ms, by metric (ttft, tpot, e2el…).
	SLO map[string]float64
}

// ServerSummary is the summary's server_metrics: what the target's own
// /metrics said over the run, and how polling it went.
type ServerSummary struct {
	URL      string  `json:"url"`
	Interval float64 `json:"interval_s"`
	// Available is false when no scrape succeeded.
	Available bool   `json:"available"`
	Failures  int64  `json:"failed_scrapes"`
	LastError string `json:"last_error,omitempty"`
	*ServerStats
}

// ReplayInfo is the summary's replay section: what was read of the trace
// and what was replayed.
type ReplayInfo struct {
	Trace  string `json:"trace"`
	Format string `json:"format"`
	// RowsRead counts data rows; RowsUsable those kept.
	RowsRead   int `json:"rows_read"`
	RowsUsable int `json:"rows_usable"`
	replay.Skipped
	TimeScale     float64 `json:"time_scale"`
	TargetRate    float64 `json:"target_rate,omitempty"`
	TraceStartS   float64 `json:"trace_start_s"`
	TraceDuration float64 `json:"trace_duration_s,omitempty"`
	Replayed      int     `json:"replayed"`
	// TraceRate is the mean rate of the replayed rows before scaling.
	TraceRate float64 `json:"trace_rate"`
	// ImageTextClamped counts image requests whose images alone reach the
	// trace's context length: their text is 1 token, the total above it.
	ImageTextClamped int `json:"image_text_clamped,omitempty"`
	// Tasks counts the trace's usable rows by task (GenTD26 predict_type).
	Tasks map[string]int `json:"tasks,omitempty"`
}

// section is one key of the summary's sections: get returns its value and
// whether the summary has it; into returns where to decode it (allocating
// the section it belongs to).
type section struct {
	key  string
	get  func(*Summary) (any, bool)
	into func(*Summary) any
}

func (s *Summary) saturation() *Saturation {
	if s.Saturation == nil {
		s.Saturation = &Saturation{}
	}
	return s.Saturation
}

func (s *Summary) goodput() *GoodputSummary {
	if s.Goodput == nil {
		s.Goodput = &GoodputSummary{}
	}
	return s.Goodput
}

// sat and good adapt a section's getter to the part it belongs to.
func sat(f func(*Saturation) (any, bool)) func(*Summary) (any, bool) {
	return func(s *Summary) (any, bool) {
		if s.Saturation == nil {
			return nil, false
		}
		return f(s.Saturation)
	}
}

func good(f func(*GoodputSummary) any) func(*Summary) (any, bool) {
	return func(s *Summary) (any, bool) {
		if s.Goodput == nil {
			return nil, false
		}
		return f(s.Goodput), true
	}
}

// sectionFields lists the sections in key order, the order they are
// written in, but for merge_state, written last.
var sectionFields = []section{
	{KeyAgents, func(s *Summary) (any, bool) { return s.Agents, s.Agents != nil },
		func(s *Summary) any { return &s.Agents }},
	{KeyClientCPU, func(s *Summary) (any, bool) { return s.ClientCPU, s.ClientCPU != nil },
		func(s *Summary) any { return &s.ClientCPU }},
	{KeyMachineBusy, sat(func(c *Saturation) (any, bool) { return c.MachineBusy, c.MachineBusy }),
		func(s *Summary) any { return &s.saturation().MachineBusy }},
	{KeyMachineBusyNote, sat(func(c *Saturation) (any, bool) { return c.BusyNote, c.BusyNote != "" }),
		func(s *Summary) any { return &s.saturation().BusyNote }},
	{KeyMachineBusyWindows, sat(func(c *Saturation) (any, bool) { return c.BusyWindows, len(c.BusyWindows) > 0 }),
		func(s *Summary) any { return &s.saturation().BusyWindows }},
	{KeyClientSaturated, sat(func(c *Saturation) (any, bool) { return c.Saturated, true }),
		func(s *Summary) any { return &s.saturation().Saturated }},
	{KeySaturatedIntervals, sat(func(c *Saturation) (any, bool) { return c.Intervals, len(c.Intervals) > 0 }),
		func(s *Summary) any { return &s.saturation().Intervals }},
	{KeySaturatedWindows, sat(func(c *Saturation) (any, bool) { return c.Windows, len(c.Windows) > 0 }),
		func(s *Summary) any { return &s.saturation().Windows }},
	{KeySaturationReason, sat(func(c *Saturation) (any, bool) { return c.Reason, c.Reason != "" }),
		func(s *Summary) any { return &s.saturation().Reason }},
	{KeyEndpoints, func(s *Summary) (any, bool) { return s.Endpoints, len(s.Endpoints) > 0 },
		func(s *Summary) any { return &s.Endpoints }},
	{KeyGoodputCount, good(func(g *GoodputSummary) any { return g.Requests }),
		func(s *Summary) any { return &s.goodput().Requests }},
	{KeyGoodputShare, good(func(g *GoodputSummary) any { return g.Share }),
		func(s *Summary) any { return &s.goodput().Share }},
	{KeyGoodputSLO, good(func(g *GoodputSummary) any { return g.SLO }),
		func(s *Summary) any { return &s.goodput().SLO }},
	{KeyGPU, func(s *Summary) (any, bool) { return s.GPU, s.GPU != nil },
		func(s *Summary) any { return &s.GPU }},
	{KeyHTTPPhases, func(s *Summary) (any, bool) { return s.HTTPPhases, s.HTTPPhases != nil },
		func(s *Summary) any { return &s.HTTPPhases }},
	{KeyCDFs, func(s *Summary) (any, bool) { return s.LatencyCDFs, s.LatencyCDFs != nil },
		func(s *Summary) any { return &s.LatencyCDFs }},
	{KeyLengths, func(s *Summary) (any, bool) { return s.LengthHistograms, s.LengthHistograms != nil },
		func(s *Summary) any { return &s.LengthHistograms }},
	{KeyLengthMix, func(s *Summary) (any, bool) { return s.LengthMix, len(s.LengthMix) > 0 },
		func(s *Summary) any { return &s.LengthMix }},
	{KeyMergeNotes, func(s *Summary) (any, bool) { return s.MergeNotes, len(s.MergeNotes) > 0 },
		func(s *Summary) any { return &s.MergeNotes }},
	{KeyMergeWarnings, func(s *Summary) (any, bool) { return s.MergeWarnings, len(s.MergeWarnings) > 0 },
		func(s *Summary) any { return &s.MergeWarnings }},
	{KeyMergedFrom, func(s *Summary) (any, bool) { return s.MergedFrom, len(s.MergedFrom) > 0 },
		func(s *Summary) any { return &s.MergedFrom }},
	{KeyOTLP, func(s *Summary) (any, bool) { return s.OTLP, s.OTLP != nil },
		func(s *Summary) any { return &s.OTLP }},
	{KeyPerKind, func(s *Summary) (any, bool) { return s.PerKind, s.PerKind != nil },
		func(s *Summary) any { return &s.PerKind }},
	{KeyPerModel, func(s *Summary) (any, bool) { return s.PerModel, s.PerModel != nil },
		func(s *Summary) any { return &s.PerModel }},
	{KeyPerTurn, func(s *Summary) (any, bool) { return s.PerTurn, s.PerTurn != nil },
		func(s *Summary) any { return &s.PerTurn }},
	{KeyPooling, func(s *Summary) (any, bool) { return s.Pooling, s.Pooling != nil },
		func(s *Summary) any { return &s.Pooling }},
	{KeyRepeats, func(s *Summary) (any, bool) { return s.Repeats, s.Repeats != nil },
		func(s *Summary) any { return &s.Repeats }},
	{KeyReplay, func(s *Summary) (any, bool) { return s.Replay, s.Replay != nil },
		func(s *Summary) any { return &s.Replay }},
	{KeyRequestGoodput, good(func(g *GoodputSummary) any { return g.Rate }),
		func(s *Summary) any { return &s.goodput().Rate }},
	{KeyScheduleHash, func(s *Summary) (any, bool) { return s.ScheduleHash, s.ScheduleHash != "" },
		func(s *Summary) any { return &s.ScheduleHash }},
	{KeySendRateAchieved, rate(func(r *SendRate) float64 { return r.Achieved }),
		func(s *Summary) any { return &s.saturation().sendRate().Achieved }},
	{KeySendRateLastLate, rate(func(r *SendRate) float64 { return r.LastLate }),
		func(s *Summary) any { return &s.saturation().sendRate().LastLate }},
	{KeySendRateScheduled, rate(func(r *SendRate) float64 { return r.Scheduled }),
		func(s *Summary) any { return &s.saturation().sendRate().Scheduled }},
	{KeySendRateShortfall, rate(func(r *SendRate) float64 { return r.Shortfall }),
		func(s *Summary) any { return &s.saturation().sendRate().Shortfall }},
	{KeyServerMetrics, func(s *Summary) (any, bool) { return s.ServerMetrics, s.ServerMetrics != nil },
		func(s *Summary) any { return &s.ServerMetrics }},
	{KeySessions, func(s *Summary) (any, bool) { return s.Sessions, s.Sessions != nil },
		func(s *Summary) any { return &s.Sessions }},
	{KeyShard, func(s *Summary) (any, bool) { return s.Shard, s.Shard != nil },
		func(s *Summary) any { return &s.Shard }},
	{KeySharedPrefix, func(s *Summary) (any, bool) { return s.SharedPrefix, s.SharedPrefix != nil },
		func(s *Summary) any { return &s.SharedPrefix }},
	{KeyStartAt, func(s *Summary) (any, bool) { return s.StartAt, s.StartAt != "" },
		func(s *Summary) any { return &s.StartAt }},
	{KeySteadyState, func(s *Summary) (any, bool) { return s.SteadyState, s.SteadyState != nil },
		func(s *Summary) any { return &s.SteadyState }},
	{KeyTargetRate, func(s *Summary) (any, bool) { return s.TargetRate, s.TargetRate != nil },
		func(s *Summary) any { return &s.TargetRate }},
	{KeyThresholds, func(s *Summary) (any, bool) { return s.Thresholds, len(s.Thresholds) > 0 },
		func(s *Summary) any { return &s.Thresholds }},
	// The windows go with their length: a run that has windows writes
	// both, "windows": null when none closed.
	{KeyWindowSeconds, func(s *Summary) (any, bool) { return s.WindowSeconds, s.WindowSeconds > 0 },
		func(s *Summary) any { return &s.WindowSeconds }},
	{KeyWindows, func(s *Summary) (any, bool) { return s.Windows, s.WindowSeconds > 0 || s.Windows != nil },
		func(s *Summary) any { return &s.Windows }},
	// The merge state goes last, out of a reader's way: it is for merge,
	// not for reading (most of the file's bytes).
	{KeyMergeState, func(s *Summary) (any, bool) { return s.MergeState, s.MergeState != nil },
		func(s *Summary) any { return &s.MergeState }},
}

// Breakdown returns the summary's breakdown under key (KeyPerKind,
// KeyPerModel), nil when it has none.
func (s *Summary) Breakdown(key string) map[string]GroupSummary {
	switch key {
	case KeyPerKind:
		return s.PerKind
	case KeyPerModel:
		return s.PerModel
	}
	return nil
}

// SetBreakdown stores a breakdown under key (KeyPerKind, KeyPerModel).
func (s *Summary) SetBreakdown(key string, g map[string]GroupSummary) error {
	switch key {
	case KeyPerKind:
		s.PerKind = g
	case KeyPerModel:
		s.PerModel = g
	default:
		return fmt.Errorf("summary: no breakdown %q", key)
	}
	return nil
}

// BreakdownKeys are the summary's breakdowns, in key order.
var BreakdownKeys = []string{KeyPerKind, KeyPerModel}

// writeSections appends the summary's sections to buf, in key order, each
// preceded by a comma.
func (s *Summary) writeSections(buf []byte) ([]byte, error) {
	for _, f := range sectionFields {
		v, ok := f.get(s)
		if !ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("summary %s: %w", f.key, err)
		}
		buf = append(buf, ',')
		buf = append(buf, fmt.Sprintf("%q:", f.key)...)
		buf = append(buf, b...)
	}
	return buf, nil
}

// readSections decodes the sections all holds into s.
func (s *Summary) readSections(all map[string]json.RawMessage) error {
	for _, f := range sectionFields {
		raw, ok := all[f.key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.into(s)); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return nil
}
