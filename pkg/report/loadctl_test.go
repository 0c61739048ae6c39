package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestTableLoadControl: the table names the target profile, the achieved
// length mixture against its target, and the cached prompt share against
// the shared prefixes' expectation; a run without them prints none.
func TestTableLoadControl(t *testing.T) {
	s := &metrics.Summary{Backend: "vllm", Mode: "poisson", TotalInputTokens: 1000, CachedTokens: 450}
	var plain bytes.Buffer
	if err := WriteTable(&plain, s); err != nil {
		t.Fatal(err)
	}
	s.TargetRate = &metrics.TargetRate{Unit: "req/s", Source: "--ramp-up-strategy exponential", Stages: []metrics.TargetStage{{Target: 1}, {DurationS: 30, Target: 50, Exponential: true}}}
	s.LengthMix = []metrics.LengthMixEntry{{Input: 128, Output: 64, TargetShare: 0.4, Share: 0.391}, {Input: 512, Output: 256, TargetShare: 0.6, Share: 0.609}}
	s.SharedPrefix = &metrics.SharedPrefixInfo{Requests: 90, Truncated: 7, ExpectedCachedShare: 0.46}
	var b bytes.Buffer
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Target (req/s):", "--ramp-up-strategy exponential: 0s:1,30s:50 (exp)",
		"Lengths 128,64 share (target):", "39.1% (40.0%)", "Lengths 512,256 share (target):",
		"Shared-prefix requests (truncated):", "90 (7)", "Cached prompt share (expected):", "45.0% (46.0%)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(plain.String(), "Load Control") || strings.Contains(plain.String(), "Target (") {
		t.Errorf("a run without load control prints it:\n%s", plain.String())
	}
}
