// Package report renders a run's results: the FineServe-style console
// table, the per-request JSON Lines stream and the summary files.
package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// center pads s to n characters with c on both sides, as Python's
// "{s:{c}^{n}}" does (the extra character goes to the right).
func center(s string, c byte, n int) string {
	pad := n - len(s)
	if pad <= 0 {
		return s
	}
	left := pad / 2
	return strings.Repeat(string(c), left) + s + strings.Repeat(string(c), pad-left)
}

type table struct {
	w   io.Writer
	err error
}

// line prints one line of the table; its values may come from the server
// or a file (a model name, an error message): their control characters
// are written as escapes (termsafe), so they cannot act on the terminal
// or start a line of their own.
func (t *table) line(format string, a ...any) {
	if r, ok := t.w.(*tableRecorder); ok {
		r.text(fmt.Sprintf(format, a...))
		return
	}
	if t.err == nil {
		_, t.err = fmt.Fprintf(t.w, format+"\n", termsafe.Args(a)...)
	}
}

// title begins a section: a blank line, then its name centred in a rule
// of '='.
func (t *table) title(name string) {
	t.line("")
	t.line("%s", center(" "+name+" ", '=', 50))
}

// stat prints one figure of d, "n/a" when d has no sample.
func (t *table) stat(label string, d metrics.Dist, v float64) {
	if d.Empty() {
		t.row(label, "n/a")
		return
	}
	t.row(label, v)
}

func (t *table) row(label string, v any) {
	if r, ok := t.w.(*tableRecorder); ok {
		r.row(label, v)
		return
	}
	switch x := v.(type) {
	case float64:
		t.line("%-40s %-10.2f", label, x)
	default:
		t.line("%-40s %-10v", label, x)
	}
}

