package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/routing"
)

// serverLog records the body of every generation request the mock sees.
type serverLog struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (l *serverLog) hook(path string, body []byte) {
	if path == "/tokenize" {
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	l.mu.Lock()
	l.bodies = append(l.bodies, m)
	l.mu.Unlock()
}

// reset forgets the requests seen so far. It takes the lock: the race
// detector cannot see the loopback connection that orders the server's
// hook before the client's next step.
func (l *serverLog) reset() {
	l.mu.Lock()
	l.bodies = nil
	l.mu.Unlock()
}

// models counts the requests per "model" member.
func (l *serverLog) models() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for _, b := range l.bodies {
		m, _ := b["model"].(string)
		out[m]++
	}
	return out
}

// loggedReplay starts the built-in server with cfg, every generation
// request it gets logged in the returned serverLog, and returns a replay
// of trace aimed at it.
func loggedReplay(t *testing.T, trace string, cfg mockserver.Config) (options.Options, *serverLog) {
	t.Helper()
	log := &serverLog{}
	cfg.OnRequest = log.hook
	o := replayOptions(trace)
	o.Port = startMock(t, cfg)
	return o, log
}

func perModel(t *testing.T, sum *metrics.Summary) map[string]metrics.GroupSummary {
	t.Helper()
	var g map[string]metrics.GroupSummary
	if ok, err := testenv.SectionOf(t, sum, "per_model", &g); !ok || err != nil {
		t.Fatalf("summary has no per_model: %v", err)
	}
	return g
}

// csvColumnCounts counts the values of a column of a CSV file, over the rows
// keep accepts.
func csvColumnCounts(t *testing.T, path, column string, keep func(col func(string) string) bool) map[string]int {
	t.Helper()
	idx, rows := testenv.ReadCSV(t, path)
	out := map[string]int{}
	for _, r := range rows {
		col := func(name string) string { return r[idx[name]] }
		if keep(col) {
			out[col(column)]++
		}
	}
	return out
}

// TestBurstGPTModelMap: a BurstGPT trace replayed with a model map file
// sends its ChatGPT rows to one served model and its GPT-4 rows to
// another, in the trace's proportions exactly; the server sees it, and the
// schedule, the JSONL records and per_model say so.
func TestBurstGPTModelMap(t *testing.T) {
	trace := tracePath(t, "burstgpt_models.csv")
	// The oracle: rows with response tokens (failed rows are left out).
	want := csvColumnCounts(t, trace, "Model", func(col func(string) string) bool { return col("Response tokens") != "0" })
	if want["ChatGPT"] != 271 || want["GPT-4"] != 112 {
		t.Fatalf("fixture: %v", want)
	}
	dir := t.TempDir()
	mapFile := filepath.Join(dir, "models.yaml")
	os.WriteFile(mapFile, []byte("# BurstGPT's products → served models\nChatGPT: llama-8b\nGPT-4: llama-70b\n"), 0o644)
	o, log := loggedReplay(t, trace, mockserver.Config{Models: []string{"llama-8b", "llama-70b"}})
	o.Replay.TargetRate = 1000
	o.Models.Map = mapFile
	o.ScheduleOut = filepath.Join(dir, "s.csv")
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	sum, _, _ := runReplay(t, o)
	if sum.Completed != 383 || sum.Failed != 0 {
		t.Fatalf("%d completed, %d failed", sum.Completed, sum.Failed)
	}
	got := log.models()
	if got["llama-8b"] != want["ChatGPT"] || got["llama-70b"] != want["GPT-4"] || len(got) != 2 {
		t.Fatalf("the server saw %v; the trace has %v", got, want)
	}
	pm := perModel(t, sum)
	if pm["llama-8b"].Completed != 271 || pm["llama-70b"].Completed != 112 || len(pm) != 2 {
		t.Fatalf("per_model %v", pm)
	}
	sched := map[string]int{}
	for _, r := range readSchedule(t, o.ScheduleOut) {
		sched[r.Model]++
	}
	if sched["llama-8b"] != 271 || sched["llama-70b"] != 112 {
		t.Fatalf("schedule models %v", sched)
	}
	data, _ := os.ReadFile(o.ResultsJSONL)
	if n := strings.Count(string(data), `"model":"llama-70b"`); n != 112 {
		t.Fatalf("%d JSONL records name llama-70b, want 112", n)
	}
}

