package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

var (
	bailianFixture = filepath.Join("..", "..", "pkg", "prefix", "testdata", "bailian.jsonl")
	mooncakeSample = filepath.Join("..", "..", "pkg", "replay", "testdata", "mooncake_synthetic_trace.jsonl.gz")
)

// TestAnalyzePrefix: analyze detects a prefix trace, prints its table and
// writes the JSON report (the figures are worked by hand in pkg/prefix).
func TestAnalyzePrefix(t *testing.T) {
	out := filepath.Join(t.TempDir(), "a.json")
	stdout, stderr := mustRun(t, "analyze", bailianFixture, "--cache-blocks", "3,100", "--json", out)
	for _, s := range []string{"Prefix reuse:", "(bailian, 16-token blocks)", "5 requests in 2 conversations over 4.5 s; 17 blocks, 9 distinct",
		"infinite cache: 47.06% of blocks already seen (52.89% of prompt tokens)", "Prefix tree: 9 nodes (2 roots), 4 leaves; depth max 6",
		"           3             48            3     17.65%           11"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, stdout)
		}
	}
	if !strings.Contains(stderr, "skipped 5 unusable record(s) (lines 5, 7, 8, 9, 10); first: line 5: parent_chat_id: a cycle") {
		t.Errorf("stderr %q", stderr)
	}
	var a struct {
		Format          string
		Requests        int
		InfiniteHitRate float64 `json:"infinite_cache_hit_rate"`
		SkippedRecords  int     `json:"skipped_records"`
		LRU             []struct {
			CacheBlocks int   `json:"cache_blocks"`
			Hits        int64 `json:"hits"`
		} `json:"lru"`
		Tree struct {
			Nodes int `json:"nodes"`
		} `json:"tree"`
	}
	if err := json.Unmarshal(testenv.ReadFile(t, out), &a); err != nil {
		t.Fatal(err)
	}
	if a.Format != "bailian" || a.Requests != 5 || math.Abs(a.InfiniteHitRate-8.0/17) > 1e-9 || a.SkippedRecords != 5 || a.Tree.Nodes != 9 ||
		len(a.LRU) != 2 || a.LRU[0].Hits != 3 || a.LRU[1].Hits != 8 {
		t.Errorf("report %+v", a)
	}
}

func TestAnalyzePrefixErrors(t *testing.T) {
	wantUsage(t, []string{"analyze", bailianFixture, "--strict"}, "bailian.jsonl: line 5: parent_chat_id: a cycle in the parent links through chat 5")
	wantUsage(t, []string{"analyze", bailianFixture, "--adapter-cache", "4"}, "--adapter-cache: not for a prefix trace")
	wantUsage(t, []string{"analyze", bailianFixture, "--cache-blocks", "0"}, "--cache-blocks \"0\"")
	wantUsage(t, []string{"analyze", filepath.Join("..", "..", "pkg", "replay", "testdata", "alibaba_t2i.json"), "--cache-blocks", "8"}, "--cache-blocks: for prefix traces")
	code, _, stderr := runCmd("analyze", bailianFixture, "--max-distinct-blocks", "4")
	if code != exitFailure || !strings.Contains(stderr, "more than 4 distinct blocks") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// TestSynthesizeSpeedupReplays: synthesize --speedup 2 on the Mooncake
// sample writes a trace that --mode replay reads (--trace-format mooncake)
// with every request, over half the span, and whose infinite-cache hit rate
// analyze finds within 2 points of the original's (the same, to the block).
func TestSynthesizeSpeedupReplays(t *testing.T) {
	dir := t.TempDir()
	syn := filepath.Join(dir, "s.jsonl")
	_, stderr := mustRun(t, "synthesize", mooncakeSample, "-o", syn, "--speedup", "2")
	if !strings.Contains(stderr, "span 1022.0 s → 511.0 s; infinite-cache hit rate 63.96% → 63.96%") {
		t.Errorf("synthesize said %q", stderr)
	}
	rate := func(path string) (float64, float64) {
		js := filepath.Join(dir, "a.json")
		mustRun(t, "analyze", path, "--json", js)
		var a struct {
			Span float64 `json:"span_s"`
			Hit  float64 `json:"infinite_cache_hit_rate"`
		}
		if err := json.Unmarshal(testenv.ReadFile(t, js), &a); err != nil {
			t.Fatal(err)
		}
		return a.Span, a.Hit
	}
	span0, hit0 := rate(mooncakeSample)
	span1, hit1 := rate(syn)
	if math.Abs(span1-span0/2) > 0.001 || math.Abs(hit1-hit0) > 0.02 {
		t.Errorf("span %g → %g, hit rate %g → %g", span0, span1, hit0, hit1)
	}
	sched := filepath.Join(dir, "schedule.csv")
	mustRun(t, "--mode", "replay", "--trace", syn, "--trace-format", "mooncake", "--dry-run", "--schedule-out", sched, "--disable-tqdm")
	col, rows := testenv.ReadCSV(t, sched)
	if len(rows) != 3993 || rows[len(rows)-1][col["time_s"]] != "511.013000" {
		t.Errorf("schedule: %d rows, last %v", len(rows), rows[len(rows)-1])
	}
}

func TestSynthesizeErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.jsonl")
	wantUsage(t, []string{"synthesize", bailianFixture}, "-o/--output")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--speedup", "0", "--prefix-root-multiplier", "0"}, "--speedup 0: want a number > 0, at most 1000", "--prefix-root-multiplier 0")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--block-size", "24"}, "must be a multiple")
	// The limit is named, not "≥ 1" for a value above it.
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--prefix-root-multiplier", "1000000000"}, "--prefix-root-multiplier 1000000000: want an integer from 1 to 1048576")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--strict"}, "line 5: parent_chat_id")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", bailianFixture}, "the trace itself")
}

