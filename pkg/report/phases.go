package report

import (
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// writeHTTPPhases prints the requests' HTTP phases (--http-phases): how
// many went out on a new connection, and the mean and p99 of connect, TLS,
// write and wait to the first byte, so a TTFT made by connection set-up
// shows beside one made by the server.
func writeHTTPPhases(t *table, s *metrics.Summary) {
	p := s.HTTPPhases
	if p == nil {
		return
	}
	t.line("%s", center("HTTP Phases", '-', 50))
	t.row("Requests on a new connection:", p.NewConnections)
	t.row("Requests on a reused connection:", p.Reused)
	for _, ph := range httpPhaseRows(p) {
		t.row(fmt.Sprintf("Mean / P99 %s (ms):", ph.name), fmt.Sprintf("%.2f / %.2f", ph.st.Mean, ph.st.P99))
	}
}

// httpPhaseRow is one phase that was timed.
type httpPhaseRow struct {
	name string
	st   *metrics.PhaseStats
}

// httpPhaseRows lists the phases timed, in their order.
func httpPhaseRows(p *metrics.HTTPPhasesSummary) []httpPhaseRow {
	var rows []httpPhaseRow
	for _, r := range []httpPhaseRow{{"connect", p.ConnectMS}, {"TLS handshake", p.TLSMS}, {"request write", p.WriteMS}, {"wait to first byte", p.WaitMS}} {
		if r.st != nil {
			rows = append(rows, r)
		}
	}
	return rows
}
