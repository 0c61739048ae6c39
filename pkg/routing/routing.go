// Package routing owns which served model or adapter each request is sent
// to: it maps the model names a trace gives (or none) onto the names a
// server serves, by a table or a seeded strategy, as a pure schedule step.
//
// A Map is applied to a schedule before it is sharded, so every shard sends
// an arrival to the same name, and --schedule-out shows the names sent.
package routing

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Strategy is how a Map picks a served name.
type Strategy string

// Strategies.
const (
	// Default sends every request to the run's --model: arrivals get the
	// model "" whatever the trace says.
	Default Strategy = "default"
	// Keep sends the trace's names as they are (a schedule CSV's default).
	Keep Strategy = "keep"
	// Table renames trace values by a table; "*" is the entry of values
	// not listed (without it they go to the run's --model).
	Table Strategy = "table"
	// Hash sends every trace value to the served name its hash picks: the
	// same value always lands on the same name, whatever the seed.
	Hash Strategy = "hash"
	// RoundRobin deals the trace values, in order of first appearance in
	// the schedule, over the served names in turn.
	RoundRobin Strategy = "round-robin"
	// Zipf draws every request's served name from a Zipf law of exponent S
	// over the served names (rank 1 is the first listed), from the seed
	// and the arrival's index; the trace's own names are not used.
	Zipf Strategy = "zipf"
)

// Any is the table key matching every trace value not listed.
const Any = "*"

// Map decides the served name of every arrival.
type Map struct {
	Strategy Strategy
	// Table maps trace values to served names for Table ("" is the run's
	// --model); Table[Any] catches the values not listed.
	Table map[string]string
	// Served lists the served names Hash, RoundRobin and Zipf spread
	// requests over.
	Served []string
	// S is Zipf's exponent (> 0).
	S float64
}

// Validate reports what makes m unusable.
func (m *Map) Validate() error {
	switch m.Strategy {
	case Default, Keep:
		return nil
	case Table:
		if len(m.Table) == 0 {
			return errors.New("model map: the table is empty")
		}
		return nil
	case Hash, RoundRobin, Zipf:
		var errs []error
		if len(m.Served) == 0 {
			errs = append(errs, fmt.Errorf("model map %s: list the served names with --served-models a,b,c (or served_models in the file)", m.Strategy))
		}
		seen := map[string]bool{}
		for _, s := range m.Served {
			if s == "" {
				errs = append(errs, errors.New("served models: an empty name"))
			} else if seen[s] {
				errs = append(errs, fmt.Errorf("served models: %q listed twice", s))
			}
			seen[s] = true
		}
		if m.Strategy == Zipf && !(m.S > 0 && m.S <= maxZipfS) {
			errs = append(errs, fmt.Errorf("model map zipf:%g: want an exponent in (0, %g]", m.S, float64(maxZipfS)))
		}
		return errors.Join(errs...)
	}
	return fmt.Errorf("model map: unknown strategy %q", m.Strategy)
}

// maxZipfS bounds Zipf's exponent: beyond it every request goes to rank 1
// in float64 arithmetic anyway.
const maxZipfS = 64

// String describes m in one line, for logs.
func (m *Map) String() string {
	switch m.Strategy {
	case Table:
		keys := make([]string, 0, len(m.Table))
		for k := range m.Table {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			to := m.Table[k]
			if to == "" {
				to = "(--model)"
			}
			parts = append(parts, k+"→"+to)
		}
		if len(parts) > 6 {
			parts = append(parts[:6], fmt.Sprintf("… (%d entries)", len(keys)))
		}
		return "table " + strings.Join(parts, ", ")
	case Zipf:
		return fmt.Sprintf("zipf:%g over %d served name(s)", m.S, len(m.Served))
	case Hash, RoundRobin:
		return fmt.Sprintf("%s over %d served name(s)", m.Strategy, len(m.Served))
	}
	return string(m.Strategy)
}

// Unmapped returns the values of values a Table sends to the run's --model
// because neither they nor Any are listed (nil for other strategies).
func (m *Map) Unmapped(values []string) []string {
	if m.Strategy != Table {
		return nil
	}
	if _, ok := m.Table[Any]; ok {
		return nil
	}
	var out []string
	for _, v := range values {
		if _, ok := m.Table[v]; !ok {
			out = append(out, v)
		}
	}
	return out
}