// TestModelRoutingDefaults: without --model-map every request goes to
// --model, whatever the trace names; keep sends the trace's names (and the
// server answers 404 for names it does not serve).
func TestModelRoutingDefaults(t *testing.T) {
	trace := tracePath(t, "burstgpt.csv")
	o, log := loggedReplay(t, trace, mockserver.Config{Models: []string{"served", "ChatGPT"}})
	o.TimeScale = 1000
	o.Quiet = false
	sum, _, stderr := runReplay(t, o)
	if sum.Completed != 4 || !maps1(log.models(), "served", 4) {
		t.Fatalf("default: %d completed, server saw %v", sum.Completed, log.models())
	}
	if !strings.Contains(stderr, "every request goes to --model") {
		t.Errorf("no note about the trace's models:\n%s", stderr)
	}
	log.reset()
	o.Models.Map = "keep"
	o.MaxErrorRate = 1
	sum, _, _ = runReplay(t, o)
	if got := log.models(); got["ChatGPT"] != 2 || got["GPT-4"] != 2 || sum.Failed != 2 || sum.ErrorsByClass["http_4xx"] != 2 {
		t.Fatalf("keep: server saw %v; %d failed %v", got, sum.Failed, sum.ErrorsByClass)
	}
}

func maps1(m map[string]int, k string, v int) bool { return len(m) == 1 && m[k] == v }

// zipfSchedule builds a dry-run Poisson schedule of n arrivals routed by
// zipf:1.1 over k served names and returns the model column.
func zipfSchedule(t *testing.T, n int64, k int, shard string) []schedRow {
	t.Helper()
	o := options.Defaults()
	o.Seed = 1
	o.Quiet = true
	o.DryRun = true
	o.NumPrompts, o.NumPromptsSet = n, true
	o.RequestRate = 1000
	o.Models.Map = "zipf:1.1"
	for i := range k {
		o.Models.Served = append(o.Models.Served, fmt.Sprintf("lora-%02d", i+1))
	}
	if shard != "" {
		fmt.Sscanf(shard, "%d/%d", &o.ShardIndex, &o.ShardCount)
	}
	o.ScheduleOut = filepath.Join(t.TempDir(), "s.csv")
	if _, err := runQuiet(o); err != nil {
		t.Fatal(err)
	}
	return readSchedule(t, o.ScheduleOut)
}

// TestZipfRoutingSchedule is the done-criterion: --model-map zipf:1.1 over
// 50 adapters, 100,000 arrivals, read back from --schedule-out (no clock).
// "±2 %" is read as share points: every adapter's share is within 0.02 of
// its Zipf(1.1) share. Loose for the small ranks, so the counts must also
// pass a chi-square test at the 0.999 level (49 degrees of freedom), which
// a wrong exponent (1.0 or 1.2) or a uniform spread fails.
func TestZipfRoutingSchedule(t *testing.T) {
	const n, k = 100_000, 50
	rows := zipfSchedule(t, n, k, "")
	if len(rows) != n {
		t.Fatalf("%d arrivals", len(rows))
	}
	counts := make([]float64, k)
	for _, r := range rows {
		var rank int
		if _, err := fmt.Sscanf(r.Model, "lora-%d", &rank); err != nil || rank < 1 || rank > k {
			t.Fatalf("model %q", r.Model)
		}
		counts[rank-1]++
	}
	misfit := func(s float64) (maxAbs, chi2 float64) {
		for i, p := range routing.ZipfShares(k, s) {
			maxAbs = max(maxAbs, math.Abs(counts[i]/n-p))
			chi2 += (counts[i] - p*n) * (counts[i] - p*n) / (p * n)
		}
		return
	}
	maxAbs, chi2 := misfit(1.1)
	t.Logf("rank 1: %.4f, rank 50: %.5f; max |share − Zipf(1.1)| %.4f; chi² %.1f", counts[0]/n, counts[k-1]/n, maxAbs, chi2)
	if maxAbs > 0.02 || chi2 > 85.35 {
		t.Fatalf("shares off Zipf(1.1): max diff %.4f (≤ 0.02), chi² %.1f (≤ 85.35)", maxAbs, chi2)
	}
	for _, s := range []float64{1.0, 1.2} {
		if _, c := misfit(s); c <= 85.35 {
			t.Errorf("the test cannot tell Zipf(%g) from Zipf(1.1): chi² %.1f", s, c)
		}
	}
	if a, _ := misfit(1e-9); a <= 0.02 { // ~uniform
		t.Errorf("the share check accepts a uniform spread (max diff %.4f)", a)
	}
	// Shards route exactly as the whole schedule does.
	whole := zipfSchedule(t, 2000, k, "")
	for i := range int64(2) {
		for _, r := range zipfSchedule(t, 2000, k, fmt.Sprintf("%d/2", i)) {
			if whole[r.Index].Model != r.Model {
				t.Fatalf("shard %d/2: arrival %d to %s, the whole schedule says %s", i, r.Index, r.Model, whole[r.Index].Model)
			}
		}
	}
}

