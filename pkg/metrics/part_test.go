package metrics

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// partSamples are requests of every kind a part counts: answers with
// reasoning and tools, agentic steps, failures and cancellations, with
// varied lengths and latencies.
func partSamples() []Sample {
	ms := time.Millisecond
	out := answersSamples()
	for i := range 40 {
		d := time.Duration(i%7+1) * ms
		s := Sample{Request: record.Request{Index: int64(i), InputLen: 10 + i*37%500, Sent: time.Duration(i) * 3 * ms, Model: []string{"a", "b"}[i%2]},
			OK:           i%10 != 4, // failures in shard 0: a merge keeps the first copy's error samples first
			OutputTokens: 1 + i%13, HasE2E: true, E2E: 20 * d, HasTTFT: true, TTFT: 4 * d, HasTPOT: i%13 > 0, TPOT: d,
			Kind: []string{"text", "image"}[i%3/2], Endpoint: i % 2}
		s.End = s.Sent + s.E2E
		if !s.OK {
			s.ErrorClass, s.Error = "http_5xx", "boom"
		}
		s.Cancelled = i%11 == 7
		s.Good = s.OK && s.TTFT <= 12*ms
		out = append(out, s)
	}
	for i := range 4 { // sessions listed in order of their start: session 0's in shard 0
		out = append(out, *agentSample(int64(i%2), i/2, time.Duration(i)*10*ms, 5*ms, time.Duration(i+1)*30*ms, -1, 100, 20, 20))
	}
	return out
}

// TestPartsMergeOfShardsIsOneRun: every part of the registry, run as two
// shards whose merge states go through JSON and merge into the parts of a
// merge, gives the summary of one run that saw every sample.
func TestPartsMergeOfShardsIsOneRun(t *testing.T) {
	cfg := PartsConfig{SLO: SLO{TTFT: 12, TPOT: math.NaN(), E2EL: math.NaN()}, Breakdowns: BreakdownKeys, Endpoints: []string{"http://a", "http://b"}}
	whole, shards := NewParts(cfg), [][]Part{NewParts(cfg), NewParts(cfg)}
	for i, s := range partSamples() {
		for _, p := range whole {
			p.Add(&s)
		}
		shard := i % 2
		if s.Agent.On {
			shard = int(s.Session) % 2 // a conversation runs in one shard
		}
		for _, p := range shards[shard] {
			p.Add(&s)
		}
	}
	const elapsed = 2 * time.Second
	var want Summary
	FinishParts(whole, &want, elapsed)
	merged := NewParts(PartsConfig{SLO: NoSLO})
	for i, parts := range shards {
		var s Summary
		FinishParts(parts, &s, elapsed)
		st := MergeState{Version: MergeStateVersion, HistEncoding: HistEncoding}
		if err := SaveParts(parts, &st); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		var back MergeState
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if err := MergeParts(merged, &Copy{Name: "shard", Summary: &s, State: &back, Warnf: func(f string, a ...any) { t.Errorf("shard %d: "+f, append([]any{i}, a...)...) }}); err != nil {
			t.Fatal(err)
		}
	}
	var got Summary
	FinishParts(merged, &got, elapsed)
	wb, _ := json.MarshalIndent(&want, "", " ")
	gb, _ := json.MarshalIndent(&got, "", " ")
	if !sameJSON(t, gb, wb) {
		t.Errorf("merged shards:\n%s\none run:\n%s", gb, wb)
	}
	var ws, gs MergeState
	if err := SaveParts(whole, &ws); err != nil {
		t.Fatal(err)
	}
	if err := SaveParts(merged, &gs); err != nil {
		t.Fatal(err)
	}
	wb, _ = json.Marshal(ws)
	gb, _ = json.Marshal(gs)
	if !sameJSON(t, gb, wb) {
		t.Errorf("merged shards' state:\n%s\none run's:\n%s", gb, wb)
	}
}

// sameJSON reports whether a and b hold the same keys in the same order
// and the same values, numbers within a relative 1e-12 (a merge adds the
// copies' exact moments, not the values one at a time: the last bit of a
// mean may differ).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	for {
		ta, ea := da.Token()
		tb, eb := db.Token()
		if ea != nil || eb != nil {
			return ea == io.EOF && eb == io.EOF
		}
		na, oka := ta.(json.Number)
		nb, okb := tb.(json.Number)
		if oka && okb {
			x, _ := na.Float64()
			y, _ := nb.Float64()
			if math.Abs(x-y) > 1e-12*math.Max(math.Abs(x), math.Abs(y)) {
				return false
			}
			continue
		}
		if ta != tb {
			return false
		}
	}
}
