package mockserver

import (
	"fmt"
	"math"
	"time"
)

// validJitter checks a relative spread: a share in [0, 1].
func validJitter(name string, j float64) error {
	if !(j >= 0 && j <= 1) || math.IsNaN(j) {
		return fmt.Errorf("%s %g: want a relative spread in [0, 1]", name, j)
	}
	return nil
}

// jitter returns base × a factor drawn uniformly from [1 − spread,
// 1 + spread] on the stream of (seed, id): the mean is base.
func jitter(base time.Duration, spread float64, seed uint64, id int64, stream uint64) time.Duration {
	if spread <= 0 || base <= 0 {
		return base
	}
	f := 1 + spread*(2*uniform(seed, id, stream)-1)
	return time.Duration(float64(base) * f)
}

// tokenDue returns when output token k of request id is due, token 0 being
// due at first: first + k·ITL, each gap spread by ITLJitter. Without
// jitter it is exact; with it, the gaps 1..k are summed (k is bounded by
// the request's output tokens).
func (s *Server) tokenDue(first time.Time, id int64, k int) time.Time {
	if k <= 0 {
		return first
	}
	if s.cfg.ITLJitter <= 0 || s.cfg.ITL <= 0 {
		return first.Add(time.Duration(k) * s.cfg.ITL)
	}
	var d time.Duration
	for i := 1; i <= k; i++ {
		d += s.gap(id, i)
	}
	return first.Add(d)
}

// streamITLJitter is the first stream of the ITL jitter's draws: token k
// draws on streamITLJitter + k, clear of the other properties' streams.
const streamITLJitter = 1 << 40

// gap is the time between output tokens k−1 and k of request id.
func (s *Server) gap(id int64, k int) time.Duration {
	return jitter(s.cfg.ITL, s.cfg.ITLJitter, s.cfg.Seed, id, streamITLJitter+uint64(k))
}
