package plan

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Check is one step a plan runs before it measures its curve (FirstPoints):
// can Replicas replicas serve the windows that might need only that many?
// It asks at the smoothest of their per-replica burstiness and the lowest
// of their per-replica rates, the easiest load any of them offers.
type Check struct {
	Replicas int `json:"replicas"`
	// Windows and Requests are the windows that might need only Replicas,
	// and their requests.
	Windows  int   `json:"windows"`
	Requests int64 `json:"requests"`
	// CV and Rate are the step's burstiness and rate (req/s, one replica's).
	CV   float64 `json:"cv"`
	Rate float64 `json:"rate"`
	// Fails: the step failed, so every one of those windows needs more.
	Fails bool `json:"fails"`
}

// CheckShare is the largest share of the day's requests whose windows a
// check is run for: a larger group sets the curve's typical point, which
// is measured whatever a check would say.
const CheckShare = 0.5

// MaxChecks is the most checks FirstPoints runs.
const MaxChecks = 2

// Spread returns the distinct values of vs, increasing, dropping any
// within rel of the previous one kept.
func Spread(vs []float64, rel float64) []float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	var out []float64
	for _, v := range s {
		if n := len(out); n > 0 && v <= out[n-1]*(1+rel) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// First is where FirstPoints says to measure a curve first.
type First struct {
	// CVs are the burstiness values to measure at, increasing.
	CVs []float64
	// Least is the fewest and Most the most replicas a window needs at
	// least (after the checks).
	Least, Most int
	Checks      []Check
}

// FirstPoints chooses where to measure a capacity curve first when a
// ceiling (req/s) is known that no replica exceeds at any burstiness
// (Little's law: slots / service time). Every window then needs at least
// ⌈rate/ceiling⌉ replicas, and its replicas see at most the burstiness of
// that split (the CV of its lag-n gaps; more replicas see less). The
// windows that might need the fewest, n, are checked when they hold less
// than CheckShare of the requests: when check says one step at their
// smoothest per-replica burstiness and lowest per-replica rate fails, none
// of them is served by n and they need n+1 — at most MaxChecks times; a
// check that passes ends them. The curve is then measured at the spread of
// the per-replica burstiness at those counts (p10, p50, p90 and highest,
// requests weighted, within 10 % of each other taken once); windows whose
// replicas see less are measured after a first plan (BelowPoints).
func FirstPoints(s arrival.Schedule, c Config, ceiling float64, check func(Check) (bool, error)) (*First, error) {
	if !(ceiling > 0) || math.IsInf(ceiling, 0) {
		return nil, fmt.Errorf("ceiling %g req/s: want > 0", ceiling)
	}
	if c.DefaultCV == 0 {
		c.DefaultCV = 1
	}
	ws, stats, _, err := survey(s, c)
	if err != nil {
		return nil, err
	}
	need := make([]int, len(ws))
	var total int64
	for i, w := range ws {
		if w.Requests > 0 {
			need[i] = Replicas(w.OfferedRate, ceiling, max(c.MinReplicas, 1))
			total += w.Requests
		}
	}
	if total == 0 {
		return nil, errors.New("the schedule is empty: nothing to plan")
	}
	f := &First{}
	for len(f.Checks) < MaxChecks {
		least := 0
		for i, w := range ws {
			if w.Requests > 0 && (least == 0 || need[i] < least) {
				least = need[i]
			}
		}
		ck := Check{Replicas: least, CV: math.Inf(1), Rate: math.Inf(1)}
		for i, w := range ws {
			if w.Requests > 0 && need[i] == least {
				ck.Windows++
				ck.Requests += w.Requests
				ck.CV = min(ck.CV, stats[i].cvLag(least, c.DefaultCV))
				ck.Rate = min(ck.Rate, w.OfferedRate/float64(least))
			}
		}
		if float64(ck.Requests) >= CheckShare*float64(total) {
			break
		}
		fails, err := check(ck)
		if err != nil {
			return nil, err
		}
		ck.Fails = fails
		f.Checks = append(f.Checks, ck)
		if !fails {
			break
		}
		for i, w := range ws {
			if w.Requests > 0 && need[i] == least {
				need[i]++
			}
		}
	}
	split := make([]Window, 0, len(ws))
	for i, w := range ws {
		if w.Requests == 0 {
			continue
		}
		w.Burstiness = stats[i].cvLag(need[i], c.DefaultCV)
		split = append(split, w)
		if f.Least == 0 || need[i] < f.Least {
			f.Least = need[i]
		}
		f.Most = max(f.Most, need[i])
	}
	p10, p50, p90, top := BurstinessRange(split)
	f.CVs = Spread([]float64{p10, p50, p90, top}, 0.1)
	return f, nil
}