// Apply returns s with every arrival's Model replaced by its served name.
// It is pure: the names depend only on m, seed and the arrivals (their
// trace names, indexes and order), never on the clock.
func (m *Map) Apply(s arrival.Schedule, seed uint64) arrival.Schedule {
	if m == nil || m.Strategy == Keep {
		return s
	}
	var cdf []float64
	if m.Strategy == Zipf {
		cdf = cumulative(ZipfShares(len(m.Served), m.S))
	}
	return func(yield func(arrival.Arrival) bool) {
		var order map[string]int // round-robin: trace value → rank of first appearance
		if m.Strategy == RoundRobin {
			order = map[string]int{}
		}
		for a := range s {
			switch m.Strategy {
			case Default:
				a.Model = ""
			case Table:
				if to, ok := m.Table[a.Model]; ok {
					a.Model = to
				} else {
					a.Model = m.Table[Any]
				}
			case Hash:
				if a.Model == "" {
					a.Model = m.Served[mix(seed, uint64(a.Index))%uint64(len(m.Served))]
				} else {
					a.Model = m.Served[hashString(a.Model)%uint64(len(m.Served))]
				}
			case RoundRobin:
				if a.Model == "" {
					a.Model = m.Served[a.Index%int64(len(m.Served))]
				} else {
					r, ok := order[a.Model]
					if !ok {
						r = len(order)
						order[a.Model] = r
					}
					a.Model = m.Served[r%len(m.Served)]
				}
			case Zipf:
				a.Model = m.Served[pick(cdf, uniform(seed, a.Index))]
			}
			if !yield(a) {
				return
			}
		}
	}
}

// ZipfShares returns the shares of ranks 1…k under a Zipf law of exponent
// s: share(i) = i^−s / Σ_j j^−s.
func ZipfShares(k int, s float64) []float64 {
	w := make([]float64, k)
	sum := 0.0
	for i := range w {
		w[i] = math.Pow(float64(i+1), -s)
	}
	for i := len(w) - 1; i >= 0; i-- { // small terms first: less rounding
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

func cumulative(p []float64) []float64 {
	c := make([]float64, len(p))
	sum := 0.0
	for i, v := range p {
		sum += v
		c[i] = sum
	}
	if len(c) > 0 {
		c[len(c)-1] = 1
	}
	return c
}

// pick returns the first rank whose cumulative share exceeds u.
func pick(cdf []float64, u float64) int {
	i := sort.SearchFloat64s(cdf, u)
	for i < len(cdf)-1 && cdf[i] <= u {
		i++
	}
	return min(i, len(cdf)-1)
}

// uniform is a number in [0, 1) derived from the seed and an arrival's
// index alone, so a shard draws exactly what the whole schedule draws.
func uniform(seed uint64, index int64) float64 {
	return float64(mix(seed, uint64(index))>>11) / (1 << 53)
}

// mix is a SplitMix64 finaliser of seed, the models stream and v.
func mix(seed, v uint64) uint64 {
	z := (seed ^ arrival.StreamModels<<32) * 0x9e3779b97f4a7c15
	z += (v + 1) * 0xbf58476d1ce4e5b9
	z ^= z >> 30
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 27
	z *= 0x94d049bb133111eb
	z ^= z >> 31
	return z
}

func hashString(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// ParseStrategy parses an inline strategy: "hash", "round-robin",
// "zipf:S" ("zipf" is zipf:1), "keep" or "default". ok is false when s
// names no strategy.
func ParseStrategy(s string) (m *Map, ok bool, err error) {
	v := strings.ToLower(strings.TrimSpace(s))
	name, arg, hasArg := strings.Cut(v, ":")
	switch name {
	case "hash", "round-robin", "roundrobin", "rr", "keep", "default":
		if hasArg {
			return nil, true, fmt.Errorf("model map %q: %s takes no argument", s, name)
		}
		switch name {
		case "hash":
			return &Map{Strategy: Hash}, true, nil
		case "keep":
			return &Map{Strategy: Keep}, true, nil
		case "default":
			return &Map{Strategy: Default}, true, nil
		}
		return &Map{Strategy: RoundRobin}, true, nil
	case "zipf":
		m := &Map{Strategy: Zipf, S: 1}
		if hasArg {
			f, err := strconv.ParseFloat(strings.TrimSpace(arg), 64)
			if err != nil || !(f > 0 && f <= maxZipfS) {
				return nil, true, fmt.Errorf("model map %q: zipf:S wants an exponent S in (0, %d], e.g. zipf:1.1", s, maxZipfS)
			}
			m.S = f
		}
		return m, true, nil
	}
	return nil, false, nil
}

// ParseInline parses the inline table form "FROM=TO,FROM2=TO2" ("*" any
// value; an empty TO is the run's --model).
func ParseInline(s string) (*Map, error) {
	m := &Map{Strategy: Table, Table: map[string]string{}}
	for _, part := range strings.Split(s, ",") {
		from, to, ok := strings.Cut(part, "=")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" {
			return nil, fmt.Errorf("model map %q: want FROM=TO,… (FROM * matches any model; an empty TO means --model)", s)
		}
		if prev, dup := m.Table[from]; dup && prev != to {
			return nil, fmt.Errorf("model map %q: %q mapped twice", s, from)
		}
		m.Table[from] = to
	}
	return m, nil
}
