package metrics

// The load-control sections of the summary (README "Ramps and stages",
// "Shared prefixes", "Length mixtures"). Each describes the whole schedule
// (before sharding), so every shard of a run writes the same and a merge
// copies it.
const (
	// KeyLengthMix is the --lengths mixture and how the schedule achieved
	// it ([]LengthMixEntry).
	KeyLengthMix = "length_mix"
	// KeySharedPrefix is --prefix-len's prefixes (SharedPrefixInfo).
	KeySharedPrefix = "shared_prefix"
	// KeyTargetRate is the target profile of --stages or a ramp
	// (TargetRate).
	KeyTargetRate = "target_rate"
)

// TargetRate is the run's target over time, as k6 stages: from the
// previous stage's target (0 before the first) to Target over DurationS.
type TargetRate struct {
	// Unit is "req/s" (Poisson mode) or "x time scale" (replay and
	// parametric mode: a multiplier of the workload's speed).
	Unit string `json:"unit"`
	// Source is the flag it comes from: "--stages" or "--ramp-up-strategy
	// linear|exponential".
	Source string        `json:"source"`
	Stages []TargetStage `json:"stages"`
	// Expected is ∫λ over the profile: the expected number of requests
	// (Poisson) or the seconds of workload covered (replay, parametric).
	Expected float64 `json:"expected"`
}

// TargetStage is one stage of a TargetRate; Exponential marks a stage
// along which the rate grows (or falls) exponentially (vLLM's exponential
// ramp).
type TargetStage struct {
	DurationS   float64 `json:"duration_s"`
	Target      float64 `json:"target"`
	Exponential bool    `json:"exponential,omitempty"`
}

// LengthMixEntry is one component of a --lengths mixture: its lengths, its
// target share of the requests, and the requests the schedule drew from it.
type LengthMixEntry struct {
	Input        int     `json:"input"`
	Output       int     `json:"output"`
	InputJitter  float64 `json:"input_jitter,omitempty"`
	OutputJitter float64 `json:"output_jitter,omitempty"`
	Weight       float64 `json:"weight"`
	TargetShare  float64 `json:"target_share"`
	Scheduled    int64   `json:"scheduled"`
	Share        float64 `json:"share"`
}

// SharedPrefixInfo describes --prefix-len's prefixes over the schedule.
type SharedPrefixInfo struct {
	PrefixLen   int    `json:"prefix_len"`
	NumPrefixes int    `json:"num_prefixes"`
	Dist        string `json:"prefix_dist"`
	// Requests got a shared prefix (requests with a trace's prefix blocks
	// do not); Truncated of them were shorter than PrefixLen and got the
	// prefix cut to their length; Used is how many distinct prefixes were
	// used.
	Requests  int64 `json:"requests"`
	Truncated int64 `json:"truncated"`
	Used      int   `json:"prefixes_used"`
	// ReusedTokens are the prompt tokens a prefix cache can serve: for each
	// request after its prefix's first use, the part of its prefix already
	// sent before. ExpectedCachedShare is their share of the input tokens
	// (a block-based cache serves it to within a block per request).
	ReusedTokens        int64   `json:"reused_prefix_tokens"`
	InputTokens         int64   `json:"input_tokens"`
	ExpectedCachedShare float64 `json:"expected_cached_share"`
}
