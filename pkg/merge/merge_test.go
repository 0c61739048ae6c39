package merge

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// fakeResults returns n results with lognormal latencies spanning the
// histogram's exact and bucketed ranges, a few failures, two models, and
// end times spread over span.
func fakeResults(seed uint64, n int, span time.Duration) []client.Result {
	r := rand.New(rand.NewPCG(seed, 1))
	logn := func(medianMS, sigma float64) time.Duration {
		return time.Duration(medianMS * math.Exp(sigma*r.NormFloat64()) * 1e6)
	}
	out := make([]client.Result, n)
	for i := range out {
		res := &out[i]
		res.Reset()
		res.Index = int64(i)
		res.Model = []string{"m-a", "m-b"}[i%2]
		res.Scheduled = time.Duration(float64(span) * float64(i) / float64(n))
		res.Sent = res.Scheduled + logn(0.2, 1.5)
		res.InputLen = 10 + r.IntN(3000)
		res.OutputLen = 1 + r.IntN(200)
		if i%17 == 5 {
			res.ErrorClass, res.Error, res.Status = record.ErrHTTP5xx, "boom", 503
			res.End = res.Sent + logn(3, 1)
			continue
		}
		res.FirstToken = res.Sent + logn(40, 1)
		at := res.FirstToken
		res.TokenTimes = append(res.TokenTimes, at)
		for range res.OutputLen - 1 {
			at += logn(12, 0.6)
			res.TokenTimes = append(res.TokenTimes, at)
		}
		res.End = at + logn(0.5, 1)
		res.CompletionTokens = res.OutputLen
		res.PromptTokens = res.InputLen + i%3
	}
	return out
}

// runParts accumulates results as a run does, with windows of width w.
type runParts struct {
	col      *metrics.Collector
	models   *metrics.Breakdown
	good     metrics.Goodput
	in, out  *metrics.LengthHist
	windows  map[int]*metrics.WindowAcc
	width    time.Duration
	lastEnd  time.Duration
	offered  map[int]int64
	firstIdx int64
}

func newRunParts(w time.Duration, slo metrics.SLO) *runParts {
	p := &runParts{
		col: metrics.NewCollector(), models: metrics.NewBreakdown(metrics.KeyPerModel),
		in: metrics.NewLengthHist(), out: metrics.NewLengthHist(), windows: map[int]*metrics.WindowAcc{}, width: w, offered: map[int]int64{},
	}
	p.good.SLO = slo
	return p
}

func (p *runParts) add(r *client.Result) {
	var s metrics.Sample
	s.From(r, p.good.SLO)
	p.col.Add(&s)
	p.models.Add(&s)
	if p.good.SLO.Set() {
		p.good.Add(&s)
	}
	p.in.Record(r.InputLen)
	if r.OK() {
		p.out.Record(r.OutputTokens())
	}
	i := int(r.End / p.width)
	if p.windows[i] == nil {
		p.windows[i] = metrics.NewWindowAcc()
	}
	p.windows[i].Add(&s)
	p.offered[int(r.Scheduled/p.width)]++
	p.lastEnd = max(p.lastEnd, r.End)
}

