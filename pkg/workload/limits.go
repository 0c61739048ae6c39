package workload

import (
	"fmt"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// checkUniform rejects --random-input-len and --random-output-len whose
// largest request exceeds the token limit.
func checkUniform(c *Config, u arrival.UniformLengths) error {
	limit, from := c.tokenLimit()
	in, out := u.Max()
	if int64(in)+int64(out) <= int64(limit) {
		return nil
	}
	spread := ""
	if u.RangeRatio > 0 {
		spread = fmt.Sprintf(" (with --random-range-ratio %g: up to %d + %d)", u.RangeRatio, in, out)
	}
	return (fmt.Errorf("--random-input-len %d + --random-output-len %d%s exceed the token limit %d (%s): lower them, or set --max-model-len",
		u.Input, u.Output, spread, limit, from))
}

// limitPairs leaves out the (input, output) pairs of name above the token
// limit, saying how many; none left is a usage error.
func limitPairs(c *Config, log Logger, name string, pairs [][2]int) ([][2]int, error) {
	limit, from := c.tokenLimit()
	kept := make([][2]int, 0, len(pairs))
	largest := 0
	for _, p := range pairs {
		if int64(p[0])+int64(p[1]) <= int64(limit) {
			kept = append(kept, p)
		} else {
			largest = max(largest, int(min(int64(p[0])+int64(p[1]), math.MaxInt32)))
		}
	}
	if dropped := len(pairs) - len(kept); dropped > 0 {
		if len(kept) == 0 {
			return nil, (fmt.Errorf("%s: every one of its %d requests is above the token limit %d (%s)", name, len(pairs), limit, from))
		}
		log.Warnf("%s: left out %d of %d requests above the token limit %d (%s; the largest has %d tokens)", name, dropped, len(pairs), limit, from, largest)
	}
	return kept, nil
}
