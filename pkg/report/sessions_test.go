package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestRecordSessionFields: a session's turn writes session, turn and
// history_tokens, which read back; a request outside a session writes
// none of them.
func TestRecordSessionFields(t *testing.T) {
	var s metrics.Sample
	r := record.Request{Index: 4, Session: 4, Turn: 3, HistoryTokens: 310, PromptTokens: 350, CachedTokens: 304, Sent: 1e6, End: 2e6}
	s.From(&r, metrics.SLO{})
	b := AppendRecord(nil, &s)
	if !bytes.HasSuffix(b, []byte(`,"session":4,"turn":3,"history_tokens":310}`+"\n")) {
		t.Errorf("record %s", b)
	}
	back := parseBack(t, b)
	if back.Session != 4 || back.Turn != 3 || back.HistoryTokens != 310 || back.CachedTokens != 304 {
		t.Errorf("read back %+v", back)
	}
	r.Session, r.Turn, r.HistoryTokens = 0, 0, 0
	s.From(&r, metrics.SLO{})
	if b := AppendRecord(nil, &s); bytes.Contains(b, []byte("session")) || bytes.Contains(b, []byte("turn")) {
		t.Errorf("a request outside a session writes session fields: %s", b)
	}
}

// TestWriteSessions: the table prints how sessions ended and one line per
// turn with its cache share; a run without sessions prints nothing.
func TestWriteSessions(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSessions(&buf, &metrics.Summary{}); err != nil || buf.Len() != 0 {
		t.Fatalf("no sessions: %q, %v", buf.String(), err)
	}
	share := 0.8
	sum := &metrics.Summary{
		Sessions: &metrics.SessionsSummary{Started: 3, Completed: 2, EndedLength: 1, TurnsSent: 8, PlannedTurns: 9},
		PerTurn:  []metrics.TurnSummary{{Turn: 1, Count: 3, PromptTokensMean: 200}, {Turn: 2, Count: 3, PromptTokensMean: 280, CacheHitShare: &share}},
	}
	if err := WriteSessions(&buf, sum); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"Sessions started:                        3", "Ended at the context length:             1",
		"Turns sent / planned:                    8 / 9", "80.0%", "   2       3      0      280.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestHTMLTurnPlots: a run with sessions gets the per-turn plots (TTFT,
// prompt size and cache hits against the turn); one without has none.
func TestHTMLTurnPlots(t *testing.T) {
	cached := 200.0
	with := &metrics.Summary{PerTurn: []metrics.TurnSummary{
		{Turn: 1, Count: 4, PromptTokensMean: 200, TTFTP50: 10, TTFTP99: 12},
		{Turn: 2, Count: 4, PromptTokensMean: 280, HistoryTokensMean: 230, CachedTokensMean: &cached, TTFTP50: 11, TTFTP99: 14},
	}}
	for _, c := range []struct {
		sum  *metrics.Summary
		want bool
	}{{with, true}, {&metrics.Summary{}, false}} {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, &Data{Summary: c.sum}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{PlotTurnTTFT, PlotTurnPrompt} {
			if got := strings.Contains(buf.String(), `data-plot="`+name+`"`); got != c.want {
				t.Errorf("plot %s present %v, want %v", name, got, c.want)
			}
		}
	}
}
