package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Steady-state windows (--steady-state, docs/EXPERIMENTS.md): a run's
// first seconds are a ramp (in-flight requests build up) and its last a
// drain (no arrivals, the backlog empties); the steady_state section gives
// the figures over the window between.

// KeySteadyState holds the figures over the steady-state window
// (SteadyStateSummary).
const KeySteadyState = "steady_state"

// KeyRepeats holds a repeated run's intervals (RepeatsSummary).
const KeyRepeats = "repeats"

// Rules of the steady-state window.
const (
	SteadyOff  = "off"
	SteadyAuto = "auto"
	// SteadyLevelShare: the window starts when the requests in flight
	// first reach this share of their running level.
	SteadyLevelShare = 0.9
	// MaxSteadyRequests bounds the requests a steady-state window keeps
	// (40 bytes each); a run with more has no steady_state figures, and
	// says so.
	MaxSteadyRequests = 2_000_000
)

// SteadyConfig chooses the steady-state window: Rule "" or SteadyOff:
// none; SteadyAuto: by the rule (SteadyWindow); "fixed": Start to End
// from the run's start.
type SteadyConfig struct {
	Rule       string
	Start, End time.Duration
}

// ParseSteady reads --steady-state: off, auto or START:END (seconds from
// the run's start, START < END).
func ParseSteady(s string) (SteadyConfig, error) {
	switch s {
	case "", SteadyOff:
		return SteadyConfig{Rule: SteadyOff}, nil
	case SteadyAuto:
		return SteadyConfig{Rule: SteadyAuto}, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if ok {
		x, err1 := strconv.ParseFloat(a, 64)
		y, err2 := strconv.ParseFloat(b, 64)
		if err1 == nil && err2 == nil && x >= 0 && y > x && !math.IsInf(y, 0) {
			return SteadyConfig{Rule: "fixed", Start: time.Duration(x * float64(time.Second)), End: time.Duration(y * float64(time.Second))}, nil
		}
	}
	return SteadyConfig{}, fmt.Errorf("--steady-state %q: want off, auto or START:END in seconds from the run's start (START < END, e.g. 10:50)", s)
}

// SteadyStateSummary is the summary's steady_state section: the window
// (from the run's start), the rule that chose it, and the headline figures
// of the requests sent in it. It marshals flat: the figures under the
// summary's own keys (mean_ttft_ms, request_throughput…).
type SteadyStateSummary struct {
	// Rule is "auto" or "fixed"; Note says why there are no figures.
	Rule          string
	StartS, EndS  float64
	InFlightLevel float64 // auto: the running level the start is judged by
	Requests      int64   // requests sent in the window
	Figures       map[string]float64
	Note          string
}

// MarshalJSON writes the section as one flat object, keys sorted.
func (s SteadyStateSummary) MarshalJSON() ([]byte, error) {
	m := map[string]any{"rule": s.Rule, "start_s": finite(s.StartS), "end_s": finite(s.EndS), "requests": s.Requests}
	if s.Rule == SteadyAuto {
		m["in_flight_level"] = finite(s.InFlightLevel)
	}
	if s.Note != "" {
		m["note"] = s.Note
	}
	for k, v := range s.Figures {
		m[k] = finite(v)
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *SteadyStateSummary) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = SteadyStateSummary{Figures: map[string]float64{}}
	// The section's own keys; every other key is a figure.
	own := map[string]any{"rule": &s.Rule, "note": &s.Note, "start_s": &s.StartS, "end_s": &s.EndS,
		"in_flight_level": &s.InFlightLevel, "requests": &s.Requests}
	for k, raw := range m {
		var err error
		if dst, ok := own[k]; ok {
			err = json.Unmarshal(raw, dst)
		} else if string(raw) != "null" {
			var v float64
			err = json.Unmarshal(raw, &v)
			s.Figures[k] = v
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}

// steadyReq is what the window needs of one request.
type steadyReq struct {
	sent, end      time.Duration
	ttft, tpot     time.Duration
	e2e            time.Duration
	outTokens      int32
	sentOK, ok     bool
	hasTTFT, hasTP bool
}

// SteadyState is the Part that keeps the steady-state window's figures.
type SteadyState struct {
	cfg  SteadyConfig
	reqs []steadyReq
	over bool
}

// NewSteadyState returns the part for cfg (nothing kept when off).
func NewSteadyState(cfg SteadyConfig) *SteadyState { return &SteadyState{cfg: cfg} }

// Add implements Sink.
func (p *SteadyState) Add(s *Sample) {
	if p.cfg.Rule == "" || p.cfg.Rule == SteadyOff || !s.HasLag {
		return
	}
	if len(p.reqs) >= MaxSteadyRequests {
		p.over = true
		return
	}
	p.reqs = append(p.reqs, steadyReq{sent: s.Sent, end: s.End, ttft: s.TTFT, tpot: s.TPOT, e2e: s.E2E,
		outTokens: int32(min(s.OutputTokens, math.MaxInt32)), sentOK: s.HasLag, ok: s.OK && s.HasE2E, hasTTFT: s.HasTTFT, hasTP: s.HasTPOT})
}

// Key implements Part.
func (p *SteadyState) Key() string { return KeySteadyState }

// Save implements Part: a merged run has no steady-state window.
func (p *SteadyState) Save(*MergeState) error { return nil }

// Load implements Part.
func (p *SteadyState) Load(*Copy) error { return nil }

// Finish implements Part.
func (p *SteadyState) Finish(s *Summary, _ time.Duration) {
	if p.cfg.Rule == "" || p.cfg.Rule == SteadyOff {
		return
	}
	out := &SteadyStateSummary{Rule: p.cfg.Rule, Figures: map[string]float64{}}
	s.SteadyState = out
	if p.over {
		out.Note = fmt.Sprintf("more than %d requests: no steady-state figures", MaxSteadyRequests)
		return
	}
	start, end := p.cfg.Start, p.cfg.End
	if p.cfg.Rule == SteadyAuto {
		var ok bool
		start, end, out.InFlightLevel, ok = SteadyWindow(p.spans())
		if !ok {
			out.Note = "too few requests for a steady-state window"
			return
		}
	}
	out.StartS, out.EndS = start.Seconds(), end.Seconds()
	p.figures(out, start, end)
}

func (p *SteadyState) spans() [][2]time.Duration {
	sp := make([][2]time.Duration, len(p.reqs))
	for i, r := range p.reqs {
		sp[i] = [2]time.Duration{r.sent, r.end}
	}
	return sp
}

// SteadyWindow applies the auto rule to the requests' [sent, end] spans
// (from the run's start): n(t) is the number of requests in flight (sent,
// not ended); the running level L is n's time-weighted mean over the
// second half of the arrivals (first send to last send); the window starts
// at the first send at which n reaches SteadyLevelShare·L and ends at the
// last send. ok is false with fewer than 2 requests, or no time between
// first and last send.
func SteadyWindow(spans [][2]time.Duration) (start, end time.Duration, level float64, ok bool) {
	if len(spans) < 2 {
		return 0, 0, 0, false
	}
	type ev struct {
		t time.Duration
		d int
	}
	evs := make([]ev, 0, 2*len(spans))
	first, last := spans[0][0], spans[0][0]
	for _, s := range spans {
		evs = append(evs, ev{s[0], +1}, ev{max(s[1], s[0]), -1})
		first, last = min(first, s[0]), max(last, s[0])
	}
	if last <= first {
		return 0, 0, 0, false
	}
	// Ends before sends at one instant: a request that ended is not in
	// flight with the one sent then.
	slices.SortFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.d - b.d
	})
	half := first + (last-first)/2
	var area float64
	n := 0
	prev := first
	for _, e := range evs {
		// n is constant over [prev, e.t): its share in [half, last].
		if lo, hi := max(prev, half), min(e.t, last); hi > lo {
			area += float64(n) * float64(hi-lo)
		}
		n += e.d
		prev = e.t
	}
	level = area / float64(last-half)
	target := SteadyLevelShare * level
	n = 0
	for _, e := range evs {
		n += e.d
		if e.d > 0 && float64(n) >= target {
			return e.t, last, level, true
		}
	}
	return first, last, level, true
}

// figures fills out with the figures of the requests sent in [start, end].
func (p *SteadyState) figures(out *SteadyStateSummary, start, end time.Duration) {
	ttft, tpot, e2e := NewHist(), NewHist(), NewHist()
	var done, tokens int64
	for _, r := range p.reqs {
		if r.sent < start || r.sent > end {
			continue
		}
		out.Requests++
		if !r.ok {
			continue
		}
		e2e.Record(r.e2e)
		if r.hasTTFT {
			ttft.Record(r.ttft)
		}
		if r.hasTP {
			tpot.Record(r.tpot)
		}
		if r.end >= start && r.end <= end {
			done++
			tokens += int64(r.outTokens)
		}
	}
	if secs := (end - start).Seconds(); secs > 0 {
		out.Figures["request_throughput"] = float64(done) / secs
		out.Figures["output_throughput"] = float64(tokens) / secs
	}
	for _, f := range []struct {
		name string
		h    *Hist
	}{{"ttft", ttft}, {"tpot", tpot}, {"e2e_latency", e2e}} {
		if f.h.Count() == 0 {
			continue
		}
		d := f.h.Dist()
		for _, st := range d.stats() {
			switch st.prefix {
			case "mean", "median", "p90", "p95", "p99", "max":
				out.Figures[st.prefix+"_"+f.name+"_ms"] = *st.v
			}
		}
	}
}
