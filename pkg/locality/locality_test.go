package locality

import (
	"slices"
	"testing"
)

// ids turns "aaabcbcbca" into item ids (a=0, b=1, …).
func ids(s string) []uint32 {
	out := make([]uint32, len(s))
	for i, c := range s {
		out[i] = uint32(c - 'a')
	}
	return out
}

// TestHandComputed checks the loads of 2-slot caches against sequences
// worked by hand.
//
// "aaabcbcbca" with 2 slots:
//
//	LRU: a load(1); a, a hit; b load(2) [a b]; c load(3), evicts a (used at
//	     2, b at 3) [b c]; b c b c hit; a load(4), evicts b (used at 7, c at
//	     8). 4 loads, 6 hits.
//	LFU: a load(1), then a, a hit (a used 3 times); b load(2) [a:3 b:1];
//	     c load(3) evicts b (fewest uses) [a:3 c:1]; b load(4) evicts c;
//	     c load(5) evicts b; b load(6); c load(7); a hit. 7 loads, 3 hits:
//	     the early burst of a pins it, and b and c evict each other.
//	OPT: a load; a a hit; b load; c load evicts a (next use 9, b's 5);
//	     b c b c hit; a load. 4 loads.
//
// "abcabc" with 2 slots: every access loads under LRU and LFU (6); OPT
// keeps a and evicts the item used farthest ahead: a b load, c load evicts b
// (next at 4; a at 3), a hit, b load evicts a (no further use)... 4 loads.
func TestHandComputed(t *testing.T) {
	for _, c := range []struct {
		seq          string
		slots        int
		lru, lfu, op int64
	}{
		{"aaabcbcbca", 2, 4, 7, 4},
		{"abcabc", 2, 6, 6, 4},
		{"abcabc", 3, 3, 3, 3},
		{"abab", 1, 4, 4, 4},
		{"", 2, 0, 0, 0},
	} {
		for p, want := range map[Policy]int64{LRU: c.lru, LFU: c.lfu, OPT: c.op} {
			got := Simulate(ids(c.seq), c.slots, p)
			if got.Loads != want || got.Hits != int64(len(c.seq))-want || got.Accesses != int64(len(c.seq)) {
				t.Errorf("%q, %d slots, %s: %+v, want %d loads", c.seq, c.slots, p, got, want)
			}
			if want > int64(c.slots) && got.Evictions != want-int64(c.slots) {
				t.Errorf("%q, %d slots, %s: %d evictions, want %d", c.seq, c.slots, p, got.Evictions, want-int64(c.slots))
			}
		}
	}
}

// TestOPTIsALowerBound: on pseudo-random sequences no policy loads fewer
// than OPT, and every policy loads at least the distinct items.
func TestOPTIsALowerBound(t *testing.T) {
	x := uint64(1)
	seq := make([]uint32, 5000)
	distinct := map[uint32]bool{}
	for i := range seq {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		seq[i] = uint32(x % 40)
		if x%3 == 0 { // some skew
			seq[i] %= 5
		}
		distinct[seq[i]] = true
	}
	for _, slots := range []int{1, 4, 16, 64} {
		opt := Simulate(seq, slots, OPT)
		for _, p := range []Policy{LRU, LFU} {
			if c := Simulate(seq, slots, p); c.Loads < opt.Loads {
				t.Errorf("%d slots: %s loads %d < OPT's %d", slots, p, c.Loads, opt.Loads)
			}
		}
		if opt.Loads < int64(len(distinct)) {
			t.Errorf("%d slots: OPT loads %d < %d distinct items", slots, opt.Loads, len(distinct))
		}
	}
	if c := Simulate(seq, 64, LRU); c.Loads != int64(len(distinct)) {
		t.Errorf("a cache larger than the items loads each once: %d, want %d", c.Loads, len(distinct))
	}
}

func TestAnalyzePerInstance(t *testing.T) {
	// Instance 0 sees "aaab", instance 1 "cdc"; interleaved.
	reqs := []Request{
		{0, ids("a")}, {1, ids("c")}, {0, ids("a")}, {1, ids("d")}, {0, ids("a")}, {1, ids("c")}, {0, ids("b")},
		{2, nil}, // a request without adapters needs nothing resident
	}
	r := Analyze(reqs, 3, []int{1}, []Policy{LRU}, true)
	if r.Requests != 8 || r.Accesses != 7 || r.Distinct != 4 {
		t.Fatalf("report %+v", r)
	}
	// Shared 1-slot cache: a c a d a c b: every access loads but none.
	if r.Overall[0].Loads != 7 {
		t.Errorf("overall loads %d, want 7", r.Overall[0].Loads)
	}
	// Own caches: "aaab" 2 loads, "cdc" 3 loads, instance 2 none.
	var loads []int64
	for _, in := range r.Instances {
		loads = append(loads, in.Runs[0].Loads)
	}
	if !slices.Equal(loads, []int64{2, 3, 0}) || r.InstanceTotal[0].Loads != 5 {
		t.Errorf("per instance %v, total %d; want [2 3 0], 5", loads, r.InstanceTotal[0].Loads)
	}
}
