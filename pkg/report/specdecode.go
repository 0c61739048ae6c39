package report

import (
	"fmt"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// writeSpecDecode prints the server's speculative-decoding figures over
// the run, when its /metrics had them.
func writeSpecDecode(t *table, sd *metrics.SpecDecodeStats) {
	if sd == nil {
		return
	}
	t.row("Spec decode acceptance rate (%):", 100*sd.AcceptanceRate)
	t.row("Spec decode mean acceptance length:", sd.MeanAcceptanceLength)
	t.row("Spec decode drafts / draft tokens / accepted:", fmt.Sprintf("%.0f / %.0f / %.0f", sd.Drafts, sd.DraftTokens, sd.AcceptedTokens))
	if len(sd.PerPosition) > 0 {
		t.row("Spec decode acceptance by position (%):", perPositionText(sd.PerPosition))
	}
}

// perPositionText writes acceptance shares by position as percentages.
func perPositionText(p []float64) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = fmt.Sprintf("%.1f", 100*v)
	}
	return strings.Join(parts, " ")
}
