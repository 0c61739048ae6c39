package main

import (
	"strconv"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// TestLengthFlagsAreRangeChecked: every length flag is a whole number of
// tokens up to arrival.MaxLength, as --lengths and trace rows are; a
// larger one (which overflowed to negative token counts, built a prompt of
// gigabytes or was sent as max_tokens) is a usage error naming the flag,
// before anything is read or sent.
func TestLengthFlagsAreRangeChecked(t *testing.T) {
	huge := "9223372036854775707"
	above := strconv.Itoa(arrival.MaxLength + 1)
	for _, tc := range []struct {
		flag string
		vals []string
	}{
		{"--random-input-len", []string{huge, above, "0"}},
		{"--random-output-len", []string{"9223372036854775807", above, "-1"}},
		{"--sharegpt-output-len", []string{"9223372036854775807", "-5"}},
		{"--sharegpt-context-len", []string{huge, "-1"}},
		{"--max-model-len", []string{huge, "-1"}},
		{"--prefix-len", []string{huge, "-1"}},
		{"--min-output-len", []string{huge, "0"}},
		{"--tokens-per-image", []string{huge}},
		{"--turn-input-len", []string{huge, "uniform:1:" + huge, "lognormal:" + above + ":1"}},
	} {
		for _, v := range tc.vals {
			t.Run(tc.flag+"="+v, func(t *testing.T) {
				wantUsage(t, []string{"--dry-run", "--seed", "1", "--num-prompts", "2", "--turns", "2", tc.flag, v}, tc.flag)
			})
		}
	}
	// The largest accepted lengths still make a schedule.
	max := strconv.Itoa(arrival.MaxLength)
	mustRun(t, "--dry-run", "--seed", "1", "--num-prompts", "2", "--max-model-len", max,
		"--random-input-len", strconv.Itoa(arrival.MaxLength/2), "--random-output-len", strconv.Itoa(arrival.MaxLength/2))
}
