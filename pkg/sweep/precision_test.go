package sweep

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// slowCapacity measures a capacity the slow way against the simulated
// server of burstyGoodput: steps of fixed length secs, each on a stretch
// of schedule of its own, doubling from 1 req/s until a step's goodput is
// under 90 %, then bisecting to 3 %; the highest passing rate.
func slowCapacity(rng *rand.Rand, cv, secs float64) float64 {
	passes := func(lam float64) bool {
		good := 0
		out := burstyGoodput(rng, lam, cv, int(lam*secs))
		for _, g := range out {
			if g {
				good++
			}
		}
		return float64(good) >= 0.9*float64(len(out))
	}
	lo, hi := 0.0, 0.0
	for v := 1.0; hi == 0; v *= 2 {
		if passes(v) {
			lo = v
		} else {
			hi = v
		}
	}
	for hi/lo-1 > 0.03 {
		if m := (lo + hi) / 2; passes(m) {
			lo = m
		} else {
			hi = m
		}
	}
	return lo
}

// TestBurstyCapacityPrecision states how precise a capacity measured at a
// bursty point can be (docs/CAPACITY.md, "How precise a bursty capacity
// is"), on the simulated server of burstyGoodput (8 slots of 175 ms, SLO
// E2E 500 ms — the built-in server of the plan's worked day) at CV 2.31:
// near the knee a request's meeting the SLO is correlated with its
// neighbours' over many requests (the queue's excursions), so even the
// slow method, fixed steps of 60 s, answers with a spread of over ±5 %
// from one schedule to another, and two such measurements agree within
// ±1.5 % — what one replica in 2 % of the day's windows asks of them —
// in under a third of pairs. Seeded: the figures are the same on every
// run; the bounds hold them with room.
func TestBurstyCapacityPrecision(t *testing.T) {
	const cv = 2.31
	rng := rand.New(rand.NewPCG(21, 22))
	// The long-run goodput: 90 % is crossed between 31 and 32 req/s (the
	// built-in server: 31.3, from three runs of 180 s).
	share := func(lam float64) float64 {
		good := 0
		out := burstyGoodput(rng, lam, cv, 400_000)
		for _, g := range out {
			if g {
				good++
			}
		}
		return float64(good) / float64(len(out))
	}
	if g31, g32 := share(31), share(32); !(g31 > 0.9 && g32 < 0.9) {
		t.Fatalf("long-run goodput %.3f at 31 req/s, %.3f at 32: the simulated knee moved", g31, g32)
	}
	n := 100
	answers := make([]float64, n)
	for i := range answers {
		answers[i] = slowCapacity(rng, cv, 60)
	}
	slices.Sort(answers)
	p10, p50, p90 := answers[n/10], answers[n/2], answers[n-n/10]
	agree, pairs := 0, 0
	for i := range answers {
		for j := range i {
			pairs++
			if answers[i] <= 1.015*answers[j] {
				agree++
			}
		}
	}
	t.Logf("fixed 60 s steps at CV %.2f: answers p10 %.1f, p50 %.1f, p90 %.1f req/s; %d of %d pairs within ±1.5 %%", cv, p10, p50, p90, agree, pairs)
	if (p90-p10)/p50 < 0.10 {
		t.Errorf("p10–p90 spread %.1f–%.1f around %.1f: under ±5 %%", p10, p90, p50)
	}
	if float64(agree) > float64(pairs)/3 {
		t.Errorf("%d of %d pairs agree within ±1.5 %%, want under a third", agree, pairs)
	}
}
