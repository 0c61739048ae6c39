package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
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
			res.ErrorClass, res.Error, res.Status = client.ErrHTTP5xx, "boom", 503
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
	col      *Collector
	models   *Groups
	good     Goodput
	in, out  *LengthHist
	windows  map[int]*WindowAcc
	width    time.Duration
	lastEnd  time.Duration
	offered  map[int]int64
	firstIdx int64
}

func newRunParts(w time.Duration, slo SLO) *runParts {
	p := &runParts{
		col: NewCollector(), models: NewGroups(func(s *Sample) string { return s.Model }),
		in: NewLengthHist(), out: NewLengthHist(), windows: map[int]*WindowAcc{}, width: w, offered: map[int]int64{},
	}
	p.good.SLO = slo
	return p
}

func (p *runParts) add(r *client.Result) {
	var s Sample
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
		p.windows[i] = NewWindowAcc()
	}
	p.windows[i].Add(&s)
	p.offered[int(r.Scheduled/p.width)]++
	p.lastEnd = max(p.lastEnd, r.End)
}

// summary writes what the runner writes: the figures, windows, breakdown,
// goodput and the merge state, through JSON.
func (p *runParts) summary(t testing.TB, shard ShardInfo, start time.Time, hash string) *Summary {
	t.Helper()
	s := &Summary{Backend: "vllm", Mode: "poisson", Seed: 7, StartedAt: start.UTC().Format(time.RFC3339Nano), Command: "fineserve-gen --shard " + shard.String()}
	elapsed := p.lastEnd + 3*time.Millisecond
	p.col.Summarize(s, elapsed)
	s.Scheduled = p.col.Completed + p.col.Failed
	last := int(p.lastEnd / p.width)
	var ws []WindowStats
	var wst []WindowState
	for i := 0; i <= last; i++ {
		acc := p.windows[i]
		if acc == nil {
			acc = NewWindowAcc()
		}
		w := WindowStats{Index: i, Start: (time.Duration(i) * p.width).Seconds(), End: min(time.Duration(i+1)*p.width, elapsed).Seconds(),
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
	for k, h := range map[string]*Hist{"ttft": p.col.TTFT, "tpot": p.col.TPOT, "itl": p.col.ITL, "e2e": p.col.E2E, "send_lag": p.col.Lag} {
		if c := CDF(h); c != nil {
			cdfs[k] = c
		}
	}
	s.LatencyCDFs = cdfs
	s.LengthHistograms = map[string]*LengthBins{"input": p.in.Bins(40), "output": p.out.Bins(40)}
	s.ScheduleHash, s.Shard, s.StartAt = hash, &shard, start.UTC().Format(time.RFC3339Nano)
	st, err := NewMergeState(RunState{Collector: p.col, Elapsed: elapsed, Windows: wst,
		Groups: map[string]*Groups{"per_model": p.models}, Goodput: &p.good, InputLengths: p.in, OutputLengths: p.out})
	must(t, err)
	s.MergeState = &st
	return roundTrip(t, s)
}

func roundTrip(t testing.TB, s *Summary) *Summary {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out Summary
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestHistStateRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		values []time.Duration
	}{
		{"empty", nil},
		{"one", []time.Duration{1234567}},
		{"zeros and negatives", []time.Duration{0, -5, 0}},
		{"exact range", []time.Duration{1500 * time.Nanosecond, 2 * time.Millisecond, 999 * time.Microsecond}},
		{"beyond a day", []time.Duration{48 * time.Hour, time.Millisecond}},
		{"lognormal", func() []time.Duration {
			v := make([]time.Duration, 5000)
			for i := range v {
				v[i] = time.Duration(30e6 * math.Exp(2*r.NormFloat64()))
			}
			return v
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sig := range []int{histSigFigs, windowSigFigs} {
				h := newHistWith(histMaxMicros, sig)
				for _, v := range tc.values {
					h.Record(v)
				}
				st, err := h.State()
				must(t, err)
				b, err := json.Marshal(st)
				must(t, err)
				var back HistState
				must(t, json.Unmarshal(b, &back))
				g, err := histFromState(back, sig)
				must(t, err)
				if g.Dist() != h.Dist() || g.Clamped() != h.Clamped() || !g.h.Equals(h.h) {
					t.Fatalf("%d digits: %+v, want %+v", sig, g.Dist(), h.Dist())
				}
				if _, err := histFromState(back, 5-sig); len(tc.values) > 0 && err == nil {
					t.Errorf("a %d-digit histogram decoded as %d digits", sig, 5-sig)
				}
			}
		})
	}
}

// TestMergeSummariesIsExact splits one run's results into three shards by
// index, writes each shard's summary as a copy would (through JSON), merges
// them and compares with the summary of all the results in one collector:
// every percentile, maximum and count is equal, means and standard
// deviations equal up to float rounding, and so are the windows, the
// per-model breakdown and goodput.
func TestMergeSummariesIsExact(t *testing.T) {
	const n, shards = 3000, 3
	width := 2 * time.Second
	slo := SLO{TTFT: 60, TPOT: math.NaN(), E2EL: 3000}
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
	want := all.summary(t, ShardInfo{Count: 1, Indices: []int64{0}}, start, "sha256:x")
	var ins []MergeInput
	for i, p := range parts {
		ins = append(ins, MergeInput{Name: "s" + string(rune('0'+i)), Summary: p.summary(t, ShardInfo{Count: shards, Indices: []int64{int64(i)}}, start, "sha256:x")})
	}
	res, err := MergeSummaries(ins)
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
	if got.ErrorsByClass[client.ErrHTTP5xx] != want.ErrorsByClass[client.ErrHTTP5xx] || got.PromptTokensErrorMean != want.PromptTokensErrorMean {
		t.Errorf("errors %v prompt error %g, want %v %g", got.ErrorsByClass, got.PromptTokensErrorMean, want.ErrorsByClass, want.PromptTokensErrorMean)
	}
	if got.Duration != want.Duration || got.RequestThroughput != want.RequestThroughput {
		t.Errorf("duration %g throughput %g, want %g %g", got.Duration, got.RequestThroughput, want.Duration, want.RequestThroughput)
	}
	for _, f := range distFields {
		compareDist(t, f.name, *f.get(got), *f.get(want))
	}

	var gw, ww []WindowStats
	getExtra(t, got, KeyWindows, &gw)
	getExtra(t, want, KeyWindows, &ww)
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
	var gm, wm map[string]GroupSummary
	getExtra(t, got, "per_model", &gm)
	getExtra(t, want, "per_model", &wm)
	for k := range wm {
		g, w := gm[k], wm[k]
		g.MeanTTFT, g.MeanTPOT, g.MeanE2E, w.MeanTTFT, w.MeanTPOT, w.MeanE2E = 0, 0, 0, 0, 0, 0
		if g != w {
			t.Errorf("per_model %s: %+v, want %+v", k, g, w)
		}
	}
	for _, k := range []string{KeyRequestGoodput, KeyGoodputCount, KeyGoodputShare, KeyCDFs, KeyLengths} {
		var g, w json.RawMessage
		getExtra(t, got, k, &g)
		getExtra(t, want, k, &w)
		if string(g) != string(w) {
			t.Errorf("%s: %s, want %s", k, g, w)
		}
	}
	var shard ShardInfo
	getExtra(t, got, KeyShard, &shard)
	if shard.String() != "{0,1,2}/3" {
		t.Errorf("shard %s", shard)
	}

	// A merged summary merges again: the three shards in two steps give
	// the same figures.
	r01, err := MergeSummaries(ins[:2])
	must(t, err)
	again, err := MergeSummaries([]MergeInput{{"s01", roundTrip(t, r01.Summary)}, ins[2]})
	must(t, err)
	for _, f := range distFields {
		compareDist(t, "again "+f.name, *f.get(roundTrip(t, again.Summary)), *f.get(want))
	}
}

func compareDist(t *testing.T, name string, got, want Dist) {
	t.Helper()
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
	if got.Count != want.Count || got.Median != want.Median || got.P90 != want.P90 || got.P95 != want.P95 ||
		got.P99 != want.P99 || got.P999 != want.P999 || got.Max != want.Max || !close(got.Mean, want.Mean) || !close(got.Std, want.Std) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
	}
}