// summary writes what the runner writes: the figures, windows, breakdown,
// goodput and the merge state, through JSON.
func (p *runParts) summary(t testing.TB, shard metrics.ShardInfo, start time.Time, hash string) *metrics.Summary {
	t.Helper()
	s := &metrics.Summary{Backend: "vllm", Mode: "poisson", Seed: 7, StartedAt: start.UTC().Format(time.RFC3339Nano), Command: "fineserve-gen --shard " + shard.String()}
	elapsed := p.lastEnd + 3*time.Millisecond
	p.col.Summarize(s, elapsed)
	s.Scheduled = p.col.Completed + p.col.Failed
	last := int(p.lastEnd / p.width)
	var ws []metrics.WindowStats
	var wst []metrics.WindowState
	for i := 0; i <= last; i++ {
		acc := p.windows[i]
		if acc == nil {
			acc = metrics.NewWindowAcc()
		}
		w := metrics.WindowStats{Index: i, Start: (time.Duration(i) * p.width).Seconds(), End: min(time.Duration(i+1)*p.width, elapsed).Seconds(),
			Offered: p.offered[i], InFlightMean: 1.5, InFlightMax: 3, ClientCPU: 0.1}
		acc.Fill(&w, true)
		ws = append(ws, w)
		st, err := acc.State(i)
		if err != nil {
			t.Fatal(err)
		}
		wst = append(wst, st)
	}
	s.WindowSeconds, s.Windows = p.width.Seconds(), ws
	s.PerModel = p.models.Summary(elapsed)
	p.good.Annotate(s, elapsed)
	cdfs := map[string][][2]float64{}
	for k, h := range map[string]*metrics.Hist{"ttft": p.col.TTFT, "tpot": p.col.TPOT, "itl": p.col.ITL, "e2e": p.col.E2E, "send_lag": p.col.Lag} {
		if c := metrics.CDF(h); c != nil {
			cdfs[k] = c
		}
	}
	s.LatencyCDFs = cdfs
	s.LengthHistograms = map[string]*metrics.LengthBins{"input": p.in.Bins(40), "output": p.out.Bins(40)}
	s.ScheduleHash, s.Shard, s.StartAt = hash, &shard, start.UTC().Format(time.RFC3339Nano)
	st, err := metrics.NewMergeState(elapsed, wst, []metrics.Part{p.col, &metrics.Lengths{In: p.in, Out: p.out}, &p.good, p.models})
	must(t, err)
	s.MergeState = &st
	return roundTrip(t, s)
}

func roundTrip(t testing.TB, s *metrics.Summary) *metrics.Summary {
	t.Helper()
	out, _ := testenv.RoundTrip(t, *s)
	return &out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSummariesIsExact splits one run's results into three shards by
// index, writes each shard's summary as a copy would (through JSON), merges
// them and compares with the summary of all the results in one collector:
// every percentile, maximum and count is equal, means and standard
// deviations equal up to float rounding, and so are the windows, the
// per-model breakdown and goodput.
func TestSummariesIsExact(t *testing.T) {
	const n, shards = 3000, 3
	width := 2 * time.Second
	slo := metrics.SLO{TTFT: 60, TPOT: math.NaN(), E2EL: 3000}
	results := fakeResults(11, n, 10*time.Second)
	all := newRunParts(width, slo)
	parts := make([]*runParts, shards)
	for i := range parts {
		parts[i] = newRunParts(width, slo)
	}
	for i := range results {
		all.add(&results[i])
		parts[results[i].Index%shards].add(&results[i])
	}
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	want := all.summary(t, metrics.ShardInfo{Count: 1, Indices: []int64{0}}, start, "sha256:x")
	var ins []Input
	for i, p := range parts {
		ins = append(ins, Input{Name: "s" + string(rune('0'+i)), Summary: p.summary(t, metrics.ShardInfo{Count: shards, Indices: []int64{int64(i)}}, start, "sha256:x")})
	}
	res, err := Summaries(ins)
	must(t, err)
	if len(res.Warnings) > 0 {
		t.Errorf("warnings: %q", res.Warnings)
	}
	got := roundTrip(t, res.Summary)

	if got.Completed != want.Completed || got.Failed != want.Failed || got.TotalInputTokens != want.TotalInputTokens ||
		got.TotalOutputTokens != want.TotalOutputTokens || got.Scheduled != n {
		t.Errorf("counts: got %d/%d/%d/%d, want %d/%d/%d/%d", got.Completed, got.Failed, got.TotalInputTokens, got.TotalOutputTokens,
			want.Completed, want.Failed, want.TotalInputTokens, want.TotalOutputTokens)
	}
	if got.ErrorsByClass[record.ErrHTTP5xx] != want.ErrorsByClass[record.ErrHTTP5xx] || got.PromptTokensErrorMean != want.PromptTokensErrorMean {
		t.Errorf("errors %v prompt error %g, want %v %g", got.ErrorsByClass, got.PromptTokensErrorMean, want.ErrorsByClass, want.PromptTokensErrorMean)
	}
	if got.Duration != want.Duration || got.RequestThroughput != want.RequestThroughput {
		t.Errorf("duration %g throughput %g, want %g %g", got.Duration, got.RequestThroughput, want.Duration, want.RequestThroughput)
	}
	gotDists := dists(t, got)
	for name, w := range dists(t, want) {
		compareDist(t, name, gotDists[name], w)
	}

	var gw, ww []metrics.WindowStats
	getExtra(t, got, metrics.KeyWindows, &gw)
	getExtra(t, want, metrics.KeyWindows, &ww)
	if len(gw) != len(ww) {
		t.Fatalf("%d windows, want %d", len(gw), len(ww))
	}
	for i := range gw {
		g, w := gw[i], ww[i]
		// What is not merged exactly by design: samples of the copies.
		g.InFlightMean, g.InFlightMax, w.InFlightMean, w.InFlightMax = 0, 0, 0, 0
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("window %d:\n got %s\nwant %s", i, gb, wb)
		}
	}
	var gm, wm map[string]metrics.GroupSummary
	getExtra(t, got, "per_model", &gm)
	getExtra(t, want, "per_model", &wm)
	for k := range wm {
		g, w := gm[k], wm[k]
		g.MeanTTFT, g.MeanTPOT, g.MeanE2E, w.MeanTTFT, w.MeanTPOT, w.MeanE2E = 0, 0, 0, 0, 0, 0
		if g != w {
			t.Errorf("per_model %s: %+v, want %+v", k, g, w)
		}
	}
	for _, k := range []string{metrics.KeyRequestGoodput, metrics.KeyGoodputCount, metrics.KeyGoodputShare, metrics.KeyCDFs, metrics.KeyLengths} {
		var g, w json.RawMessage
		getExtra(t, got, k, &g)
		getExtra(t, want, k, &w)
		if string(g) != string(w) {
			t.Errorf("%s: %s, want %s", k, g, w)
		}
	}
	var shard metrics.ShardInfo
	getExtra(t, got, metrics.KeyShard, &shard)
	if shard.String() != "{0,1,2}/3" {
		t.Errorf("shard %s", shard)
	}

	// A merged summary merges again: the three shards in two steps give
	// the same figures.
	r01, err := Summaries(ins[:2])
	must(t, err)
	again, err := Summaries([]Input{{"s01", roundTrip(t, r01.Summary)}, ins[2]})
	must(t, err)
	againDists := dists(t, roundTrip(t, again.Summary))
	for name, w := range dists(t, want) {
		compareDist(t, "again "+name, againDists[name], w)
	}
}

