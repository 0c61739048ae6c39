package arrival_test

import (
	"fmt"
	"os"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// A seeded Poisson schedule: the same seed gives the same arrivals, byte for
// byte, without reading the clock.
func ExamplePoisson() {
	s := arrival.Poisson(arrival.PoissonConfig{
		Rate:       10, // req/s
		Burstiness: 1,  // exponential gaps
		Count:      5,
		Seed:       1,
		Lengths:    arrival.UniformLengths{Input: 256, Output: 32},
	})
	for a := range s {
		fmt.Printf("%d at %v: %d in, %d out\n", a.Index, a.At.Round(time.Millisecond), a.InputTokens, a.OutputTokens)
	}
	st := arrival.Summarize(s)
	fmt.Printf("%d arrivals, %d input tokens\n", st.Count, st.Input)
	// Output:
	// 0 at 0s: 256 in, 32 out
	// 1 at 22ms: 256 in, 32 out
	// 2 at 227ms: 256 in, 32 out
	// 3 at 303ms: 256 in, 32 out
	// 4 at 680ms: 256 in, 32 out
	// 5 arrivals, 1280 input tokens
}

// Gamma gaps (vLLM's --burstiness) below 1 are burstier than Poisson; the
// schedule is written as --schedule-out writes it.
func ExampleWriteCSV() {
	s := arrival.Poisson(arrival.PoissonConfig{
		Rate:       100,
		Burstiness: 0.5,
		Count:      3,
		Seed:       7,
		Lengths:    arrival.UniformLengths{Input: 128, Output: 16, RangeRatio: 0.5},
	})
	if _, err := arrival.WriteCSV(os.Stdout, s); err != nil {
		fmt.Println(err)
	}
	// Output:
	// index,time_s,input_len,output_len,model,num_images,burst
	// 0,0.000000,90,18,,0,0
	// 1,0.005643,113,24,,0,1
	// 2,0.006410,98,11,,0,2
}
