package options

import (
	"errors"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

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
