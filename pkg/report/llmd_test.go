package report

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// benchmarkReportSchema compiles the format's schema (testdata; draft
// 2020-12), asserting formats (date-time).
func benchmarkReportSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/llmd-benchmark-report/br_v0_2_1_json_schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("br.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("br.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// instanceOf reads a report (YAML or JSON: YAML reads both) as the
// validator's instance, through JSON.
func instanceOf(t *testing.T, b []byte) (any, map[string]any) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return inst, m
}

// reportSummary is a run's summary with every part the report reads: its
// start, windows, length histograms, settings, sessions, and figures the
// format has no field for.
func reportSummary() *metrics.Summary {
	sum := sampleSummary()
	sum.StartedAt = "2026-11-29T03:00:00.5Z"
	sum.Seed, sum.Model, sum.Command = 7, "Qwen/Qwen3-0.6B", "fineserve-gen run --request-rate 50"
	sum.Settings = map[string]any{"request-rate": 50.0, "base-url": "http://127.0.0.1:8000", "model": "Qwen/Qwen3-0.6B"}
	sum.Cancelled = 3
	sum.MaxOutputTokensPerS = 1700
	sum.LengthHistograms = map[string]*metrics.LengthBins{
		"input":  {Edges: []float64{1024, 1025}, Counts: []int64{200}, Total: 200, Mean: 1024, Max: 1024},
		"output": {Edges: []float64{8, 24, 40}, Counts: []int64{120, 78}, Total: 198, Mean: 32, Max: 39},
	}
	sum.Windows = []metrics.WindowStats{
		{Index: 0, Start: 0, End: 2, Completed: 90, AchievedRate: 45, OutputRate: 1440, TTFTP50: 50, TTFTP99: 52, E2EP50: 360, E2EP99: 362},
		{Index: 1, Start: 2, End: 4.25, Completed: 108, Failed: 2, AchievedRate: 48, OutputRate: 1536, TTFTP50: 51, TTFTP99: 53, E2EP50: 361, E2EP99: 363},
	}
	sum.Sessions = &metrics.SessionsSummary{Turns: "3", Started: 10}
	sum.ServerMetrics = &metrics.ServerSummary{URL: "http://127.0.0.1:8000/metrics", Interval: 2, Available: true,
		ServerStats: &metrics.ServerStats{Samples: 3, RunningMean: 18.5, RunningMax: 29, WaitingMean: 0.5, WaitingMax: 2, KVCacheMean: 0.0413, KVCacheMax: 0.0671}}
	sum.Windows[1].Server = &metrics.ServerStats{Samples: 2, RunningMean: 20, RunningMax: 29, KVCacheMean: 0.05, KVCacheMax: 0.0671}
	return sum
}

// TestBenchmarkReportSchema: the report, as YAML and as JSON, is valid
// against the llm-d Benchmark Report v0.2.1 schema; so is the format's own
// example, and a report with a unit the format does not know, or a key of
// its own at the top, is not (the validation can fail).
func TestBenchmarkReportSchema(t *testing.T) {
	sch := benchmarkReportSchema(t)
	example, err := os.ReadFile("testdata/llmd-benchmark-report/br_v0_2_1_example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The example's concurrency is YAML's .inf, which JSON has no number for.
	example = bytes.Replace(example, []byte("concurrency: .inf"), []byte("concurrency: 1000000"), 1)
	if inst, _ := instanceOf(t, example); sch.Validate(inst) != nil {
		t.Fatalf("the format's example is invalid: %v", sch.Validate(inst))
	}
	for _, sum := range []*metrics.Summary{reportSummary(), sampleSummary(), {Backend: "vllm", Mode: "poisson"}} {
		for _, asJSON := range []bool{false, true} {
			var buf bytes.Buffer
			if err := WriteBenchmarkReport(&buf, sum, BenchmarkTarget{URLs: []string{"http://127.0.0.1:8000/v1"}}, asJSON); err != nil {
				t.Fatal(err)
			}
			if asJSON && !json.Valid(buf.Bytes()) {
				t.Fatalf("not JSON:\n%s", buf.String())
			}
			inst, _ := instanceOf(t, buf.Bytes())
			if err := sch.Validate(inst); err != nil {
				t.Errorf("json=%v: the report is invalid: %v\n%s", asJSON, err, buf.String())
			}
		}
	}
	var buf bytes.Buffer
	if err := WriteBenchmarkReport(&buf, reportSummary(), BenchmarkTarget{}, false); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(buf.String(), "units: s/token", "units: msec/token", 1)
	if bad == buf.String() {
		t.Fatal("no s/token unit in the report")
	}
	if inst, _ := instanceOf(t, []byte(bad)); sch.Validate(inst) == nil {
		t.Error("a report with an unknown unit passes the validation")
	}
	// Nor is a key of its own at the top: the format allows none.
	if inst, _ := instanceOf(t, append([]byte("metadata: {}\n"), buf.Bytes()...)); sch.Validate(inst) == nil {
		t.Error("a report with a top-level metadata passes the validation")
	}
}

// get walks m by keys.
func get(m any, keys ...string) any {
	for _, k := range keys {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil
		}
		m = mm[k]
	}
	return m
}

