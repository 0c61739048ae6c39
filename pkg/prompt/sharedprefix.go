package prompt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SharedPrefix gives requests one of Num shared prefixes of Len tokens
// (vLLM's --prefix-len and --num-prefixes): a prompt is its prefix, cut to
// the request's input length when shorter, followed by tokens unique to the
// request, so a server's prefix cache can serve the prefix. Which prefix
// request i gets is a pure function of the seed and i (Pick): uniform, or
// Zipf with exponent Zipf > 0 (prefix k has weight 1/(k+1)^Zipf).
type SharedPrefix struct {
	Len, Num int
	Zipf     float64
	Seed     uint64
	cdf      []float64 // Zipf only
}

// MaxPrefixes bounds --num-prefixes (a Zipf table holds one float per
// prefix).
const MaxPrefixes = 1 << 20

// NewSharedPrefix returns the prefixes of --prefix-len n, --num-prefixes k
// and --prefix-dist dist (uniform or zipf:S).
func NewSharedPrefix(n, k int, dist string, seed uint64) (*SharedPrefix, error) {
	zipf, err := ParsePrefixDist(dist)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("prefix length %d: want ≥ 1 token", n)
	}
	if k < 1 || k > MaxPrefixes {
		return nil, fmt.Errorf("number of prefixes %d: want 1 to %d", k, MaxPrefixes)
	}
	p := &SharedPrefix{Len: n, Num: k, Zipf: zipf, Seed: seed}
	if zipf > 0 {
		p.cdf = make([]float64, k)
		acc := 0.0
		for i := range k {
			acc += math.Pow(float64(i+1), -zipf)
			p.cdf[i] = acc
		}
		for i := range p.cdf {
			p.cdf[i] /= acc
		}
		p.cdf[k-1] = 1
	}
	return p, nil
}

// ParsePrefixDist parses --prefix-dist: "uniform" (0) or "zipf:S" with S > 0.
func ParsePrefixDist(s string) (float64, error) {
	if s == "uniform" || s == "" {
		return 0, nil
	}
	v, ok := strings.CutPrefix(s, "zipf:")
	if !ok {
		return 0, fmt.Errorf("%q: want uniform or zipf:S (e.g. zipf:1.1)", s)
	}
	z, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: the Zipf exponent %q is not a number", s, v)
	}
	if !(z > 0) || z > 100 {
		return 0, fmt.Errorf("%q: the Zipf exponent must be in (0, 100]", s)
	}
	return z, nil
}

// Share is the probability that a request gets prefix k.
func (p *SharedPrefix) Share(k int) float64 {
	switch {
	case p.cdf == nil:
		return 1 / float64(p.Num)
	case k == 0:
		return p.cdf[0]
	}
	return p.cdf[k] - p.cdf[k-1]
}

// Pick is the prefix request i gets, in [0, Num).
func (p *SharedPrefix) Pick(i int64) int {
	h := p.Seed ^ 0x7072656669780000
	h = mix(h, 0x9ef1, uint64(i))
	if p.cdf == nil {
		return int(h % uint64(p.Num))
	}
	u := float64(h>>11) / (1 << 53)
	lo, hi := 0, len(p.cdf)-1
	for lo < hi {
		m := (lo + hi) / 2
		if u < p.cdf[m] {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// Dist writes the distribution as --prefix-dist takes it.
func (p *SharedPrefix) Dist() string {
	if p.Zipf == 0 {
		return "uniform"
	}
	return "zipf:" + strconv.FormatFloat(p.Zipf, 'g', -1, 64)
}

// hash is the content id of prefix k under salt.
func (p *SharedPrefix) hash(salt uint64, k int) uint64 { return mix(salt, 0x5a4ed, uint64(k)) }
