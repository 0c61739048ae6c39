package sweep

import (
	"fmt"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Thresholds of the diagnosis (docs/CAPACITY.md).
const (
	// KVFull is the KV-cache usage at which a server counts as full.
	KVFull = 0.95
	// RunningPinned is the share of its peak the mean running count must
	// keep for running to count as held at its ceiling.
	RunningPinned = 0.5
	// PrefillTTFTGrowth and PrefillTPOTGrowth: TTFT grew at least this
	// much from the lowest step while TPOT grew less than that.
	PrefillTTFTGrowth = 2.0
	PrefillTPOTGrowth = 1.5
)

// Diagnosis is what limited the server, read from its own metrics at the
// lowest failing step.
type Diagnosis struct {
	// Kind is concurrency, memory, prefill, other, unknown (no server
	// metrics) or not-reached (no step failed).
	Kind string `json:"kind"`
	// Step is the step the diagnosis reads (0: none).
	Step int `json:"step,omitempty"`
	// Detail gives the figures behind it.
	Detail string `json:"detail"`
}

// diagnose reads the limit from the lowest failing step's server metrics,
// in this order:
//
//   - memory: KV-cache usage reached KVFull, or the server preempted
//     requests;
//   - concurrency: requests waited while the running count sat at its
//     ceiling (the highest of every step, and its mean at least
//     RunningPinned of it): --max-num-seqs or its like;
//   - prefill: nothing waited, yet TTFT p50 grew PrefillTTFTGrowth-fold
//     from the lowest step while TPOT p50 grew less than PrefillTPOTGrowth:
//     prompts take longer to process, not tokens to generate;
//   - other: none of these (network, client, or another limit).
func diagnose(r *Result) *Diagnosis {
	var fail, base *Step
	ceiling := 0.0
	for i := range r.Steps {
		st := &r.Steps[i]
		if sv := st.Figures.Server; sv != nil {
			ceiling = math.Max(ceiling, sv.RunningMax)
		}
		if st.Verdict == Fail && (fail == nil || st.Value < fail.Value) {
			fail = st
		}
		if st.Verdict == Pass && (base == nil || st.Value < base.Value) {
			base = st
		}
	}
	if fail == nil {
		return &Diagnosis{Kind: "not-reached", Detail: "no step failed"}
	}
	sv := fail.Figures.Server
	if sv == nil {
		return &Diagnosis{Kind: "unknown", Step: fail.Index, Detail: "the server's metrics were not read at that step (--scrape-server-metrics, --server-metrics-url)"}
	}
	d := diagnoseStep(fail, base, sv, ceiling)
	if e := fail.Figures.ServerEndpoint; e != "" {
		d.Detail = "endpoint " + e + ": " + d.Detail
	}
	return d
}

// diagnoseStep reads the limit from the failing step's server figures sv
// (base: the lowest passing step, or nil; ceiling: the most requests
// running at any step).
func diagnoseStep(fail, base *Step, sv *metrics.ServerStats, ceiling float64) *Diagnosis {
	if sv.KVCacheMax >= KVFull || sv.Preemptions > 0 {
		return &Diagnosis{Kind: "memory", Step: fail.Index,
			Detail: fmt.Sprintf("KV cache usage max %.0f %%, %.0f preemptions", 100*sv.KVCacheMax, sv.Preemptions)}
	}
	if sv.WaitingMax > 0 && sv.RunningMax > 0 && sv.RunningMax >= ceiling && sv.RunningMean >= RunningPinned*sv.RunningMax {
		return &Diagnosis{Kind: "concurrency", Step: fail.Index,
			Detail: fmt.Sprintf("waiting > 0 while running = %.0f", sv.RunningMax)}
	}
	if base != nil && sv.WaitingMax == 0 {
		b, f := &base.Figures, &fail.Figures
		if b.TTFT.P50 > 0 && b.TPOT.P50 > 0 {
			tt, tp := f.TTFT.P50/b.TTFT.P50, f.TPOT.P50/b.TPOT.P50
			if tt >= PrefillTTFTGrowth && tp < PrefillTPOTGrowth {
				return &Diagnosis{Kind: "prefill", Step: fail.Index,
					Detail: fmt.Sprintf("TTFT p50 ×%.1f from step %d while TPOT p50 ×%.1f, nothing waiting", tt, base.Index, tp)}
			}
		}
	}
	return &Diagnosis{Kind: "other", Step: fail.Index,
		Detail: fmt.Sprintf("no queue at a running ceiling (waiting max %.0f, running max %.0f of %.0f), KV cache max %.0f %%, no preemption, TTFT not growing apart from TPOT: look at the network or the server's other limits",
			sv.WaitingMax, sv.RunningMax, ceiling, 100*sv.KVCacheMax)}
}