// WriteTable prints s with the sections and labels of FineServe's
// Generator.py (Serving Benchmark Result, End-to-End Latency, Time to First
// Token, Inter-Token Latency with TPOT), followed by how well the schedule
// was kept and the errors by class.
func WriteTable(w io.Writer, s *metrics.Summary) error {
	t := &table{w: w}
	t.title("Serving Benchmark Result")
	t.row("Backend:", s.Backend)
	t.row("Request generation mode:", s.Mode)
	t.row("Traffic request rate:", rateText(s.RequestRate))
	if c := s.Saturation; c != nil && c.SendRate != nil {
		// The client could not send as fast as the schedule asked: said
		// first, as the figures below are of a lighter load than asked.
		r := c.SendRate
		t.row("Scheduled send rate (req/s):", r.Scheduled)
		t.row("Achieved send rate (req/s):", fmt.Sprintf("%.2f (FELL SHORT by %.1f %%: the last request was sent %.2f s late; see client_saturated)",
			r.Achieved, 100*r.Shortfall, r.LastLate))
	}
	if s.TargetRate != nil {
		t.row("Target ("+s.TargetRate.Unit+"):", targetText(s.TargetRate))
	}
	if s.MaxConcurrency != nil {
		t.row("Max request concurrency:", *s.MaxConcurrency)
	} else {
		t.row("Max request concurrency:", "not set")
	}
	t.row("Successful requests:", s.Completed)
	t.row("Failed requests:", s.Failed)
	if s.Cancelled > 0 {
		t.row("Cancelled by the client:", fmt.Sprintf("%d (%d after a first token, %d tokens received)", s.Cancelled, s.CancelledFirstToken, s.CancelledOutputTokens))
	}
	if s.NotSent > 0 {
		t.row("Not sent (run stopped):", s.NotSent)
	}
	if s.Retries > 0 {
		t.row("Retries (extra attempts):", s.Retries)
	}
	t.row("Benchmark duration (s):", s.Duration)
	t.row("Total input tokens:", s.TotalInputTokens)
	t.row("Total generated tokens:", s.TotalOutputTokens)
	if from := outputFromText(s); from != "" {
		t.row("Output tokens counted by the client:", from)
	}
	t.row("Request throughput (req/s):", s.RequestThroughput)
	t.row("Input token throughput (tok/s):", s.InputThroughput)
	t.row("Output token throughput (tok/s):", s.OutputThroughput)
	t.row("Total token throughput (tok/s):", s.TotalThroughput)
	t.row("Concurrency:", s.Concurrency)
	if !s.NoTokenMetrics() {
		t.row("Peak output token throughput (tok/s):", s.MaxOutputTokensPerS) // vLLM's: the busiest second
	}
	t.row("Peak concurrent requests:", s.MaxInFlight)
	switch m := s.Measure(); {
	case m.Images():
		t.row("Total generated images:", s.GeneratedImages)
		t.row("Image throughput (images/s):", s.ImageThroughput)
	case m.Batches() && s.Pooling != nil:
		p := s.Pooling
		inputs := "Total inputs (documents):"
		if p.Measure == "vectors" {
			inputs = "Total inputs (texts):"
		}
		t.row(inputs, p.Inputs)
		t.row("Input throughput (inputs/s):", p.InputsPerS)
		t.row("Mean batch size:", p.BatchSize)
		t.row("Total "+p.Measure+" returned:", p.Returned)
		if p.VectorDims > 0 {
			t.row("Vector length:", p.VectorDims)
		} else if p.MaxDims > 0 {
			t.row("Vector length (min-max):", fmt.Sprintf("%d-%d", p.MinDims, p.MaxDims))
		}
	}
	t.line("%s", center("End-to-End Latency", '-', 50))
	t.stat("Mean E2E Latency (ms):", s.E2E, s.E2E.Mean)
	t.stat("Median E2E Latency (ms):", s.E2E, s.E2E.Median)
	t.stat("P99 E2E Latency (ms):", s.E2E, s.E2E.P99)
	if s.NoTokenMetrics() {
		writeImageLatency(t, s)
		return t.err
	}
	t.line("%s", center("Time to First Token", '-', 50))
	t.stat("Mean TTFT (ms):", s.TTFT, s.TTFT.Mean)
	t.stat("Median TTFT (ms):", s.TTFT, s.TTFT.Median)
	t.stat("P99 TTFT (ms):", s.TTFT, s.TTFT.P99)
	t.line("%s", center("Inter-Token Latency", '-', 50))
	t.stat("Mean ITL (ms):", s.ITL, s.ITL.Mean)
	t.stat("Median ITL (ms):", s.ITL, s.ITL.Median)
	t.stat("P95 ITL (ms):", s.ITL, s.ITL.P95)
	t.stat("P99 ITL (ms):", s.ITL, s.ITL.P99)
	t.stat("Max ITL (ms):", s.ITL, s.ITL.Max)
	t.stat("Mean TPOT (ms):", s.TPOT, s.TPOT.Mean)
	t.stat("Median TPOT (ms):", s.TPOT, s.TPOT.Median)
	t.stat("P99 TPOT (ms):", s.TPOT, s.TPOT.P99)
	writeAnswers(t, s)
	writeHTTPPhases(t, s)
	writeScheduleKeeping(t, s, true)
	writeServer(t, s)
	writeGPU(t, s)
	writeLoadControl(t, s)
	writeSteadyState(t, s)
	writeRepeats(t, s)
	writeThresholds(t, s)
	writeErrors(t, s)
	return t.err
}

// writeAnswers prints the answers' reasoning, tool-call and structured
// output figures, when the run saw any.
func writeAnswers(t *table, s *metrics.Summary) {
	a := s.Answers
	if a == nil {
		return
	}
	if a.ReasoningRequests > 0 || a.ToolRequests > 0 {
		t.line("%s", center("Time to First Output Token", '-', 50))
		t.stat("Mean TTFO (ms):", s.TTFO, s.TTFO.Mean)
		t.stat("Median TTFO (ms):", s.TTFO, s.TTFO.Median)
		t.stat("P99 TTFO (ms):", s.TTFO, s.TTFO.P99)
	}
	if a.ReasoningRequests > 0 {
		t.row("Requests with reasoning:", a.ReasoningRequests)
		t.row("Total reasoning tokens:", a.ReasoningTokens)
		t.row("Reasoning share of output (%):", 100*a.ReasoningShare)
	}
	if a.ToolRequests > 0 {
		t.line("%s", center("Tool Calls", '-', 50))
		t.row("Requests that called a tool (%):", 100*a.ToolCallShare)
		t.row("Tool calls:", a.ToolCalls)
		if a.ToolArgsValidShare != nil {
			t.row("Arguments that parse as JSON (%):", 100**a.ToolArgsValidShare)
		}
		t.stat("Mean time to first tool call (ms):", s.ToolTTFT, s.ToolTTFT.Mean)
		t.stat("P99 time to first tool call (ms):", s.ToolTTFT, s.ToolTTFT.P99)
	}
	if a.StructuredValidShare != nil {
		t.line("%s", center("Structured Output", '-', 50))
		t.row("Answers checked:", a.StructuredChecked)
		t.row("Valid against the format (%):", 100**a.StructuredValidShare)
	}
}