// dists returns the summary's distributions by field name: every exported
// field of type metrics.Dist, so that a distribution added to the summary
// is compared too.
func dists(t *testing.T, s *metrics.Summary) map[string]metrics.Dist {
	t.Helper()
	out := map[string]metrics.Dist{}
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Type().Field(i); f.IsExported() && f.Type == reflect.TypeFor[metrics.Dist]() {
			out[f.Name] = v.Field(i).Interface().(metrics.Dist)
		}
	}
	if len(out) < 8 {
		t.Fatalf("the summary has %d distributions, want at least 8", len(out))
	}
	return out
}

func compareDist(t *testing.T, name string, got, want metrics.Dist) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if got.Count != want.Count || got.Median != want.Median || got.P90 != want.P90 || got.P95 != want.P95 ||
		got.P99 != want.P99 || got.P999 != want.P999 || got.Max != want.Max || !close(got.Mean, want.Mean) || !close(got.Std, want.Std) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
	}
}

// getExtra decodes the section k of s, as s writes it, into v.
func getExtra(t *testing.T, s *metrics.Summary, k string, v any) {
	t.Helper()
	all := sectionsOf(t, s)
	raw, ok := all[k]
	if !ok {
		t.Fatalf("%s: not in the summary", k)
	}
	must(t, json.Unmarshal(raw, v))
}

func sectionsOf(t testing.TB, s *metrics.Summary) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(s)
	must(t, err)
	var all map[string]json.RawMessage
	must(t, json.Unmarshal(b, &all))
	return all
}

// setSection returns s as it reads from a file whose key k holds v (nil:
// without k).
func setSection(t testing.TB, s *metrics.Summary, k string, v any) *metrics.Summary {
	t.Helper()
	all := sectionsOf(t, s)
	if v == nil {
		delete(all, k)
	} else {
		raw, err := json.Marshal(v)
		must(t, err)
		all[k] = raw
	}
	b, err := json.Marshal(all)
	must(t, err)
	var c metrics.Summary
	must(t, json.Unmarshal(b, &c))
	return &c
}

