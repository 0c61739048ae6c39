package mockserver

import (
	"strconv"
	"sync"

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

// specCounters are the spec-decode counters. They change together under
// mu, and /metrics reads them together (specCollector): a scrape never
// sees a draft counted without its draft tokens.
type specCounters struct {
	mu                            sync.Mutex
	drafts, draftTokens, accepted int64
	perPos                        [MaxSpecTokens]int64
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
	var perPos [MaxSpecTokens]int64
	for made, step := 1, uint64(0); made < out; step++ {
		drafts++
		a := 0
		for a < c.K && uniform(s.cfg.Seed^0x5bec, id, step*MaxSpecTokens+uint64(a)) < c.Accept {
			perPos[a]++
			a++
		}
		accepted += int64(a)
		made += a + 1
	}
	sc := &s.spec
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.drafts += drafts
	sc.draftTokens += drafts * int64(c.K)
	sc.accepted += accepted
	for p := range perPos {
		sc.perPos[p] += perPos[p]
	}
}

// registerSpec adds vLLM's spec-decode counters to reg (with labels).
func (s *Server) registerSpec(reg *prometheus.Registry, labels prometheus.Labels) {
	k := s.cfg.SpecDecode.K
	if k <= 0 {
		return
	}
	desc := func(name, help string, variable ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, variable, labels)
	}
	reg.MustRegister(&specCollector{s: &s.spec, k: k,
		drafts:      desc("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts."),
		draftTokens: desc("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens."),
		accepted:    desc("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens."),
		perPos:      desc("vllm:spec_decode_num_accepted_tokens_per_pos_total", "Accepted tokens per draft position.", "position"),
	})
}

// specCollector writes the spec-decode counters from one reading of them.
type specCollector struct {
	s                                     *specCounters
	k                                     int
	drafts, draftTokens, accepted, perPos *prometheus.Desc
}

func (c *specCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.drafts
	ch <- c.draftTokens
	ch <- c.accepted
	ch <- c.perPos
}

func (c *specCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.mu.Lock()
	drafts, tokens, accepted, perPos := c.s.drafts, c.s.draftTokens, c.s.accepted, c.s.perPos
	c.s.mu.Unlock()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.drafts, drafts)
	counter(c.draftTokens, tokens)
	counter(c.accepted, accepted)
	for p := range c.k {
		counter(c.perPos, perPos[p], strconv.Itoa(p))
	}
}
