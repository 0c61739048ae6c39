package sweep

import (
	"context"
	"fmt"
	"math"
)

// Probe is what a short probe of the server found before a rate sweep
// (Config.Probe): its service time at low load and how many requests it
// runs at once.
type Probe struct {
	// ServiceTime is the end-to-end latency of a request alone on the
	// server (the median of a few sent one at a time), in seconds.
	ServiceTime float64 `json:"service_time_s"`
	// Slots is how many requests the server runs at once (0: unknown);
	// SlotsFrom says where it was read. AtLeast: no request waited during
	// the probe, so the server may run more.
	Slots     int    `json:"slots"`
	SlotsFrom string `json:"slots_from,omitempty"`
	AtLeast   bool   `json:"slots_at_least,omitempty"`
	// Seconds is how long the probe took.
	Seconds float64 `json:"seconds"`
}

// Start is where a search started and why (Result.Start).
type Start struct {
	Value float64 `json:"value"`
	// Estimate is Little's law's capacity (req/s), 0 when there was none.
	Estimate float64 `json:"estimate,omitempty"`
	Probe    *Probe  `json:"probe,omitempty"`
	Why      string  `json:"why"`
}

// The start of a search from Little's law (docs/CAPACITY.md).
const (
	// StartShare is where the first step lies under the estimate: a little
	// below, so that it passes and the second step brackets.
	StartShare = 0.95
	// StartGrowth is the first factor the bracket grows (or shrinks) by
	// from the start; it squares at every further step the same way.
	StartGrowth = 1.1
)

// LittleCapacity is the capacity Little's law gives a server that runs
// slots requests at once, each for service seconds: slots / service
// (req/s). ok is false when either is unknown.
func LittleCapacity(slots int, service float64) (float64, bool) {
	if slots <= 0 || !(service > 0) || math.IsInf(service, 0) {
		return 0, false
	}
	return float64(slots) / service, true
}

// start decides where the search begins: under Below when it is known,
// from the probe's estimate when the variable is the rate and the probe
// found the server's slots, else at Min (the doubling search).
func (s *search) start(ctx context.Context) *Start {
	c := s.c
	if c.Below > 0 && c.Variable == Rate {
		v := s.round(math.Min(math.Max(StartShare*c.Below, c.Min), c.Max))
		return &Start{Value: v, Estimate: c.Below, Why: fmt.Sprintf("%s: %.1f req/s at most; starting at %.0f %% of it", c.BelowWhy, c.Below, 100*StartShare)}
	}
	if c.Probe == nil {
		return &Start{Value: c.Min, Why: "--sweep-min"}
	}
	if c.Variable != Rate {
		return &Start{Value: c.Min, Why: fmt.Sprintf("--sweep-min (the probe estimates a rate; a %s sweep doubles from --sweep-min)", c.Variable)}
	}
	p, err := c.Probe(ctx)
	if err != nil {
		return &Start{Value: c.Min, Why: fmt.Sprintf("--sweep-min (the probe failed: %v)", err)}
	}
	est, ok := LittleCapacity(p.Slots, p.ServiceTime)
	if !ok {
		why := "the server's running count was not read"
		if !(p.ServiceTime > 0) {
			why = "no service time measured"
		}
		return &Start{Value: c.Min, Probe: &p, Why: fmt.Sprintf("--sweep-min (the probe could not estimate the capacity: %s)", why)}
	}
	share, under := StartShare, ""
	if c.ArrivalCV > 1 && !math.IsInf(c.ArrivalCV, 0) {
		// A bursty schedule meets an SLO below the throughput ceiling: a
		// first guess, which the bracket corrects (docs/CAPACITY.md).
		share /= math.Sqrt(c.ArrivalCV)
		under = fmt.Sprintf(", divided by √CV for a schedule of CV %.2f", c.ArrivalCV)
	}
	v := s.round(math.Min(math.Max(share*est, c.Min), c.Max))
	bound := "="
	if p.AtLeast {
		bound = "≥"
	}
	why := fmt.Sprintf("Little's law: %d slots (%s) / %.1f ms service time (E2E p50, one request at a time) %s %.1f req/s; starting at %.0f %% of it%s",
		p.Slots, p.SlotsFrom, 1e3*p.ServiceTime, bound, est, 100*StartShare, under)
	return &Start{Value: v, Estimate: est, Probe: &p, Why: why}
}

// bracketFrom brackets the capacity from st: up while steps pass, down
// while they fail, by StartGrowth squared at every step the same way
// (Growth when the estimate is only a lower bound), within [Min, Max].
// It returns the highest passing and lowest failing loads (0: none).
func (s *search) bracketFrom(ctx context.Context, st *Start) (lo, hi float64, err error) {
	c := s.c
	g := StartGrowth
	if st.Estimate == 0 || (st.Probe != nil && st.Probe.AtLeast) {
		g = c.Growth
	}
	v := st.Value
	dir := 0
	for {
		verdict, err := s.step(ctx, v)
		if err != nil {
			return lo, hi, err
		}
		if verdict == Pass {
			lo = s.load(v)
		} else {
			hi = s.load(v)
		}
		switch {
		case lo > 0 && hi > 0:
			return lo, hi, nil
		case verdict == Pass && v >= c.Max, verdict != Pass && v <= c.Min:
			return lo, hi, nil
		}
		d := 1
		if verdict != Pass {
			d = -1
		}
		if dir == d && g < c.Growth {
			g = math.Min(g*g, c.Growth)
		}
		dir = d
		next := s.load(v) * g
		if d < 0 {
			next = s.load(v) / g
		}
		next = s.nominal(next)
		next = s.round(math.Min(math.Max(next, c.Min), c.Max))
		if next == v {
			return lo, hi, nil
		}
		v = next
	}
}
