package runner

import (
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestBehindWhy: the "fell behind" warning blames the client's CPU only
// when the self-check found it saturated, or could not tell (its CPU not
// measured); a self-check that measured it below the limit blames the
// machine.
func TestBehindWhy(t *testing.T) {
	cpu := 0.2
	for _, tc := range []struct {
		name string
		sum  metrics.Summary
		cpu  bool // the client's CPU blamed
	}{
		{"saturated", metrics.Summary{Saturation: &metrics.Saturation{Saturated: true}, ClientCPU: &cpu}, true},
		{"kept up", metrics.Summary{Saturation: &metrics.Saturation{}, ClientCPU: &cpu}, false},
		{"not measured", metrics.Summary{Saturation: &metrics.Saturation{}}, true},
		{"no self-check", metrics.Summary{ClientCPU: &cpu}, true},
	} {
		if got := strings.Contains(behindWhy(&tc.sum), "short of CPU"); got != tc.cpu {
			t.Errorf("%s: %q, want the client's CPU blamed: %v", tc.name, behindWhy(&tc.sum), tc.cpu)
		}
	}
}
