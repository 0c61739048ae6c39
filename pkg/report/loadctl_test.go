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

// TestTableSendRateShortfall: a run whose send rate fell short of the
// schedule's says so in the table's first lines — the rate scheduled, the
// rate achieved and by how much it fell short — before any figure of the
// lighter load it measured; a run that kept its schedule prints neither.
func TestTableSendRateShortfall(t *testing.T) {
	s := &metrics.Summary{Backend: "vllm", Mode: "poisson", RequestRate: metrics.Rate(60000), Saturation: &metrics.Saturation{}}
	var plain bytes.Buffer
	if err := WriteTable(&plain, s); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "send rate") {
		t.Errorf("a run that kept its schedule prints a send rate:\n%s", plain.String())
	}
	s.Saturation = &metrics.Saturation{Saturated: true, SendRate: &metrics.SendRate{Scheduled: 60408.54, Achieved: 11860.2, Shortfall: 0.8037, LastLate: 2.03}}
	var b bytes.Buffer
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if len(lines) < 8 || !strings.HasPrefix(lines[5], "Scheduled send rate (req/s):") || !strings.Contains(lines[5], "60408.54") ||
		!strings.HasPrefix(lines[6], "Achieved send rate (req/s):") ||
		!strings.Contains(lines[6], "11860.20 (FELL SHORT by 80.4 %: the last request was sent 2.03 s late") {
		t.Errorf("the first lines do not say the rate fell short:\n%s", strings.Join(lines[:min(len(lines), 9)], "\n"))
	}
}
