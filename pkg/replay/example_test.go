package replay_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// A FineServe trace (timestamps in µs) read from its header alone, one bad
// row skipped and counted, and replayed ten times faster.
func ExampleRead() {
	trace := `input_length,output_length,latency,timestamp,architecture,scale
214,722,0.0015,0.0,Dense,30-100B
232,5,0.0013,55908.0,Dense,30-100B
1147,oops,0.0021,2069861.0,Dense,30-100B
6156,298,0.0014,3008329.0,Dense,30-100B
`
	t, err := replay.Read(strings.NewReader(trace), "trace.csv", replay.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("format %s: %d rows, %d usable, %d skipped (%s), span %v\n",
		t.Format, t.Rows, t.Usable(), t.Skipped.Rows, t.Skipped.First, t.Span())
	sl, err := t.Resolve(replay.Plan{TimeScale: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for a := range t.Schedule(sl) {
		fmt.Printf("%d at %v: %d in, %d out\n", a.Index, a.At.Round(time.Millisecond), a.InputTokens, a.OutputTokens)
	}
	// Output:
	// format fineserve: 4 rows, 3 usable, 1 skipped (line 4: output_length: not a number: "oops"), span 3.008329s
	// 0 at 0s: 214 in, 722 out
	// 1 at 6ms: 232 in, 5 out
	// 2 at 301ms: 6156 in, 298 out
}
