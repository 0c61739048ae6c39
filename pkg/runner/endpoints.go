package runner

import (
	"context"
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// warmupAll sends n warm-up requests to every endpoint of pool that
// answered the model check. With several endpoints one whose warm-up
// fails is warned about and kept; the run stops only when every
// endpoint's fails (or with one endpoint, when its fails).
func warmupAll(ctx context.Context, n int, pool *client.Pool, wl *workload.Workload, prompts *prompt.Builder, log *Logger, panics *requestPanics, probe *latencyProbe) error {
	if pool.Len() == 1 {
		return warmup(ctx, n, wl.Images, pool.First(), prompts, wl.First, log, panics, probe)
	}
	if n == 0 {
		return nil
	}
	var first error
	ok, live := 0, 0
	for i := range pool.Len() {
		if pool.Live(i) {
			live++
		}
	}
	log.Infof("warm-up: %d request(s) to each of %d endpoints", n, live)
	quiet := NewLogger(log.w, true)
	for i := range pool.Len() {
		if !pool.Live(i) {
			continue
		}
		err := warmup(ctx, n, wl.Images, pool.Client(i), prompts, wl.First, quiet, panics, probe)
		if err == nil {
			ok++
			continue
		}
		if first == nil {
			first = err
		}
		log.Warnf("endpoint %d (%s): %v", i+1, pool.Host(i), err)
	}
	if ok == 0 && first != nil {
		return fmt.Errorf("every endpoint's warm-up failed; the first: %w", first)
	}
	return nil
}
