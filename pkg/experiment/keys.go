package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/editdist"
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
		if d := editdist.Distance(strings.ToLower(key), strings.ToLower(k)); d < bd {
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
