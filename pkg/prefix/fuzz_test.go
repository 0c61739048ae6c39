package prefix

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzRead reads any input as a prefix trace. Every request it yields is
// sane; --strict fails exactly when a record was skipped; and, when the ids
// are chained (an id always follows the same one, as in real traces), the
// trace rewritten by an identity synthesis (every knob 1, its own block
// size) has the same requests and hits.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"bailian.jsonl", "weka_trace_0026.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, 1, 2]}` + "\n" + `{"timestamp": 3, "input_length": 700, "output_length": 4, "hash_ids": [0, 79]}` + "\n"))
	f.Add([]byte(`{"chat_id": 1, "parent_chat_id": -1, "timestamp": 1.5, "input_length": 20, "output_length": 2, "hash_ids": [18446744073709551615, -3]}` + "\n"))
	f.Add([]byte(`{"block_size": 4, "requests": [{"t": 1, "type": "n", "in": 9, "out": 1, "hash_ids": [1, 2]}, {"t": 0, "type": "subagent", "requests": [{"t": 2, "type": "s", "in": 4, "out": 1, "hash_ids": [1]}]}]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := NewAnalyzer(0, []int{2}, 1<<16)
		var n int
		parent := map[uint64]uint64{} // id → the id before it + 1 (0: first)
		chained := true
		info, err := Read(bytes.NewReader(data), "f", Options{MaxLine: 1 << 16}, func(q *Request) error {
			n++
			for k, id := range q.Blocks {
				p := uint64(0)
				if k > 0 {
					p = q.Blocks[k-1] + 1
				}
				if old, ok := parent[id]; ok && old != p {
					chained = false
				}
				parent[id] = p
			}
			if q.In < 0 || q.Out < 0 || q.BlockSize < 1 || len(q.Blocks) > (q.In+q.BlockSize-1)/q.BlockSize || math.IsNaN(q.T) || q.T < 0 || math.IsInf(q.T, 0) {
				t.Fatalf("request %+v", q)
			}
			return a.Add(q)
		})
		var tooMany ErrTooManyBlocks
		if errors.As(err, &tooMany) {
			return
		}
		if err != nil {
			return // not a prefix trace
		}
		if n != info.Requests {
			t.Fatalf("%d requests yielded, %d counted", n, info.Requests)
		}
		_, serr := Read(bytes.NewReader(data), "f", Options{MaxLine: 1 << 16, Strict: true}, func(*Request) error { return nil })
		if (serr != nil) != (info.Skips.Count > 0) {
			t.Fatalf("strict: %v with %d skipped", serr, info.Skips.Count)
		}
		r := a.Report()
		if r.InfiniteHits > r.Blocks || r.LRU[0].Hits > r.InfiniteHits || int64(r.Distinct)+r.InfiniteHits != r.Blocks {
			t.Fatalf("report %+v", r)
		}
		// The identity synthesis reads back with the same figures.
		cfg := SynthConfig{Speedup: 1, PrefixLenMultiplier: 1, PrefixRootMultiplier: 1, PromptLenMultiplier: 1, OutputLenMultiplier: 1,
			InBlockSize: info.BlockSize, OutBlockSize: info.BlockSize}
		if info.BlockSize == 0 || !chained {
			return
		}
		s := NewSynthesizer(cfg, a)
		b := NewAnalyzer(info.BlockSize, nil, 1<<16)
		var out []byte
		_, err = Read(bytes.NewReader(data), "f", Options{MaxLine: 1 << 16, Format: info.Format}, func(q *Request) error {
			if q.In > 1<<20 {
				return ErrTooManyBlocks{} // keep an execution short
			}
			o := s.Rewrite(q)
			out = AppendMooncake(out, o)
			return b.Add(&Request{T: o.T, In: o.In, Out: o.Out, Blocks: o.Blocks, BlockSize: info.BlockSize})
		})
		if errors.As(err, &tooMany) {
			return // long unnamed tails, each a block now
		}
		if err != nil {
			t.Fatal(err)
		}
		rb := b.Report()
		if rb.Requests != r.Requests || rb.InfiniteHits != r.InfiniteHits {
			t.Fatalf("identity synthesis: %d requests, %d hits; want %d, %d", rb.Requests, rb.InfiniteHits, r.Requests, r.InfiniteHits)
		}
	})
}
