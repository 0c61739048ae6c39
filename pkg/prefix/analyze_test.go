package prefix

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readAll(t *testing.T, path string, opt Options, fn func(*Request) error) *Info {
	t.Helper()
	rc, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	info, err := Read(rc, path, opt, fn)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func analyze(t *testing.T, path string, cache ...int) (Report, *Info) {
	t.Helper()
	a := NewAnalyzer(0, cache, 0)
	info := readAll(t, path, Options{}, a.Add)
	return a.Report(), info
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestBailianHandComputed checks every figure of the Bailian fixture
// against the hand-worked values (16-token blocks):
//
//	t=0.5 chat 1 [11 12 13]           40 tokens  hits 0
//	t=2   chat 2 [11 12 14 15 16]     70 tokens  hits 2 (32 tokens)
//	t=3   chat 3 [11 17]              32 tokens  hits 1 (16 tokens)
//	t=4   chat 4 [11 12 14 15 16 18]  90 tokens  hits 5 (80 tokens)
//	t=5   chat 6 [20]                 10 tokens  hits 0
//
// 8 of 17 blocks, 128 of 242 tokens. Distinct 9: roots 11 and 20; 11 has
// children 12 and 17, 12 has 13 and 14, then 14→15→16→18; leaves 13, 17,
// 18, 20 (depths 3, 2, 6, 1). Used by more than one request: 11, 12, 14,
// 15, 16. An LRU of 3 blocks (hits only in a request's leading run): chat
// 2 hits 11 and 12, then evicts 13, 11, 12; chat 3 misses 11 and 17
// (evicting 14, 15); chat 4 hits 11 and misses the rest (5 evictions);
// chat 6 evicts 15 — 3 hits, 11 evictions.
func TestBailianHandComputed(t *testing.T) {
	r, info := analyze(t, filepath.Join("testdata", "bailian.jsonl"), 3)
	if info.Format != Bailian || info.BlockSize != 16 || r.Requests != 5 || info.Conversations != 2 {
		t.Fatalf("format %s, block %d, requests %d, conversations %d", info.Format, info.BlockSize, r.Requests, info.Conversations)
	}
	if r.Blocks != 17 || r.InfiniteHits != 8 || !near(r.InfiniteHitRate, 8.0/17) || !near(r.TokenHitRate, 128.0/242) {
		t.Errorf("blocks %d hits %d rate %g token rate %g", r.Blocks, r.InfiniteHits, r.InfiniteHitRate, r.TokenHitRate)
	}
	if r.Distinct != 9 || r.UniquePrefixes != 5 || !near(r.PrefixReuseRatio, 5.0/9) || !near(r.SpanS, 4.5) {
		t.Errorf("distinct %d unique %d reuse %g span %g", r.Distinct, r.UniquePrefixes, r.PrefixReuseRatio, r.SpanS)
	}
	want := Tree{Nodes: 9, Roots: 2, Leaves: 4, MaxDepth: 6, MeanLeafDepth: 3, Internal: 5, MeanBranching: 1.4, MaxBranching: 2}
	if got := r.Tree; got.Nodes != want.Nodes || got.Roots != want.Roots || got.Leaves != want.Leaves || got.MaxDepth != want.MaxDepth ||
		!near(got.MeanLeafDepth, want.MeanLeafDepth) || got.Internal != want.Internal || !near(got.MeanBranching, want.MeanBranching) || got.MaxBranching != want.MaxBranching {
		t.Errorf("tree %+v, want %+v", got, want)
	}
	if len(r.LRU) != 1 || r.LRU[0].Hits != 3 || r.LRU[0].Evicted != 11 || r.LRU[0].Tokens != 48 {
		t.Errorf("lru %+v", r.LRU)
	}
	if r.ISL.Min != 10 || r.ISL.Max != 90 || r.OSL.Max != 10 || !near(r.ISL.Mean, 242.0/5) {
		t.Errorf("isl %+v osl %+v", r.ISL, r.OSL)
	}
	// The unusable lines, each with its line and field.
	wantSkips := []string{"line 5: parent_chat_id: a cycle", "line 7: parent_chat_id: a cycle", "line 8: timestamp: missing", "line 9: hash_ids: not an array of integers", "line 10: hash_ids: 3 ids for 16 input tokens"}
	if info.Skips.Count != len(wantSkips) {
		t.Fatalf("skips %d: %v", info.Skips.Count, info.Skips.First)
	}
	for i, w := range wantSkips {
		if got := info.Skips.First[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("skip %d: %q, want %q…", i, got, w)
		}
	}
}

// TestStrict: the first unusable record is an error naming file, line and
// field.
func TestStrict(t *testing.T) {
	path := filepath.Join("testdata", "bailian.jsonl")
	rc, _ := Open(path)
	defer rc.Close()
	_, err := Read(rc, path, Options{Strict: true}, func(*Request) error { return nil })
	var sk Skip
	if !errors.As(err, &sk) || sk.Line != 5 || !strings.Contains(err.Error(), "bailian.jsonl: line 5: parent_chat_id: a cycle") {
		t.Fatalf("err %v", err)
	}
}

// TestMooncakeSample checks the shared Mooncake sample against an
// independent count (a set of seen ids, in file order: the file is sorted).
func TestMooncakeSample(t *testing.T) {
	path := filepath.Join("..", "replay", "testdata", "mooncake_synthetic_trace.jsonl.gz")
	seen := map[uint64]bool{}
	var hits, blocks int64
	readAll(t, path, Options{}, func(q *Request) error {
		for _, id := range q.Blocks {
			blocks++
			if seen[id] {
				hits++
			}
			seen[id] = true
		}
		return nil
	})
	r, info := analyze(t, path, 1000, 1<<30)
	if info.Format != Mooncake || r.Requests != 3993 || info.OutOfOrder != 0 || r.Blocks != blocks || r.InfiniteHits != hits || r.Distinct != len(seen) {
		t.Fatalf("report %+v, want %d hits of %d blocks, %d distinct", r, hits, blocks, len(seen))
	}
	// 77,953 of 121,877 blocks: 63.96 %.
	if hits != 77953 || blocks != 121877 {
		t.Errorf("hits %d of %d", hits, blocks)
	}
	// A cache larger than the trace is the infinite cache (the sample's ids
	// are chained, so "seen" and "the whole leading run seen" agree); a
	// small one hits less.
	if r.LRU[1].Hits != hits || r.LRU[0].Hits >= hits || r.LRU[0].Evicted == 0 || r.LRU[0].Resident != 1000 {
		t.Errorf("lru %+v", r.LRU)
	}
}

// TestWEKA reads a coding-agent conversation: its 64-token blocks from the
// file, hash ids from 1, each request's prefix the previous one's.
func TestWEKA(t *testing.T) {
	r, info := analyze(t, filepath.Join("testdata", "weka_trace_0026.json"))
	if info.Format != WEKA || info.BlockSize != 64 || r.Requests != 3 || info.Conversations != 1 {
		t.Fatalf("info %+v", info)
	}
	// 238 + 271 + 313 blocks; the second reuses the first's 238, the third
	// the second's 271.
	if r.Blocks != 822 || r.InfiniteHits != 509 || r.Tree.Roots != 1 || r.Tree.Leaves != 1 || r.Tree.MaxDepth != 313 || !near(r.SpanS, 146) {
		t.Errorf("report %+v", r)
	}
	// Two conversations in one JSONL file: local ids do not collide.
	data, err := os.ReadFile(filepath.Join("testdata", "weka_trace_0026.json"))
	if err != nil {
		t.Fatal(err)
	}
	one := strings.Join(strings.Fields(string(data)), " ")
	a := NewAnalyzer(0, nil, 0)
	info, err = Read(strings.NewReader(one+"\n"+one+"\n"), "two.jsonl", Options{}, a.Add)
	if err != nil {
		t.Fatal(err)
	}
	r2 := a.Report()
	if info.Conversations != 2 || r2.Requests != 6 || r2.InfiniteHits != 2*509 || r2.Tree.Roots != 2 || !near(r2.SpanS, 292) {
		t.Errorf("two conversations: %+v %+v", info, r2)
	}
}

func TestBadWEKA(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"block_size": 64, "requests": [{"t": 0, "type": "n", "in": 10, "hash_ids": []}]}`, "requests[0].out: missing"},
		{`{"block_size": 64, "requests": [{"t": 0, "type": "subagent", "requests": []}]}`, "requests[0].requests: a subagent without requests"},
		{`{"block_size": 64, "requests": [{"t": 0, "type": "n", "in": 64, "out": 1, "hash_ids": [1, 2]}]}`, "requests[0].hash_ids: 2 ids for 64 input tokens"},
		{`{"block_size": 64, "requests": [{"type": "n", "in": 64, "out": 1, "hash_ids": [1]}]}`, "requests[0].t: missing"},
	} {
		_, err := Read(strings.NewReader(c.doc+"\n"), "w.jsonl", Options{Strict: true}, func(*Request) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "line 1: "+c.want) {
			t.Errorf("%s: err %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestTooManyBlocks(t *testing.T) {
	a := NewAnalyzer(0, nil, 4)
	_, err := Read(strings.NewReader(`{"timestamp": 0, "input_length": 3000, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5, 6]}`+"\n"), "m.jsonl", Options{}, a.Add)
	var tm ErrTooManyBlocks
	if !errors.As(err, &tm) || !strings.Contains(err.Error(), "--max-distinct-blocks") {
		t.Fatalf("err %v", err)
	}
}

// TestWEKASubagentTimes: a subagent's requests timed from its spawn
// (kv-cache-tester) or from the conversation's start (SemiAnalysis's
// variant) land at the same times.
func TestWEKASubagentTimes(t *testing.T) {
	for _, doc := range []string{
		`{"block_size": 64, "requests": [{"t": 0, "type": "n", "in": 64, "out": 1, "hash_ids": [1]}, {"t": 10, "type": "subagent", "requests": [{"t": 0, "type": "n", "in": 64, "out": 1, "hash_ids": [7]}, {"t": 3, "type": "n", "in": 64, "out": 1, "hash_ids": [8]}]}, {"t": 20, "type": "n", "in": 128, "out": 1, "hash_ids": [1, 2]}]}`,
		`{"block_size": 64, "requests": [{"t": 0, "type": "n", "in": 64, "out": 1, "hash_ids": [0]}, {"t": 10, "type": "subagent", "requests": [{"t": 10, "type": "n", "in": 64, "out": 1, "hash_ids": [6]}, {"t": 13, "type": "n", "in": 64, "out": 1, "hash_ids": [7]}]}, {"t": 20, "type": "n", "in": 128, "out": 1, "hash_ids": [0, 1]}]}`,
		// Times written rounded: the first nested request a microsecond
		// before its spawn is at it (the replay reads it the same way).
		`{"block_size": 64, "requests": [{"t": 0, "type": "n", "in": 64, "out": 1, "hash_ids": [0]}, {"t": 10.0000004, "type": "subagent", "requests": [{"t": 10, "type": "n", "in": 64, "out": 1, "hash_ids": [6]}, {"t": 13, "type": "n", "in": 64, "out": 1, "hash_ids": [7]}]}, {"t": 20, "type": "n", "in": 128, "out": 1, "hash_ids": [0, 1]}]}`,
	} {
		var times []float64
		if _, err := Read(strings.NewReader(doc+"\n"), "w.jsonl", Options{Strict: true}, func(q *Request) error { times = append(times, q.T); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(times) != 4 || times[0] != 0 || times[1] != 10 || times[2] != 13 || times[3] != 20 {
			t.Errorf("times %v, want 0 10 13 20", times)
		}
	}
}