// shardSummaries returns valid summaries of shards of one run.
func shardSummaries(t testing.TB, shards int, start time.Time) []Input {
	results := fakeResults(5, 300, 4*time.Second)
	var ins []Input
	for i := range shards {
		p := newRunParts(time.Second, metrics.NoSLO)
		for j := range results {
			if results[j].Index%int64(shards) == int64(i) {
				p.add(&results[j])
			}
		}
		ins = append(ins, Input{Name: "shard" + string(rune('0'+i)) + ".json",
			Summary: p.summary(t, metrics.ShardInfo{Count: int64(shards), Indices: []int64{int64(i)}}, start, "sha256:abc")})
	}
	return ins
}

func TestMergeWarns(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	set := func(s *metrics.Summary, k string, v any) *metrics.Summary { return setSection(t, s, k, v) }
	for _, tc := range []struct {
		name string
		edit func([]Input) []Input
		says []string
	}{
		{"agreeing shards", func(in []Input) []Input { return in }, nil},
		{"missing shard", func(in []Input) []Input { return in[:2] }, []string{"1 of the 3 shards missing (index 2)"}},
		{"repeated shard", func(in []Input) []Input { return append(in, Input{"again.json", in[1].Summary}) },
			[]string{"shard 1/3 is in shard1.json and again.json"}},
		{"other schedule", func(in []Input) []Input {
			in[2].Summary = set(in[2].Summary, metrics.KeyScheduleHash, "sha256:def")
			return in
		}, []string{"disagree on the schedule hash: sha256:abc (shard0.json, shard1.json); sha256:def (shard2.json)"}},
		{"other seed", func(in []Input) []Input {
			c := roundTrip(t, in[0].Summary)
			c.Seed = 8
			in[0].Summary = c
			return in
		}, []string{"disagree on the seed"}},
		{"other start", func(in []Input) []Input {
			in[1].Summary = set(in[1].Summary, metrics.KeyStartAt, "2025-06-01T12:00:05Z")
			return in
		}, []string{"disagree on the start time"}},
		{"no start-at", func(in []Input) []Input {
			for i := range in {
				c := setSection(t, in[i].Summary, metrics.KeyStartAt, nil)
				c.StartedAt = start.Add(time.Duration(i) * 1500 * time.Millisecond).Format(time.RFC3339Nano)
				in[i].Summary = c
			}
			return in
		}, []string{"no copy was given --start-at: they started 3.000 s apart"}},
		{"other shard count", func(in []Input) []Input {
			in[0].Summary = set(in[0].Summary, metrics.KeyShard, metrics.ShardInfo{Count: 4, Indices: []int64{0}})
			return in
		}, []string{"disagree on the shard count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Summaries(tc.edit(shardSummaries(t, 3, start)))
			must(t, err)
			if len(res.Warnings) != len(tc.says) {
				t.Fatalf("warnings %q, want %d", res.Warnings, len(tc.says))
			}
			for i, w := range tc.says {
				if !strings.Contains(res.Warnings[i], w) {
					t.Errorf("warning %q does not say %q", res.Warnings[i], w)
				}
			}
			if kept := res.Summary.MergeWarnings; len(kept) != len(tc.says) {
				t.Errorf("summary keeps %q", kept)
			}
		})
	}
}

