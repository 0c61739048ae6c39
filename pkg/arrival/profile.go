package arrival

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A Profile is a target rate that changes over time: λ(t) for t in
// [0, End], made of segments along which the rate moves linearly or
// exponentially from one value to the next. In Poisson mode λ is the
// request rate; in replay and parametric mode it multiplies the speed of
// the workload (see Warp).
//
// Schedules follow a profile exactly by time-rescaling: an arrival process
// of unit rate is drawn on the cumulative target Λ(t) = ∫₀ᵗ λ and mapped
// back through Λ⁻¹ (Invert), so the expected number of arrivals in any
// window is ∫λ over it, and gap shapes such as --burstiness keep their
// meaning. A Profile is immutable and holds one value per segment: its
// memory does not depend on the run's length.
type Profile struct {
	segs  []segment
	total float64 // Λ(End)
}

// segment is one piece of a profile, from Start to End seconds.
type segment struct {
	start, end float64
	from, to   float64 // rate at start and end
	exp        bool    // exponential (from, to > 0) instead of linear
	cum        float64 // Λ(start)
}

// Stage is one k6-style stage: the target moves linearly from the previous
// stage's target (0 before the first) to Target over Duration.
type Stage struct {
	Duration time.Duration
	Target   float64
}

// String writes the stage as --stages takes it.
func (s Stage) String() string {
	return s.Duration.String() + ":" + strconv.FormatFloat(s.Target, 'g', -1, 64)
}

// ParseStages parses a --stages value: comma-separated DURATION:TARGET pairs
// (`30s:10,2m:100,30s:0`). A duration is a Go duration or a number of
// seconds. Errors name the stage (1-based) and the part that is wrong.
func ParseStages(s string) ([]Stage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty: want DURATION:TARGET,… (e.g. 30s:10,2m:100)")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxStages {
		return nil, fmt.Errorf("%d stages: at most %d", len(parts), maxStages)
	}
	var out []Stage
	var total time.Duration
	for i, p := range parts {
		p = strings.TrimSpace(p)
		d, r, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("stage %d %q: want DURATION:TARGET", i+1, p)
		}
		dur, err := parseSeconds(strings.TrimSpace(d))
		if err != nil {
			return nil, fmt.Errorf("stage %d %q: duration %w", i+1, p, err)
		}
		rate, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil {
			return nil, fmt.Errorf("stage %d %q: rate is not a number", i+1, p)
		}
		if !(rate >= 0) || math.IsInf(rate, 0) {
			return nil, fmt.Errorf("stage %d %q: rate must be a finite number ≥ 0", i+1, p)
		}
		total += dur
		if total > maxProfile {
			return nil, fmt.Errorf("stage %d %q: the stages last more than %v", i+1, p, maxProfile)
		}
		out = append(out, Stage{Duration: dur, Target: rate})
	}
	if total <= 0 {
		return nil, errors.New("the stages last 0 s: give at least one stage a duration")
	}
	return out, nil
}

// maxStages and maxProfile bound a profile: a few thousand stages over at
// most ten years.
const (
	maxStages  = 4096
	maxProfile = 10 * 365 * 24 * time.Hour
)

// parseSeconds parses a Go duration ("2m30s") or a number of seconds.
func parseSeconds(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return 0, fmt.Errorf("%q is negative", s)
		}
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0) || f > maxProfile.Seconds() {
		return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 2m, 1h30m)", s)
	}
	return Seconds(f), nil
}

// StagesProfile returns the profile of k6-style stages: it starts at 0 (a
// first stage of 0 s jumps to its target) and moves linearly to each
// stage's target over its duration.
func StagesProfile(st []Stage) (*Profile, error) {
	p := &Profile{}
	t, rate := 0.0, 0.0
	positive := false
	for _, s := range st {
		d := s.Duration.Seconds()
		if s.Target > 0 {
			positive = true
		}
		if d > 0 {
			p.add(segment{start: t, end: t + d, from: rate, to: s.Target})
		}
		t += d
		rate = s.Target
	}
	if !positive || p.total <= 0 {
		return nil, errors.New("the target is 0 throughout: no request would be due")
	}
	return p, nil
}

// RampProfile returns vLLM's ramp: the rate moves from start to end over
// span seconds, linearly or exponentially (exponential needs start > 0).
func RampProfile(strategy string, start, end, span float64) (*Profile, error) {
	if !(span > 0) || math.IsInf(span, 0) {
		return nil, fmt.Errorf("ramp span %g s: want > 0", span)
	}
	p := &Profile{}
	switch strategy {
	case "linear":
		p.add(segment{start: 0, end: span, from: start, to: end})
	case "exponential":
		if !(start > 0 && end > 0) {
			return nil, fmt.Errorf("an exponential ramp needs start and end rates > 0, got %g and %g", start, end)
		}
		p.add(segment{start: 0, end: span, from: start, to: end, exp: start != end})
	default:
		return nil, fmt.Errorf("strategy %q: want linear or exponential", strategy)
	}
	if !(p.total > 0) {
		return nil, errors.New("the ramp's rate is 0 throughout")
	}
	return p, nil
}

