package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Headline lists the figures a repeated run gives intervals for, by their
// summary keys: throughput, TTFT/TPOT/ITL/E2E means and percentiles, and
// goodput (present with --goodput).
var Headline = func() []string {
	k := []string{"request_throughput", "output_throughput", "total_throughput"}
	for _, d := range []string{"ttft", "tpot", "itl", "e2e_latency"} {
		for _, st := range []string{"mean", "median", "p90", "p95", "p99"} {
			k = append(k, st+"_"+d+"_ms")
		}
	}
	return append(k, metrics.KeyRequestGoodput, metrics.KeyGoodputShare)
}()

// KnownKeys lists the summary's numeric keys (metrics.FigureKeys): those
// a threshold, --until-converged or compare's --fail-on may name.
func KnownKeys() []string { return metrics.FigureKeys() }

// CheckKey returns an error naming the nearest known key when key is not
// one of KnownKeys.
func CheckKey(key string) error {
	keys := KnownKeys()
	if _, ok := slices.BinarySearch(keys, key); ok {
		return nil
	}
	best, bd := "", math.MaxInt
	// The headline figures first: a tie goes to the figure most asked for
	// (p99_ttf_ms is p99_ttft_ms before p99_ttfo_ms).
	for _, k := range append(slices.Clone(Headline), keys...) {
		if d := editDistance(key, k); d < bd {
			best, bd = k, d
		}
	}
	if bd <= max(2, len(key)/3) {
		return fmt.Errorf("%q is not a summary key (did you mean %s?)", key, best)
	}
	return fmt.Errorf("%q is not a numeric key of the summary (e.g. p99_ttft_ms, output_throughput, goodput_share; docs/EXPERIMENTS.md)", key)
}

// Values returns the summary's figures by key (metrics.Summary.Figures:
// a figure with no sample is absent).
func Values(s *metrics.Summary) (map[string]float64, error) { return s.Figures(), nil }

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
