package metrics_test

import (
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// Recording samples and assembling a summary, as a run does: each request's
// record becomes a Sample (From), every part (NewParts) is fed it, and Assemble turns them into the
// summary's figures over the run's length.
func ExampleAssemble() {
	parts := metrics.NewParts(metrics.PartsConfig{SLO: metrics.NoSLO})
	const ms = time.Millisecond
	for i := range 4 {
		// One request's record, as the client fills it: sent on time,
		// its first token after 20–50 ms, then 99 more 5 ms apart.
		sent := time.Duration(i) * 100 * ms
		r := record.Request{
			Index: int64(i), Scheduled: sent, Sent: sent,
			FirstToken: sent + time.Duration(20+10*i)*ms,
			InputLen:   128, OutputLen: 100, PromptTokens: 128, CompletionTokens: 100, CachedTokens: -1,
		}
		for k := range 100 {
			r.TokenTimes = append(r.TokenTimes, r.FirstToken+time.Duration(k)*5*ms)
		}
		r.End = r.TokenTimes[99]
		var s metrics.Sample
		s.From(&r, metrics.NoSLO)
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
