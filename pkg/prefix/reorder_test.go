package prefix

import (
	"strings"
	"testing"
)

// TestReorder: requests out of order within the window come out in time
// order (equal times in file order); one later than the window is handed
// on where it came and counted.
func TestReorder(t *testing.T) {
	var got []float64
	r := NewReorder(2, func(q *Request) error { got = append(got, q.T); return nil })
	for _, ts := range []float64{3, 1, 2, 2, 5, 4, 0.5, 6} {
		if err := r.Add(&Request{T: ts}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	// Window 2: 3 1 2 → 1; 2 → 2; 5 → 2; 4 → 3; 0.5 late; 6 → 4; flush 5 6.
	want := []float64{1, 2, 2, 3, 0.5, 4, 5, 6}
	if len(got) != len(want) || r.Late != 1 {
		t.Fatalf("got %v, late %d", got, r.Late)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestAnalyzeOutOfOrder: a Mooncake trace with rows out of order is
// analyzed in time order: the block first seen by the earlier request is
// the miss.
func TestAnalyzeOutOfOrder(t *testing.T) {
	trace := `{"timestamp": 20, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 10, "input_length": 512, "output_length": 1, "hash_ids": [1]}
`
	a := NewAnalyzer(0, nil, 0)
	ro := NewReorder(0, a.Add)
	info, err := Read(strings.NewReader(trace), "m.jsonl", Options{}, ro.Add)
	if err != nil || ro.Flush() != nil {
		t.Fatal(err)
	}
	r := a.Report()
	// In time order: [1] (miss), then [1 2] (1 hits): 1 of 3 blocks; and
	// the request hit rates are 0 and 50 %.
	if info.OutOfOrder != 1 || r.InfiniteHits != 1 || r.Blocks != 3 || r.RequestHitRate.Max != 0.5 || r.SpanS != 0.01 {
		t.Fatalf("info %+v report %+v", info, r)
	}
}
