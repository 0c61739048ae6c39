package agentic

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

const samples = "testdata/"

func TestWekaSamples(t *testing.T) {
	for _, tc := range []struct {
		file     string
		requests int
		hit      float64
	}{
		{"trace_0012.json", 14, 0.8988}, {"trace_0022.json", 7, 0.8386}, {"trace_0026.json", 3, 0.6174},
		{"trace_0277.json", 53, 0.8729}, {"trace_0291.json", 32, 0.8973},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := samples + "weka/" + tc.file
			f, ok := Detect(path)
			if !ok || f != Weka {
				t.Skipf("sample not found or not detected: %v %v", f, ok)
			}
			tr, err := Load(path, f)
			if err != nil {
				t.Fatal(err)
			}
			if tr.SkippedCount != 0 || len(tr.Conversations) != 1 {
				t.Fatalf("skips %d %v, conversations %d", tr.SkippedCount, tr.Skips, len(tr.Conversations))
			}
			c := tr.Conversations[0]
			if n := c.Root.Requests(); n != tc.requests {
				t.Errorf("requests %d, want %d", n, tc.requests)
			}
			_, hit, in := c.HitTokens()
			if r := float64(hit) / float64(in); r < tc.hit-0.0001 || r > tc.hit+0.0001 {
				t.Errorf("hit rate %.4f, want %.4f", r, tc.hit)
			}
		})
	}
}

func TestWekaSubagentsAndBadInput(t *testing.T) {
	// Subagent t session-absolute (HF variant): 10.0 and 12.0 after a
	// spawn at 10.0 are 0 and 2 s into the branch; ids from 0.
	doc := `{"id":"a","block_size":4,"requests":[` +
		`{"t":0,"type":"n","in":9,"out":2,"hash_ids":[0,1],"think_time":0,"api_time":1},` +
		`{"t":10,"type":"subagent","requests":[{"t":10.0,"in":8,"out":1,"hash_ids":[5,6]},{"t":12.0,"in":8,"out":1,"hash_ids":[5,6],"think_time":1}]},` +
		`{"t":11,"type":"subagent","requests":[]},` +
		`{"t":20,"in":12,"out":2,"hash_ids":[0,1,2],"think_time":3},` +
		`{"t":21,"in":12,"out":2,"hash_ids":[0,1]},` +
		`{"t":22,"out":2,"hash_ids":[0,1]},` +
		`{"t":23,"in":12,"out":2}]}` + "\n" +
		`{"id":"b","requests":[]}` + "\n" + `not json` + "\n"
	tr, err := ReadWeka(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"line 1: requests[2].requests: a subagent without requests",
		"line 1: requests[4].hash_ids: 2 ids for in 12 (block 4): want 3 or 3",
		"line 1: requests[5].in: missing",
		"line 1: requests[6].hash_ids: missing",
		"line 2: block_size: missing",
	}
	if tr.SkippedCount != 6 {
		t.Errorf("skipped %d: %v", tr.SkippedCount, tr.Skips)
	}
	for i, w := range want {
		if i >= len(tr.Skips) || tr.Skips[i].Error() != w {
			t.Errorf("skip %d: %v, want %q", i, tr.Skips, w)
		}
	}
	if !strings.HasPrefix(tr.Skips[5].Error(), "line 3: json:") {
		t.Errorf("skip 5: %v", tr.Skips[5])
	}
	c := tr.Conversations[0]
	if len(c.Root.Steps) != 3 || c.Root.Steps[1].Sub == nil {
		t.Fatalf("steps %+v", c.Root.Steps)
	}
	sub := c.Root.Steps[1].Sub
	if sub.Steps[0].At != 0 || sub.Steps[1].At != 2*time.Second {
		t.Errorf("subagent offsets %v %v, want 0 and 2s", sub.Steps[0].At, sub.Steps[1].At)
	}
	// In time order: 9 in (0 hit), sub 8 (0), sub 8 (7: blocks 5 and 6
	// seen, the last token computed), 12 (8: blocks 0 and 1).
	_, hit, in := c.HitTokens()
	if hit != 7+8 || in != 9+8+8+12 {
		t.Errorf("hit %d of %d", hit, in)
	}
}

