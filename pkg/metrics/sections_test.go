package metrics

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// fullSummary returns a summary with every section set.
func fullSummary() *Summary {
	cpu := 0.25
	return &Summary{
		Backend: "vllm", Mode: "replay", StartedAt: "2026-01-01T00:00:00Z",
		WindowSeconds: 10, Windows: []WindowStats{{Index: 0, End: 10, Offered: 3}},
		ClientCPU: &cpu,
		Agents:    &AgentsSummary{Conversations: 1, Requests: 3, List: []AgentConversation{{Session: 0, Steps: 3}}},
		Saturation: &Saturation{Saturated: true, Windows: []int{0}, Reason: "window 0: a growing backlog",
			Intervals:   []SaturatedInterval{{Start: 1, End: 2, Reasons: []string{"a growing backlog"}}},
			MachineBusy: true, BusyWindows: []int{0}, BusyNote: "send lag p99 up to 5.21 ms",
			SendRate: &SendRate{Scheduled: 600, Achieved: 200, Shortfall: 0.6666, LastLate: 2}},
		Goodput:          &GoodputSummary{Rate: 1.5, Share: 0.75, Requests: 3, SLO: map[string]float64{"ttft": 100}},
		LatencyCDFs:      map[string][][2]float64{"e2e": {{1, 0}, {2, 1}}},
		HTTPPhases:       &HTTPPhasesSummary{Requests: 2, NewConnections: 1, Reused: 1, WaitMS: &PhaseStats{Count: 2, Mean: 1}},
		LengthHistograms: map[string]*LengthBins{"input": {Edges: []float64{1, 2}, Counts: []int64{4}, Total: 4}},
		ServerMetrics:    &ServerSummary{URL: "http://127.0.0.1:1/metrics", Available: true, ServerStats: &ServerStats{Samples: 2}},
		OTLP:             &OTLPSummary{Endpoint: "http://127.0.0.1:4318", Traces: true, Sample: 1, Spans: 2},
		GPU:              &GPUSummary{URLs: []string{"http://127.0.0.1:1/metrics-gpu"}, Available: true, GPUStats: &GPUStats{Samples: 2, GPUs: 1}},
		PerModel:         map[string]GroupSummary{"a": {Completed: 1}},
		Endpoints: []EndpointSummary{{Index: 0, URL: "http://127.0.0.1:1", Requests: 2, Completed: 1, Failed: 1,
			ErrorsByClass: map[string]int64{"connect": 1}}},
		PerKind:       map[string]GroupSummary{"image": {Completed: 1, NoTokens: true}},
		Replay:        &ReplayInfo{Trace: "t.csv", Format: "fineserve", Replayed: 4},
		Pooling:       &PoolingSummary{Measure: "vectors", Inputs: 8, Returned: 8, VectorDims: 64},
		TargetRate:    &TargetRate{Unit: "req/s", Source: "--stages", Stages: []TargetStage{{DurationS: 10, Target: 5}}, Expected: 25},
		LengthMix:     []LengthMixEntry{{Input: 128, Output: 64, Weight: 1, TargetShare: 1, Scheduled: 4, Share: 1}},
		SharedPrefix:  &SharedPrefixInfo{PrefixLen: 100, NumPrefixes: 2, Dist: "uniform", Requests: 4},
		Sessions:      &SessionsSummary{Turns: "3", PlanHash: "sha256:00", Started: 2, Completed: 1, EndedError: 1, TurnsSent: 5},
		PerTurn:       []TurnSummary{{Turn: 1, Count: 2, TTFTP50: 1.5}, {Turn: 2, Count: 2, Failed: 1}},
		ScheduleHash:  "sha256:00",
		Shard:         &ShardInfo{Count: 2, Indices: []int64{1}},
		StartAt:       "2026-01-01T00:00:00Z",
		MergeState:    &MergeState{Version: MergeStateVersion, HistEncoding: HistEncoding},
		MergedFrom:    []MergedFrom{{File: "a.json", Shard: "1/2"}},
		MergeWarnings: []string{"w"},
		MergeNotes:    []string{"n"},
		SteadyState:   &SteadyStateSummary{Rule: SteadyAuto, StartS: 1, EndS: 9, InFlightLevel: 4, Requests: 3, Figures: map[string]float64{"mean_ttft_ms": 12}},
		Repeats: &RepeatsSummary{Runs: 2, Requested: 3, Confidence: 0.95, WideShare: 0.1,
			Figures: map[string]RepeatFigure{"mean_ttft_ms": {Mean: 12, HalfWidth: 1, N: 2, Values: []float64{11, 13}}},
			PerRun:  []RepeatRun{{Seed: 1, SummaryPath: "s-run01.json"}, {Seed: 2, SummaryPath: "s-run02.json"}}},
		Thresholds: []ThresholdVerdict{{Threshold: "p99_ttft_ms<=300", Key: "p99_ttft_ms", On: "mean", Value: &cpu, Pass: true}},
	}
}

