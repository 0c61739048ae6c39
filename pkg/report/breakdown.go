package report

import (
	"io"
	"sort"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Breakdowns are the summary entries holding a metrics.Groups breakdown,
// with their section titles, in print order.
var Breakdowns = []struct{ Key, Title, Column string }{
	{metrics.KeyPerKind, "Requests by Kind", "kind"},
	{metrics.KeyPerModel, "Requests by Model", "model"},
}

// WriteBreakdowns prints, after the result table, one short section per
// breakdown the summary holds (see Breakdowns): a row per group with its
// counts, throughput and TTFT/E2E figures. A summary without any prints
// nothing.
func WriteBreakdowns(w io.Writer, s *metrics.Summary) error {
	t := &table{w: w}
	for _, b := range Breakdowns {
		groups := s.Breakdown(b.Key)
		if len(groups) == 0 {
			continue
		}
		names := make([]string, 0, len(groups))
		width := len(b.Column)
		for k := range groups {
			names = append(names, k)
			width = max(width, min(len(k), 40))
		}
		sort.Strings(names)
		t.title(b.Title)
		if s.Measure().Images() { // image generation: images/s, no TTFT
			t.line("%-*s %9s %6s %9s %9s %10s %10s %10s", width, b.Column,
				"completed", "failed", "req/s", "images", "images/s", "mean E2E", "P99 E2E")
			for _, k := range names {
				g := groups[k]
				t.line("%-*s %9d %6d %9.2f %9d %10.2f %10.2f %10.2f", width, k,
					g.Completed, g.Failed, g.RequestThroughput, g.GeneratedImages, g.ImageThroughput, g.MeanE2E, g.P99E2E)
			}
			t.line("%s", strings.Repeat("=", 50))
			t.line("(latencies in ms; TTFT does not apply to image generation)")
			continue
		}
		if s.NoTokenMetrics() { // a pooling batch: input tokens/s, no TTFT
			t.line("%-*s %9s %6s %9s %11s %10s %10s", width, b.Column,
				"completed", "failed", "req/s", "in tok/s", "mean E2E", "P99 E2E")
			for _, k := range names {
				g := groups[k]
				t.line("%-*s %9d %6d %9.2f %11.2f %10.2f %10.2f", width, k,
					g.Completed, g.Failed, g.RequestThroughput, g.InputThroughput, g.MeanE2E, g.P99E2E)
			}
			t.line("%s", strings.Repeat("=", 50))
			t.line("(latencies in ms; TTFT does not apply to a batch of %s)", s.Measure())
			continue
		}
		t.line("%-*s %9s %6s %9s %11s %10s %10s %10s %10s", width, b.Column,
			"completed", "failed", "req/s", "out tok/s", "mean TTFT", "P99 TTFT", "mean E2E", "P99 E2E")
		for _, k := range names {
			g := groups[k]
			t.line("%-*s %9d %6d %9.2f %11.2f %10.2f %10.2f %10.2f %10.2f", width, k,
				g.Completed, g.Failed, g.RequestThroughput, g.OutputThroughput,
				g.MeanTTFT, g.P99TTFT, g.MeanE2E, g.P99E2E)
		}
		t.line("%s", strings.Repeat("=", 50))
		t.line("(latencies in ms)")
	}
	if t.err != nil {
		return t.err
	}
	return WriteEndpoints(w, s)
}
