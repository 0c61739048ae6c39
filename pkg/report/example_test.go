package report_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// One request's record, as --results-jsonl writes it.
func ExampleAppendRecord() {
	const ms = time.Millisecond
	r := record.Request{
		Index: 7, Model: "mock-model", Status: 200,
		Scheduled: 700 * ms, Sent: 700 * ms, FirstToken: 730 * ms, End: 760 * ms,
		TokenTimes: []time.Duration{730 * ms, 740 * ms, 750 * ms, 760 * ms},
		InputLen:   16, OutputLen: 4, PromptTokens: 16, CompletionTokens: 4, CachedTokens: -1,
	}
	var s metrics.Sample
	s.From(&r, metrics.NoSLO)
	os.Stdout.Write(report.AppendRecord(nil, &s))
	// Output:
	// {"index":7,"scheduled_s":0.700000,"sent_s":0.700000,"ttft_ms":30.000,"e2e_ms":60.000,"itl_ms":[10.000,10.000,10.000],"input_len":16,"output_len":4,"prompt_tokens":16,"completion_tokens":4,"cached_tokens":null,"images":0,"model":"mock-model","status":200,"error_class":"","error":"","retries":0}
}

// The outputs a run writes at its end, each a row WriteOutputs writes in
// order: a file whole or not at all, every failure named. Here the summary
// file, read back.
func ExampleWriteOutputs() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "summary.json")
	sum := &metrics.Summary{Backend: "vllm", Mode: "poisson", Scheduled: 10, Completed: 9, Failed: 1}
	if err := report.WriteOutputs(os.Stdout, report.SummaryOutput(path, sum)); err != nil {
		fmt.Println(err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	back, _, err := report.ReadSummary(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %s: %d scheduled, %d completed, %d failed\n", back.Backend, back.Mode, back.Scheduled, back.Completed, back.Failed)
	// Output:
	// vllm poisson: 10 scheduled, 9 completed, 1 failed
}
