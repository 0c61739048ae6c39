package workload_test

import (
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// quiet is a Logger that drops the notes a build writes.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Warnf(string, ...any) {}

// A run's workload built from its options, as `fineserve-gen --mode poisson
// --request-rate 40 --num-prompts 100 --seed 42 --shard 0/2` builds it: the
// schedule of this copy's arrivals and what is known about the whole, in one
// pass, with no clock and nothing sent.
func ExampleBuild() {
	vllm, _ := api.Lookup("vllm") // --backend vllm: completions
	c := workload.Config{
		Spec: workload.Spec{
			Mode: workload.ModePoisson, RequestRate: 40, Burstiness: 1,
			NumPrompts: 100, NumPromptsSet: true, TimeScale: 1,
			RandomInputLen: 1024, RandomOutputLen: 128,
			Replay: workload.DefaultReplayOptions(), Parametric: workload.DefaultParametricOptions(),
		},
		Seed: 42, API: vllm,
		ShardIndex: 0, ShardCount: 2, // every other arrival
	}
	w, err := workload.Build(c, quiet{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("whole schedule: %d arrivals; this shard: %d, %d input tokens, last at %v\n",
		w.Total, w.Stats.Count, w.Stats.Input, w.Stats.Last.Round(time.Millisecond))
	n := 0
	for a := range w.Schedule {
		if n++; n > 3 {
			break
		}
		fmt.Printf("arrival %d at %v\n", a.Index, a.At.Round(time.Millisecond))
	}
	// Output:
	// whole schedule: 100 arrivals; this shard: 50, 51200 input tokens, last at 2.388s
	// arrival 0 at 0s
	// arrival 2 at 35ms
	// arrival 4 at 56ms
}
