package runner

import (
	"fmt"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// tokenLimit is the most tokens (input plus output) one request may have,
// and where that limit comes from: --max-model-len, else the served
// model's max_model_len (serverLimit), else replay.DefaultTokenLimit. The
// schedule is built with it, so a request above it is never built: trace
// rows are left out and counted, length flags are a usage error.
func (o *Options) tokenLimit() (int, string) {
	switch {
	case o.MaxModelLen > 0:
		return o.MaxModelLen, "--max-model-len"
	case o.serverLimit > 0:
		return o.serverLimit, o.serverLimitFrom
	}
	return replay.DefaultTokenLimit, "the built-in cap"
}

// setServerLimit takes the served model's max_model_len from the server's
// model list as the token limit, when --max-model-len is not given: that
// of --model, else (no --model, or one the list does not name) the
// smallest listed, which holds for every model. It says which limit holds.
func setServerLimit(o *Options, models []client.ModelInfo, log *logger) {
	if o.MaxModelLen == 0 {
		var from string
		for _, m := range models {
			if m.MaxModelLen == 0 {
				continue
			}
			if m.ID == o.Model {
				o.serverLimit, from = m.MaxModelLen, m.ID
				break
			}
			if o.serverLimit == 0 || m.MaxModelLen < o.serverLimit || (m.MaxModelLen == o.serverLimit && m.ID < from) {
				o.serverLimit, from = m.MaxModelLen, m.ID
			}
		}
		if o.serverLimit > 0 {
			o.serverLimitFrom = fmt.Sprintf("the server's max_model_len for %s", from)
		}
	}
	n, how := o.tokenLimit()
	log.Infof("token limit: %d tokens a request (input + output; %s)", n, how)
}

// checkUniform rejects --random-input-len and --random-output-len whose
// largest request exceeds the token limit.
func checkUniform(o *Options, u arrival.UniformLengths) error {
	limit, from := o.tokenLimit()
	in, out := u.Max()
	if int64(in)+int64(out) <= int64(limit) {
		return nil
	}
	spread := ""
	if u.RangeRatio > 0 {
		spread = fmt.Sprintf(" (with --random-range-ratio %g: up to %d + %d)", u.RangeRatio, in, out)
	}
	return usage(fmt.Errorf("--random-input-len %d + --random-output-len %d%s exceed the token limit %d (%s): lower them, or set --max-model-len",
		u.Input, u.Output, spread, limit, from))
}

// limitPairs leaves out the (input, output) pairs of name above the token
// limit, saying how many; none left is a usage error.
func limitPairs(o *Options, log *logger, name string, pairs [][2]int) ([][2]int, error) {
	limit, from := o.tokenLimit()
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
			return nil, usage(fmt.Errorf("%s: every one of its %d requests is above the token limit %d (%s)", name, len(pairs), limit, from))
		}
		log.Warnf("%s: left out %d of %d requests above the token limit %d (%s; the largest has %d tokens)", name, dropped, len(pairs), limit, from, largest)
	}
	return kept, nil
}
