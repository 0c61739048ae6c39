package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// WriteSessions prints a run's sessions (how they ended, their lags) and
// the per-turn table: prompt size, TTFT, E2E and the prefix-cache hit share
// against the turn number. A run without sessions prints nothing.
func WriteSessions(w io.Writer, s *metrics.Summary) error {
	ss := s.Sessions
	if ss == nil {
		return nil
	}
	t := &table{w: w}
	t.title("Sessions")
	t.row("Sessions started:", ss.Started)
	t.row("Completed:", ss.Completed)
	t.row("Ended by a failed turn:", ss.EndedError)
	t.row("Ended at the context length:", ss.EndedLength)
	t.row("Ended by the stop:", ss.EndedInterrupt)
	if ss.EndedCancelled > 0 {
		t.row("Ended by a cancelled turn:", ss.EndedCancelled)
	}
	t.row("Turns sent / planned:", fmt.Sprintf("%d / %d", ss.TurnsSent, ss.PlannedTurns))
	t.row("Median session duration (s):", ss.DurationS.P50)
	t.row("P99 start lag (ms):", ss.StartLagMS.P99)
	t.row("P99 turn lag (ms):", ss.TurnLagMS.P99)
	t.row("Median think time observed (ms):", ss.ThinkMS.P50)
	if len(s.PerTurn) > 0 {
		t.line("%4s %7s %6s %10s %10s %10s %10s %10s %7s", "turn", "count", "failed",
			"prompt", "history", "P50 TTFT", "P99 TTFT", "P50 E2E", "cached")
		for _, pt := range s.PerTurn {
			cached := "n/a"
			if pt.CacheHitShare != nil {
				cached = fmt.Sprintf("%.1f%%", 100**pt.CacheHitShare)
			}
			turn := strconv.Itoa(pt.Turn)
			if pt.TurnLast > 0 { // a range of turns
				turn = fmt.Sprintf("%d–%d", pt.Turn, pt.TurnLast)
			}
			t.line("%4s %7d %6d %10.1f %10.1f %10.2f %10.2f %10.2f %7s", turn, pt.Count, pt.Failed,
				pt.PromptTokensMean, pt.HistoryTokensMean, pt.TTFTP50, pt.TTFTP99, pt.E2EP50, cached)
		}
	}
	t.line("%s", strings.Repeat("=", 50))
	t.line("(prompt and history in mean tokens; latencies in ms; cached: share of prompt tokens the server's prefix cache served)")
	return t.err
}
