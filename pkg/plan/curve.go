package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Point is one measurement of a replica: the highest stationary rate
// (req/s) it serves within the SLO when the gaps between arrivals have
// coefficient of variation CV.
type Point struct {
	CV   float64 `json:"cv"`
	Rate float64 `json:"rate"`
	// Measured is the rate as measured, when the curve lowered it to keep
	// the curve monotone (a burstier load is never served faster).
	Measured float64 `json:"measured_rate,omitempty"`
	// Source names where the point comes from (a sweep file, a step).
	Source string `json:"source,omitempty"`
	// Steps are the steps of the sweep the point comes from, and
	// BusySteps those that ran on a busy machine (send lag from other
	// processes: the point may be low).
	Steps     int `json:"steps,omitempty"`
	BusySteps int `json:"busy_steps,omitempty"`
}

// BusyText says how many of the curve's measuring steps ran on a busy
// machine ("" when none, or when the points do not say).
func (c *Curve) BusyText() string {
	var busy, steps int
	for _, p := range c.Points {
		busy, steps = busy+p.BusySteps, steps+p.Steps
	}
	switch {
	case busy == 0:
		return ""
	case busy == steps:
		return fmt.Sprintf("every step of the curve's sweeps (%d) ran on a busy machine: send lag from other processes; its capacities may be understated", steps)
	}
	return fmt.Sprintf("%d of the %d steps of the curve's sweeps ran on a busy machine: send lag from other processes; their capacities may be understated", busy, steps)
}

// Curve is one replica's capacity as a function of burstiness: points
// sorted by CV, their rates non-increasing, interpolated linearly in CV and
// held flat beyond the first and last points. It also carries the service
// time of one request (TTFT, TPOT) at low load, which the idle share is
// computed from.
type Curve struct {
	Points []Point `json:"points"`
	// TTFT and TPOT are the replica's median time to first token and time
	// per output token (ms) at the load of the capacity: a request of n
	// output tokens keeps a slot busy TTFT + (n−1)·TPOT.
	TTFTms float64 `json:"ttft_ms"`
	TPOTms float64 `json:"tpot_ms"`
	// SLO says what the capacity was measured against, for the report.
	SLO string `json:"slo,omitempty"`
}

// NewCurve checks pts, sorts them by CV and makes the rates monotone:
// where a burstier point was measured faster than a smoother one (noise),
// its rate is lowered to the smoother one's and the measured rate kept
// beside it. Points of equal CV keep the lower rate.
func NewCurve(pts []Point, ttftMS, tpotMS float64) (*Curve, error) {
	if len(pts) == 0 {
		return nil, errors.New("capacity curve: no points")
	}
	var errs []error
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, p := range pts {
		if !(p.CV >= 0 && finite(p.CV)) {
			errs = append(errs, fmt.Errorf("capacity curve: burstiness (CV) %g of %s: want ≥ 0", p.CV, p.label()))
		}
		if !(p.Rate > 0 && finite(p.Rate)) {
			errs = append(errs, fmt.Errorf("capacity curve: rate %g of %s: want > 0 req/s (no load met the SLO?)", p.Rate, p.label()))
		}
	}
	if !(ttftMS >= 0 && finite(ttftMS)) || !(tpotMS >= 0 && finite(tpotMS)) {
		errs = append(errs, fmt.Errorf("capacity curve: TTFT %g ms, TPOT %g ms: want ≥ 0", ttftMS, tpotMS))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sorted := slices.Clone(pts)
	slices.SortStableFunc(sorted, func(a, b Point) int { return cmp.Compare(a.CV, b.CV) })
	out := sorted[:0]
	for _, p := range sorted {
		if n := len(out); n > 0 && out[n-1].CV == p.CV {
			if p.Rate < out[n-1].Rate {
				out[n-1] = p
			}
			continue
		}
		out = append(out, p)
	}
	for i := 1; i < len(out); i++ {
		if prev := out[i-1].Rate; out[i].Rate > prev {
			if out[i].Measured == 0 {
				out[i].Measured = out[i].Rate
			}
			out[i].Rate = prev
		}
	}
	return &Curve{Points: out, TTFTms: ttftMS, TPOTms: tpotMS}, nil
}

func (p Point) label() string {
	if p.Source != "" {
		return p.Source
	}
	return fmt.Sprintf("the point at CV %g", p.CV)
}

// At returns the capacity (req/s) at burstiness cv, and whether cv lies
// beyond the curve's last point (the rate is then the last point's: the
// plan is optimistic there, and says so).
func (c *Curve) At(cv float64) (rate float64, beyond bool) {
	p := c.Points
	if cv <= p[0].CV {
		return p[0].Rate, false
	}
	last := p[len(p)-1]
	if cv >= last.CV {
		return last.Rate, cv > last.CV*(1+1e-9)
	}
	i, _ := slices.BinarySearchFunc(p, cv, func(q Point, x float64) int { return cmp.Compare(q.CV, x) })
	a, b := p[i-1], p[i]
	f := (cv - a.CV) / (b.CV - a.CV)
	return a.Rate + f*(b.Rate-a.Rate), false
}

// ServiceSeconds is how long one request of out output tokens keeps a slot
// of a replica busy: TTFT + (out−1)·TPOT.
func (c *Curve) ServiceSeconds(out int) float64 {
	return (c.TTFTms + float64(max(out-1, 0))*c.TPOTms) / 1000
}
