package workload

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// TestSessionsPlanInThePass: the one pass plans every session: the
// shards' plan rows together are the whole plan, every copy has the
// whole plan's hash, and a run without sessions plans nothing.
func TestSessionsPlanInThePass(t *testing.T) {
	turns, _ := session.ParseDist("uniform:1:4", session.Count)
	think, _ := session.ParseDist("exp:1s", session.Duration)
	c := baseConfig()
	c.Sessions = session.Config{Turns: turns, Think: think, Seed: c.Seed}
	whole, _, all := buildShard(t, c, 0, 1)
	if whole.Sessions == nil || whole.Sessions.Sessions != whole.Stats.Count || whole.Sessions.Turns < whole.Stats.Count {
		t.Fatalf("sessions %+v for %d arrivals", whole.Sessions, whole.Stats.Count)
	}
	if got := strings.Count(all, "\n") - 1; int64(got) != whole.Sessions.Turns {
		t.Errorf("%d plan rows, %d planned turns", got, whole.Sessions.Turns)
	}
	a, _, rowsA := buildShard(t, c, 0, 2)
	b, _, rowsB := buildShard(t, c, 1, 2)
	if a.Sessions.Hash != whole.Sessions.Hash || b.Sessions.Hash != whole.Sessions.Hash {
		t.Errorf("shards' plan hashes %s %s, whole %s", a.Sessions.Hash, b.Sessions.Hash, whole.Sessions.Hash)
	}
	if a.Sessions.Turns+b.Sessions.Turns != whole.Sessions.Turns {
		t.Errorf("shards plan %d + %d turns, the whole %d", a.Sessions.Turns, b.Sessions.Turns, whole.Sessions.Turns)
	}
	lines := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(s), "\n")[1:] {
			m[l] = true
		}
		return m
	}
	la, lb := lines(rowsA), lines(rowsB)
	for l := range lines(all) {
		if la[l] == lb[l] {
			t.Fatalf("plan row %q in %v shards", l, la[l])
		}
	}
	w, err := Build(baseConfig(), quiet{})
	if err != nil || w.Sessions != nil {
		t.Errorf("without sessions: %+v, %v", w.Sessions, err)
	}
}

// TestMultiTurnNeedsADataset: --multi-turn without a dataset, or with
// --turns, is refused.
func TestMultiTurnNeedsADataset(t *testing.T) {
	c := baseConfig()
	c.MultiTurn = true
	if _, err := Build(c, quiet{}); err == nil || !strings.Contains(err.Error(), "--dataset-path") {
		t.Errorf("without a dataset: %v", err)
	}
	c.DatasetPath = "../../cmd/fineserve-gen/testdata/sharegpt_multiturn.json"
	c.Sessions.Turns = session.Const(3, session.Count)
	if _, err := Build(c, quiet{}); err == nil || !strings.Contains(err.Error(), "--turns") {
		t.Errorf("with --turns: %v", err)
	}
	c.Sessions.Turns = session.Dist{}
	w, err := Build(c, quiet{})
	if err != nil || w.Sessions == nil || w.Conversations == nil || w.Sessions.Turns <= w.Sessions.Sessions {
		t.Fatalf("conversations: %+v, %v", w.Sessions, err)
	}
}
