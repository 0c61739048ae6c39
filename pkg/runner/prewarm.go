package runner

import (
	"context"
	"errors"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

// PrewarmAuto is Config.Prewarm's "auto": as many connections as the run
// will have requests in flight at its peak (prewarmCount).
const PrewarmAuto = -1

// Bounds of --prewarm-connections auto.
const (
	// prewarmAutoMax caps the connections auto opens (per run).
	prewarmAutoMax = 16384
	// prewarmLatency is the time a request is expected to be in flight
	// when the run has no concurrency bound: auto opens as many
	// connections as the schedule has arrivals in its busiest window of
	// this length.
	prewarmLatency = 2 * time.Second
)

// prewarmCount resolves n (PrewarmAuto or a count) for a run: auto is
// --max-concurrency when set, else the schedule's peak in flight predicted
// from its arrivals and prewarmLatency; either at most the run's requests
// and prewarmAutoMax.
func prewarmCount(n, maxConcurrency int, schedule arrival.Schedule, count int64) int {
	if n != PrewarmAuto {
		return n
	}
	limit := int(min(count, prewarmAutoMax))
	if maxConcurrency > 0 {
		return min(maxConcurrency, limit)
	}
	return peakInWindow(schedule, prewarmLatency, limit)
}

// peakInWindow returns the most arrivals of s due within any window of
// length w (at most limit: it stops there).
func peakInWindow(s arrival.Schedule, w time.Duration, limit int) int {
	var due []time.Duration // the arrivals of the current window, a queue
	head, peak := 0, 0
	for a := range s {
		due = append(due, a.At)
		for a.At-due[head] >= w {
			head++
		}
		if n := len(due) - head; n > peak {
			if peak = n; peak >= limit {
				return limit
			}
		}
		if head > 4096 && head > len(due)/2 {
			due, head = append(due[:0], due[head:]...), 0
		}
	}
	return peak
}

// prewarm opens cfg.Prewarm connections (spread over the live endpoints)
// before the first send, and says how many each got.
func prewarm(ctx context.Context, cfg *Config, pool *client.Pool, schedule arrival.Schedule, count int64, log *Logger) {
	n := prewarmCount(cfg.Prewarm, cfg.MaxConcurrency, schedule, count)
	if n <= 0 {
		return
	}
	live := 0
	for i := range pool.Len() {
		if pool.Live(i) {
			live++
		}
	}
	each := (n + live - 1) / max(live, 1)
	t0 := time.Now()
	opened, errs := pool.Prewarm(ctx, each, client.PrewarmBatch)
	took := time.Since(t0)
	total := 0
	for i, err := range errs {
		total += opened[i]
		switch {
		case errors.Is(err, client.ErrNoPrewarm):
			log.Warnf("--prewarm-connections: endpoint %s: %v; its connections are dialled on first use", pool.Host(i), err)
		case err != nil:
			log.Warnf("--prewarm-connections: endpoint %s: %d of %d connections opened: %v", pool.Host(i), opened[i], each, err)
		}
	}
	if total > 0 {
		log.Infof("prewarm: %d connection(s) open in %v (%d per endpoint asked, %d at a time)", total, took.Round(time.Millisecond), each, client.PrewarmBatch)
	}
}
