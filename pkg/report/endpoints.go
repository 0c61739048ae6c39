package report

import (
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// WriteEndpoints prints the endpoints of a run with several side by side:
// a column per endpoint, a row per figure (requests, failures by class,
// throughput, TTFT and E2E, and the server's own figures when scraped). A
// summary without endpoints prints nothing.
func WriteEndpoints(w io.Writer, s *metrics.Summary) error {
	eps := s.Endpoints
	if len(eps) == 0 {
		return nil
	}
	t := &table{w: w}
	const label = 24
	width := 12
	heads := make([]string, len(eps))
	for i, e := range eps {
		heads[i] = strings.TrimSpace(fmt.Sprintf("#%d %s", e.Index+1, endpointHost(e.URL))) // records read back: no URL
		width = max(width, min(len(heads[i]), 32))
	}
	row := func(name string, cell func(e *metrics.EndpointSummary) string) {
		var b strings.Builder
		fmt.Fprintf(&b, "%-*s", label, name)
		for i := range eps {
			fmt.Fprintf(&b, " %*s", width, cell(&eps[i]))
		}
		t.line("%s", b.String())
	}
	f2 := func(v float64) string { return fmt.Sprintf("%.2f", v) }
	t.title("Requests by Endpoint")
	row("endpoint", func(e *metrics.EndpointSummary) string { return heads[e.Index] })
	row("requests", func(e *metrics.EndpointSummary) string { return fmt.Sprint(e.Requests) })
	row("completed", func(e *metrics.EndpointSummary) string { return fmt.Sprint(e.Completed) })
	row("failed", func(e *metrics.EndpointSummary) string { return fmt.Sprint(e.Failed) })
	if s.Cancelled > 0 {
		row("cancelled", func(e *metrics.EndpointSummary) string { return fmt.Sprint(e.Cancelled) })
	}
	classes := map[string]bool{}
	for _, e := range eps {
		for k := range e.ErrorsByClass {
			classes[k] = true
		}
	}
	names := make([]string, 0, len(classes))
	for k := range classes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row("  "+k, func(e *metrics.EndpointSummary) string { return fmt.Sprint(e.ErrorsByClass[k]) })
	}
	row("req/s", func(e *metrics.EndpointSummary) string { return f2(e.RequestThroughput) })
	row("out tok/s", func(e *metrics.EndpointSummary) string { return f2(e.OutputThroughput) })
	if !s.NoTokenMetrics() {
		row("median TTFT (ms)", func(e *metrics.EndpointSummary) string { return f2(e.MedianTTFT) })
		row("P99 TTFT (ms)", func(e *metrics.EndpointSummary) string { return f2(e.P99TTFT) })
	}
	row("median E2E (ms)", func(e *metrics.EndpointSummary) string { return f2(e.MedianE2E) })
	row("P99 E2E (ms)", func(e *metrics.EndpointSummary) string { return f2(e.P99E2E) })
	scraped := false
	for _, e := range eps {
		scraped = scraped || e.ServerMetrics != nil
	}
	if scraped {
		server := func(f func(*metrics.ServerStats) float64, format string) func(e *metrics.EndpointSummary) string {
			return func(e *metrics.EndpointSummary) string {
				if e.ServerMetrics == nil || e.ServerMetrics.ServerStats == nil || !e.ServerMetrics.Available {
					return "-"
				}
				return fmt.Sprintf(format, f(e.ServerMetrics.ServerStats))
			}
		}
		row("server running (mean)", server(func(s *metrics.ServerStats) float64 { return s.RunningMean }, "%.2f"))
		row("server waiting (mean)", server(func(s *metrics.ServerStats) float64 { return s.WaitingMean }, "%.2f"))
		row("server KV cache (max)", server(func(s *metrics.ServerStats) float64 { return 100 * s.KVCacheMax }, "%.1f%%"))
	}
	t.line("%s", strings.Repeat("=", 50))
	return t.err
}

// endpointHost is an endpoint URL's host and port (its path too, when it
// has one), as a column heading.
func endpointHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	return u.Host + strings.TrimRight(u.Path, "/")
}