// TestAlibabaLoRAImages replays real GenTD26 rows (around the trace's
// first unfinished requests) as image generations at --time-scale 3600:
// rows with missing fields are skipped and counted, failed ones left out,
// and every request reaches /v1/images/generations with the row's n, steps
// and LoRA count, at the checkpoint it names (--model-map keep).
func TestAlibabaLoRAImages(t *testing.T) {
	trace := tracePath(t, "alibaba_lora_unfinished.csv")
	ok := func(col func(string) string) bool {
		return col("predict_status") == "SUCCEED" && col("num_images_per_prompt") != ""
	}
	want := csvColumnCounts(t, trace, "checkpoint_model_version_id", ok)
	images := 0
	for k, v := range csvColumnCounts(t, trace, "num_images_per_prompt", ok) {
		var n float64
		fmt.Sscan(k, &n)
		images += int(n) * v
	}
	var served []string
	for m := range want {
		served = append(served, m)
	}
	slices.Sort(served)
	o, log := loggedReplay(t, trace, mockserver.Config{Models: served, MaxNumSeqs: 4,
		Images: mockserver.ImageConfig{Base: 5e6, PerStep: 1e5, PerImage: 1e6}})
	o.Backend = "openai-images"
	o.TimeScale = 3600
	o.Models.Map = "keep"
	o.ResultsJSONL = filepath.Join(t.TempDir(), "r.jsonl")
	sum, table, stderr := runReplay(t, o)
	if sum.Completed != 15 || sum.Failed != 0 || sum.GeneratedImages != int64(images) || sum.ImageThroughput <= 0 {
		t.Fatalf("%d completed, %d failed, %d images (want 15, 0, %d)", sum.Completed, sum.Failed, sum.GeneratedImages, images)
	}
	var info options.ReplayInfo
	testenv.SectionOf(t, sum, "replay", &info)
	if info.Skipped.Rows != 3 || !slices.Equal(info.Skipped.Lines, []int{12, 13, 14}) || info.Skipped.Failed != 2 {
		t.Fatalf("replay entry %+v", info)
	}
	if !strings.Contains(stderr, "skipped 3 unusable row(s) (lines 12, 13, 14)") || !strings.Contains(stderr, "left out 2 failed request(s) (predict_status other than SUCCEED)") {
		t.Errorf("warnings:\n%s", stderr)
	}
	pm := perModel(t, sum)
	for m, n := range want {
		if pm[m].Completed != int64(n) || pm[m].GeneratedImages == 0 {
			t.Errorf("per_model %s: %+v, want %d", m, pm[m], n)
		}
	}
	if got := log.models(); !mapsEqual(got, want) {
		t.Errorf("the server saw %v, want %v", got, want)
	}
	// The request of line 17: IMG_2_IMG, 199 prompt tokens, 8 images, 38
	// steps, 1 LoRA, checkpoint M0001.
	found := false
	for _, b := range log.bodies {
		if b["n"] == 8.0 && b["num_inference_steps"] == 38.0 {
			found = true
			words := len(strings.Fields(b["prompt"].(string)))
			if b["model"] != "M0001" || words != 199 || !slices.Equal(anyStrings(b["loras"]), []string{"lora-1"}) || b["size"] != "512x512" {
				t.Errorf("line 17's request: %v (%d prompt words)", b, words)
			}
		}
	}
	if !found {
		t.Error("no request with n 8 and 38 steps")
	}
	// TTFT, TPOT and ITL are absent, not zero.
	b, _ := json.Marshal(sum)
	for _, k := range []string{`"mean_ttft_ms"`, `"p99_itl_ms"`, `"mean_tpot_ms"`, `"ttft_from_scheduled_p99_ms"`} {
		if bytes.Contains(b, []byte(k)) {
			t.Errorf("summary has %s", k)
		}
	}
	if !bytes.Contains(b, []byte(`"total_generated_images":`)) || !bytes.Contains(b, []byte(`"mean_e2e_latency_ms"`)) {
		t.Errorf("summary lacks images or E2E: %s", b)
	}
	pmRaw, _ := json.Marshal(sum.PerModel)
	if bytes.Contains(pmRaw, []byte("ttft")) {
		t.Errorf("per_model has TTFT keys: %s", pmRaw)
	}
	if !strings.Contains(table, "not applicable: image generation has no tokens") || !strings.Contains(table, "Image throughput (images/s):") ||
		!strings.Contains(table, "Requests by Model") || strings.Contains(table, "Mean TTFT") {
		t.Errorf("table:\n%s", table)
	}
	recs, _ := os.ReadFile(o.ResultsJSONL)
	if strings.Count(string(recs), `"ttft_ms":null`) != 15 || !strings.Contains(string(recs), `"generated_images":8`) {
		t.Errorf("records:\n%s", recs)
	}
}

