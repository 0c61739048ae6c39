// Package cancel decides, ahead of the run and from the seed, which requests
// the client gives up on (--cancel-share) and how long after its first send
// each one is cut (--cancel-after).
package cancel

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/session"
)

// stream is the random stream of the decisions, apart from every stream
// the schedule and the session plans draw from: turning cancellation on
// moves no arrival and changes no size or prompt.
const stream uint64 = 0xca2ce11ed

// MinCut is the shortest cut: a drawn delay below it (exp:MEAN can draw
// 0) is raised to it, so a cancelled request is always sent.
const MinCut = time.Microsecond

// Policy is the run's cancellation: each request is cancelled with
// probability Share, independently, and a cancelled request is cut After
// (a drawn delay) from its first send. A nil Policy cancels nothing.
type Policy struct {
	Share float64
	After session.Dist
	Seed  uint64
}

// Parse returns the policy of --cancel-share share and --cancel-after
// after for a run of seed: nil when share is 0 and after empty (off).
// Every problem names its flag and the part that is wrong.
func Parse(share float64, after string, seed uint64) (*Policy, error) {
	if share == 0 && after == "" {
		return nil, nil
	}
	var errs []error
	switch {
	case share == 0:
		errs = append(errs, fmt.Errorf("--cancel-after %s needs --cancel-share F (the share of requests to cancel, 0 < F ≤ 1)", after))
	case !(share > 0 && share <= 1):
		errs = append(errs, fmt.Errorf("--cancel-share %s: want a share 0 < F ≤ 1", strconv.FormatFloat(share, 'g', -1, 64)))
	}
	p := &Policy{Share: share, Seed: seed}
	if after == "" {
		errs = append(errs, errors.New("--cancel-share needs --cancel-after DIST (when to cut: 500ms, uniform:100ms:2s, exp:MEAN or lognormal:MEDIAN:SIGMA)"))
	} else {
		d, err := ParseAfter(after)
		if err != nil {
			errs = append(errs, err)
		}
		p.After = d
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// ParseAfter parses --cancel-after: a duration (500ms, or seconds),
// uniform:A:B, exp:MEAN or lognormal:MEDIAN:SIGMA, every delay > 0.
func ParseAfter(s string) (session.Dist, error) {
	d, err := session.ParseDist(s, session.Duration)
	if err == nil {
		switch {
		case d.Kind == "const" && d.A <= 0:
			err = fmt.Errorf("%s: a request is cut after a delay > 0", d)
		case d.Kind == "uniform" && d.A <= 0:
			err = fmt.Errorf("uniform:A:B needs A > 0 (a request is cut after a delay > 0)")
		}
	}
	if err != nil {
		return d, fmt.Errorf("--cancel-after %q: %w", s, err)
	}
	return d, nil
}

// On reports whether p cancels requests.
func (p *Policy) On() bool { return p != nil && p.Share > 0 }

// String describes p in one line.
func (p *Policy) String() string {
	if !p.On() {
		return "off"
	}
	return fmt.Sprintf("%.4g of the requests cut %s after their first send (mean %s)", p.Share, p.After, arrival.Seconds(p.After.Mean()))
}

// Cutter draws decisions without allocating; it is not safe for
// concurrent use (each goroutine takes its own from NewCutter).
type Cutter struct {
	p   *Policy
	src *rand.PCG
	r   *rand.Rand
}

// NewCutter returns a Cutter of p (p must be on).
func (p *Policy) NewCutter() *Cutter {
	src := rand.NewPCG(0, 0)
	return &Cutter{p: p, src: src, r: rand.New(src)}
}

// Cut returns how long after its first send the request of (index, turn)
// is cut, 0 when it is not cancelled. turn is 1 for an arrival of the
// schedule (a session's first turn) and k for a session's k-th turn. The
// answer depends on the seed, index and turn only: every copy of a
// sharded run, and every order of asking, gets the same.
func (c *Cutter) Cut(index int64, turn int) time.Duration {
	c.src.Seed(c.p.Seed^bits.RotateLeft64(stream, 23), uint64(index)^uint64(turn)<<48^stream)
	if c.r.Float64() >= c.p.Share {
		return 0
	}
	v := c.p.After.Draw(c.r)
	if math.IsNaN(v) {
		return MinCut
	}
	return max(arrival.Seconds(v), MinCut)
}

// Cut is NewCutter().Cut, for one decision.
func (p *Policy) Cut(index int64, turn int) time.Duration {
	if !p.On() {
		return 0
	}
	return p.NewCutter().Cut(index, turn)
}

// Apply returns s with every arrival's CancelAfter decided (p nil or off:
// s unchanged).
func (p *Policy) Apply(s arrival.Schedule) arrival.Schedule {
	if !p.On() {
		return s
	}
	return func(yield func(arrival.Arrival) bool) {
		c := p.NewCutter()
		for a := range s {
			a.CancelAfter = c.Cut(a.Index, 1)
			if !yield(a) {
				return
			}
		}
	}
}
