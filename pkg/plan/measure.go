package plan

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// LengthMixComponents is the most components LengthMix gives.
const LengthMixComponents = 32

// LengthMix returns the schedule's (input, output) length mix as a
// --lengths mixture of at most LengthMixComponents components, so that a
// Poisson-mode measurement sends this workload's own request sizes: its
// distinct pairs with their shares when there are few, else the pairs
// sorted by output then input length and cut into equal-count bins, each
// bin's mean pair weighted by its share. A bin's mean keeps the mean of
// anything linear in the lengths — a request's service time TTFT +
// (n−1)·TPOT among them. It returns "" for an empty schedule.
func LengthMix(s arrival.Schedule) string {
	counts := map[[2]int]int64{}
	var total int64
	for a := range s {
		counts[[2]int{a.InputTokens, a.OutputTokens}]++
		total++
	}
	if total == 0 {
		return ""
	}
	type pc struct {
		p [2]int
		n int64
	}
	pairs := make([]pc, 0, len(counts))
	for p, n := range counts {
		pairs = append(pairs, pc{p, n})
	}
	slices.SortFunc(pairs, func(a, b pc) int {
		return cmp.Or(cmp.Compare(a.p[1], b.p[1]), cmp.Compare(a.p[0], b.p[0]))
	})
	var parts []string
	add := func(in, out float64, n int64) {
		parts = append(parts, fmt.Sprintf("%d,%d:%s", max(int(math.Round(in)), 1), max(int(math.Round(out)), 1),
			strconv.FormatFloat(100*float64(n)/float64(total), 'g', 6, 64)))
	}
	if len(pairs) <= LengthMixComponents {
		for _, p := range pairs {
			add(float64(p.p[0]), float64(p.p[1]), p.n)
		}
		return strings.Join(parts, ";")
	}
	per := float64(total) / LengthMixComponents
	var in, out float64
	var n int64
	var done int64
	for _, p := range pairs {
		in += float64(p.p[0]) * float64(p.n)
		out += float64(p.p[1]) * float64(p.n)
		n += p.n
		done += p.n
		if float64(done) >= per*float64(len(parts)+1)-1e-9 {
			add(in/float64(n), out/float64(n), n)
			in, out, n = 0, 0, 0
		}
	}
	if n > 0 {
		add(in/float64(n), out/float64(n), n)
	}
	return strings.Join(parts, ";")
}

// GammaShape is the --burstiness (Gamma shape k) whose gaps have
// coefficient of variation cv: k = 1/cv². A CV below 0.1 is taken as 0.1
// (k = 100: nearly regular).
func GammaShape(cv float64) float64 {
	cv = max(cv, 0.1)
	return 1 / (cv * cv)
}
