package monitor

import (
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// period is one window or live interval being accumulated: [start, end).
type period struct {
	acc        *metrics.WindowAcc
	start, end time.Duration
	offered    int64
	flight     flightSample
	cpu        float64
	behind     float64 // the backlog at the end, ms (see lookBehind)
	// server is what the server's metrics said during the period (windows
	// only; taken when the period is cut).
	server *metrics.ServerStats
	// gpu is what the GPU telemetry said during the period (windows only).
	gpu *metrics.GPUStats
}

// flightSample accumulates samples of the requests in flight.
type flightSample struct {
	n, sum, max int64
}

func (f *flightSample) add(v int64) {
	f.n++
	f.sum += v
	f.max = max(f.max, v)
}

func (f *flightSample) mean() float64 {
	if f.n == 0 {
		return 0
	}
	return float64(f.sum) / float64(f.n)
}

// stream cuts a run into back-to-back periods of equal length (windows, or
// live intervals) and accumulates each result into the period its request
// ended in, whatever the order in which the collector and the monitor see
// a boundary: the period after the current one is already open for results
// that ended past the boundary before the monitor cut it, and a period
// stays open for grace after its end for results that ended before the
// boundary but reached the collector after it. Then it is closed (onClose)
// and its accumulator reused. Memory: at most four accumulators, whatever
// the run's length.
//
// The periods are swapped by the monitor goroutine under the monitor's
// mutex; add runs under it on the collecting goroutine, offer on the
// dispatcher's. The periods' flight and cpu fields belong to the monitor
// goroutine.
type stream struct {
	every, grace     time.Duration
	prev, cur, ahead *period
	free             []*metrics.WindowAcc
	closeAt          time.Duration // when prev closes (prev != nil)
	cpuMark          time.Duration
	// lastBehind is the backlog the last closed period ended with (ms),
	// against which the self-check judges the next one's.
	lastBehind float64
	onClose    func(p *period)
}

func newStream(every time.Duration, onClose func(*period)) *stream {
	s := &stream{every: every, grace: min(sampleEvery, every/4), onClose: onClose}
	s.cur = s.open(0)
	s.ahead = s.open(every)
	return s
}

// open returns a period starting at start.
func (s *stream) open(start time.Duration) *period {
	var acc *metrics.WindowAcc
	if n := len(s.free); n > 0 {
		acc, s.free = s.free[n-1], s.free[:n-1]
	} else {
		acc = metrics.NewWindowAcc()
	}
	return &period{acc: acc, start: start, end: start + s.every}
}

// Add accumulates a request in the period it ended in (caller holds the
// monitor's mutex).
func (s *stream) Add(smp *metrics.Sample) {
	p := s.cur
	switch {
	case smp.End >= p.end:
		p = s.ahead
	case smp.End < p.start && s.prev != nil:
		p = s.prev
	}
	p.acc.Add(smp)
}

// offer counts an arrival due at offset at as offered in the period it is
// due in (caller holds the mutex). The dispatcher offers an arrival at its
// due time or, when it lags, a little later: a period stays open for its
// grace for arrivals due before its end.
func (s *stream) offer(at time.Duration) {
	p := s.cur
	switch {
	case at >= p.end:
		p = s.ahead
	case at < p.start && s.prev != nil:
		p = s.prev
	}
	p.offered++
}

// due is the next instant the stream has something to do.
func (s *stream) due() time.Duration {
	if s.prev != nil {
		return min(s.closeAt, s.cur.end)
	}
	return s.cur.end
}

// cut ends the current period and makes the next one current (caller
// holds the mutex). cpu is the CPU share of the period that ends, behind
// the backlog it ends with.
func (s *stream) cut(cpu, behind float64) {
	s.cur.cpu, s.cur.behind = cpu, behind
	s.prev, s.closeAt = s.cur, s.cur.end+s.grace
	s.cur = s.ahead
	s.ahead = s.open(s.cur.end)
}

// takePrev detaches the period waiting for its grace to pass (caller holds
// the mutex).
func (s *stream) takePrev() *period {
	p := s.prev
	s.prev = nil
	return p
}

// release closes p and keeps its accumulator for a later period (no mutex
// needed: nothing adds to a detached period).
func (s *stream) release(p *period) {
	s.onClose(p)
	p.acc.Reset()
	s.free = append(s.free, p.acc)
}

// stats returns the figures of a closed period.
func (m *Monitor) stats(p *period) metrics.WindowStats {
	w := metrics.WindowStats{
		Start: p.start.Seconds(), End: p.end.Seconds(), Offered: p.offered,
		InFlightMean: p.flight.mean(), InFlightMax: p.flight.max, ClientCPU: p.cpu, Behind: p.behind,
	}
	p.acc.Fill(&w, m.slo.Set())
	return w
}

// closeWindow records a closed window.
func (m *Monitor) closeWindow(p *period) {
	w := m.stats(p)
	w.Index = len(m.windows)
	w.Server = p.server
	w.GPU = p.gpu
	w.GPU.SetOutputTokens(w.OutputTokens)
	m.check.Check(&w, m.win.lastBehind)
	m.win.lastBehind = w.Behind
	m.windows = append(m.windows, w)
	if m.c.NoStates {
		return
	}
	ws, err := p.acc.State(w.Index)
	if err != nil && m.stateErr == nil {
		m.stateErr = err
	}
	m.states = append(m.states, ws)
}

// saturated returns the windows where the client was saturated.
func (m *Monitor) saturated() []metrics.WindowStats {
	var out []metrics.WindowStats
	for _, w := range m.windows {
		if w.Saturated {
			out = append(out, w)
		}
	}
	return out
}
