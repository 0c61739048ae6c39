package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// WriteAgents prints a run's agentic conversations (docs/AGENTS.md): the
// cached share against the trace's infinite-cache share, completion time,
// steps, tool time and step TTFT, then a line per conversation (the first
// metrics.MaxAgentConversations). Nothing without agentic steps.
func WriteAgents(w io.Writer, s *metrics.Summary) error {
	ag := s.Agents
	if ag == nil {
		return nil
	}
	t := &table{w: w}
	t.title("Agentic conversations")
	t.row("Conversations:", ag.Conversations)
	t.row("Requests (failed):", fmt.Sprintf("%d (%d)", ag.Requests, ag.Failed))
	t.row("Subagents:", ag.Subagents)
	t.row("Cached share of prompt tokens:", fmt.Sprintf("%.1f%%", 100*ag.CachedShare))
	t.row("Trace's infinite-cache hit rate:", fmt.Sprintf("%.1f%%", 100*ag.ExpectedHitShare))
	t.row("Median completion time (s):", ag.CompletionS.P50)
	t.row("Max completion time (s):", ag.CompletionS.Max)
	t.row("Mean steps per conversation:", ag.Steps.Mean)
	t.row("Median tool time per conv. (s):", ag.ToolS.P50)
	t.row("Median step TTFT (ms):", ag.StepTTFTMS.P50)
	t.row("P99 step TTFT (ms):", ag.StepTTFTMS.P99)
	if len(ag.List) > 0 {
		t.line("%7s %5s %4s %9s %8s %9s %7s %7s", "session", "steps", "subs", "done (s)", "tool (s)", "TTFT p50", "cached", "trace")
		for _, c := range ag.List {
			t.line("%7d %5d %4d %9.2f %8.2f %9.2f %6.1f%% %6.1f%%", c.Session, c.Steps, c.Subagents, c.CompletionS, c.ToolS,
				c.TTFTP50MS, 100*c.CachedShare, 100*c.ExpectedHit)
		}
	}
	t.line("%s", strings.Repeat("=", 50))
	t.line("(done: first send to last byte, subagents included; tool: the planned tool and think waits between a branch's response and its next send, as observed, summed over the branches — subagents wait at once, so it can exceed done; a parent's wait for its subagents is theirs, not tool time; cached: the server's prefix cache; trace: the trace's own infinite cache)")
	return t.err
}
