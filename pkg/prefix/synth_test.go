package prefix

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
)

// synth runs the two passes of a synthesis over path and analyzes what it
// writes, reading it back as a Mooncake trace.
func synth(t *testing.T, path string, cfg SynthConfig) (before, after Report) {
	t.Helper()
	uses := NewAnalyzer(0, nil, 0)
	info := readAll(t, path, Options{}, uses.Add)
	cfg.InBlockSize = info.BlockSize
	if cfg.OutBlockSize == 0 {
		cfg.OutBlockSize = 512
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s := NewSynthesizer(cfg, uses)
	var buf []byte
	direct := NewAnalyzer(cfg.OutBlockSize, nil, 0)
	readAll(t, path, Options{}, func(q *Request) error {
		o := s.Rewrite(q)
		buf = AppendMooncake(buf, o)
		return direct.Add(&Request{T: o.T, In: o.In, Out: o.Out, Blocks: o.Blocks})
	})
	if cfg.OutBlockSize != 512 {
		return uses.Report(), direct.Report()
	}
	// A Mooncake trace: read it back (strictly: every line usable, as many
	// hash ids as blocks).
	a := NewAnalyzer(0, nil, 0)
	out, err := Read(bytes.NewReader(buf), "out.jsonl", Options{Strict: true}, a.Add)
	if err != nil {
		t.Fatal(err)
	}
	if out.Format != Mooncake || out.Requests != info.Requests {
		t.Fatalf("wrote %d %s requests, read %d", out.Requests, out.Format, info.Requests)
	}
	return uses.Report(), a.Report()
}

func one() SynthConfig {
	return SynthConfig{Speedup: 1, PrefixLenMultiplier: 1, PrefixRootMultiplier: 1, PromptLenMultiplier: 1, OutputLenMultiplier: 1, Seed: 1}
}

var mooncakeSample = filepath.Join("..", "replay", "testdata", "mooncake_synthetic_trace.jsonl.gz")

// TestSynthSpeedup: --speedup 2 halves the span and keeps the
// infinite-cache hit rate (the check: within ±2 points; the order
// of the requests does not change, so it is the same to the block) and the
// tree, on the Mooncake sample, the Bailian fixture and a WEKA conversation
// at their own block sizes. (Re-blocked to 512 tokens, the WEKA
// conversation's rate is that of the coarser blocks: 61.9 % → 59.6 %.)
func TestSynthSpeedup(t *testing.T) {
	for _, c := range []struct {
		path  string
		block int
	}{{mooncakeSample, 512}, {filepath.Join("testdata", "bailian.jsonl"), 16}, {filepath.Join("testdata", "weka_trace_0026.json"), 64}} {
		path := c.path
		cfg := one()
		cfg.Speedup = 2
		cfg.OutBlockSize = c.block
		b, a := synth(t, path, cfg)
		if math.Abs(a.SpanS-b.SpanS/2) > 0.001 {
			t.Errorf("%s: span %g → %g, want half", path, b.SpanS, a.SpanS)
		}
		if d := math.Abs(a.InfiniteHitRate - b.InfiniteHitRate); d > 0.02 {
			t.Errorf("%s: hit rate %.4f → %.4f", path, b.InfiniteHitRate, a.InfiniteHitRate)
		}
		if a.ISL != b.ISL || a.OSL != b.OSL {
			t.Errorf("%s: lengths changed: %+v → %+v", path, b.ISL, a.ISL)
		}
		if path == mooncakeSample && (a.InfiniteHits != b.InfiniteHits || a.Tree != b.Tree || a.Distinct != b.Distinct) {
			t.Errorf("%s: tree %+v → %+v", path, b.Tree, a.Tree)
		}
	}
}

// TestSynthKnobs checks each knob's effect on the Mooncake sample.
func TestSynthKnobs(t *testing.T) {
	b, _ := synth(t, mooncakeSample, one())

	// Twice the shared prefixes: every shared block becomes two, so the
	// shared blocks (hits come from them) double and the tree keeps its
	// roots and leaves.
	cfg := one()
	cfg.PrefixLenMultiplier = 2
	_, a := synth(t, mooncakeSample, cfg)
	if a.InfiniteHits != 2*b.InfiniteHits || a.Tree.Roots != b.Tree.Roots || a.Tree.Leaves != b.Tree.Leaves || a.InfiniteHitRate <= b.InfiniteHitRate {
		t.Errorf("prefix-len ×2: hits %d → %d, tree %+v → %+v", b.InfiniteHits, a.InfiniteHits, b.Tree, a.Tree)
	}

	// Three copies of the tree: three times the roots at most, fewer hits.
	cfg = one()
	cfg.PrefixRootMultiplier = 3
	_, a = synth(t, mooncakeSample, cfg)
	if a.Tree.Roots <= b.Tree.Roots || a.Tree.Roots > 3*b.Tree.Roots || a.InfiniteHitRate >= b.InfiniteHitRate-0.05 {
		t.Errorf("roots ×3: roots %d → %d, hit rate %.3f → %.3f", b.Tree.Roots, a.Tree.Roots, b.InfiniteHitRate, a.InfiniteHitRate)
	}
	// The same seed, the same copies.
	_, a2 := synth(t, mooncakeSample, cfg)
	if a2.InfiniteHits != a.InfiniteHits {
		t.Errorf("seeded copies differ: %d, %d", a.InfiniteHits, a2.InfiniteHits)
	}

	// Half the unique prompt: the shared blocks stay, the inputs shrink.
	cfg = one()
	cfg.PromptLenMultiplier = 0.5
	cfg.OutputLenMultiplier = 2
	cfg.MaxOSL = 500
	_, a = synth(t, mooncakeSample, cfg)
	if a.InfiniteHits != b.InfiniteHits || a.ISL.Mean >= b.ISL.Mean || a.InfiniteHitRate <= b.InfiniteHitRate || a.OSL.Max != 500 || a.OSL.P50 < 1.9*b.OSL.P50 {
		t.Errorf("prompt ×0.5, output ×2 ≤ 500: hits %d → %d, ISL %g → %g, OSL %+v", b.InfiniteHits, a.InfiniteHits, b.ISL.Mean, a.ISL.Mean, a.OSL)
	}

	cfg = one()
	cfg.MaxISL = 4096
	_, a = synth(t, mooncakeSample, cfg)
	if a.ISL.Max != 4096 || a.Tree.MaxDepth != 8 {
		t.Errorf("max-isl 4096: ISL max %g, depth %d", a.ISL.Max, a.Tree.MaxDepth)
	}
}