// writeServer prints what the server's /metrics said over the run when it
// was scraped: its requests running and waiting and its KV-cache usage
// (mean and the largest scraped), the idle fraction and preemptions.
func writeServer(t *table, s *metrics.Summary) {
	sm := s.ServerMetrics
	if sm == nil {
		return
	}
	t.line("%s", center("Server Metrics", '-', 50))
	if !sm.Available || sm.ServerStats == nil || sm.Samples == 0 {
		t.row("Server scrapes:", fmt.Sprintf("none succeeded (%d failed)", sm.Failures))
		return
	}
	st := sm.ServerStats
	t.row("Server running (mean / max):", fmt.Sprintf("%.2f / %.0f", st.RunningMean, st.RunningMax))
	t.row("Server waiting (mean / max):", fmt.Sprintf("%.2f / %.0f", st.WaitingMean, st.WaitingMax))
	t.row("Server KV-cache usage (mean / max):", fmt.Sprintf("%.1f%% / %.1f%%", 100*st.KVCacheMean, 100*st.KVCacheMax))
	t.row("Server idle fraction:", st.IdleText())
	t.row("Server preemptions:", fmt.Sprintf("%.0f", st.Preemptions))
	t.row("Server scrapes (time covered):", fmt.Sprintf("%d (%.1f s)", st.Samples, st.Observed))
	writeSpecDecode(t, st.SpecDecode)
}

// targetText writes a target profile as --stages would take it.
func targetText(tr *metrics.TargetRate) string {
	var b strings.Builder
	b.WriteString(tr.Source + ": ")
	for i, st := range tr.Stages {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%.6gs:%.6g", st.DurationS, st.Target)
		if st.Exponential {
			b.WriteString(" (exp)")
		}
	}
	return b.String()
}

// writeLoadControl prints the achieved length mixture and the shared
// prefixes' expected and served cache share.
func writeLoadControl(t *table, s *metrics.Summary) {
	if len(s.LengthMix) == 0 && s.SharedPrefix == nil {
		return
	}
	t.line("%s", center("Load Control", '-', 50))
	for _, e := range s.LengthMix {
		t.row(fmt.Sprintf("Lengths %d,%d share (target):", e.Input, e.Output), fmt.Sprintf("%.1f%% (%.1f%%)", 100*e.Share, 100*e.TargetShare))
	}
	if p := s.SharedPrefix; p != nil {
		t.row("Shared-prefix requests (truncated):", fmt.Sprintf("%d (%d)", p.Requests, p.Truncated))
		served := "not reported"
		if s.TotalInputTokens > 0 {
			served = fmt.Sprintf("%.1f%%", 100*float64(s.CachedTokens)/float64(s.TotalInputTokens))
		}
		t.row("Cached prompt share (expected):", fmt.Sprintf("%s (%.1f%%)", served, 100*p.ExpectedCachedShare))
	}
}

