package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/editdist"
)

// TestUnknownFlagSuggestsTheNearest: every command names its own flag
// nearest to a mistyped one, and exits 2.
func TestUnknownFlagSuggestsTheNearest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--request-rat", "5"}, "unknown flag: --request-rat (did you mean --request-rate?)"},
		{[]string{"run", "--num-promts", "5"}, "unknown flag: --num-promts (did you mean --num-prompts?)"},
		{[]string{"--request-rate=5", "--sed=1"}, "unknown flag: --sed (did you mean --seed?)"},
		{[]string{"-request-rate", "5"}, "(did you mean --request-rate?)"},
		{[]string{"mock-server", "--ttft", "5"}, "unknown flag: --ttft (did you mean --ttft-ms?)"},
		{[]string{"fit", "--metod", "mle", "x.csv"}, "unknown flag: --metod (did you mean --method?)"},
		{[]string{"report", "--sumary", "s.json", "r.jsonl"}, "unknown flag: --sumary (did you mean --summary?)"},
		{[]string{"merge", "--stict", "a.json"}, "unknown flag: --stict (did you mean --strict?)"},
		{[]string{"analyze", "--polcy", "lru", "t.csv"}, "unknown flag: --polcy (did you mean --policy?)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			wantUsage(t, tc.args, tc.says)
		})
	}
	t.Run("nothing near", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), []string{"--zzzzzzzz"}, &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "unknown flag: --zzzzzzzz") || strings.Contains(errb.String(), "did you mean") {
			t.Errorf("exit %d:\n%s", code, errb.String())
		}
	})
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"seed", "seed", 0},
		{"request-rat", "request-rate", 1}, {"sed", "seed", 1}, {"kitten", "sitting", 3}, {"polcy", "policy", 1},
	} {
		if got := editdist.Distance(tc.a, tc.b); got != tc.d {
			t.Errorf("editdist.Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
		if got := editdist.Distance(tc.b, tc.a); got != tc.d {
			t.Errorf("editdist.Distance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.d)
		}
	}
}
