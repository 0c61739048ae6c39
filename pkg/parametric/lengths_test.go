package parametric

import (
	"bytes"
	"slices"
	"testing"
)

// TestSampleLengthPairs: below the limit every pair comes back in order;
// above it exactly limit distinct pairs, in order, the same for the same
// seed, each pair kept with probability limit/n.
func TestSampleLengthPairs(t *testing.T) {
	pair := func(i int) [2]int { return [2]int{i + 1, 2*i + 1} }
	all := SampleLengthPairs(5, 10, 1, pair)
	if want := [][2]int{{1, 1}, {2, 3}, {3, 5}, {4, 7}, {5, 9}}; !slices.Equal(all, want) {
		t.Fatalf("n ≤ limit: %v, want %v", all, want)
	}
	if got := SampleLengthPairs(0, 10, 1, pair); got != nil {
		t.Errorf("no pairs: %v", got)
	}
	if got := SampleLengthPairs(5, 0, 1, pair); got != nil {
		t.Errorf("limit 0: %v", got)
	}

	s := SampleLengthPairs(1000, 100, 7, pair)
	if len(s) != 100 {
		t.Fatalf("%d pairs sampled, want 100", len(s))
	}
	for i := range s {
		if s[i][1] != 2*s[i][0]-1 {
			t.Fatalf("pair %v is not one of the input's", s[i])
		}
		if i > 0 && s[i][0] <= s[i-1][0] {
			t.Fatalf("sample not in input order or repeats a pair: %v then %v", s[i-1], s[i])
		}
	}
	if again := SampleLengthPairs(1000, 100, 7, pair); !slices.Equal(s, again) {
		t.Error("same seed, different sample")
	}
	if other := SampleLengthPairs(1000, 100, 8, pair); slices.Equal(s, other) {
		t.Error("another seed gave the same sample")
	}

	// Uniform: over 4000 seeds, each of 10 pairs is kept 3 times in 10;
	// count 1200 ± 5σ (σ = √(4000·0.3·0.7) ≈ 29).
	counts := make([]int, 10)
	for seed := range uint64(4000) {
		for _, p := range SampleLengthPairs(10, 3, seed, pair) {
			counts[p[0]-1]++
		}
	}
	for i, c := range counts {
		if c < 1200-145 || c > 1200+145 {
			t.Errorf("pair %d kept %d times in 4000 samples of 3 of 10, want 1200 ± 145", i, c)
		}
	}
}

// TestWriteLengthPairsRoundTrip: what WriteLengthPairs writes,
// ReadLengthPairs reads back unchanged.
func TestWriteLengthPairsRoundTrip(t *testing.T) {
	pairs := [][2]int{{1, 1}, {65837, 2}, {512, 16777216}}
	var b bytes.Buffer
	if err := WriteLengthPairs(&b, pairs); err != nil {
		t.Fatal(err)
	}
	if want := "input_length,output_length\n1,1\n65837,2\n512,16777216\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
	lp, err := ReadLengthPairs(&b, "l.csv", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lp.Pairs, pairs) || lp.Skipped != 0 {
		t.Errorf("read back %v (skipped %d), want %v", lp.Pairs, lp.Skipped, pairs)
	}
}