// TestSynthesizedAgainstPrefixCache: the Mooncake sample and a synthesized
// copy (two copies of the tree, shared prefixes 1.5 times as long, inputs
// capped at 4,096 tokens), each one's last 600 requests replayed in order
// against the built-in server's prefix cache: the share of prompt tokens
// the server found cached equals the token hit rate analyze computes from
// the hash ids, within ±3 points (the server caches whole 16-token blocks
// and always computes a prompt's last token).
func TestSynthesizedAgainstPrefixCache(t *testing.T) {
	dir := t.TempDir()
	syn := filepath.Join(dir, "s.jsonl")
	mustRun(t, "synthesize", mooncakeSample, "-o", syn, "--prefix-root-multiplier", "2", "--prefix-len-multiplier", "1.5",
		"--max-isl", "4096", "--seed", "3")
	orig := filepath.Join(dir, "orig.jsonl")
	mustRun(t, "synthesize", mooncakeSample, "-o", orig) // the sample itself, ungzipped
	for _, path := range []string{orig, syn} {
		_, port := mocktest.Start(t, mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 22}}) // a cold cache each
		lines := strings.SplitAfter(strings.TrimSuffix(string(testenv.ReadFile(t, path)), "\n"), "\n")
		tail := path + ".tail"
		if err := os.WriteFile(tail, []byte(strings.Join(lines[len(lines)-600:], "")), 0o644); err != nil {
			t.Fatal(err)
		}
		js := filepath.Join(dir, "a.json")
		mustRun(t, "analyze", tail, "--json", js)
		var a struct {
			Tokens float64 `json:"infinite_cache_token_hit_rate"`
		}
		if err := json.Unmarshal(testenv.ReadFile(t, js), &a); err != nil {
			t.Fatal(err)
		}
		r := mustRunTool(t, mockTarget(port, "--mode", "replay", "--trace", tail, "--trace-format", "mooncake", "--time-scale", "1000000",
			"--max-concurrency", "1", "--warmup-requests", "0", "--quiet")...)
		sum := r.summary(t)
		share := float64(sum.CachedTokens) / float64(sum.TotalInputTokens)
		t.Logf("%s: cached share %.4f (%d of %d tokens), analyze's token hit rate %.4f", filepath.Base(path), share, sum.CachedTokens, sum.TotalInputTokens, a.Tokens)
		if sum.Completed != 600 || sum.Failed != 0 || a.Tokens < 0.2 || math.Abs(share-a.Tokens) > 0.03 {
			t.Errorf("%s: completed %d, failed %d; cached share %.4f, analyze %.4f", path, sum.Completed, sum.Failed, share, a.Tokens)
		}
	}
}

// TestSynthesizeBailian: a Bailian trace written as a Bailian trace keeps
// its chats, parents, turns and types and its 16-token blocks; --speedup 2
// halves its span with the same hit rate.
func TestSynthesizeBailian(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b.jsonl")
	_, stderr := mustRun(t, "synthesize", bailianFixture, "-o", out, "--output-format", "bailian", "--speedup", "2")
	if !strings.Contains(stderr, "(bailian, 16-token blocks): span 4.5 s → 2.2 s; infinite-cache hit rate 47.06% → 47.06%") {
		t.Errorf("synthesize said %q", stderr)
	}
	rows := testenv.ReadJSONL[struct {
		ChatID int64   `json:"chat_id"`
		Parent int64   `json:"parent_chat_id"`
		Turn   int     `json:"turn"`
		Type   string  `json:"type"`
		T      float64 `json:"timestamp"`
	}](t, out)
	if len(rows) != 5 || rows[1].ChatID != 2 || rows[1].Parent != 1 || rows[1].Turn != 2 || rows[2].Type != "search" || rows[4].T != 2.5 {
		t.Errorf("rows %+v", rows)
	}
	stdout, _ := mustRun(t, "analyze", out)
	if !strings.Contains(stdout, "5 requests in 2 conversations over 2.2 s; 17 blocks, 9 distinct") {
		t.Errorf("analyze:\n%s", stdout)
	}
	wantUsage(t, []string{"synthesize", filepath.Join("..", "..", "pkg", "prefix", "testdata", "weka_trace_0026.json"), "-o", out, "--output-format", "bailian"},
		"--output-format bailian", "is a weka trace")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--output-format", "csv"}, "--output-format \"csv\"")
}

// TestSynthesizeSpeedupOverflow: a --speedup whose scaled timestamps run
// past a replay's longest schedule is a usage error naming the flag, the
// limit and the least speedup; 1e-300 wrote timestamps of
// -9223372036854775808 and exited 0.
func TestSynthesizeSpeedupOverflow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.jsonl")
	wantUsage(t, []string{"synthesize", bailianFixture, "-o", out, "--speedup", "1e-300"},
		"--speedup 1e-300: the trace's span of 4.5 s would be 4.5e+300 s, past the longest a replay takes", "366 days): want --speedup ≥ 1.42e-07")
	if b, err := os.ReadFile(out); err == nil && len(b) > 0 {
		t.Errorf("wrote %d bytes: %.100s", len(b), b)
	}
	// Just above the least speedup, the trace is written.
	mustRun(t, "synthesize", bailianFixture, "-o", out, "--speedup", "1.5e-7")
}
