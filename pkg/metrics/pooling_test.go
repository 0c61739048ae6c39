package metrics

import (
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestPoolingSampleHasNoTokenFigures: a pooling batch's Sample has E2E and
// lag but no TTFT, TPOT, ITL or TTFO — whatever its first-token field says
// — and a text request's keeps them; the Pooling part counts the
// batches, finishes into the summary and merges another copy exactly.
func TestPoolingSampleHasNoTokenFigures(t *testing.T) {
	res := record.Request{Sent: time.Millisecond, FirstToken: 3 * time.Millisecond, End: 9 * time.Millisecond, InputLen: 40,
		PromptTokens: 40, CachedTokens: -1, Measure: api.MeasureVectors, Inputs: 4, Returned: 4, Dims: 64,
		TokenTimes: []time.Duration{3 * time.Millisecond, 5 * time.Millisecond}, CompletionTokens: 2}
	var s Sample
	s.From(&res, NoSLO)
	if !s.HasE2E || s.E2E != 8*time.Millisecond || s.HasTTFT || s.HasTPOT || s.ITLTimes != nil || s.HasTTFO || s.HasTTFTPer1k {
		t.Errorf("pooling sample: E2E %v %v, TTFT %v, TPOT %v, ITL %v, TTFO %v", s.HasE2E, s.E2E, s.HasTTFT, s.HasTPOT, s.ITLTimes, s.HasTTFO)
	}
	text := res
	text.Measure = api.MeasureTokens
	s.From(&text, NoSLO)
	if !s.HasTTFT || !s.HasTPOT || s.ITLTimes == nil {
		t.Errorf("text sample: TTFT %v TPOT %v ITL %v", s.HasTTFT, s.HasTPOT, s.ITLTimes)
	}
	noFirst := text
	noFirst.FirstToken, noFirst.TokenTimes = 0, nil // a record read back without ttft_ms
	s.From(&noFirst, NoSLO)
	if s.HasTTFT {
		t.Errorf("a request without a first token has a TTFT of %v", s.TTFT)
	}

	a, b := NewPooling(), NewPooling()
	for i, p := range []*Pooling{a, a, b} {
		r := res
		r.Dims = []int{64, 64, 96}[i] // a's 64, b's 96
		s.From(&r, NoSLO)
		p.Add(&s)
	}
	failed := res
	failed.ErrorClass = record.ErrProtocol
	s.From(&failed, NoSLO)
	a.Add(&s)
	var one, whole Summary
	a.Finish(&one, 2*time.Second)
	if p := one.Pooling; p == nil || p.Measure != "vectors" || p.Inputs != 8 || p.Returned != 8 || p.InputsPerS != 4 || p.BatchSize != 4 || p.VectorDims != 64 {
		t.Errorf("finished %+v", p)
	}
	mergeStates(t, a, b)
	a.Finish(&whole, 3*time.Second)
	if p := whole.Pooling; p.Inputs != 12 || p.Returned != 12 || p.VectorDims != 0 || p.MinDims != 64 || p.MaxDims != 96 {
		t.Errorf("merged %+v", p)
	}
	scores := NewPooling()
	r := res
	r.Measure = api.MeasureScores
	s.From(&r, NoSLO)
	scores.Add(&s)
	raw, _ := scores.State()
	if err := a.MergeState(raw); err == nil {
		t.Error("a copy of scores merged into one of vectors")
	}
	var none Summary
	NewPooling().Finish(&none, time.Second)
	if st, _ := NewPooling().State(); none.Pooling != nil || st != nil {
		t.Error("a run without batches has a pooling section or state")
	}
}