func TestMergeRefusesForeignSummaries(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	good := shardSummaries(t, 1, start)[0].Summary
	h := metrics.NewHist()
	h.Record(5 * time.Millisecond)
	hs, err := h.State()
	must(t, err)
	// A window's distribution, kept at 2 significant digits.
	wa := metrics.NewWindowAcc()
	var ws metrics.Sample
	ws.From(&client.Result{Sent: time.Millisecond, FirstToken: 6 * time.Millisecond, End: 9 * time.Millisecond, OutputLen: 1, CompletionTokens: 1}, metrics.NoSLO)
	wa.Add(&ws)
	wst, err := wa.State(0)
	must(t, err)
	whs := wst.Hists["ttft"]
	if whs.Count != 1 {
		t.Fatalf("window ttft state %+v", whs)
	}
	editState := func(f func(st *metrics.MergeState)) *metrics.Summary {
		var st metrics.MergeState
		getExtra(t, good, metrics.KeyMergeState, &st)
		f(&st)
		return setSection(t, good, metrics.KeyMergeState, st)
	}
	for _, tc := range []struct {
		name string
		s    *metrics.Summary
		says string
	}{
		{"FineServe's line", &metrics.Summary{Completed: 3}, "no merge_state"},
		{"newer version", editState(func(st *metrics.MergeState) { st.Version = 2 }), "merge_state version 2"},
		{"other encoding", editState(func(st *metrics.MergeState) { st.HistEncoding = "base64-counts" }), "histograms in"},
		{"no start", func() *metrics.Summary { c := roundTrip(t, good); c.StartedAt = "yesterday"; return c }(), "started_at"},
		{"corrupt buckets", editState(func(st *metrics.MergeState) {
			x := st.Collector.Hists["e2e"]
			x.HDR = x.HDR[:len(x.HDR)/2] + "AAAA" + x.HDR[len(x.HDR)/2+4:]
			st.Collector.Hists["e2e"] = x
		}), "hists.e2e"},
		{"not base64", editState(func(st *metrics.MergeState) {
			x := st.Collector.Hists["ttft"]
			x.HDR = "!!!"
			st.Collector.Hists["ttft"] = x
		}), "not base64"},
		{"wrong count", editState(func(st *metrics.MergeState) {
			x := st.Collector.Hists["ttft"]
			x.Count++
			st.Collector.Hists["ttft"] = x
		}), "the buckets hold"},
		{"window precision", editState(func(st *metrics.MergeState) { st.Collector.Hists["ttft"] = whs }), "at 2 significant digits, want"},
		{"window of 3 digits", editState(func(st *metrics.MergeState) { st.Windows[0].Hists["ttft"] = hs }), "window 0"},
		{"wrong maximum", editState(func(st *metrics.MergeState) {
			x := st.Collector.Hists["ttft"]
			x.MaxNS *= 3
			st.Collector.Hists["ttft"] = x
		}), "maximum"},
		{"negative counter", editState(func(st *metrics.MergeState) { st.Collector.Completed = -1 }), "completed: -1 < 0"},
		{"unknown distribution", editState(func(st *metrics.MergeState) { st.Collector.Hists["typo"] = hs }), "hists.typo"},
		{"window without state", editState(func(st *metrics.MergeState) { st.Windows = st.Windows[1:] }), "window 0 has no distributions"},
		{"bad shard", func() *metrics.Summary {
			return setSection(t, good, metrics.KeyShard, metrics.ShardInfo{Count: 2, Indices: []int64{2}})
		}(), "shard: index 2 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Summaries([]Input{{"ok.json", good}, {"bad.json", tc.s}})
			if err == nil {
				t.Fatal("merged")
			}
			if !strings.HasPrefix(err.Error(), "bad.json: ") || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not name bad.json and say %q", err, tc.says)
			}
		})
	}
}