func TestClock(t *testing.T) {
	prev := &Step{At: 10 * time.Second, API: 4 * time.Second, HasAPI: true}
	cur := &Step{At: 30 * time.Second, Think: 6 * time.Second, HasThink: true}
	for _, tc := range []struct {
		c        Clock
		d        time.Duration
		fromSent bool
	}{
		{Clock{Timing: Think}, 6 * time.Second, false},
		{Clock{Timing: Original}, 20 * time.Second, true},
		{Clock{Timing: APIScaled, APIScale: 0.5}, 8 * time.Second, true},
		{Clock{Timing: Think, Scale: 2}, 3 * time.Second, false},
		{Clock{Timing: Original, MaxThink: 5 * time.Second}, 5 * time.Second, true},
	} {
		d, fs := tc.c.Delay(prev, cur)
		if d != tc.d || fs != tc.fromSent {
			t.Errorf("%+v: %v %v, want %v %v", tc.c, d, fs, tc.d, tc.fromSent)
		}
	}
	// Without think times, the original gaps.
	if d, fs := (&Clock{}).Delay(prev, &Step{At: 12 * time.Second}); d != 2*time.Second || !fs {
		t.Errorf("fallback %v %v", d, fs)
	}
}

func TestTraceLab(t *testing.T) {
	tr, err := Load(samples+"tracelab/session_workload_example.csv", TraceLab)
	if err != nil {
		t.Skip(err)
	}
	c := tr.Conversations[0]
	if len(c.Root.Steps) != 11 || c.Root.Steps[1].Think != 182*time.Millisecond || c.Root.Steps[0].In != 12461+5875 {
		t.Errorf("steps %+v", c.Root.Steps[:2])
	}
	// Round 10's prompt shares 48060 tokens (750 blocks) with round 9's.
	s9, s10 := c.Root.Steps[9].Hash, c.Root.Steps[10].Hash
	if s10[749] != s9[749] || s10[750] == s9[750] {
		t.Errorf("round 10 shares the wrong prefix")
	}
	bad := "session_id,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms\n0,0,10,100,5,1\n0,1,,100,5,1\n0,2,x,100,5,1\n"
	tr, err = ReadTraceLab(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if tr.SkippedCount != 2 || tr.Skips[0].Error() != "line 3: prefix_len: missing" {
		t.Errorf("skips %v", tr.Skips)
	}
	j, err := Load(samples+"tracelab/round_trace.sanitized.jsonl", TraceLab)
	if err != nil {
		t.Skip(err)
	}
	if len(j.Conversations) != 2 || j.Requests != 19 || !j.Conversations[0].HasStart {
		t.Errorf("round trace: %d conversations, %d requests", len(j.Conversations), j.Requests)
	}
}

func TestBailian(t *testing.T) {
	f, ok := Detect("testdata/bailian.jsonl")
	if !ok || f != Bailian {
		t.Fatalf("detected %v %v", f, ok)
	}
	tr, err := Load("testdata/bailian.jsonl", f)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Conversations) != 2 || tr.SkippedCount != 3 {
		t.Fatalf("%d conversations, skips %v", len(tr.Conversations), tr.Skips)
	}
	if s := tr.Skips[1].Error(); s != "line 5: parent_chat_id: chat 5: a cycle of parent links" {
		t.Errorf("skip %q", s)
	}
	if s := tr.Skips[0].Error(); !strings.Contains(s, "line 7: hash_ids: 2 ids for input_length 50") {
		t.Errorf("skip %q", s)
	}
	c := tr.Conversations[0]
	if len(c.Root.Steps) != 3 || c.Root.Steps[2].At != 2*time.Second || !c.Global {
		t.Errorf("conversation 1: %+v", c.Root.Steps)
	}
}

