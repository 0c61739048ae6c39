package metrics

// SpecDecodeStats is what a server's speculative-decoding counters said
// over a period (vLLM's vllm:spec_decode_*): drafts proposed, draft tokens
// proposed and accepted, and the figures made of them. A server without
// speculative decoding has no such counters, and a period without them has
// no SpecDecodeStats.
type SpecDecodeStats struct {
	// Drafts counts the draft proposals (one per request per step),
	// DraftTokens the tokens they proposed, AcceptedTokens those the
	// target model accepted.
	Drafts         float64 `json:"drafts"`
	DraftTokens    float64 `json:"draft_tokens"`
	AcceptedTokens float64 `json:"accepted_tokens"`
	// AcceptanceRate is AcceptedTokens / DraftTokens (0 without drafts).
	AcceptanceRate float64 `json:"acceptance_rate"`
	// MeanAcceptanceLength is 1 + AcceptedTokens / Drafts: the tokens a
	// step makes per request, the target model's own included (0 without
	// drafts).
	MeanAcceptanceLength float64 `json:"mean_acceptance_length"`
	// PerPosition is the share of drafts whose token at each position
	// (0, 1, …) was accepted (absent when the server does not export the
	// per-position counter).
	PerPosition []float64 `json:"acceptance_rate_per_position,omitempty"`
}

// NewSpecDecodeStats makes the figures of a period from its counters'
// increases: drafts, draft tokens, accepted tokens and the accepted tokens
// by position (nil: not exported).
func NewSpecDecodeStats(drafts, draftTokens, accepted float64, perPos []float64) *SpecDecodeStats {
	st := &SpecDecodeStats{Drafts: drafts, DraftTokens: draftTokens, AcceptedTokens: accepted}
	if draftTokens > 0 {
		st.AcceptanceRate = accepted / draftTokens
	}
	if drafts > 0 {
		st.MeanAcceptanceLength = 1 + accepted/drafts
		for _, a := range perPos {
			st.PerPosition = append(st.PerPosition, a/drafts)
		}
	}
	return st
}