// writeScheduleKeeping prints how well the schedule was kept; tokens adds
// TTFT from the scheduled time (runs that stream tokens).
func writeScheduleKeeping(t *table, s *metrics.Summary, tokens bool) {
	t.line("%s", center("Schedule Keeping", '-', 50))
	t.stat("Send lag P50 (ms):", s.SendLag, s.SendLag.Median)
	t.stat("Send lag P99 (ms):", s.SendLag, s.SendLag.P99)
	t.stat("Send lag Max (ms):", s.SendLag, s.SendLag.Max)
	if tokens {
		t.stat("P99 TTFT from scheduled time (ms):", s.TTFTFromScheduled, s.TTFTFromScheduled.P99)
	}
	t.stat("P99 E2E from scheduled time (ms):", s.E2EFromScheduled, s.E2EFromScheduled.P99)
	if s.Queued > 0 {
		t.row("Waited for a concurrency slot:", s.Queued)
	}
	if s.PromptTokensCounted > 0 {
		t.row("Prompt tokens vs target, mean |err|:", promptErrorText(s))
	}
}

// writeImageLatency ends the table of an image-generation run: TTFT and
// ITL do not apply (no tokens), so they are named as absent, not zero.
func writeImageLatency(t *table, s *metrics.Summary) {
	what := "image generation has"
	if m := s.Measure(); !m.Images() {
		what = "a batch of " + m.String() + " has"
	}
	t.line("%s", center("Time to First Token", '-', 50))
	t.line("not applicable: %s no tokens (end-to-end only)", what)
	t.line("%s", center("Inter-Token Latency", '-', 50))
	t.line("not applicable: %s no tokens (end-to-end only)", what)
	writeScheduleKeeping(t, s, false)
	writeServer(t, s)
	writeSteadyState(t, s)
	writeRepeats(t, s)
	writeThresholds(t, s)
	writeErrors(t, s)
}

// writeErrors ends the table: errors by class and the first failures.
func writeErrors(t *table, s *metrics.Summary) {
	if len(s.ErrorsByClass) > 0 {
		t.line("%s", center("Errors by Class", '-', 50))
		classes := make([]string, 0, len(s.ErrorsByClass))
		for k := range s.ErrorsByClass {
			classes = append(classes, k)
		}
		sort.Strings(classes)
		for _, k := range classes {
			t.row(k+":", s.ErrorsByClass[k])
		}
	}
	t.line("%s", strings.Repeat("=", 50))
	if len(s.ErrorSamples) > 0 {
		t.line("")
		t.line("%s", center(" Failed Requests Details ", '!', 50))
		t.line("Total failed requests: %d", s.Failed)
		t.line("")
		t.line("Showing first %d failed request errors:", len(s.ErrorSamples))
		t.line("")
		for i, e := range s.ErrorSamples {
			if e.RequestID != "" {
				t.line("--- Failed Request #%d (index %d, X-Request-Id %s, %s) ---", i+1, e.Index, e.RequestID, e.Class)
			} else {
				t.line("--- Failed Request #%d (index %d, %s) ---", i+1, e.Index, e.Class)
			}
			t.line("%s", e.Message)
			t.line("")
		}
		if s.Failed > int64(len(s.ErrorSamples)) {
			t.line("... and %d more failed requests.", s.Failed-int64(len(s.ErrorSamples)))
			t.line("Check the results JSONL for all error details.")
		}
		t.line("%s", strings.Repeat("!", 50))
	}
}

func rateText(r metrics.Rate) string {
	switch {
	case math.IsInf(float64(r), 1):
		return "inf"
	case r == 0:
		return "N/A"
	}
	return fmt.Sprintf("%g", float64(r))
}

// WriteGoodput prints the goodput section of a run judged against
// --goodput: the SLOs, requests meeting every one per second, their number
// and share (nothing without --goodput).
func WriteGoodput(w io.Writer, sum *metrics.Summary) error {
	g := sum.Goodput
	if g == nil {
		return nil
	}
	var targets []string
	for _, k := range []string{"ttft", "tpot", "e2el"} {
		if v, ok := g.SLO[k]; ok {
			targets = append(targets, fmt.Sprintf("%s ≤ %g ms", k, v))
		}
	}
	t := &table{w: w}
	t.line("%s", center("Goodput", '-', 50))
	t.line("%-40s %-10s", "SLOs:", strings.Join(targets, ", "))
	t.row("Request goodput (req/s):", g.Rate)
	t.line("%-40s %-10d", "Requests meeting every SLO:", g.Requests)
	t.row("Share meeting every SLO (%):", 100*g.Share)
	t.line("%s", strings.Repeat("=", 50))
	return t.err
}