func FuzzReadWeka(f *testing.F) {
	f.Add([]byte(`{"block_size":4,"requests":[{"t":0,"in":9,"out":2,"hash_ids":[0,1]}]}`))
	f.Add([]byte(`{"block_size":4,"requests":[{"t":1,"type":"subagent","requests":[{"t":1,"in":4,"out":1,"hash_ids":[1]}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _ := ReadWeka(strings.NewReader(string(b)))
		for _, c := range tr.Conversations {
			_, hit, in := c.HitTokens()
			if hit > in || hit < 0 {
				t.Fatalf("hit %d of %d", hit, in)
			}
		}
	})
}

func FuzzReadTraceLab(f *testing.F) {
	f.Add([]byte("session_id,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms\n0,0,10,100,5,1\n0,1,100,20,5,3\n"))
	f.Add([]byte(`{"session_id":"s","round_index":0,"input_tokens_total":100,"prefix_tokens":0,"output_tokens":3,"timing_events":[{"timestamp":"2026-01-01T00:00:00Z"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _ := ReadTraceLab(strings.NewReader(string(b)))
		for _, c := range tr.Conversations {
			for _, s := range c.Root.Steps {
				if len(s.Hash) > s.In/c.BlockSize || s.In <= 0 || s.Out < 1 {
					t.Fatalf("step %+v", s)
				}
			}
			_, hit, in := c.HitTokens()
			if hit > in || hit < 0 {
				t.Fatalf("hit %d of %d", hit, in)
			}
		}
	})
}

func FuzzReadBailian(f *testing.F) {
	b, _ := os.ReadFile("testdata/bailian.jsonl")
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, _ := ReadBailian(strings.NewReader(string(b)))
		n := 0
		for _, c := range tr.Conversations {
			n += c.Root.Requests()
			_, hit, in := c.HitTokens()
			if hit > in || hit < 0 {
				t.Fatalf("hit %d of %d", hit, in)
			}
		}
		if n != tr.Requests {
			t.Fatalf("%d requests in conversations, %d counted", n, tr.Requests)
		}
	})
}

// TestTraceLabBounded: a round's size in the file never sizes its made
// block ids past MaxRoundTokens.
func TestTraceLabBounded(t *testing.T) {
	tr, _ := ReadTraceLab(strings.NewReader("session_id,round_idx,prefix_len,input_len,output_len,tool_wait_after_ms\n0,0,0,1099511627776,5,1\n0,1,0,100,5,1\n"))
	if tr.SkippedCount != 1 || len(tr.Conversations) != 1 || tr.Requests != 1 {
		t.Errorf("skips %v, %d requests", tr.Skips, tr.Requests)
	}
}

// TestStarts: the trace's own starts, scaled and sliced, and Poisson
// starts over drawn conversations — the same arrivals on every walk and
// for the same seed.
func TestStarts(t *testing.T) {
	doc := ""
	for i, start := range []float64{100, 110, 130, 160} {
		doc += `{"id":"c` + string(rune('a'+i)) + `","block_size":4,"start_time":` + strconv.FormatFloat(start, 'f', -1, 64) +
			`,"requests":[{"t":0,"in":` + strconv.Itoa(8+i) + `,"out":2,"hash_ids":[1,2]}]}` + "\n"
	}
	tr, err := ReadWeka(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlan(tr, Clock{}, 1, false)
	at := func(s func(func(arrival.Arrival) bool)) (out []float64, in []int) {
		for a := range s {
			out = append(out, a.At.Seconds())
			in = append(in, a.InputTokens)
		}
		return
	}
	s, _ := p.Starts(StartOptions{TimeScale: 10})
	if got, in := at(s); !slices.Equal(got, []float64{0, 1, 3, 6}) || !slices.Equal(in, []int{8, 9, 10, 11}) {
		t.Errorf("starts %v %v", got, in)
	}
	s, scale := p.Starts(StartOptions{TargetRate: 1}) // 3 gaps over 60 s: 0.05/s
	if got, _ := at(s); scale != 20 || !slices.Equal(got, []float64{0, 0.5, 1.5, 3}) {
		t.Errorf("target rate: scale %v, starts %v", scale, got)
	}
	s, _ = p.Starts(StartOptions{Start: 105 * time.Second, Span: 30 * time.Second})
	if got, in := at(s); !slices.Equal(got, []float64{0, 20}) || !slices.Equal(in, []int{9, 10}) {
		t.Errorf("slice: starts %v %v", got, in)
	}
	d := NewPlan(tr, Clock{}, 7, true)
	s, _ = d.Starts(StartOptions{Count: 50, Rate: 5})
	a1, in1 := at(s)
	a2, in2 := at(s)
	d2 := NewPlan(tr, Clock{}, 7, true)
	s2, _ := d2.Starts(StartOptions{Count: 50, Rate: 5})
	a3, in3 := at(s2)
	if len(a1) != 50 || !slices.Equal(a1, a2) || !slices.Equal(a1, a3) || !slices.Equal(in1, in2) || !slices.Equal(in1, in3) {
		t.Errorf("draws not the same on every walk and plan")
	}
	seen := map[int]bool{}
	for _, n := range in1 {
		seen[n] = true
	}
	if len(seen) != 4 {
		t.Errorf("50 draws picked %d of 4 conversations", len(seen))
	}
}
