package arrival

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// PoissonConfig describes a renewal process at a constant mean rate.
type PoissonConfig struct {
	// Rate is the mean request rate in req/s; +Inf sends everything at t = 0.
	Rate float64
	// Burstiness is the shape k of Gamma-distributed gaps (vLLM's
	// --burstiness): 1 is Poisson, k < 1 burstier, k > 1 more regular. The
	// mean gap stays 1/Rate.
	Burstiness float64
	// Count caps the number of arrivals and Duration their span; at least
	// one of them must be set.
	Count    int64
	Duration time.Duration
	Seed     uint64
	Lengths  Lengths
	Model    string
	// Profile, when set, replaces Rate: the rate follows it over time
	// (ramps and stages) and the schedule ends with it. Gaps are drawn at
	// unit rate, with the same Burstiness, and mapped through the
	// profile's Λ⁻¹.
	Profile *Profile
}

// Validate returns every problem of c at once.
func (c PoissonConfig) Validate() error {
	var errs []error
	if c.Profile != nil {
		c.Rate, c.Count = 1, max(c.Count, 1)
	}
	if !(c.Rate > 0) { // also rejects NaN
		errs = append(errs, fmt.Errorf("request rate must be > 0 or inf, got %g", c.Rate))
	}
	if !(c.Burstiness > 0) || math.IsInf(c.Burstiness, 0) {
		errs = append(errs, fmt.Errorf("burstiness must be a finite number > 0, got %g", c.Burstiness))
	}
	if c.Count <= 0 && c.Duration <= 0 {
		errs = append(errs, errors.New("a Poisson schedule needs a number of prompts or a duration"))
	}
	if math.IsInf(c.Rate, 1) && c.Count <= 0 {
		errs = append(errs, errors.New("request rate inf needs a number of prompts (every request is due at once)"))
	}
	if c.Lengths == nil {
		errs = append(errs, errors.New("no request length source"))
	}
	return errors.Join(errs...)
}

// Poisson returns the schedule of c. Gaps are exponential (Burstiness 1) or
// Gamma(k, 1/(Rate·k)); offsets are their running sum from 0, the first
// arrival being due at once as in vLLM's and FineServe's benchmarks.
func Poisson(c PoissonConfig) Schedule {
	if c.Profile != nil {
		return profiled(c)
	}
	return func(yield func(Arrival) bool) {
		times := Rand(c.Seed, StreamTimes)
		gamma := distuv.Gamma{Alpha: c.Burstiness, Beta: c.Rate * c.Burstiness, Src: times}
		inf := math.IsInf(c.Rate, 1)
		t := 0.0 // seconds
		c.emit(yield, func(i int64) (float64, bool) {
			if i > 0 && !inf {
				if c.Burstiness == 1 {
					t += times.ExpFloat64() / c.Rate
				} else {
					t += gamma.Rand()
				}
			}
			return t, true
		})
	}
}

// profiled is the schedule of a Poisson config with a Profile: the first
// arrival where the profile's rate first turns positive, then unit-rate
// gaps (exponential, or Gamma(k, k) with mean 1) on Λ, mapped back to time.
func profiled(c PoissonConfig) Schedule {
	return func(yield func(Arrival) bool) {
		times := Rand(c.Seed, StreamTimes)
		gamma := distuv.Gamma{Alpha: c.Burstiness, Beta: c.Burstiness, Src: times}
		u := 0.0
		c.emit(yield, func(i int64) (float64, bool) {
			if i > 0 {
				if c.Burstiness == 1 {
					u += times.ExpFloat64()
				} else {
					u += gamma.Rand()
				}
			}
			return c.Profile.Invert(u)
		})
	}
}

// emit yields c's arrivals, the i-th at the time at(i) gives in seconds
// (called in order), until c.Count of them, c.Duration or at's false.
func (c PoissonConfig) emit(yield func(Arrival) bool, at func(i int64) (float64, bool)) {
	sizes := Rand(c.Seed, StreamLengths)
	for i := int64(0); c.Count <= 0 || i < c.Count; i++ {
		t, ok := at(i)
		if !ok {
			return
		}
		due := Seconds(t)
		if c.Duration > 0 && due >= c.Duration {
			return
		}
		in, out := c.Lengths.Draw(sizes, i)
		if !yield(Arrival{Index: i, At: due, InputTokens: in, OutputTokens: out, Model: c.Model, Burst: i}) {
			return
		}
	}
}
