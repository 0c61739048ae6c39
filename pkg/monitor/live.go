package monitor

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

// barWidth is the number of cells of the progress bar.
const barWidth = 30

// barLine renders the progress bar: requests done of those scheduled, the
// requests in flight and the time left. The time left is the larger of the
// schedule's remaining span and what the completion rate so far implies.
func barLine(done, total, inFlight int64, elapsed, span time.Duration) string {
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	fill := int(frac * barWidth)
	eta := "--:--"
	switch {
	case done >= total:
		eta = clock(0)
	case elapsed > 0:
		left := max(span-elapsed, 0)
		if done > 0 {
			left = max(left, time.Duration(float64(elapsed)/float64(done)*float64(total-done)))
		}
		if left > 0 || done > 0 {
			eta = clock(left.Seconds())
		}
	}
	return fmt.Sprintf("[%s%s] %d/%d %3.0f%% in flight %d ETA %s",
		strings.Repeat("=", fill), strings.Repeat(" ", barWidth-fill), done, total, 100*frac, inFlight, eta)
}

// clock formats seconds as mm:ss, or h:mm:ss from an hour on.
func clock(secs float64) string {
	if math.IsNaN(secs) || secs < 0 {
		secs = 0
	}
	s := int64(secs + 0.5)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// liveLine renders one live line of a report interval: when, offered and
// achieved rate, requests in flight now, errors (and the requests the
// client cut, when any: --cancel-share), TTFT and ITL p50/p99, send
// lag p99, the server's last sample when scraped, and the self-check.
//
//	[00:10–00:20] offered 50.0/s achieved 49.6/s in flight 12 errors 0 | TTFT p50 31.2 p99 48.0 ms | ITL p50 10.0 p99 12.1 ms | lag p99 0.21 ms
//
// interval is --report-interval in seconds. The last interval of a run is
// shorter: its rates are given with its length, or, when it is a sliver too
// short for a rate to mean anything (see sliver), its counts.
func liveLine(w *metrics.WindowStats, inFlight int64, srv *servermetrics.Sample, interval float64, noTokens bool) string {
	var b strings.Builder
	switch d := w.End - w.Start; {
	case sliver(d, interval):
		fmt.Fprintf(&b, "[%s–%s] offered %d achieved %d (last %.2f s) in flight %d errors %d",
			clock(w.Start), clock(w.End), w.Offered, w.Completed, d, inFlight, w.Failed)
	case d < interval*0.99:
		fmt.Fprintf(&b, "[%s–%s] offered %s/s achieved %s/s (last %.1f s) in flight %d errors %d",
			clock(w.Start), clock(w.End), num(w.OfferedRate), num(w.AchievedRate), d, inFlight, w.Failed)
	default:
		fmt.Fprintf(&b, "[%s–%s] offered %s/s achieved %s/s in flight %d errors %d",
			clock(w.Start), clock(w.End), num(w.OfferedRate), num(w.AchievedRate), inFlight, w.Failed)
	}
	if w.Cancelled > 0 {
		fmt.Fprintf(&b, " cancelled %d", w.Cancelled)
	}
	switch {
	case w.Completed > 0 && w.TTFTP99 == 0: // no streamed tokens: image generations
		fmt.Fprintf(&b, " | E2E p50 %s p99 %s ms", num(w.E2EP50), num(w.E2EP99))
	case w.Completed > 0:
		fmt.Fprintf(&b, " | TTFT p50 %s p99 %s ms | ITL p50 %s p99 %s ms", num(w.TTFTP50), num(w.TTFTP99), num(w.ITLP50), num(w.ITLP99))
	case noTokens:
		b.WriteString(" | E2E -")
	default:
		b.WriteString(" | TTFT - | ITL -")
	}
	if w.Completed+w.Failed > 0 {
		fmt.Fprintf(&b, " | lag p99 %s ms", num(w.LagP99))
	}
	if srv != nil {
		b.WriteString(" | server")
		if !math.IsNaN(srv.Running) {
			fmt.Fprintf(&b, " running %.0f", srv.Running)
		}
		if !math.IsNaN(srv.Waiting) {
			fmt.Fprintf(&b, " waiting %.0f", srv.Waiting)
		}
		if !math.IsNaN(srv.KVCache) {
			fmt.Fprintf(&b, " kv %.0f%%", 100*srv.KVCache)
		}
	}
	if w.Saturated {
		fmt.Fprintf(&b, " | CLIENT SATURATED: %s", strings.Join(w.Reasons, ", "))
	}
	return b.String()
}

// sliver reports whether a last interval of d seconds is too short for a
// rate: under a second and under a quarter of the report interval.
func sliver(d, interval float64) bool { return d < min(1, interval/4) }

// num formats a figure with three significant digits or so.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 100 || v == 0:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// closeLive prints the line of a closed live interval.
func (m *Monitor) closeLive(p *period) {
	w := m.stats(p)
	m.check.Check(&w, m.live.lastBehind)
	m.live.lastBehind = w.Behind
	if m.prom != nil {
		m.prom.SetSaturated(w.Saturated)
	}
	if m.otlp != nil {
		m.otlp.SetSaturated(w.Saturated)
	}
	if w.Saturated {
		m.liveSatN++
		if len(m.liveSat) < metrics.MaxSaturatedIntervals {
			m.liveSat = append(m.liveSat, metrics.SaturatedInterval{Start: w.Start, End: w.End, Reasons: w.Reasons})
		}
	}
	m.mu.Lock()
	srv := m.lastServer
	m.lastServer = nil
	m.mu.Unlock()
	line := liveLine(&w, m.inFlightNow(), srv, m.c.ReportInterval.Seconds(), m.c.NoTokens)
	switch {
	case !m.c.Quiet:
		m.println(line)
	case w.Saturated:
		m.println("warning: " + line)
	}
}

// println prints a line on the error stream, above the progress bar.
func (m *Monitor) println(s string) {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	if m.barShown {
		fmt.Fprint(m.c.Err, "\r\033[K")
		m.barShown = false
	}
	fmt.Fprintln(m.c.Err, s)
}

// drawBar redraws the progress bar (terminal only).
func (m *Monitor) drawBar(now time.Duration) {
	if !m.bar {
		return
	}
	line := barLine(m.done.Load(), m.total, m.inFlightNow(), now, m.span)
	m.outMu.Lock()
	fmt.Fprint(m.c.Err, "\r\033[K"+line)
	m.barShown = true
	m.outMu.Unlock()
}