// TestBenchmarkReportFigures: the report holds the summary's figures in
// the format's places and units (latencies in seconds, lengths, rates),
// the window series at their times, and the run's own figures under
// scenario.load.native.config.metadata.
func TestBenchmarkReportFigures(t *testing.T) {
	sum := reportSummary()
	var buf bytes.Buffer
	if err := WriteBenchmarkReport(&buf, sum, BenchmarkTarget{}, false); err != nil {
		t.Fatal(err)
	}
	_, m := instanceOf(t, buf.Bytes())
	agg := get(m, "results", "request_performance", "aggregate")
	near := func(what string, got any, want float64) {
		t.Helper()
		f, ok := got.(float64)
		if !ok || math.Abs(f-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	near("ttft mean", get(agg, "latency", "time_to_first_token", "mean"), 0.05097)
	near("ttft p99", get(agg, "latency", "time_to_first_token", "p99"), 0.05209)
	near("itl max", get(agg, "latency", "inter_token_latency", "max"), 0.01402)
	near("e2e p50", get(agg, "latency", "request_latency", "p50"), 0.3609)
	near("tpot mean", get(agg, "latency", "time_per_output_token", "mean"), 0.010)
	near("request rate", get(agg, "throughput", "request_rate", "mean"), 46.59)
	near("request rate max", get(agg, "throughput", "request_rate", "max"), 48)
	near("output rate", get(agg, "throughput", "output_token_rate", "mean"), 1490.82)
	near("output rate max", get(agg, "throughput", "output_token_rate", "max"), 1700)
	near("total rate", get(agg, "throughput", "total_token_rate", "mean"), 49197.18)
	near("requests", get(agg, "requests", "total"), 203)
	near("failures", get(agg, "requests", "failures"), 2)
	near("incomplete", get(agg, "requests", "incomplete"), 3)
	near("output length mean", get(agg, "requests", "output_length", "mean"), 32)
	near("output length max", get(agg, "requests", "output_length", "max"), 39)
	if u := get(agg, "latency", "inter_token_latency", "units"); u != "s/token" {
		t.Errorf("itl units %v", u)
	}
	load := get(m, "scenario", "load", "standardized")
	near("rate_qps", get(load, "rate_qps"), 50)
	near("concurrency", get(load, "concurrency"), 64)
	if d, v := get(load, "input_seq_len", "distribution"), get(load, "input_seq_len", "value"); d != "fixed" || v != 1024.0 {
		t.Errorf("input_seq_len %v %v, want fixed 1024", d, v)
	}
	if d := get(load, "output_seq_len", "distribution"); d != "other" {
		t.Errorf("output_seq_len distribution %v, want other (8 to 39)", d)
	}
	if get(load, "multi_turn", "enabled") != true {
		t.Error("a run of sessions is not multi-turn")
	}
	if get(m, "scenario", "load", "native", "args", "request-rate") != 50.0 {
		t.Errorf("the settings are not native.args: %v", get(m, "scenario", "load", "native"))
	}
	stack := get(m, "scenario", "stack").([]any)
	if len(stack) != 1 || get(stack[0], "metadata", "label") != "127.0.0.1:8000" || get(stack[0], "standardized", "model", "name") != "Qwen/Qwen3-0.6B" {
		t.Errorf("stack %v", stack)
	}
	meta := get(m, "scenario", "load", "native", "config", "metadata")
	near("send lag p99", get(meta, "send_lag_p99_ms"), 0.31)
	if get(meta, "errors_by_class", "http_5xx") != 2.0 {
		t.Errorf("errors_by_class %v", get(meta, "errors_by_class"))
	}
	for _, k := range []string{"mean_ttft_ms", "p99_itl_ms", "settings", "latency_cdfs"} {
		if get(meta, k) != nil {
			t.Errorf("metadata repeats %s, which the report holds elsewhere", k)
		}
	}
	if get(m, "run", "time", "start") != "2026-11-29T03:00:00.5Z" || get(m, "run", "time", "end") != "2026-11-29T03:00:04.75Z" || get(m, "run", "time", "duration") != "PT4.25S" {
		t.Errorf("run.time %v", get(m, "run", "time"))
	}
	rr := get(m, "results", "request_performance", "time_series", "throughput", "request_rate", "series").([]any)
	if len(rr) != 2 || get(rr[1], "ts") != "2026-11-29T03:00:02.5Z" || get(rr[1], "value") != 48.0 {
		t.Errorf("request rate series %v", rr)
	}
	ttft := get(m, "results", "request_performance", "time_series", "latency", "time_to_first_token", "series").([]any)
	near("ttft series p99", get(ttft[0], "p99"), 0.052)
	// The server's metrics: the stack's component, KV-cache usage in percent.
	comps, _ := get(m, "results", "observability", "components").([]any)
	if len(comps) != 1 || get(comps[0], "component_label") != "127.0.0.1:8000" {
		t.Fatalf("observability components %v", comps)
	}
	near("kv cache mean %", get(comps[0], "aggregate", "kv_cache_usage", "mean"), 4.13)
	near("kv cache max %", get(comps[0], "aggregate", "kv_cache_usage", "max"), 6.71)
	near("running mean", get(comps[0], "aggregate", "running_requests", "mean"), 18.5)
	near("waiting max", get(comps[0], "aggregate", "waiting_requests", "max"), 2)
	kv, _ := get(comps[0], "time_series", "kv_cache_usage", "series").([]any)
	if len(kv) != 1 || get(kv[0], "ts") != "2026-11-29T03:00:02.5Z" {
		t.Errorf("kv cache series %v: want the one window with scrapes", kv)
	}
	near("kv cache window mean %", get(kv[0], "mean"), 5)
	sampleOnly := sampleSummary()
	buf.Reset()
	if err := WriteBenchmarkReport(&buf, sampleOnly, BenchmarkTarget{}, false); err != nil {
		t.Fatal(err)
	}
	if _, m := instanceOf(t, buf.Bytes()); get(m, "results", "observability") != nil {
		t.Error("observability without server metrics")
	}
}
