package tokenizer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// naiveMerge is BPE as it is defined: merge the lowest-ranked pair (the
// leftmost of equal ranks), rescan, repeat. The oracle of the heap.
func naiveMerge(m *bpe, piece string) []int {
	type sym struct{ id, end int }
	syms := make([]sym, len(piece))
	for i := 0; i < len(piece); i++ {
		syms[i] = sym{m.byteID[piece[i]], i + 1}
	}
	for len(syms) > 1 {
		best, at := merge{}, -1
		for i := 0; i+1 < len(syms); i++ {
			if g, ok := m.merges[[2]int{syms[i].id, syms[i+1].id}]; ok && syms[i].id >= 0 && syms[i+1].id >= 0 && (at < 0 || g.rank < best.rank) {
				best, at = g, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] = sym{best.id, syms[at+1].end}
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	var ends []int
	for _, s := range syms {
		ends = append(ends, s.end)
	}
	return ends
}

func FuzzBPEMerges(f *testing.F) {
	corpus := strings.Repeat("the quick brown fox jumps over the lazy dog ==== ---- aaaa bbbb abab ", 20)
	tk, err := Parse("t.json", testenv.TrainBPE(corpus, 200))
	if err != nil {
		f.Fatal(err)
	}
	m := tk.model.(*bpe)
	for _, s := range []string{"the", " quick", "========", "aaaaaaaaa", "abababab", "xyz", " lazy dog", "----=----"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 512 {
			return
		}
		var got []int
		for _, k := range m.tokenize(s, nil) {
			got = append(got, k.end)
		}
		want := naiveMerge(m, s)
		if fmt.Sprint(got) != fmt.Sprint(want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%q: heap %v, naive %v", s, got, want)
		}
	})
}

// A long run of one character is merged in n log n: 100,000 '=' in well
// under a second (the naive merge takes minutes).
func TestBPELongPiece(t *testing.T) {
	tk, err := Parse("t.json", testenv.TrainBPE(strings.Repeat("==== ", 50), 10))
	if err != nil {
		t.Fatal(err)
	}
	if n := tk.Count(strings.Repeat("=", 100000)); n == 0 || n > 100000 {
		t.Errorf("%d tokens", n)
	}
}
