package parametric

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// BurstSpread is the interval after a burst's event inside which its
// requests are spread (FineServe's 1 ms micro-burst bin). Offsets are drawn
// uniformly in [0, BurstSpread − 1 µs), so that a burst stays inside 1 ms
// even when its times are rounded to the microsecond (the schedule CSV).
const BurstSpread = time.Millisecond

// burstWidth is the width offsets are drawn from, in seconds.
var burstWidth = (BurstSpread - time.Microsecond).Seconds()

// Config describes a parametric schedule.
type Config struct {
	Plan *Plan
	// NB, when set, turns every Gamma event into a zero-truncated NB burst.
	NB *NB
	// Count caps the number of requests and Duration their span (measured
	// after TimeScale); with neither, the schedule is one pass over the
	// file's windows.
	Count    int64
	Duration time.Duration
	// TimeScale divides every offset (S > 1 is faster; 0 means 1).
	TimeScale float64
	Seed      uint64
	Lengths   arrival.Lengths
	Model     string
}

// Validate returns every problem of c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Plan == nil {
		errs = append(errs, errors.New("no Gamma windows"))
	}
	if c.NB != nil {
		if err := c.NB.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.TimeScale != 0 && (!(c.TimeScale > 0) || math.IsInf(c.TimeScale, 0)) {
		errs = append(errs, fmt.Errorf("time scale %g: want a finite number > 0", c.TimeScale))
	}
	if c.Count < 0 || c.Duration < 0 {
		errs = append(errs, errors.New("count and duration must be ≥ 0"))
	}
	if c.Lengths == nil {
		errs = append(errs, errors.New("no request length source"))
	}
	return errors.Join(errs...)
}

// BurstMean is the mean number of requests per Gamma event: E[K] of the NB
// model, or 1 without one.
func (c Config) BurstMean() float64 {
	if c.NB == nil {
		return 1
	}
	return c.NB.Mean()
}

// Schedule returns the schedule of c (which must be valid). Request i is
// due at the absolute offset its event's Gamma gaps sum to, divided by the
// time scale; requests of one NB burst share the burst id of its first
// request. When an event gap is shorter than a millisecond, the requests
// of consecutive bursts interleave; a small reorder buffer keeps the
// schedule sorted.
func Schedule(c Config) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		g := newGenerator(c)
		g.run(yield)
	}
}

type generator struct {
	c       Config
	windows *windowSource
	win     Window
	winEnd  float64 // end of the current window on the process clock
	gamma   distuv.Gamma
	ek      float64
	bursts  *burstSampler // its source also draws the burst offsets
	pend    pendingHeap
	offs    []float64
	seq     uint64

	scale   float64
	horizon float64 // pass end (unscaled seconds), or +Inf
	index   int64
	lastAt  time.Duration
}

func newGenerator(c Config) *generator {
	g := &generator{c: c, ek: c.BurstMean(), scale: c.TimeScale, horizon: math.Inf(1)}
	if g.scale == 0 {
		g.scale = 1
	}
	if c.Count <= 0 && c.Duration <= 0 {
		g.horizon = c.Plan.PassEnd()
	}
	g.windows = c.Plan.source(c.Seed)
	g.gamma.Src = arrival.Rand(c.Seed, arrival.StreamTimes)
	if c.NB != nil {
		g.bursts = newBurstSampler(*c.NB, arrival.Rand(c.Seed, arrival.StreamBursts))
	}
	g.setWindow(g.windows.next())
	return g
}

func (g *generator) setWindow(w Window) {
	g.win = w
	g.winEnd = w.End - w.Paused
	g.gamma.Alpha = w.Shape
	g.gamma.Beta = 1e3 / (w.ScaleMS * g.ek)
}

func (g *generator) run(yield func(arrival.Arrival) bool) {
	sizes := arrival.Rand(g.c.Seed, arrival.StreamLengths)
	emit := func(wall float64, burst int64, first bool) bool {
		// max: silent periods add a rounding error that must not reorder.
		at := max(arrival.Seconds(wall/g.scale), g.lastAt)
		if g.c.Duration > 0 && at >= g.c.Duration {
			return false
		}
		if first {
			burst = g.index
		}
		in, out := g.c.Lengths.Draw(sizes, g.index)
		a := arrival.Arrival{Index: g.index, At: at, InputTokens: in, OutputTokens: out, Model: g.c.Model, Burst: burst}
		g.index++
		g.lastAt = at
		if !yield(a) {
			return false
		}
		return g.c.Count <= 0 || g.index < g.c.Count
	}
	t := 0.0 // seconds on the process clock (wall time less silent periods)
	for {
		for t >= g.winEnd {
			g.setWindow(g.windows.next())
		}
		wall := t + g.win.Paused
		if wall >= g.horizon || (g.c.Duration > 0 && arrival.Seconds(wall/g.scale) >= g.c.Duration) {
			break
		}
		for len(g.pend) > 0 && g.pend[0].t <= wall {
			p := g.pend.pop()
			if !emit(p.t, p.burst, false) {
				return
			}
		}
		id := g.index
		if !emit(wall, 0, true) {
			return
		}
		if g.bursts != nil {
			g.burst(wall, id)
		}
		t += g.gamma.Rand()
	}
	for len(g.pend) > 0 {
		p := g.pend.pop()
		if p.t >= g.horizon || !emit(p.t, p.burst, false) {
			return
		}
	}
}

// burst draws the size of the burst of the event at wall and queues its
// requests after the first (already sent) at sorted uniform offsets inside
// BurstSpread.
func (g *generator) burst(wall float64, id int64) {
	k := g.bursts.draw()
	g.offs = g.offs[:0]
	for range k - 1 {
		u := g.bursts.src.Float64() * burstWidth
		// insertion sort: bursts are small
		i := len(g.offs)
		g.offs = append(g.offs, u)
		for i > 0 && g.offs[i-1] > u {
			g.offs[i] = g.offs[i-1]
			i--
		}
		g.offs[i] = u
	}
	for _, u := range g.offs {
		g.pend.push(pending{t: wall + u, seq: g.seq, burst: id})
		g.seq++
	}
}

// pending is a request of a burst waiting for its turn.
type pending struct {
	t     float64 // unscaled seconds
	seq   uint64  // queueing order: breaks ties between equal times
	burst int64
}

func (a pending) less(b pending) bool { return a.t < b.t || (a.t == b.t && a.seq < b.seq) }

// pendingHeap is a binary min-heap on (t, seq).
type pendingHeap []pending

func (h *pendingHeap) push(p pending) {
	*h = append(*h, p)
	s := *h
	i := len(s) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !s[i].less(s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *pendingHeap) pop() pending {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s[l].less(s[m]) {
			m = l
		}
		if r < n && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