// keysOf returns the top-level keys of a JSON object in their order.
func keysOf(t *testing.T, b []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestSectionsFollowTheDistributionsInKeyOrder: every section is written
// once, after the distributions, in sorted key order but for merge_state,
// the last key of the file.
func TestSectionsFollowTheDistributionsInKeyOrder(t *testing.T) {
	b, err := json.Marshal(fullSummary())
	if err != nil {
		t.Fatal(err)
	}
	keys := keysOf(t, b)
	last := slices.Index(keys, lastDistKey())
	if last < 0 {
		t.Fatalf("no distribution keys: %v", keys)
	}
	got := keys[last+1:]
	want := make([]string, len(sectionFields))
	for i, f := range sectionFields {
		want[i] = f.key
	}
	if !slices.IsSorted(want[:len(want)-1]) || !slices.Equal(got, want) {
		t.Errorf("sections written as\n%v\nwant every one, sorted:\n%v", got, want)
	}
	if got[len(got)-1] != KeyMergeState {
		t.Errorf("the last key is %s, want %s (out of a reader's way)", got[len(got)-1], KeyMergeState)
	}
}

// TestSectionsRoundTrip: a summary with every section reads back equal and
// writes back the same bytes; an empty one writes no section.
func TestSectionsRoundTrip(t *testing.T) {
	s := fullSummary()
	back, first := testenv.RoundTrip(t, *s)
	second, err := json.Marshal(&back)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("re-written summary differs:\n%s\n%s", first, second)
	}
	if !reflect.DeepEqual(back.Saturation, s.Saturation) || !reflect.DeepEqual(back.Goodput, s.Goodput) ||
		!reflect.DeepEqual(back.Replay, s.Replay) || !reflect.DeepEqual(back.PerKind, s.PerKind) ||
		!reflect.DeepEqual(back.Sessions, s.Sessions) || !reflect.DeepEqual(back.PerTurn, s.PerTurn) || *back.ClientCPU != *s.ClientCPU {
		t.Errorf("sections lost on reading:\n%+v\n%+v", back, s)
	}
	empty, _ := json.Marshal(&Summary{})
	for _, f := range sectionFields {
		if bytes.Contains(empty, []byte(`"`+f.key+`"`)) {
			t.Errorf("an empty summary writes %s", f.key)
		}
	}
}

// TestSectionsWrittenByThePreviousFormat: summaries written when the
// sections were an untyped map (a merge of a replay with goodput, live
// saturation intervals and server metrics; a replay whose client fell
// behind) read into the typed sections and write back byte for byte.
func TestSectionsWrittenByThePreviousFormat(t *testing.T) {
	for _, name := range []string{"testdata/summary-merged.json", "testdata/summary-replay.json"} {
		b, s := testenv.ReadFile(t, name), testenv.ReadJSON[Summary](t, name)
		out, err := json.MarshalIndent(&s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		// The sections, after the distributions, each written back byte
		// for byte (merge_state has moved to the end: the order of keys
		// is not compared).
		sections := func(x []byte) map[string]string {
			var all map[string]json.RawMessage
			if err := json.Unmarshal(x, &all); err != nil {
				t.Fatal(err)
			}
			out := map[string]string{}
			for _, f := range sectionFields {
				if raw, ok := all[f.key]; ok {
					var c bytes.Buffer
					if err := json.Compact(&c, raw); err != nil {
						t.Fatal(err)
					}
					out[f.key] = c.String()
				}
			}
			return out
		}
		got, want := sections(out), sections(b)
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s: %s written back as\n%.200s\nwant\n%.200s", name, k, got[k], want[k])
				}
			}
			if len(got) != len(want) {
				t.Errorf("%s: %d sections written back, want %d", name, len(got), len(want))
			}
		}
		if keys := keysOf(t, out); keys[len(keys)-1] != KeyMergeState {
			t.Errorf("%s: the last key is %s, want %s", name, keys[len(keys)-1], KeyMergeState)
		}
		if s.Goodput == nil || s.Saturation == nil || !s.Saturation.Saturated || s.Replay == nil || s.ServerMetrics == nil || s.MergeState == nil {
			t.Errorf("%s: sections not read: %+v", name, s)
		}
	}
}

// lastDistKey is the last distribution key a summary without answers
// (answers.go) writes.
func lastDistKey() string {
	f := distFields[len(distFields)-1]
	for i := len(distFields) - 1; f.answers; i-- {
		f = distFields[i]
	}
	var d Dist
	stats := d.stats()
	last := stats[len(stats)-1]
	if f.only != nil {
		for _, st := range stats {
			if st.suffix == f.only[len(f.only)-1] {
				last = st
			}
		}
	}
	return f.key(last)
}

// TestSummaryIgnoresUnknownKeys: a key no section holds (FineServe's own,
// or a newer build's) is ignored; a malformed section is an error naming it.
func TestSummaryIgnoresUnknownKeys(t *testing.T) {
	var s Summary
	if err := json.Unmarshal([]byte(`{"backend":"vllm","rtfx":1.0,"per_user":{"a":{}}}`), &s); err != nil || s.Backend != "vllm" {
		t.Fatalf("%+v, %v", s, err)
	}
	b, _ := json.Marshal(&s)
	if strings.Contains(string(b), "rtfx") || strings.Contains(string(b), "per_user") {
		t.Errorf("unknown keys written back: %s", b)
	}
	err := json.Unmarshal([]byte(`{"goodput_share":"high"}`), &s)
	if err == nil || !strings.Contains(err.Error(), KeyGoodputShare) {
		t.Errorf("malformed goodput_share: %v", err)
	}
}
