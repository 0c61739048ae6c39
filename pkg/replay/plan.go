package replay

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Plan says which part of a trace to replay and how fast.
type Plan struct {
	// TimeScale divides every gap (> 1 is faster); 0 means 1.
	TimeScale float64
	// TargetRate, when > 0, sets the time scale so that the replayed
	// slice's mean rate is TargetRate req/s (it excludes TimeScale).
	TargetRate float64
	// Start and Span select the rows with Start ≤ At < Start+Span on the
	// trace's clock, before scaling (Span 0: to the end).
	Start, Span time.Duration
	// Busiest, with Span > 0, replaces Start by the start of the trace's
	// busiest window of length Span (the first, if several tie).
	Busiest bool
	// Count caps the number of arrivals (≤ 0: no cap): the first Count
	// rows of the span are the slice (TargetRate scales their rate).
	Count int64
	// Duration caps the replay's own (scaled) time: rows due at or after
	// it are left out (≤ 0: no cap).
	Duration time.Duration
}

// Slice is a Plan resolved against a Trace: rows [First, End) are replayed
// and row i is due at (At(i) − Origin) / TimeScale.
type Slice struct {
	First, End int
	// Origin is the trace time replayed at time 0: the first row's, or,
	// for a schedule CSV replayed whole, the schedule's own zero.
	Origin time.Duration
	// TimeScale is the scale in effect (computed from TargetRate if set).
	TimeScale float64
	// Start is the trace time the slice was asked to start at (Busiest
	// resolves it).
	Start time.Duration
	// SliceRate is the mean rate of the selected rows before scaling.
	SliceRate float64
}

// Len is the number of arrivals.
func (s Slice) Len() int { return s.End - s.First }

// Resolve applies p to t.
func (t *Trace) Resolve(p Plan) (Slice, error) {
	var errs []error
	if p.TimeScale < 0 || math.IsNaN(p.TimeScale) || math.IsInf(p.TimeScale, 0) {
		errs = append(errs, fmt.Errorf("time scale %g: want a finite number > 0", p.TimeScale))
	}
	if p.TargetRate < 0 || math.IsNaN(p.TargetRate) || math.IsInf(p.TargetRate, 0) {
		errs = append(errs, fmt.Errorf("target rate %g: want a finite number > 0", p.TargetRate))
	}
	if p.TargetRate > 0 && p.TimeScale != 0 && p.TimeScale != 1 {
		errs = append(errs, errors.New("give either a time scale or a target rate, not both"))
	}
	if p.Start < 0 || p.Span < 0 {
		errs = append(errs, errors.New("trace start and duration must be ≥ 0"))
	}
	if p.Busiest && p.Span <= 0 {
		errs = append(errs, errors.New("the busiest window needs a trace duration"))
	}
	if err := errors.Join(errs...); err != nil {
		return Slice{}, err
	}
	s := Slice{TimeScale: p.TimeScale, Start: p.Start}
	if s.TimeScale == 0 {
		s.TimeScale = 1
	}
	if p.Busiest {
		s.Start, _ = t.Busiest(p.Span)
	}
	n := t.Len()
	s.First = sort.Search(n, func(i int) bool { return t.at[i] >= int64(s.Start) })
	s.End = n
	if p.Span > 0 {
		end := int64(s.Start) + int64(p.Span)
		if end < int64(s.Start) { // overflow: to the end
			end = math.MaxInt64
		}
		s.End = s.First + sort.Search(n-s.First, func(j int) bool { return t.at[s.First+j] >= end })
	}
	if p.Count > 0 && int64(s.Len()) > p.Count {
		s.End = s.First + int(p.Count) // the rows replayed: their rate is the slice's
	}
	if s.First < s.End {
		s.Origin = t.At(s.First)
		if t.Format == ScheduleCSV && p.Start == 0 && !p.Busiest {
			s.Origin = -t.Lead // a schedule keeps its own offsets
		}
		if k := s.End - s.First; k >= 2 {
			if span := t.at[s.End-1] - t.at[s.First]; span > 0 {
				s.SliceRate = float64(k-1) / time.Duration(span).Seconds()
			}
		}
	}
	if p.TargetRate > 0 {
		if s.SliceRate <= 0 {
			return s, fmt.Errorf("target rate: the selected rows (%d) have no time span to scale", s.Len())
		}
		s.TimeScale = p.TargetRate / s.SliceRate
	}
	if p.Duration > 0 {
		k := sort.Search(s.Len(), func(j int) bool { return s.due(t, s.First+j) >= p.Duration })
		s.End = s.First + k
	}
	return s, nil
}

// due is row i's replay time.
func (s Slice) due(t *Trace, i int) time.Duration {
	d := t.at[i] - int64(s.Origin)
	if s.TimeScale == 1 {
		return time.Duration(d)
	}
	return arrival.Divide(time.Duration(d), s.TimeScale)
}

// Schedule returns the arrivals of slice s of t: indexes from 0, times
// scaled, sizes, models, images and prefix blocks as the trace gives them
// (lengths the trace lacks are 0), and for image-generation traces what to
// generate. It is pure: iterating it twice yields
// the same arrivals.
func (t *Trace) Schedule(s Slice) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for i := s.First; i < s.End; i++ {
			idx := int64(i - s.First)
			a := arrival.Arrival{
				Index: idx, At: s.due(t, i),
				InputTokens: int(t.in[i]), OutputTokens: int(t.out[i]),
				Model: t.Model(i), Images: t.Images(i), PrefixBlocks: t.PrefixBlocks(i),
				Burst: idx, Gen: t.Generation(i),
			}
			if t.burst != nil {
				a.Burst = t.burst[i]
			}
			if !yield(a) {
				return
			}
		}
	}
}

// Busiest returns the start of the first window of length w holding the
// most rows, and that count. Windows start at a row's time.
func (t *Trace) Busiest(w time.Duration) (start time.Duration, count int) {
	j := 0
	for i := range t.at {
		for j < len(t.at) && t.at[j]-t.at[i] < int64(w) {
			j++
		}
		if j-i > count {
			count, start = j-i, time.Duration(t.at[i])
		}
	}
	return start, count
}
