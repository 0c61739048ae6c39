package options

import (
	"errors"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// TokenLimit is the most tokens (input plus output) one request may have,
// and where that limit comes from: --max-model-len, else the served
// model's max_model_len (SetServerLimit), else replay.DefaultTokenLimit.
// The schedule is built with it, so a request above it is never built:
// trace rows are left out and counted, length flags are a usage error.
func (o *Options) TokenLimit() (int, string) {
	switch {
	case o.MaxModelLen > 0:
		return o.MaxModelLen, "--max-model-len"
	case o.serverLimit > 0:
		return o.serverLimit, o.serverLimitFrom
	}
	return replay.DefaultTokenLimit, "the built-in cap"
}

// SetServerLimit takes the served model's max_model_len from the server's
// model list (client.Pool.Check) as the token limit, when --max-model-len
// is not given: that of --model, else (no --model, or one the list does
// not name) the smallest listed, which holds for every model. It says
// which limit holds.
func (o *Options) SetServerLimit(models []client.ModelInfo, log Logger) {
	if o.MaxModelLen == 0 {
		var from string
		exact := false // the limit is --model's own
		for _, m := range models {
			if m.MaxModelLen == 0 {
				continue
			}
			if m.ID == o.Model {
				// Several endpoints list --model: the smallest limit holds.
				if !exact || m.MaxModelLen < o.serverLimit {
					o.serverLimit, from = m.MaxModelLen, m.ID
				}
				exact = true
				continue
			}
			if exact {
				continue
			}
			if o.serverLimit == 0 || m.MaxModelLen < o.serverLimit || (m.MaxModelLen == o.serverLimit && m.ID < from) {
				o.serverLimit, from = m.MaxModelLen, m.ID
			}
		}
		if o.serverLimit > 0 {
			o.serverLimitFrom = fmt.Sprintf("the server's max_model_len for %s", from)
		}
	}
	n, how := o.TokenLimit()
	log.Infof("token limit: %d tokens a request (input + output; %s)", n, how)
}

// validateLengths range-checks every length flag as --lengths and trace
// rows are: a whole number of tokens no larger than arrival.MaxLength, so
// a sum of lengths never overflows and no request is built that no server
// could take. lo is the flag's least value (0 where 0 means "unset").
// (--prefix-len is checked with the load options, --lengths as it is
// parsed, --turn-input-len by session.ParseDist.)
func (o *Options) validateLengths() error {
	var errs []error
	for _, f := range []struct {
		name  string
		v, lo int
		zero  string
	}{
		{"--random-input-len", o.RandomInputLen, 1, ""},
		{"--random-output-len", o.RandomOutputLen, 1, ""},
		{"--sharegpt-output-len", o.SharegptOutputLen, 0, " (0: the dataset's own)"},
		{"--sharegpt-context-len", o.SharegptContextLen, 0, " (0: no bound)"},
		{"--max-model-len", o.MaxModelLen, 0, " (0: the server's)"},
		{"--min-output-len", o.Replay.MinOutputLen, 1, ""},
		{"--tokens-per-image", o.Replay.TokensPerImage, 0, " (0: derived from --image-size)"},
	} {
		if f.v < f.lo || f.v > arrival.MaxLength {
			errs = append(errs, fmt.Errorf("%s %d: want a number of tokens from %d to %d%s", f.name, f.v, f.lo, arrival.MaxLength, f.zero))
		}
	}
	return errors.Join(errs...)
}