func anyStrings(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestAlibabaT2IScene replays the text-to-image fixture's scene A: every
// request carries its LoRAs and ControlNets; scene B and bad rows are left
// out and counted.
func TestAlibabaT2IScene(t *testing.T) {
	trace := tracePath(t, "alibaba_t2i.json")
	o, log := loggedReplay(t, trace, mockserver.Config{Models: []string{"sd15", "sdxl"}})
	o.Backend = "openai-images"
	o.TimeScale = 100
	o.Replay.Scene = "A"
	o.Models.Map = "keep"
	o.RandomInputLen = 12
	sum, _, _ := runReplay(t, o)
	if sum.Completed != 14 || sum.GeneratedImages != 14 {
		t.Fatalf("%d completed, %d images", sum.Completed, sum.GeneratedImages)
	}
	var info options.ReplayInfo
	testenv.SectionOf(t, sum, "replay", &info)
	if info.Skipped.Scene != 2 || info.Skipped.Rows != 2 || info.Format != "alibaba-t2i" {
		t.Fatalf("replay entry %+v", info)
	}
	if got := log.models(); got["sd15"] != 10 || got["sdxl"] != 4 {
		t.Fatalf("models %v", got)
	}
	loras := map[string]int{}
	canny := 0
	for _, b := range log.bodies {
		for _, l := range anyStrings(b["loras"]) {
			loras[l]++
		}
		if slices.Equal(anyStrings(b["controlnets"]), []string{"canny"}) {
			canny++
		}
		if n := len(strings.Fields(b["prompt"].(string))); n != 12 || b["n"] != 1.0 || b["num_inference_steps"] != nil {
			t.Fatalf("request %v: %d prompt words", b, n)
		}
	}
	if !mapsEqual(loras, map[string]int{"a": 4, "b": 3, "c": 3, "d": 2, "e": 2}) || canny != 2 {
		t.Fatalf("loras %v, canny %d", loras, canny)
	}
}

// TestModelOptionErrors: bad routing options are usage errors, reported
// before anything is sent; an image trace needs the images backend.
func TestModelOptionErrors(t *testing.T) {
	// A live server: the run asks it for its models before it reads its
	// inputs, so these errors come after that check.
	port := startMock(t, mockserver.Config{})
	for _, c := range []struct {
		name string
		set  func(o *options.Options)
		want string
	}{
		{"zipf without names", func(o *options.Options) { o.Models.Map = "zipf:1.1" }, "--served-models"},
		{"served without map", func(o *options.Options) { o.Models.Served = []string{"a"} }, "--served-models is used by"},
		{"bad exponent", func(o *options.Options) { o.Models.Map = "zipf:-1"; o.Models.Served = []string{"a"} }, "exponent"},
		{"missing file", func(o *options.Options) { o.Models.Map = "no/such/map.yaml" }, "neither a strategy"},
		{"image trace to text backend", func(o *options.Options) {
			o.Mode, o.Replay.TracePath = "replay", filepath.Join(traceDir, "alibaba_lora_head300.csv")
		}, "--backend openai-images"},
		{"bad backend", func(o *options.Options) { o.Backend = "images" }, "openai-images"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions(port)
			c.set(&o)
			_, err := runQuiet(o)
			var ue *options.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a usage error with %q", err, c.want)
			}
		})
	}
	// A dry run may look at an image trace with any backend.
	o := replayOptions(filepath.Join(traceDir, "alibaba_lora_head300.csv"))
	o.DryRun = true
	if _, err := runQuiet(o); err != nil {
		t.Fatalf("dry run: %v", err)
	}
}

// TestMergeStateKeepsPerModel: a run's merge state holds the same per-model
// breakdown its summary shows, so merged shards can rebuild per_model.
func TestMergeStateKeepsPerModel(t *testing.T) {
	port := startMock(t, mockserver.Config{Models: []string{"a", "b"}})
	o := testOptions(port)
	o.RequestRate = math.Inf(1)
	o.NumPrompts, o.NumPromptsSet = 40, true
	o.Models.Map = "round-robin"
	o.Models.Served = []string{"a", "b"}
	sum, _ := run(t, o)
	pm := perModel(t, sum)
	var st metrics.MergeState
	if ok, err := testenv.SectionOf(t, sum, metrics.KeyMergeState, &st); !ok || err != nil {
		t.Fatalf("no merge state: %v", err)
	}
	kept := st.Groups["per_model"]
	if len(pm) != 2 || len(kept) != 2 {
		t.Fatalf("per_model %v; merge state keeps %d groups", pm, len(kept))
	}
	for name, g := range pm {
		if g.Completed != 20 || kept[name].Completed != g.Completed || kept[name].InputTokens == 0 {
			t.Errorf("%s: summary %d completed, merge state %+v", name, g.Completed, kept[name])
		}
	}
	if _, ok := st.Groups["per_kind"]; ok {
		t.Errorf("merge state keeps per_kind, which the summary does not show")
	}
}
