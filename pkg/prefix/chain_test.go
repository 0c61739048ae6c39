package prefix

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// bailianChain is a Bailian trace of one conversation of n steps, each
// chat the parent of the next, with 16-token prompts (one block each).
func bailianChain(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"chat_id": %d, "parent_chat_id": %d, "timestamp": %d.5, "input_length": 16, "output_length": 4, "turn": %d, "type": "text", "hash_ids": [%d]}`+"\n",
			i+1, i, i, i+1, i+1)
	}
	return b.Bytes()
}

// analyzeChain reads a chain through an Analyzer, as analyze does.
func analyzeChain(tb testing.TB, trace []byte) Report {
	an := NewAnalyzer(0, nil, DefaultMaxDistinct)
	ro := NewReorder(0, an.Add)
	_, err := Read(bytes.NewReader(trace), "chain.jsonl", Options{}, ro.Add)
	if err == nil {
		err = ro.Flush()
	}
	if err != nil {
		tb.Fatal(err)
	}
	return an.Report()
}

// TestLongChainLinear: a conversation of 100,000 chained steps is read in
// linear time. The parents' cycle check walked each chat's whole chain
// (O(n²): 20,000 steps took 5 s, 100,000 would take minutes); now it takes
// well under a second, checked against 10 s.
func TestLongChainLinear(t *testing.T) {
	trace := bailianChain(100_000)
	t0 := time.Now()
	r := analyzeChain(t, trace)
	if took := time.Since(t0); took > 10*time.Second {
		t.Errorf("read 100000 chained steps in %v, want well under 10 s", took)
	}
	if r.Requests != 100_000 {
		t.Errorf("%d requests, want 100000", r.Requests)
	}
}

// BenchmarkBailianChain is analyze on chains of 20,000, 50,000 and 200,000
// steps (docs/PERFORMANCE.md): the time per step stays the same.
func BenchmarkBailianChain(b *testing.B) {
	for _, n := range []int{20_000, 50_000, 200_000} {
		trace := bailianChain(n)
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(trace)))
			for b.Loop() {
				analyzeChain(b, trace)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
		})
	}
}
