package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The llm-d Benchmark Report (--benchmark-report) is the run in the
// common format llm-d-benchmark's harnesses convert their results to and
// its analysis tools read (schema v0.2.1, llm-d/llm-d-benchmark): run (an
// id, the times), scenario (the target as the stack's one component, the
// workload and its load as scenario.load) and results.request_performance
// (the aggregate figures, and per window of the run a time series), and
// with the server's scraped metrics results.observability. Times
// are in seconds (s, s/token), as the format's own harnesses write them;
// lengths in tokens (count), rates in queries/s and tokens/s. What the
// format has no field for — the send lag, the error classes, goodput, the
// requests not sent, the server's metrics… — is the run's own, under
// scenario.load.native.config.metadata (the format allows no key of its own
// at the top); the settings given are scenario.load.native.args.

// BenchmarkReportVersion is the format's version the report follows.
const BenchmarkReportVersion = "0.2.1"

// ToolVersion is fineserve-gen's version, as the report names the tool
// (set by the command).
var ToolVersion = "dev"

// BenchmarkTarget is what a report says of the server beyond the summary:
// the endpoints' URLs as shown (credentials hidden).
type BenchmarkTarget struct {
	URLs []string
}

// BenchmarkReportOutput is the report of sum as a file: JSON when path
// ends in .json, else YAML.
func BenchmarkReportOutput(path string, sum *metrics.Summary, target BenchmarkTarget) Output {
	return Output{Name: "--benchmark-report " + path, Path: path, Write: func(w io.Writer) error {
		return WriteBenchmarkReport(w, sum, target, strings.EqualFold(filepath.Ext(path), ".json"))
	}}
}