// getExtra decodes the section k of s, as s writes it, into v.
func getExtra(t *testing.T, s *Summary, k string, v any) {
	t.Helper()
	all := sectionsOf(t, s)
	raw, ok := all[k]
	if !ok {
		t.Fatalf("%s: not in the summary", k)
	}
	must(t, json.Unmarshal(raw, v))
}

func sectionsOf(t testing.TB, s *Summary) map[string]json.RawMessage {
	t.Helper()
	b, err := json.Marshal(s)
	must(t, err)
	var all map[string]json.RawMessage
	must(t, json.Unmarshal(b, &all))
	return all
}

// setSection returns s as it reads from a file whose key k holds v (nil:
// without k).
func setSection(t testing.TB, s *Summary, k string, v any) *Summary {
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
	var c Summary
	must(t, json.Unmarshal(b, &c))
	return &c
}

// shardSummaries returns valid summaries of shards of one run.
func shardSummaries(t testing.TB, shards int, start time.Time) []MergeInput {
	results := fakeResults(5, 300, 4*time.Second)
	var ins []MergeInput
	for i := range shards {
		p := newRunParts(time.Second, NoSLO)
		for j := range results {
			if results[j].Index%int64(shards) == int64(i) {
				p.add(&results[j])
			}
		}
		ins = append(ins, MergeInput{Name: "shard" + string(rune('0'+i)) + ".json",
			Summary: p.summary(t, ShardInfo{Count: int64(shards), Indices: []int64{int64(i)}}, start, "sha256:abc")})
	}
	return ins
}

