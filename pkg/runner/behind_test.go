package runner

import (
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestAnySaturated: the "fell behind" warning blames the client's CPU
// only when the self-check found it saturated, or could not tell (no
// window's CPU measured); windows that measured it below the limit blame
// the machine.
func TestAnySaturated(t *testing.T) {
	for _, tc := range []struct {
		name string
		ws   []metrics.WindowStats
		want bool
	}{
		{"saturated", []metrics.WindowStats{{ClientCPU: 0.2}, {ClientCPU: 0.95, Saturated: true}}, true},
		{"kept up", []metrics.WindowStats{{ClientCPU: 0.2}, {ClientCPU: -1}}, false},
		{"not measured", []metrics.WindowStats{{ClientCPU: -1}}, true},
		{"no window", nil, true},
	} {
		if got := anySaturated(tc.ws); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
