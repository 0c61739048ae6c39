package arrival

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxLength is the most tokens one length may ask for: an input or an
// output length of --lengths, --random-input-len, --random-output-len and
// every other length flag, and the largest --max-model-len (16,777,216
// tokens, above every served context). A length above it is a usage error,
// so a sum of two never overflows and no prompt is built that no server
// could take.
const MaxLength = 1 << 24

// Lengths assigns target request sizes to the arrivals of a synthetic
// schedule. Draw must use only r (and i) so that schedules stay pure.
type Lengths interface {
	Draw(r *rand.Rand, i int64) (input, output int)
}

// UniformLengths draws input and output lengths independently and uniformly
// from [L·(1−RangeRatio), L·(1+RangeRatio)], as vLLM's random dataset does;
// RangeRatio 0 gives exactly Input and Output tokens.
type UniformLengths struct {
	Input, Output int
	RangeRatio    float64
}

// Validate reports a configuration that cannot produce positive lengths.
func (u UniformLengths) Validate() error {
	switch {
	case u.Input < 1:
		return fmt.Errorf("random input length must be ≥ 1, got %d", u.Input)
	case u.Output < 1:
		return fmt.Errorf("random output length must be ≥ 1, got %d", u.Output)
	case u.RangeRatio < 0 || u.RangeRatio >= 1 || math.IsNaN(u.RangeRatio):
		return fmt.Errorf("random range ratio must be in [0, 1), got %g", u.RangeRatio)
	}
	return nil
}

// Max returns the largest input and output lengths Draw can return.
func (u UniformLengths) Max() (in, out int) {
	hi := func(l int) int {
		if u.RangeRatio == 0 {
			return l
		}
		lo := max(1, int(math.Floor(float64(l)*(1-u.RangeRatio))))
		return max(lo, int(math.Ceil(float64(l)*(1+u.RangeRatio))))
	}
	return hi(u.Input), hi(u.Output)
}

// Draw implements Lengths.
func (u UniformLengths) Draw(r *rand.Rand, _ int64) (int, int) {
	return uniformAround(r, u.Input, u.RangeRatio), uniformAround(r, u.Output, u.RangeRatio)
}

func uniformAround(r *rand.Rand, l int, ratio float64) int {
	if ratio == 0 {
		return l
	}
	lo := max(1, int(math.Floor(float64(l)*(1-ratio))))
	hi := max(lo, int(math.Ceil(float64(l)*(1+ratio))))
	return lo + r.IntN(hi-lo+1)
}

// PairLengths draws (input, output) pairs jointly and uniformly from a
// list, keeping the correlation of the two (FineServe's
// --request-lengths-csv).
type PairLengths struct {
	Pairs [][2]int
}

// Draw implements Lengths.
func (p PairLengths) Draw(r *rand.Rand, _ int64) (int, int) {
	if len(p.Pairs) == 0 {
		return 1, 1
	}
	q := p.Pairs[r.IntN(len(p.Pairs))]
	return q[0], q[1]
}

// SequenceLengths takes pairs in order, cycling (a dataset's own lengths).
type SequenceLengths struct {
	Pairs [][2]int
}

// Draw implements Lengths.
func (s SequenceLengths) Draw(_ *rand.Rand, i int64) (int, int) {
	if len(s.Pairs) == 0 {
		return 1, 1
	}
	q := s.Pairs[i%int64(len(s.Pairs))]
	return q[0], q[1]
}