// RampSpan is the span over which a vLLM ramp from start to end expects n
// arrivals: vLLM spreads its ramp over --num-prompts requests, so without a
// --duration the ramp lasts as long as n requests take on average.
func RampSpan(strategy string, start, end float64, n int64) float64 {
	if strategy == "exponential" && start > 0 && end > 0 && start != end {
		return float64(n) * math.Log(end/start) / (end - start)
	}
	if start+end <= 0 {
		return 0
	}
	return 2 * float64(n) / (start + end)
}

// Hold returns p followed by d seconds at its final rate (p itself when
// that rate is 0 or d ≤ 0).
func (p *Profile) Hold(d float64) *Profile {
	last := p.segs[len(p.segs)-1]
	if !(d > 0) || last.to <= 0 {
		return p
	}
	q := &Profile{segs: append([]segment(nil), p.segs...), total: p.total}
	q.add(segment{start: last.end, end: last.end + d, from: last.to, to: last.to})
	return q
}

func (p *Profile) add(s segment) {
	s.cum = p.total
	p.total += s.area(s.end - s.start)
	p.segs = append(p.segs, s)
}

// area is ∫ λ over the first tau seconds of the segment.
func (s *segment) area(tau float64) float64 {
	d := s.end - s.start
	switch {
	case s.exp:
		q := math.Log(s.to / s.from)
		return s.from * d / q * math.Expm1(q*tau/d)
	default:
		return s.from*tau + (s.to-s.from)*tau*tau/(2*d)
	}
}

// invert is the tau with area(tau) = u, for 0 ≤ u ≤ area(d).
func (s *segment) invert(u float64) float64 {
	d := s.end - s.start
	if s.exp {
		q := math.Log(s.to / s.from)
		return d / q * math.Log1p(u*q/(s.from*d))
	}
	a := (s.to - s.from) / (2 * d)
	if u <= 0 {
		return 0
	}
	if a == 0 {
		return u / s.from
	}
	// a·τ² + from·τ − u = 0, in the form that stays exact when from is 0
	// or a is small.
	disc := s.from*s.from + 4*a*u
	if disc < 0 {
		disc = 0
	}
	return 2 * u / (s.from + math.Sqrt(disc))
}

// End is the profile's length in seconds.
func (p *Profile) End() float64 { return p.segs[len(p.segs)-1].end }

// Total is Λ(End): the expected number of arrivals of a Poisson schedule
// (the workload seconds a warped schedule covers).
func (p *Profile) Total() float64 { return p.total }

// Rate is λ(t); 0 outside [0, End].
func (p *Profile) Rate(t float64) float64 {
	i := p.find(t)
	if i < 0 {
		return 0
	}
	s := &p.segs[i]
	f := (t - s.start) / (s.end - s.start)
	if s.exp {
		return s.from * math.Pow(s.to/s.from, f)
	}
	return s.from + (s.to-s.from)*f
}

// Cumulative is Λ(t) = ∫₀ᵗ λ.
func (p *Profile) Cumulative(t float64) float64 {
	if t <= 0 {
		return 0
	}
	if t >= p.End() {
		return p.total
	}
	s := &p.segs[p.find(t)]
	return s.cum + s.area(t-s.start)
}

// find is the index of the segment holding t, or -1 outside [0, End].
// Segments are contiguous from 0.
func (p *Profile) find(t float64) int {
	if t < 0 || t > p.End() {
		return -1
	}
	return min(sort.Search(len(p.segs), func(i int) bool { return p.segs[i].end > t }), len(p.segs)-1)
}

// Invert returns the first t with Λ(t) = u, and false when u is at or past
// Total (the profile has ended). Stretches where the rate is 0 are skipped.
func (p *Profile) Invert(u float64) (float64, bool) {
	if !(u >= 0) || u >= p.total {
		return 0, false
	}
	// The first segment whose cumulative end exceeds u; zero-area segments
	// never qualify.
	i := sort.Search(len(p.segs), func(i int) bool {
		next := p.total
		if i+1 < len(p.segs) {
			next = p.segs[i+1].cum
		}
		return next > u
	})
	s := &p.segs[i]
	tau := s.invert(u - s.cum)
	return min(s.start+max(tau, 0), s.end), true
}

// Stages describes the profile as k6 stages (duration and the target at its
// end), led by a 0 s stage when it does not start at 0. An exponential
// segment is written as one stage; Exponential tells which.
func (p *Profile) Stages() []ProfileStage {
	var out []ProfileStage
	if len(p.segs) > 0 && p.segs[0].from != 0 {
		out = append(out, ProfileStage{Target: p.segs[0].from})
	}
	for _, s := range p.segs {
		out = append(out, ProfileStage{DurationS: s.end - s.start, Target: s.to, Exponential: s.exp})
	}
	return out
}

// ProfileStage is one stage of a profile as the summary writes it.
type ProfileStage struct {
	DurationS   float64 `json:"duration_s"`
	Target      float64 `json:"target"`
	Exponential bool    `json:"exponential,omitempty"`
}

// Warp runs schedule s at the speed of p: an arrival due at workload time
// x (seconds) becomes due at Λ⁻¹(x), so where λ is 2 the workload goes
// twice as fast. Arrivals past Total are cut: the warped schedule ends with
// the profile.
func Warp(s Schedule, p *Profile) Schedule {
	return func(yield func(Arrival) bool) {
		for a := range s {
			t, ok := p.Invert(a.At.Seconds())
			if !ok {
				return
			}
			a.At = Seconds(t)
			if !yield(a) {
				return
			}
		}
	}
}
