package main

import (
	"time"

	"github.com/valyala/fastjson"
)

// calibrate times a fixed piece of CPU work — decoding one vLLM stream
// chunk, as the client does per token — and returns ns per decode. A
// shared or virtual machine's speed drifts: reporting this next to the
// ladder says how fast the machine was while it ran.
func calibrate() float64 {
	chunk := []byte(`{"id":"cmpl-8f1c2a","object":"text_completion","created":1732200000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`)
	var p fastjson.Parser
	best := 0.0
	for range 5 {
		const n = 200000
		t0 := time.Now()
		for range n {
			v, err := p.ParseBytes(chunk)
			if err != nil || len(v.GetStringBytes("choices", "0", "text")) == 0 {
				panic("calibration chunk did not decode")
			}
		}
		ns := float64(time.Since(t0).Nanoseconds()) / n
		if best == 0 || ns < best {
			best = ns
		}
	}
	return best
}
