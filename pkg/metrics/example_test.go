package metrics_test

import (
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Recording samples and assembling a summary, as a run does: every part
// (NewParts) is fed each request's Sample, and Assemble turns them into the
// summary's figures over the run's length.
func ExampleAssemble() {
	parts := metrics.NewParts(metrics.PartsConfig{SLO: metrics.NoSLO})
	const ms = time.Millisecond
	for i := range 4 {
		ttft := time.Duration(20+10*i) * ms
		s := metrics.Sample{
			Index: int64(i), OK: true, Kind: "text",
			Scheduled: time.Duration(i) * 100 * ms, Sent: time.Duration(i) * 100 * ms,
			HasLag: true, HasTTFT: true, TTFT: ttft, TTFTFromScheduled: ttft,
			HasE2E: true, E2E: ttft + 99*5*ms, E2EFromScheduled: ttft + 99*5*ms,
			HasTPOT: true, TPOT: 5 * ms,
			InputLen: 128, OutputLen: 100, PromptTokens: 128, CompletionTokens: 100, OutputTokens: 100,
		}
		s.FirstToken = s.Sent + s.TTFT
		s.End = s.Sent + s.E2E
		for _, p := range parts {
			p.Add(&s)
		}
	}
	sum, err := metrics.Assemble(metrics.Facts{
		Summary: metrics.Summary{Scheduled: 4},
		Elapsed: 2 * time.Second,
		Parts:   parts,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("completed %d, failed %d, %d output tokens, %.0f output tokens/s\n",
		sum.Completed, sum.Failed, sum.TotalOutputTokens, sum.OutputThroughput)
	fmt.Printf("TTFT mean %.1f ms, median %.1f ms, max %.1f ms; TPOT mean %.1f ms\n",
		sum.TTFT.Mean, sum.TTFT.Median, sum.TTFT.Max, sum.TPOT.Mean)
	// Output:
	// completed 4, failed 0, 400 output tokens, 200 output tokens/s
	// TTFT mean 35.0 ms, median 30.0 ms, max 50.0 ms; TPOT mean 5.0 ms
}
