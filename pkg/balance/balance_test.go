package balance

import (
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

func TestPlanEndpoints(t *testing.T) {
	prefix := func(i int64) int { return int(i*7) % 5 } // prefix of request i
	for _, tc := range []struct {
		name string
		p    Plan
		want func(i int64) int
	}{
		{"round-robin", Plan{N: 3, Strategy: RoundRobin}, func(i int64) int { return int(i % 3) }},
		{"session of prefixes", Plan{N: 3, Strategy: Session, PrefixOf: prefix}, func(i int64) int { return prefix(i) % 3 }},
		{"session of sessions", Plan{N: 3, Strategy: Session, Sessions: true, PrefixOf: prefix}, func(i int64) int { return int(i % 3) }},
		{"least-inflight", Plan{N: 3, Strategy: LeastInflight}, func(int64) int { return -1 }},
	} {
		s := tc.p.Apply(func(yield func(arrival.Arrival) bool) {
			for i := int64(0); i < 30; i++ {
				if !yield(arrival.Arrival{Index: i}) {
					return
				}
			}
		})
		for a := range s {
			if a.Endpoint != tc.want(a.Index) {
				t.Errorf("%s: arrival %d to %d, want %d", tc.name, a.Index, a.Endpoint, tc.want(a.Index))
			}
		}
	}
	rr, sess := Plan{N: 3, Strategy: RoundRobin}, Plan{N: 3, Strategy: Session}
	for turn := 1; turn <= 4; turn++ {
		if got := rr.Turn(2, turn); got != (2+turn-1)%3 {
			t.Errorf("round-robin turn %d of a session at 2: %d", turn, got)
		}
		if got := sess.Turn(2, turn); got != 2 {
			t.Errorf("session turn %d of a session at 2: %d", turn, got)
		}
	}
}

func TestPickerLeastInflight(t *testing.T) {
	p := NewPicker(3, LeastInflight)
	// Ties go round in turn.
	a, b, c := p.Acquire(-1), p.Acquire(-1), p.Acquire(-1)
	if a == b || b == c || a == c {
		t.Fatalf("three requests on idle endpoints went to %d %d %d", a, b, c)
	}
	p.Release(b)
	for k := 0; k < 3; k++ { // b is the only one with none in flight
		if e := p.Acquire(-1); e != b {
			t.Fatalf("request %d went to %d, want the idle %d", k, e, b)
		}
		p.Release(b)
	}
	// A planned endpoint is kept and counted.
	if e := p.Acquire(a); e != a || p.InFlight(a) != 2 {
		t.Fatalf("planned %d: got %d, %d in flight", a, e, p.InFlight(a))
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Strategy{"": RoundRobin, "round-robin": RoundRobin, "least-inflight": LeastInflight, "session": Session} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := Parse("random"); err == nil {
		t.Error("Parse(random): no error")
	}
}

// TestPlanRoundRobinShards: with the schedule split over shards, each
// copy's arrivals go round every endpoint evenly, and so does the whole
// schedule — also when the shard count is a multiple of the endpoints'
// (index % N alone would send each copy to one endpoint).
func TestPlanRoundRobinShards(t *testing.T) {
	for _, tc := range []struct{ endpoints, shards int64 }{{2, 2}, {2, 4}, {3, 3}, {3, 2}, {4, 6}} {
		p := &Plan{N: int(tc.endpoints), Strategy: RoundRobin, Shards: tc.shards}
		const n = 3600 // a multiple of every endpoints × shards here
		whole := make([]int, tc.endpoints)
		per := make([][]int, tc.shards)
		for i := range per {
			per[i] = make([]int, tc.endpoints)
		}
		for i := int64(0); i < n; i++ {
			e := p.Endpoint(i)
			whole[e]++
			per[i%tc.shards][e]++
		}
		for e, c := range whole {
			if c != n/int(tc.endpoints) {
				t.Errorf("%d endpoints, %d shards: endpoint %d got %d of %d, want %d", tc.endpoints, tc.shards, e, c, n, n/int(tc.endpoints))
			}
		}
		for s, counts := range per {
			for e, c := range counts {
				if want := n / int(tc.shards*tc.endpoints); c != want {
					t.Errorf("%d endpoints, %d shards: shard %d sent %d to endpoint %d, want %d", tc.endpoints, tc.shards, s, c, e, want)
				}
			}
		}
	}
}
