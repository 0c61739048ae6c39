package experiment

import (
	"math"
	"slices"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// MaxRepeat bounds --repeat.
const MaxRepeat = 1000

// RunSeed is the seed of run i (from 0) of a repeated run with base seed
// base: run 0 keeps it (a run of --repeat 1 is the plain run), and each
// later run's is drawn from the base by SplitMix64, so the runs are
// independent and the whole series is repeated by its base seed.
func RunSeed(base uint64, i int) uint64 {
	if i == 0 {
		return base
	}
	z := base + uint64(i)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) & (1<<53 - 1) // a seed a JSON reader keeps exactly
}

// Aggregate returns the intervals of the headline figures (and of extra
// keys, e.g. a threshold's or the convergence figure) over runs: a figure
// present in every run gets its mean, half-width and values.
func Aggregate(runs []*metrics.Summary, extra ...string) (map[string]metrics.RepeatFigure, error) {
	vals := make([]map[string]float64, len(runs))
	for i, s := range runs {
		v, err := Values(s)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	keys := append(slices.Clone(Headline), extra...)
	out := map[string]metrics.RepeatFigure{}
	for _, k := range keys {
		xs := make([]float64, 0, len(runs))
		for _, v := range vals {
			if x, ok := v[k]; ok {
				xs = append(xs, x)
			}
		}
		if len(xs) != len(runs) || len(xs) == 0 {
			continue
		}
		m, h := Interval(xs)
		f := metrics.RepeatFigure{Mean: m, HalfWidth: h, N: len(xs), Values: xs}
		if math.IsInf(h, 1) {
			f.HalfWidth = 0 // one run: no interval (n says so)
		} else {
			f.Wide = Wide(m, h)
		}
		out[k] = f
	}
	return out, nil
}