// WriteBenchmarkReport writes the report of sum, as JSON or YAML.
func WriteBenchmarkReport(w io.Writer, sum *metrics.Summary, target BenchmarkTarget, asJSON bool) error {
	br, err := BenchmarkReport(sum, target)
	if err != nil {
		return err
	}
	if asJSON {
		b, err := json.MarshalIndent(br, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	var doc yaml.Node
	if err := doc.Encode(br); err != nil {
		return err
	}
	yaml11Floats(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// yaml11Floats rewrites the document's floats so that a YAML 1.1 reader
// (PyYAML's safe_load, which llm-d-benchmark loads reports with) reads
// them as floats too, at the same values: yaml.v3 writes the shortest
// 'g' form, whose exponent form without a decimal point (1e-06, 1e+21) is
// a float in YAML 1.2 but a string in YAML 1.1, and a negative zero as
// -0, an integer (0) in both. The mantissa gets its ".0" (1.0e-06) and
// the zero its sign (-0.0); every other number is left as written (an
// integral float such as 100 stays an integer, which both read as 100).
func yaml11Floats(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 {
		switch n.Tag {
		case "!!float":
			n.Value = yaml11Float(n.Value)
		case "!!int":
			// A plain -0 can only be a float: yaml.v3 writes no integer so.
			if n.Value == "-0" {
				n.Tag, n.Value = "!!float", "-0.0"
			}
		}
	}
	for _, c := range n.Content {
		yaml11Floats(c)
	}
}

// yaml11Float is a float as yaml.v3 writes it (strconv's 'g' form, .inf,
// .nan) in YAML 1.1's float form: a decimal point in a mantissa that has
// an exponent.
func yaml11Float(s string) string {
	mant, exp, ok := strings.Cut(s, "e")
	if !ok || strings.Contains(mant, ".") {
		return s
	}
	return mant + ".0e" + exp
}

// brReport is the format's document (the parts a run fills).
type brReport struct {
	Version  string     `json:"version" yaml:"version"`
	Run      brRun      `json:"run" yaml:"run"`
	Scenario brScenario `json:"scenario" yaml:"scenario"`
	Results  brResults  `json:"results" yaml:"results"`
}

type brRun struct {
	UID         string   `json:"uid" yaml:"uid"`
	EID         string   `json:"eid,omitempty" yaml:"eid,omitempty"`
	Time        *brTime  `json:"time,omitempty" yaml:"time,omitempty"`
	Description string   `json:"description,omitempty" yaml:"description,omitempty"`
	Keywords    []string `json:"keywords,omitempty" yaml:"keywords,omitempty"`
}

type brTime struct {
	Start    string `json:"start,omitempty" yaml:"start,omitempty"`
	End      string `json:"end,omitempty" yaml:"end,omitempty"`
	Duration string `json:"duration" yaml:"duration"`
}

type brScenario struct {
	Stack []brComponent `json:"stack" yaml:"stack"`
	Load  brLoad        `json:"load" yaml:"load"`
}

type brComponent struct {
	Metadata     brComponentMeta `json:"metadata" yaml:"metadata"`
	Standardized map[string]any  `json:"standardized" yaml:"standardized"`
	Native       brNative        `json:"native" yaml:"native"`
}

type brComponentMeta struct {
	SchemaVersion string `json:"schema_version" yaml:"schema_version"`
	Label         string `json:"label" yaml:"label"`
	CfgID         string `json:"cfg_id" yaml:"cfg_id"`
	Description   string `json:"description,omitempty" yaml:"description,omitempty"`
}

type brNative struct {
	Args   map[string]any `json:"args,omitempty" yaml:"args,omitempty"`
	Config map[string]any `json:"config,omitempty" yaml:"config,omitempty"`
}

type brLoad struct {
	Metadata     brLoadMeta `json:"metadata" yaml:"metadata"`
	Standardized brLoadStd  `json:"standardized" yaml:"standardized"`
	Native       brNative   `json:"native" yaml:"native"`
}

type brLoadMeta struct {
	SchemaVersion string `json:"schema_version" yaml:"schema_version"`
	CfgID         string `json:"cfg_id" yaml:"cfg_id"`
	Description   string `json:"description,omitempty" yaml:"description,omitempty"`
}

type brLoadStd struct {
	Tool         string       `json:"tool" yaml:"tool"`
	ToolVersion  string       `json:"tool_version" yaml:"tool_version"`
	Parallelism  int          `json:"parallelism" yaml:"parallelism"`
	Source       string       `json:"source" yaml:"source"`
	InputSeqLen  brSeqLen     `json:"input_seq_len" yaml:"input_seq_len"`
	OutputSeqLen *brSeqLen    `json:"output_seq_len,omitempty" yaml:"output_seq_len,omitempty"`
	MultiTurn    *brMultiTurn `json:"multi_turn,omitempty" yaml:"multi_turn,omitempty"`
	RateQPS      *float64     `json:"rate_qps,omitempty" yaml:"rate_qps,omitempty"`
	Concurrency  *int         `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
}

type brSeqLen struct {
	Distribution string  `json:"distribution" yaml:"distribution"`
	Value        float64 `json:"value" yaml:"value"`
	Min          *int64  `json:"min,omitempty" yaml:"min,omitempty"`
	Max          *int64  `json:"max,omitempty" yaml:"max,omitempty"`
}

type brMultiTurn struct {
	Enabled bool `json:"enabled" yaml:"enabled"`
}

type brResults struct {
	RequestPerformance brRequestPerf    `json:"request_performance" yaml:"request_performance"`
	Observability      *brObservability `json:"observability,omitempty" yaml:"observability,omitempty"`
}

// brObservability is what the server's /metrics said
// (--scrape-server-metrics), as the format's component observability.
type brObservability struct {
	Components []brComponentObs `json:"components" yaml:"components"`
}

type brComponentObs struct {
	Label      string               `json:"component_label" yaml:"component_label"`
	Aggregate  map[string]*brStats  `json:"aggregate" yaml:"aggregate"`
	TimeSeries map[string]*brSeries `json:"time_series,omitempty" yaml:"time_series,omitempty"`
}

type brRequestPerf struct {
	Aggregate  brAggregate   `json:"aggregate" yaml:"aggregate"`
	TimeSeries *brTimeSeries `json:"time_series,omitempty" yaml:"time_series,omitempty"`
}

type brAggregate struct {
	Requests   brRequests          `json:"requests" yaml:"requests"`
	Latency    map[string]*brStats `json:"latency,omitempty" yaml:"latency,omitempty"`
	Throughput map[string]*brStats `json:"throughput" yaml:"throughput"`
}

type brRequests struct {
	Total        int64    `json:"total" yaml:"total"`
	Failures     int64    `json:"failures" yaml:"failures"`
	Incomplete   int64    `json:"incomplete" yaml:"incomplete"`
	InputLength  *brStats `json:"input_length,omitempty" yaml:"input_length,omitempty"`
	OutputLength *brStats `json:"output_length,omitempty" yaml:"output_length,omitempty"`
}

// brStats is the format's Statistics (units and mean required).
type brStats struct {
	Units  string   `json:"units" yaml:"units"`
	Mean   float64  `json:"mean" yaml:"mean"`
	Stddev *float64 `json:"stddev,omitempty" yaml:"stddev,omitempty"`
	Min    *float64 `json:"min,omitempty" yaml:"min,omitempty"`
	P50    *float64 `json:"p50,omitempty" yaml:"p50,omitempty"`
	P90    *float64 `json:"p90,omitempty" yaml:"p90,omitempty"`
	P95    *float64 `json:"p95,omitempty" yaml:"p95,omitempty"`
	P99    *float64 `json:"p99,omitempty" yaml:"p99,omitempty"`
	P99p9  *float64 `json:"p99p9,omitempty" yaml:"p99p9,omitempty"`
	Max    *float64 `json:"max,omitempty" yaml:"max,omitempty"`
}

type brTimeSeries struct {
	Latency    map[string]*brSeries `json:"latency,omitempty" yaml:"latency,omitempty"`
	Throughput map[string]*brSeries `json:"throughput,omitempty" yaml:"throughput,omitempty"`
}

type brSeries struct {
	Units  string    `json:"units" yaml:"units"`
	Series []brPoint `json:"series" yaml:"series"`
}

type brPoint struct {
	TS    string   `json:"ts" yaml:"ts"`
	Value *float64 `json:"value,omitempty" yaml:"value,omitempty"`
	Mean  *float64 `json:"mean,omitempty" yaml:"mean,omitempty"`
	P50   *float64 `json:"p50,omitempty" yaml:"p50,omitempty"`
	P99   *float64 `json:"p99,omitempty" yaml:"p99,omitempty"`
	Max   *float64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// num is a finite figure (nil: absent).
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// msToS turns milliseconds into seconds, to the nanosecond (the figures'
// own resolution: no 0.24575899999999998 for 245.759 ms).
func msToS(ms float64) float64 { return math.Round(ms*1e6) / 1e9 }

// distStats are a latency's statistics, from milliseconds to seconds (nil
// when the run has none).
func distStats(d metrics.Dist, units string) *brStats {
	// No sample, or none above 0 (a summary read back has no count: its
	// zeros are read as no sample, and so are the run's own).
	if max(d.Mean, d.Median, d.P99, d.Max) <= 0 || math.IsNaN(d.Mean) {
		return nil
	}
	s := func(ms float64) *float64 { return num(msToS(ms)) }
	st := &brStats{Units: units, Mean: msToS(d.Mean), Stddev: s(d.Std), P50: s(d.Median), P90: s(d.P90), P95: s(d.P95), P99: s(d.P99), P99p9: s(d.P999), Max: s(d.Max)}
	if st.Stddev != nil && *st.Stddev < 0 {
		st.Stddev = nil
	}
	return st
}

// rate is a throughput's statistics: its mean over the run (and its
// largest over a window when known).
func rate(mean float64, units string, peak float64) *brStats {
	if math.IsNaN(mean) || math.IsInf(mean, 0) {
		return nil
	}
	st := &brStats{Units: units, Mean: mean}
	if peak > 0 {
		st.Max = num(peak)
	}
	return st
}

// lengthStats are a length's statistics from the summary's histogram (nil
// when none).
func lengthStats(b *metrics.LengthBins) *brStats {
	if b == nil || b.Total == 0 {
		return nil
	}
	st := &brStats{Units: "count", Mean: b.Mean, Max: num(float64(b.Max))}
	if len(b.Edges) > 0 {
		st.Min = num(b.Edges[0])
	}
	return st
}

// seqLen is a length as the scenario describes it: fixed when every
// request had the same, else its mean with its range.
func seqLen(b *metrics.LengthBins, total, n int64) *brSeqLen {
	if b == nil || b.Total == 0 {
		if n <= 0 {
			return nil
		}
		return &brSeqLen{Distribution: "other", Value: float64(total) / float64(n)}
	}
	lo, hi := int64(0), b.Max
	if len(b.Edges) > 0 {
		lo = int64(b.Edges[0])
	}
	if lo == hi {
		return &brSeqLen{Distribution: "fixed", Value: float64(hi)}
	}
	sl := &brSeqLen{Distribution: "other", Value: b.Mean, Min: &lo}
	if hi >= 1 {
		sl.Max = &hi
	}
	return sl
}

// settingsURLs are the endpoints' URLs as the settings given name them
// (a summary read back): --base-url (one or several), else --host and
// --port with their defaults.
func settingsURLs(settings map[string]any) []string {
	var urls []string
	switch u := settings["base-url"].(type) {
	case string:
		urls = []string{u}
	case []any:
		for _, x := range u {
			urls = append(urls, fmt.Sprint(x))
		}
	case []string:
		urls = u
	}
	for i := range urls {
		urls[i] = strings.TrimRight(urls[i], "/")
	}
	if len(urls) > 0 {
		return urls
	}
	host, port := "127.0.0.1", "8000"
	if h, ok := settings["host"]; ok {
		host = fmt.Sprint(h)
	}
	if p, ok := settings["port"]; ok {
		port = fmt.Sprint(p)
	}
	return []string{"http://" + net.JoinHostPort(strings.Trim(host, "[]"), port)}
}

// shortID is a stable 32-hex-digit id of parts.
func shortID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// isoDuration writes seconds as an ISO-8601 duration (PT12.5S).
func isoDuration(s float64) string {
	if math.IsNaN(s) || s < 0 {
		s = 0
	}
	return "PT" + strconv.FormatFloat(s, 'f', -1, 64) + "S"
}

// BenchmarkReport is the report of sum (see the comment at the top): a
// value that encodes as JSON or YAML.
func BenchmarkReport(sum *metrics.Summary, target BenchmarkTarget) (any, error) {
	native, err := summaryFields(sum)
	if err != nil {
		return nil, err
	}
	settings := map[string]any{}
	maps.Copy(settings, sum.Settings)
	settingsJSON, _ := json.Marshal(settings)

	// run
	run := brRun{
		UID:         shortID("run", sum.StartedAt, strconv.FormatUint(sum.Seed, 10), sum.Command, string(settingsJSON)),
		Description: fmt.Sprintf("fineserve-gen %s run (%s)", sum.Mode, sum.Backend),
		Keywords:    []string{"fineserve-gen", sum.Backend, sum.Mode},
		Time:        &brTime{Duration: isoDuration(sum.Duration)},
	}
	// One experiment: a command line, its seed and its target (a sweep's
	// steps share all: their summaries record no command line).
	run.EID = shortID("experiment", sum.Command, strconv.FormatUint(sum.Seed, 10), sum.Backend, sum.Mode, sum.Model)
	if start, err := time.Parse(time.RFC3339Nano, sum.StartedAt); err == nil {
		run.Time.Start = start.UTC().Format(time.RFC3339Nano)
		run.Time.End = start.Add(time.Duration(sum.Duration * float64(time.Second))).UTC().Format(time.RFC3339Nano)
	}

	// scenario.stack: the server, as a generic component.
	urls := target.URLs
	if len(urls) == 0 {
		urls = settingsURLs(sum.Settings)
	}
	label := "target"
	if len(urls) == 1 {
		if u, err := url.Parse(urls[0]); err == nil && u.Host != "" {
			label = u.Host
		}
	}
	server := brComponent{
		Metadata: brComponentMeta{SchemaVersion: "0.0.1", Label: label, CfgID: shortID("target", sum.Backend, sum.Model, strings.Join(urls, " ")),
			Description: "the server under test, as fineserve-gen saw it"},
		Standardized: map[string]any{"kind": "generic", "tool": sum.Backend, "tool_version": "unknown"},
	}
	if sum.Model != "" {
		server.Standardized["model"] = map[string]any{"name": sum.Model}
	}
	if len(urls) > 0 {
		server.Standardized["endpoints"] = urls
	}

	// scenario.load
	source := "random"
	if sum.Replay != nil || sum.Settings["dataset"] != nil || sum.Settings["dataset-path"] != nil {
		source = "sampled"
	}
	in := seqLen(sum.LengthHistograms["input"], sum.TotalInputTokens, sum.Completed+sum.Failed)
	if in == nil {
		in = &brSeqLen{Distribution: "other", Value: 0}
	}
	std := brLoadStd{Tool: "fineserve-gen", ToolVersion: ToolVersion, Parallelism: 1, Source: source, InputSeqLen: *in,
		OutputSeqLen: seqLen(sum.LengthHistograms["output"], sum.TotalOutputTokens, sum.Completed)}
	if r := float64(sum.RequestRate); r > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
		std.RateQPS = &r
	}
	if sum.MaxConcurrency != nil && *sum.MaxConcurrency >= 1 {
		c := *sum.MaxConcurrency
		std.Concurrency = &c
	}
	if sum.Sessions != nil {
		std.MultiTurn = &brMultiTurn{Enabled: true}
	}
	if sum.Shard != nil {
		std.Parallelism = max(1, int(sum.Shard.Count))
	}
	load := brLoad{
		Metadata:     brLoadMeta{SchemaVersion: "0.0.1", CfgID: shortID("load", string(settingsJSON)), Description: "fineserve-gen " + sum.Mode + " workload"},
		Standardized: std,
		Native:       brNative{Config: map[string]any{"command": sum.Command, "metadata": native}},
	}
	if len(settings) > 0 {
		load.Native.Args = settings
	}

	// results
	peakRate := 0.0
	for _, w := range sum.Windows {
		peakRate = max(peakRate, w.AchievedRate)
	}
	agg := brAggregate{
		Requests: brRequests{
			Total: sum.Completed + sum.Failed + sum.Cancelled, Failures: sum.Failed, Incomplete: sum.Cancelled,
			InputLength: lengthStats(sum.LengthHistograms["input"]), OutputLength: lengthStats(sum.LengthHistograms["output"]),
		},
		Latency: map[string]*brStats{},
		Throughput: map[string]*brStats{
			"request_rate":      rate(sum.RequestThroughput, "queries/s", peakRate),
			"input_token_rate":  rate(sum.InputThroughput, "tokens/s", 0),
			"output_token_rate": rate(sum.OutputThroughput, "tokens/s", sum.MaxOutputTokensPerS),
			"total_token_rate":  rate(sum.TotalThroughput, "tokens/s", 0),
		},
	}
	for k, s := range map[string]*brStats{
		"time_to_first_token":   distStats(sum.TTFT, "s"),
		"time_per_output_token": distStats(sum.TPOT, "s/token"),
		"inter_token_latency":   distStats(sum.ITL, "s/token"),
		"request_latency":       distStats(sum.E2E, "s"),
	} {
		if s != nil {
			agg.Latency[k] = s
		}
	}
	for k, s := range agg.Throughput {
		if s == nil {
			delete(agg.Throughput, k)
		}
	}
	if len(agg.Latency) == 0 {
		agg.Latency = nil
	}
	br := brReport{
		Version:  BenchmarkReportVersion,
		Run:      run,
		Scenario: brScenario{Stack: []brComponent{server}, Load: load},
		Results:  brResults{RequestPerformance: brRequestPerf{Aggregate: agg, TimeSeries: brTimeSeriesOf(sum)}, Observability: brObservabilityOf(sum, label)},
	}
	return br, nil
}

// brTimeSeriesOf are the run's windows as the format's time series: TTFT and
// end-to-end latency (p50, p99, in s) and the request and output token
// rates, each point at its window's start (nil without windows or a start
// time).
func brTimeSeriesOf(sum *metrics.Summary) *brTimeSeries {
	start, err := time.Parse(time.RFC3339Nano, sum.StartedAt)
	if err != nil || len(sum.Windows) == 0 {
		return nil
	}
	ts := &brTimeSeries{
		Latency: map[string]*brSeries{
			"time_to_first_token": {Units: "s"},
			"request_latency":     {Units: "s"},
		},
		Throughput: map[string]*brSeries{
			"request_rate":      {Units: "queries/s"},
			"output_token_rate": {Units: "tokens/s"},
		},
	}
	sec := func(ms float64) *float64 {
		if ms == 0 {
			return nil
		}
		return num(msToS(ms))
	}
	for _, w := range sum.Windows {
		at := start.Add(time.Duration(w.Start * float64(time.Second))).UTC().Format(time.RFC3339Nano)
		if w.TTFTP50 != 0 || w.TTFTP99 != 0 {
			s := ts.Latency["time_to_first_token"]
			s.Series = append(s.Series, brPoint{TS: at, P50: sec(w.TTFTP50), P99: sec(w.TTFTP99)})
		}
		if w.Completed > 0 {
			s := ts.Latency["request_latency"]
			s.Series = append(s.Series, brPoint{TS: at, P50: sec(w.E2EP50), P99: sec(w.E2EP99)})
		}
		ts.Throughput["request_rate"].Series = append(ts.Throughput["request_rate"].Series, brPoint{TS: at, Value: num(w.AchievedRate)})
		ts.Throughput["output_token_rate"].Series = append(ts.Throughput["output_token_rate"].Series, brPoint{TS: at, Value: num(w.OutputRate)})
	}
	for _, m := range []map[string]*brSeries{ts.Latency, ts.Throughput} {
		for k, s := range m {
			if len(s.Series) == 0 {
				delete(m, k)
			}
		}
	}
	return ts
}

// summaryFields are the summary's own figures the format has no field for
// (its JSON, less what the report holds elsewhere: the settings and
// command, the latency statistics it gives in seconds, the plots' data).
func summaryFields(sum *metrics.Summary) (map[string]any, error) {
	b, err := json.Marshal(sum)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range slices.Collect(maps.Keys(m)) {
		if reportedElsewhere(k) {
			delete(m, k)
		}
	}
	return m, nil
}

// reportedElsewhere tells the summary's keys the report gives in its own
// fields, or that are the plots' data, and effective_settings (every flag
// at its default too: native.args holds the settings given).
func reportedElsewhere(k string) bool {
	switch k {
	case "settings", "effective_settings", "command", "latency_cdfs", "length_histograms", "windows", "merge_state":
		return true
	}
	for _, stat := range []string{"mean_", "median_", "std_", "p90_", "p95_", "p99_", "p999_", "max_"} {
		rest, ok := strings.CutPrefix(k, stat)
		if !ok {
			continue
		}
		switch rest {
		case "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "e2e_latency_ms":
			return true
		}
	}
	return false
}

// brObservabilityOf is the server's metrics over the run and per window
// (KV-cache usage in percent, requests running and waiting), as the
// component label's observability (nil when no scrape succeeded).
func brObservabilityOf(sum *metrics.Summary, label string) *brObservability {
	sm := sum.ServerMetrics
	if sm == nil || !sm.Available || sm.ServerStats == nil || sm.Samples == 0 {
		return nil
	}
	stat := func(units string, mean, peak float64) *brStats {
		return &brStats{Units: units, Mean: mean, Max: num(peak)}
	}
	c := brComponentObs{Label: label, Aggregate: map[string]*brStats{
		"kv_cache_usage":   stat("percent", 100*sm.KVCacheMean, 100*sm.KVCacheMax),
		"running_requests": stat("count", sm.RunningMean, sm.RunningMax),
		"waiting_requests": stat("count", sm.WaitingMean, sm.WaitingMax),
	}}
	if start, err := time.Parse(time.RFC3339Nano, sum.StartedAt); err == nil {
		series := map[string]*brSeries{
			"kv_cache_usage":       {Units: "percent"},
			"num_requests_running": {Units: "count"},
			"num_requests_waiting": {Units: "count"},
		}
		for _, w := range sum.Windows {
			ws := w.Server
			if ws == nil || ws.Samples == 0 {
				continue
			}
			at := start.Add(time.Duration(w.Start * float64(time.Second))).UTC().Format(time.RFC3339Nano)
			add := func(k string, mean, peak float64) {
				series[k].Series = append(series[k].Series, brPoint{TS: at, Mean: num(mean), Max: num(peak)})
			}
			add("kv_cache_usage", 100*ws.KVCacheMean, 100*ws.KVCacheMax)
			add("num_requests_running", ws.RunningMean, ws.RunningMax)
			add("num_requests_waiting", ws.WaitingMean, ws.WaitingMax)
		}
		if len(series["kv_cache_usage"].Series) > 0 {
			c.TimeSeries = series
		}
	}
	return &brObservability{Components: []brComponentObs{c}}
}