func TestMergeWarns(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	set := func(s *Summary, k string, v any) *Summary { return setSection(t, s, k, v) }
	for _, tc := range []struct {
		name string
		edit func([]MergeInput) []MergeInput
		says []string
	}{
		{"agreeing shards", func(in []MergeInput) []MergeInput { return in }, nil},
		{"missing shard", func(in []MergeInput) []MergeInput { return in[:2] }, []string{"1 of the 3 shards missing (index 2)"}},
		{"repeated shard", func(in []MergeInput) []MergeInput { return append(in, MergeInput{"again.json", in[1].Summary}) },
			[]string{"shard 1/3 is in shard1.json and again.json"}},
		{"other schedule", func(in []MergeInput) []MergeInput {
			in[2].Summary = set(in[2].Summary, KeyScheduleHash, "sha256:def")
			return in
		}, []string{"disagree on the schedule hash: sha256:abc (shard0.json, shard1.json); sha256:def (shard2.json)"}},
		{"other seed", func(in []MergeInput) []MergeInput {
			c := roundTrip(t, in[0].Summary)
			c.Seed = 8
			in[0].Summary = c
			return in
		}, []string{"disagree on the seed"}},
		{"other start", func(in []MergeInput) []MergeInput {
			in[1].Summary = set(in[1].Summary, KeyStartAt, "2025-06-01T12:00:05Z")
			return in
		}, []string{"disagree on the start time"}},
		{"no start-at", func(in []MergeInput) []MergeInput {
			for i := range in {
				c := setSection(t, in[i].Summary, KeyStartAt, nil)
				c.StartedAt = start.Add(time.Duration(i) * 1500 * time.Millisecond).Format(time.RFC3339Nano)
				in[i].Summary = c
			}
			return in
		}, []string{"no copy was given --start-at: they started 3.000 s apart"}},
		{"other shard count", func(in []MergeInput) []MergeInput {
			in[0].Summary = set(in[0].Summary, KeyShard, ShardInfo{Count: 4, Indices: []int64{0}})
			return in
		}, []string{"disagree on the shard count"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := MergeSummaries(tc.edit(shardSummaries(t, 3, start)))
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
	h := NewHist()
	h.Record(5 * time.Millisecond)
	hs, err := h.State()
	must(t, err)
	wh := newHistWith(histMaxMicros, windowSigFigs)
	wh.Record(5 * time.Millisecond)
	whs, err := wh.State()
	must(t, err)
	editState := func(f func(st *MergeState)) *Summary {
		var st MergeState
		getExtra(t, good, KeyMergeState, &st)
		f(&st)
		return setSection(t, good, KeyMergeState, st)
	}
	for _, tc := range []struct {
		name string
		s    *Summary
		says string
	}{
		{"FineServe's line", &Summary{Completed: 3}, "no merge_state"},
		{"newer version", editState(func(st *MergeState) { st.Version = 2 }), "merge_state version 2"},
		{"other encoding", editState(func(st *MergeState) { st.HistEncoding = "base64-counts" }), "histograms in"},
		{"no start", func() *Summary { c := roundTrip(t, good); c.StartedAt = "yesterday"; return c }(), "started_at"},
		{"corrupt buckets", editState(func(st *MergeState) {
			x := st.Collector.Hists["e2e"]
			x.HDR = x.HDR[:len(x.HDR)/2] + "AAAA" + x.HDR[len(x.HDR)/2+4:]
			st.Collector.Hists["e2e"] = x
		}), "hists.e2e"},
		{"not base64", editState(func(st *MergeState) {
			x := st.Collector.Hists["ttft"]
			x.HDR = "!!!"
			st.Collector.Hists["ttft"] = x
		}), "not base64"},
		{"wrong count", editState(func(st *MergeState) {
			x := st.Collector.Hists["ttft"]
			x.Count++
			st.Collector.Hists["ttft"] = x
		}), "the buckets hold"},
		{"window precision", editState(func(st *MergeState) { st.Collector.Hists["ttft"] = whs }), "at 2 significant digits, want"},
		{"window of 3 digits", editState(func(st *MergeState) { st.Windows[0].Hists["ttft"] = hs }), "window 0"},
		{"wrong maximum", editState(func(st *MergeState) {
			x := st.Collector.Hists["ttft"]
			x.MaxNS *= 3
			st.Collector.Hists["ttft"] = x
		}), "maximum"},
		{"negative counter", editState(func(st *MergeState) { st.Collector.Completed = -1 }), "completed: -1 < 0"},
		{"unknown distribution", editState(func(st *MergeState) { st.Collector.Hists["typo"] = hs }), "hists.typo"},
		{"window without state", editState(func(st *MergeState) { st.Windows = st.Windows[1:] }), "window 0 has no distributions"},
		{"bad shard", func() *Summary {
			return setSection(t, good, KeyShard, ShardInfo{Count: 2, Indices: []int64{2}})
		}(), "shard: index 2 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MergeSummaries([]MergeInput{{"ok.json", good}, {"bad.json", tc.s}})
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
		var s Summary
		if json.Unmarshal(data, &s) != nil {
			return
		}
		res, err := MergeSummaries([]MergeInput{good[0], {"fuzz.json", &s}})
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
		var again Summary
		if err := json.Unmarshal(b, &again); err != nil {
			t.Fatal(err)
		}
		if _, err := MergeSummaries([]MergeInput{{"merged.json", &again}}); err != nil {
			t.Fatalf("a merged summary does not merge again: %v", err)
		}
	})
}

// FuzzHistState decodes any histogram state: an error or a distribution
// whose figures agree with the state, never a panic.
func FuzzHistState(f *testing.F) {
	h := NewHist()
	for _, v := range []time.Duration{1, 5e6, 7e6, 3e9} {
		h.Record(v)
	}
	st, _ := h.State()
	f.Add(st.HDR, st.Count, st.MeanMS, st.M2, st.MaxNS, int64(0))
	f.Add("HISTFAAAAB94nJNpmSzMwMDAzAABMJoRTM+o/6AAEgRAAgHk", int64(1), 1.0, 0.0, int64(1e6), int64(0))
	f.Add("", int64(0), 0.0, 0.0, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, enc string, n int64, mean, m2 float64, maxNS, clamped int64) {
		for _, sig := range []int{histSigFigs, windowSigFigs} {
			g, err := histFromState(HistState{Count: n, MeanMS: mean, M2: m2, MaxNS: maxNS, Clamped: clamped, HDR: enc}, sig)
			if err != nil {
				continue
			}
			d := g.Dist()
			if d.Count != n || d.Median > d.Max+1e-9 || d.P99 > d.Max+1e-9 {
				t.Fatalf("state %d values decoded as %+v", n, d)
			}
		}
	})
}

// TestMergeOfMergeKeepsWarnings: merging two shards of three warns that one
// is missing; merging that result with the third is complete, and still
// says what the first merge found.
func TestMergeOfMergeKeepsWarnings(t *testing.T) {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	in := shardSummaries(t, 3, start)
	in[1].Summary = setSection(t, in[1].Summary, KeyStartAt, "2025-06-01T12:00:05Z")
	part, err := MergeSummaries(in[:2])
	must(t, err)
	if len(part.Warnings) != 2 {
		t.Fatalf("first merge warns %q", part.Warnings)
	}
	whole, err := MergeSummaries([]MergeInput{{"part.json", part.Summary}, in[2]})
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
	const n, shards = 300, 2
	results := fakeResults(5, n, 2*time.Second)
	parts := make([]*runParts, shards)
	for i := range parts {
		parts[i] = newRunParts(time.Second, NoSLO)
	}
	for i := range results {
		parts[results[i].Index%shards].add(&results[i])
	}
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	tr := &TargetRate{Unit: "req/s", Source: "--stages", Stages: []TargetStage{{DurationS: 2, Target: 300}}, Expected: 300}
	mix := []LengthMixEntry{{Input: 12, Output: 3, Weight: 1, TargetShare: 1, Scheduled: n, Share: 1}}
	sp := &SharedPrefixInfo{PrefixLen: 10, NumPrefixes: 2, Dist: "uniform", Requests: n, Used: 2, ReusedTokens: 2980, InputTokens: 3600, ExpectedCachedShare: 2980.0 / 3600}
	var ins []MergeInput
	for i, p := range parts {
		s := p.summary(t, ShardInfo{Count: shards, Indices: []int64{int64(i)}}, start, "sha256:x")
		s.TargetRate, s.LengthMix, s.SharedPrefix = tr, mix, sp
		ins = append(ins, MergeInput{Name: "s" + string(rune('0'+i)), Summary: s})
	}
	res, err := MergeSummaries(ins)
	must(t, err)
	got := roundTrip(t, res.Summary)
	if !reflect.DeepEqual(got.TargetRate, tr) || !reflect.DeepEqual(got.LengthMix, mix) || !reflect.DeepEqual(got.SharedPrefix, sp) {
		t.Errorf("merged load control: %+v %+v %+v", got.TargetRate, got.LengthMix, got.SharedPrefix)
	}
	notes := strings.Join(res.Summary.MergeNotes, "\n")
	for _, k := range []string{KeyTargetRate, KeyLengthMix, KeySharedPrefix} {
		if !strings.Contains(notes, k+" is s0's") {
			t.Errorf("no merge note for %s: %q", k, notes)
		}
	}
}
