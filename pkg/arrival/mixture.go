package arrival

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MixtureComponent is one (input, output) length of a mixture, with its
// weight and optional jitter: each length is drawn uniformly from
// [L·(1−r), L·(1+r)] as --random-range-ratio does.
type MixtureComponent struct {
	Input, Output             int
	InputJitter, OutputJitter float64
	Weight                    float64
}

// MixtureLengths draws each request's lengths from one of its components,
// chosen with probability proportional to its weight (--lengths). Which
// component request i gets is a pure function of Seed and i (Component), so
// the achieved mixture of a schedule can be counted without keeping it.
type MixtureLengths struct {
	Components []MixtureComponent
	Seed       uint64
	cdf        []float64
	total      float64 // of the weights
}

// maxComponents bounds a mixture.
const maxComponents = 1024

// ParseMixture parses --lengths: components separated by ';', each
// INPUT,OUTPUT:WEIGHT, where a length may carry a jitter ±R (or +-R), e.g.
// "128,64:40;512±0.1,256:50;4096,512±0.25:10". Errors name the component
// (1-based) and the part that is wrong.
func ParseMixture(s string, seed uint64) (*MixtureLengths, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty: want INPUT,OUTPUT:WEIGHT;… (e.g. 128,64:40;512,256:60)")
	}
	parts := strings.Split(s, ";")
	if len(parts) > maxComponents {
		return nil, fmt.Errorf("%d components: at most %d", len(parts), maxComponents)
	}
	m := &MixtureLengths{Seed: seed}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		where := fmt.Sprintf("component %d %q", i+1, p)
		lens, w, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("%s: want INPUT,OUTPUT:WEIGHT", where)
		}
		in, out, ok := strings.Cut(lens, ",")
		if !ok {
			return nil, fmt.Errorf("%s: want INPUT,OUTPUT before the ':'", where)
		}
		var c MixtureComponent
		var err error
		if c.Input, c.InputJitter, err = parseJittered(in); err != nil {
			return nil, fmt.Errorf("%s: input %w", where, err)
		}
		if c.Output, c.OutputJitter, err = parseJittered(out); err != nil {
			return nil, fmt.Errorf("%s: output %w", where, err)
		}
		if c.Weight, err = strconv.ParseFloat(strings.TrimSpace(w), 64); err != nil {
			return nil, fmt.Errorf("%s: weight is not a number", where)
		}
		if !(c.Weight > 0) || math.IsInf(c.Weight, 0) {
			return nil, fmt.Errorf("%s: weight must be a finite number > 0", where)
		}
		m.Components = append(m.Components, c)
	}
	m.init()
	return m, nil
}

// parseJittered parses L or L±R.
func parseJittered(s string) (int, float64, error) {
	s = strings.TrimSpace(s)
	l, r, jit := strings.Cut(s, "±")
	if !jit {
		l, r, jit = strings.Cut(s, "+-")
	}
	n, err := strconv.Atoi(strings.TrimSpace(l))
	if err != nil || n < 1 || n > MaxLength {
		return 0, 0, fmt.Errorf("length %q is not a whole number of tokens in [1, %d]", strings.TrimSpace(l), MaxLength)
	}
	if !jit {
		return n, 0, nil
	}
	ratio, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
	if err != nil || !(ratio >= 0 && ratio < 1) {
		return 0, 0, fmt.Errorf("jitter %q: want a ratio r with 0 ≤ r < 1", strings.TrimSpace(r))
	}
	return n, ratio, nil
}

func (m *MixtureLengths) init() {
	total := 0.0
	for _, c := range m.Components {
		total += c.Weight
	}
	m.total = total
	m.cdf = make([]float64, len(m.Components))
	acc := 0.0
	for i, c := range m.Components {
		acc += c.Weight
		m.cdf[i] = acc / total
	}
	m.cdf[len(m.cdf)-1] = 1
}

// Share is component k's expected share of the requests.
func (m *MixtureLengths) Share(k int) float64 { return m.Components[k].Weight / m.total }

// Component is the index of the component request i draws from.
func (m *MixtureLengths) Component(i int64) int {
	h := m.Seed ^ 0x6c656e677468 ^ uint64(i)*0x9e3779b97f4a7c15
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	u := float64(h>>11) / (1 << 53)
	for k, c := range m.cdf {
		if u < c {
			return k
		}
	}
	return len(m.cdf) - 1
}

// Max returns the largest input plus output Draw can return.
func (m *MixtureLengths) Max() (in, out int) {
	for _, c := range m.Components {
		u := UniformLengths{Input: c.Input, Output: c.Output}
		u.RangeRatio = c.InputJitter
		i, _ := u.Max()
		u.RangeRatio = c.OutputJitter
		_, o := u.Max()
		if i+o > in+out {
			in, out = i, o
		}
	}
	return in, out
}

// Draw implements Lengths.
func (m *MixtureLengths) Draw(r *rand.Rand, i int64) (int, int) {
	c := m.Components[m.Component(i)]
	return uniformAround(r, c.Input, c.InputJitter), uniformAround(r, c.Output, c.OutputJitter)
}

// String writes the mixture as --lengths takes it.
func (m *MixtureLengths) String() string {
	var b strings.Builder
	for i, c := range m.Components {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(jittered(c.Input, c.InputJitter) + "," + jittered(c.Output, c.OutputJitter) + ":" + strconv.FormatFloat(c.Weight, 'g', -1, 64))
	}
	return b.String()
}

func jittered(l int, r float64) string {
	if r == 0 {
		return strconv.Itoa(l)
	}
	return strconv.Itoa(l) + "±" + strconv.FormatFloat(r, 'g', -1, 64)
}