// FuzzMergeSummary merges any JSON with a valid shard summary: a summary
// that cannot be merged is an error, never a panic, and a merged summary
// merges again.
func FuzzMergeSummary(f *testing.F) {
	good := shardSummaries(f, 2, time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	b0, _ := json.Marshal(good[0].Summary)
	b1, _ := json.Marshal(good[1].Summary)
	f.Add(b1)
	f.Add(b0)
	f.Add([]byte(`{"merge_state":{"version":1,"hist_encoding":"hdrhistogram-v2-compressed-base64","collector":{"hists":{"ttft":{"count":1,"hdr":"HISTFAAAAB94nJNpmSzMwMDAzAABMJoRTM+o/6AAEgRAAgHk"}}}},"started_at":"2025-06-01T12:00:00Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s metrics.Summary
		if json.Unmarshal(data, &s) != nil {
			return
		}
		res, err := Summaries([]Input{good[0], {"fuzz.json", &s}})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		b, err := json.Marshal(res.Summary)
		if err != nil {
			t.Fatal(err)
		}
		var again metrics.Summary
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatal(err)
		}
		if _, err := Summaries([]Input{{"merged.json", &again}}); err != nil {
			t.Fatalf("a merged summary does not merge again: %v", err)
		}
	})
}

// TestMergeOfMergeKeepsWarnings: merging two shards of three warns that one
// is missing; merging that result with the third is complete, and still
// says what the first merge found.
func TestMergeOfMergeKeepsWarnings(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	in := shardSummaries(t, 3, start)
	in[1].Summary = setSection(t, in[1].Summary, metrics.KeyStartAt, "2025-06-01T12:00:05Z")
	part, err := Summaries(in[:2])
	must(t, err)
	if len(part.Warnings) != 2 {
		t.Fatalf("first merge warns %q", part.Warnings)
	}
	whole, err := Summaries([]Input{{"part.json", part.Summary}, in[2]})
	must(t, err)
	for _, w := range whole.Warnings {
		if strings.Contains(w, "shards missing") && !strings.Contains(w, "earlier merge") {
			t.Errorf("the complete merge says %q", w)
		}
	}
	found := 0
	for _, w := range part.Warnings {
		for _, v := range whole.Warnings {
			if strings.HasPrefix(v, "part.json (an earlier merge): ") && strings.HasSuffix(v, w) {
				found++
			}
		}
	}
	t.Logf("first %q\nwhole %q", part.Warnings, whole.Warnings)
	if found != len(part.Warnings) {
		t.Fatalf("the merge of the merge lost its warnings: %q (first merge: %q)", whole.Warnings, part.Warnings)
	}
}

// TestMergeKeepsLoadControl: target_rate, length_mix and shared_prefix
// describe the whole schedule, the same in every shard: the merged summary
// carries them unchanged, and says where they come from.
func TestMergeKeepsLoadControl(t *testing.T) {
	const n = 300
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tr := &metrics.TargetRate{Unit: "req/s", Source: "--stages", Stages: []metrics.TargetStage{{DurationS: 2, Target: 300}}, Expected: 300}
	mix := []metrics.LengthMixEntry{{Input: 12, Output: 3, Weight: 1, TargetShare: 1, Scheduled: n, Share: 1}}
	sp := &metrics.SharedPrefixInfo{PrefixLen: 10, NumPrefixes: 2, Dist: "uniform", Requests: n, Used: 2, ReusedTokens: 2980, InputTokens: 3600, ExpectedCachedShare: 2980.0 / 3600}
	ins := shardSummaries(t, 2, start)
	for _, in := range ins {
		in.Summary.TargetRate, in.Summary.LengthMix, in.Summary.SharedPrefix = tr, mix, sp
	}
	res, err := Summaries(ins)
	must(t, err)
	got := roundTrip(t, res.Summary)
	if !reflect.DeepEqual(got.TargetRate, tr) || !reflect.DeepEqual(got.LengthMix, mix) || !reflect.DeepEqual(got.SharedPrefix, sp) {
		t.Errorf("merged load control: %+v %+v %+v", got.TargetRate, got.LengthMix, got.SharedPrefix)
	}
	notes := strings.Join(res.Summary.MergeNotes, "\n")
	for _, k := range []string{metrics.KeyTargetRate, metrics.KeyLengthMix, metrics.KeySharedPrefix} {
		if !strings.Contains(notes, k+" is shard0.json's") {
			t.Errorf("no merge note for %s: %q", k, notes)
		}
	}
}

// TestMergeEndpointsAndTheirServers: the copies' per-endpoint breakdowns
// merge from their states; each endpoint keeps the server metrics of the
// first copy that scraped it, with a note; a copy without the breakdown
// leaves it out with a warning.
func TestMergeEndpointsAndTheirServers(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	urls := []string{"http://a", "http://b"}
	ins := shardSummaries(t, 2, start)
	for i, in := range ins {
		e := metrics.NewEndpoints(urls)
		e.Add(&metrics.Sample{OK: true, Endpoint: i, HasE2E: true, E2E: time.Duration(i+1) * time.Millisecond, OutputTokens: 3})
		st, err := e.State()
		must(t, err)
		in.Summary.MergeState.Endpoints = st
		in.Summary.Endpoints = e.Summary(time.Second)
	}
	ins[1].Summary.Endpoints[1].ServerMetrics = &metrics.ServerSummary{URL: "http://b/metrics", Available: true}
	ins[0].Summary.Endpoints[1].ServerMetrics = nil
	res, err := Summaries(ins)
	must(t, err)
	eps := res.Summary.Endpoints
	if len(eps) != 2 || eps[0].Completed != 1 || eps[1].Completed != 1 || eps[0].ServerMetrics != nil ||
		eps[1].ServerMetrics == nil || eps[1].ServerMetrics.URL != "http://b/metrics" {
		t.Fatalf("endpoints %+v", eps)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "server_metrics are each endpoint's") }) {
		t.Errorf("no note on the endpoints' server metrics: %q", res.Notes)
	}
	if res.Summary.MergeState == nil || len(res.Summary.MergeState.Endpoints) != 2 {
		t.Errorf("merge state endpoints %+v", res.Summary.MergeState)
	}

	ins[1].Summary.MergeState.Endpoints = nil
	res, err = Summaries(ins)
	must(t, err)
	if res.Summary.Endpoints != nil || !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "endpoints is in some summaries only") }) {
		t.Errorf("endpoints %+v, warnings %q", res.Summary.Endpoints, res.Warnings)
	}
}

// TestMergeKeepsASendRateShortfall: a copy whose send rate fell short of
// its schedule's makes the merged summary's client saturated, its reason
// naming the copy and the rates; a merge of copies that kept up is not.
func TestMergeKeepsASendRateShortfall(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ins := shardSummaries(t, 2, start)
	res, err := Summaries(ins)
	must(t, err)
	if c := res.Summary.Saturation; c != nil && c.Saturated {
		t.Fatalf("copies that kept up merge saturated: %+v", c)
	}
	ins = shardSummaries(t, 2, start)
	ins[1].Summary.Saturation = &metrics.Saturation{Saturated: true, SendRate: &metrics.SendRate{Scheduled: 30000, Achieved: 6000, Shortfall: 0.8, LastLate: 2}}
	res, err = Summaries(ins)
	must(t, err)
	got := roundTrip(t, res.Summary)
	if c := got.Saturation; c == nil || !c.Saturated || !strings.Contains(c.Reason, ins[1].Name+": the achieved send rate fell short of the schedule's: 6000.0 req/s of the 30000.0") {
		t.Errorf("merged self-check %+v, want the copy's shortfall", c)
	}
}

// TestMergeGPUAndOTLP: the GPU telemetry is the server's, taken from the
// first copy that watched it (with a note); the copies' OpenTelemetry
// exports add up, and a copy that exported elsewhere is a warning.
func TestMergeGPUAndOTLP(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ins := shardSummaries(t, 2, start)
	gpu := &metrics.GPUSummary{URLs: []string{"http://dcgm:9400/metrics"}, Interval: 1, Available: true, Devices: []metrics.GPUDevice{{}}}
	ins[1].Summary.GPU = gpu
	ins[0].Summary.OTLP = &metrics.OTLPSummary{Endpoint: "http://c:4318", Traces: true, Sample: 1, Spans: 100, Dropped: 1}
	ins[1].Summary.OTLP = &metrics.OTLPSummary{Endpoint: "http://c:4318", Traces: true, Sample: 1, Spans: 150, SampledOut: 2, FailedExports: 1, LastError: "503"}
	res, err := Summaries(ins)
	must(t, err)
	got := roundTrip(t, res.Summary)
	if !reflect.DeepEqual(got.GPU, gpu) || !strings.Contains(strings.Join(got.MergeNotes, "\n"), metrics.KeyGPU+" is shard1.json's") {
		t.Errorf("gpu %+v, notes %q", got.GPU, got.MergeNotes)
	}
	if o := got.OTLP; o == nil || o.Spans != 250 || o.SampledOut != 2 || o.Dropped != 1 || o.FailedExports != 1 || o.LastError != "503" || o.Endpoint != "http://c:4318" {
		t.Errorf("otlp %+v, want the counts added", o)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %q", res.Warnings)
	}
	ins[1].Summary.OTLP.Endpoint = "http://other:4318"
	res, err = Summaries(ins)
	must(t, err)
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "exported to http://other:4318") {
		t.Errorf("no warning for another collector: %q", res.Warnings)
	}
}
