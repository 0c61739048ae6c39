package mockserver

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// SpecDecodeConfig makes the mock emulate speculative decoding: each
// decode step a draft model proposes K tokens, each accepted in turn with
// probability Accept until the first rejected one (seeded by Config.Seed
// and the request's number), and vLLM's spec-decode counters count them.
// K 0: no speculative decoding, no counters.
type SpecDecodeConfig struct {
	K      int
	Accept float64
}

// MaxSpecTokens bounds SpecDecodeConfig.K.
const MaxSpecTokens = 16

// specCounters are the spec-decode counters.
type specCounters struct {
	drafts, draftTokens, accepted atomic.Int64
	perPos                        [MaxSpecTokens]atomic.Int64
}

// countSpec counts the drafts of a request of number id that generated
// out tokens: its first token comes from the prefill; every later step
// drafts K tokens and makes the accepted ones and one of its own.
func (s *Server) countSpec(id int64, out int) {
	c := s.cfg.SpecDecode
	if c.K <= 0 {
		return
	}
	var drafts, accepted int64
	for made, step := 1, uint64(0); made < out; step++ {
		drafts++
		a := 0
		for a < c.K && uniform(s.cfg.Seed^0x5bec, id, step*MaxSpecTokens+uint64(a)) < c.Accept {
			s.spec.perPos[a].Add(1)
			a++
		}
		accepted += int64(a)
		made += a + 1
	}
	s.spec.drafts.Add(drafts)
	s.spec.draftTokens.Add(drafts * int64(c.K))
	s.spec.accepted.Add(accepted)
}

// registerSpec adds vLLM's spec-decode counters to reg (with labels).
func (s *Server) registerSpec(reg *prometheus.Registry, labels prometheus.Labels) {
	k := s.cfg.SpecDecode.K
	if k <= 0 {
		return
	}
	counter := func(name, help string, l prometheus.Labels, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: l}, f))
	}
	counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", labels, func() float64 { return float64(s.spec.drafts.Load()) })
	counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", labels, func() float64 { return float64(s.spec.draftTokens.Load()) })
	counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", labels, func() float64 { return float64(s.spec.accepted.Load()) })
	for p := range k {
		l := prometheus.Labels{"position": strconv.Itoa(p)}
		for n, v := range labels {
			l[n] = v
		}
		counter("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", l, func() float64 { return float64(s.spec.perPos[p].Load()) })
	}
}
