// Package balance owns which of several endpoints (--base-url given more
// than once) each request goes to: round-robin and session stickiness as a
// pure schedule step, least-inflight as a choice at send time.
package balance

import (
	"fmt"
	"sync/atomic"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Strategy is how requests are spread over the endpoints (--balance).
type Strategy string

// Strategies.
const (
	// RoundRobin deals the requests over the endpoints in turn, by their
	// index in the whole schedule (a session's later turns go on from
	// where its first went).
	RoundRobin Strategy = "round-robin"
	// LeastInflight sends each request, when it is sent, to the endpoint
	// with the fewest requests in flight (ties go round in turn).
	LeastInflight Strategy = "least-inflight"
	// Session keeps every turn of a multi-turn session, and every request
	// of one shared prefix (--prefix-len), on one endpoint, so each
	// replica's prefix cache is used; other requests go round-robin.
	Session Strategy = "session"
)

// Parse reads a --balance value ("" is RoundRobin).
func Parse(s string) (Strategy, error) {
	switch Strategy(s) {
	case "", RoundRobin:
		return RoundRobin, nil
	case LeastInflight, Session:
		return Strategy(s), nil
	}
	return "", fmt.Errorf("--balance %q: want round-robin, least-inflight or session", s)
}

// Ahead reports whether the strategy decides every request's endpoint in
// the schedule (so --schedule-out can show it).
func (s Strategy) Ahead() bool { return s != LeastInflight }

// Plan is how a schedule's arrivals are given their endpoints: N endpoints
// (≥ 2; with one, no step is needed) and the strategy. PrefixOf, when set,
// is the shared prefix an arrival's prompt starts with (the Session
// strategy keeps one prefix on one endpoint); Sessions tells that every
// arrival is a session's start. Shards (0 or 1: not sharded) is the number
// of copies the schedule is split over (--shard I/N, Index % Shards).
type Plan struct {
	N        int
	Strategy Strategy
	Sessions bool
	PrefixOf func(index int64) int
	Shards   int64
}

// Endpoint is the endpoint the plan gives the arrival of index i, decided
// ahead of time (LeastInflight: -1, decided at send time).
func (p *Plan) Endpoint(i int64) int {
	switch {
	case p.Strategy == LeastInflight:
		return -1
	case p.Strategy == Session && !p.Sessions && p.PrefixOf != nil:
		return p.PrefixOf(i) % p.N
	}
	return p.roundRobin(i)
}

// roundRobin is the endpoint of the arrival of index i in turn: i % N, or
// with shards, (i / Shards + i % Shards) % N — each copy takes every
// Shards-th arrival, so it goes round the endpoints in turn too, starting
// one further than the copy before it; the whole schedule stays even.
func (p *Plan) roundRobin(i int64) int {
	if p.Shards <= 1 {
		return int(i % int64(p.N))
	}
	return int((i/p.Shards + i%p.Shards) % int64(p.N))
}

// Turn is the endpoint of a session's turn (turn ≥ 1; turn 1 is the
// arrival itself, at first): Session keeps the session's endpoint;
// RoundRobin goes on from it, one endpoint a turn; LeastInflight decides
// at send time (-1).
func (p *Plan) Turn(first, turn int) int {
	switch p.Strategy {
	case LeastInflight:
		return -1
	case Session:
		return first
	}
	return (first + turn - 1) % p.N
}

// Apply returns s with every arrival's Endpoint set by the plan. It is
// pure: a function of the arrival's index alone, so every shard of a run
// sends an arrival to the same endpoint.
func (p *Plan) Apply(s arrival.Schedule) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for a := range s {
			a.Endpoint = p.Endpoint(a.Index)
			if !yield(a) {
				return
			}
		}
	}
}

// Picker chooses the endpoint of a request when it is sent and counts the
// requests in flight at each. It is safe for concurrent use.
type Picker struct {
	least    bool
	inflight []atomic.Int64
	next     atomic.Uint64
}

// NewPicker returns the picker of n endpoints under strategy s.
func NewPicker(n int, s Strategy) *Picker {
	return &Picker{least: s == LeastInflight, inflight: make([]atomic.Int64, n)}
}

// Acquire returns the endpoint a request goes to and counts it in flight
// there until Release: planned when the plan decided it (≥ 0), else the
// endpoint with the fewest requests in flight, ties taken in turn from
// one request to the next.
func (p *Picker) Acquire(planned int) int {
	n := len(p.inflight)
	e := planned
	if e < 0 || e >= n {
		start := int(p.next.Add(1)-1) % n
		e = start
		best := p.inflight[start].Load()
		for k := 1; k < n && best > 0; k++ {
			i := (start + k) % n
			if v := p.inflight[i].Load(); v < best {
				e, best = i, v
			}
		}
	}
	p.inflight[e].Add(1)
	return e
}

// Release ends the request in flight at endpoint e.
func (p *Picker) Release(e int) { p.inflight[e].Add(-1) }

// InFlight returns the requests in flight at endpoint e.
func (p *Picker) InFlight(e int) int64 { return p.inflight[e].Load() }
