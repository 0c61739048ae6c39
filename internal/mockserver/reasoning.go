package mockserver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Reasoning field names of a chat delta or message (--reasoning-field):
// vLLM ≥ 0.16 sends "reasoning", ≤ 0.11.0 "reasoning_content", and the
// versions between both, with the same text.
const (
	ReasoningFieldReasoning = "reasoning"
	ReasoningFieldContent   = "reasoning_content"
	ReasoningFieldBoth      = "both"
)

// ReasoningConfig makes chat completions and responses answer as a
// reasoning model served with a reasoning parser: each request's first
// tokens are reasoning tokens (streamed in delta.reasoning, paced like the
// answer: the first at the time to first token, then one every ITL), the
// rest the answer. Reasoning tokens are output tokens: they count in
// max_tokens and in usage.completion_tokens, as in vLLM. The zero value
// serves no reasoning.
type ReasoningConfig struct {
	// Tokens is how many reasoning tokens each request gets (at most its
	// output length); zero Tokens disables reasoning.
	Tokens LengthDist
	// Field is the delta and message field the reasoning is sent in (one
	// of the ReasoningField constants; "" means ReasoningFieldReasoning).
	Field string
	// NoUsageDetails leaves usage.completion_tokens_details.reasoning_tokens
	// out, as vLLM did before mid-2026 (it is sent by default, as vLLM
	// does since, with a reasoning parser).
	NoUsageDetails bool
}

// enabled reports whether requests get reasoning tokens.
func (c ReasoningConfig) enabled() bool { return c.Tokens.Max > 0 }

// Validate returns every problem of c at once.
func (c ReasoningConfig) Validate() error {
	var errs []error
	switch c.Field {
	case "", ReasoningFieldReasoning, ReasoningFieldContent, ReasoningFieldBoth:
	default:
		errs = append(errs, fmt.Errorf("reasoning field %q: want reasoning, reasoning_content or both", c.Field))
	}
	if c.Tokens.Min < 0 || c.Tokens.Max < c.Tokens.Min {
		errs = append(errs, fmt.Errorf("reasoning tokens %d..%d: want 0 ≤ min ≤ max", c.Tokens.Min, c.Tokens.Max))
	}
	if c.Tokens.Max > maxOutputTokens {
		errs = append(errs, fmt.Errorf("reasoning tokens %d: at most %d", c.Tokens.Max, maxOutputTokens))
	}
	return errors.Join(errs...)
}

// LengthDist is a number of tokens per request: Min when Min == Max, else
// uniform over [Min, Max], drawn from the server's seed and the request.
type LengthDist struct{ Min, Max int }

// ParseLengthDist parses "N" or "uniform:A:B".
func ParseLengthDist(s string) (LengthDist, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "uniform:"); ok {
		a, b, ok := strings.Cut(rest, ":")
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > maxOutputTokens {
			return LengthDist{}, fmt.Errorf("%q: want uniform:A:B with 0 ≤ A ≤ B ≤ %d", s, maxOutputTokens)
		}
		return LengthDist{lo, hi}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxOutputTokens {
		return LengthDist{}, fmt.Errorf("%q: want a number of tokens (0–%d) or uniform:A:B", s, maxOutputTokens)
	}
	return LengthDist{n, n}, nil
}

// String is the inverse of ParseLengthDist.
func (d LengthDist) String() string {
	if d.Min == d.Max {
		return strconv.Itoa(d.Min)
	}
	return "uniform:" + strconv.Itoa(d.Min) + ":" + strconv.Itoa(d.Max)
}

// TokensFor returns the reasoning tokens drawn for request number n under
// seed, before max_tokens caps them: a test's truth for the times of the
// first reasoning and answer tokens. Requests are numbered from 1 in the
// order they are accepted (past the checks of their body, model and
// length), completions, chat, responses and images alike; a chat
// response's id is chatcmpl-<n>.
func (c ReasoningConfig) TokensFor(seed uint64, n int64) int { return c.Tokens.draw(seed, n) }

// draw returns d's value for request id.
func (d LengthDist) draw(seed uint64, id int64) int {
	if d.Max <= d.Min {
		return d.Min
	}
	return d.Min + int(uniform(seed, id, streamReasoning)*float64(d.Max-d.Min+1))
}

// Streams of the per-request draws: each property of a request has its own,
// so enabling one never changes another's draws.
const (
	streamReasoning = iota + 1
	streamToolCall
	streamToolPick
	streamToolInvalid
	streamSchemaInvalid
	streamToolID
)

// uniform returns a number in [0, 1) that is a pure function of the seed,
// the request's number and the stream.
func uniform(seed uint64, id int64, stream uint64) float64 {
	return float64(mix(seed, id, stream)>>11) / (1 << 53)
}

// mix hashes (seed, id, stream) (splitmix64's finalizer).
func mix(seed uint64, id int64, stream uint64) uint64 {
	h := uint64(id)*0x9e3779b97f4a7c15 ^ seed*0xbf58476d1ce4e5b9 ^ stream*0x94d049bb133111eb
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}

// streamTTFTJitter is the stream of the TTFT jitter's draws.
const streamTTFTJitter = 0x77f7

// ttft is request id's time to its first token before prefill: TTFT, plus
// its draw of TTFTJitter.
func (s *Server) ttft(id int64) time.Duration {
	j := s.cfg.TTFTJitter
	if j <= 0 {
		return s.cfg.TTFT
	}
	d := s.cfg.TTFT + time.Duration((2*uniform(s.cfg.Seed, id, streamTTFTJitter)-1)*float64(j))
	return max(d, 0)
}
