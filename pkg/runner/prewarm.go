package runner

import (
	"context"
	"errors"
	"sync"
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
	// when the run has no concurrency bound and no warm-up to predict it
	// from: auto opens as many connections as the schedule has arrivals
	// in its busiest window of this length.
	prewarmLatency = 2 * time.Second
	// prewarmMinLatency is the shortest window auto uses: a warm-up
	// against an idle server predicts less than the run will see once it
	// queues.
	prewarmMinLatency = time.Second
)

// fileLimit is openFileLimit (tests replace it).
var fileLimit = openFileLimit

// fileHeadroom is the open files prewarming leaves free under a limit of
// limit: for the connections requests open beyond the prewarmed ones,
// metrics scrapes and the outputs.
func fileHeadroom(limit int) int { return max(64, limit/16) }

// latencyProbe collects what the warm-up requests took, to predict a
// request's latency in the run (expected).
type latencyProbe struct {
	mu        sync.Mutex
	ttft, per time.Duration // the fastest warm-up's TTFT and time per output token after it
	seen      bool
}

// add notes the warm-up results of one endpoint (p may be nil).
func (p *latencyProbe) add(res []client.Result) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range res {
		r := &res[i]
		if !r.OK() || r.FirstToken <= 0 {
			continue
		}
		ttft := r.FirstToken - r.Sent
		var per time.Duration
		if n := r.OutputTokens(); n > 1 {
			per = (r.End - r.FirstToken) / time.Duration(n-1)
		}
		if !p.seen || ttft+per < p.ttft+p.per {
			p.ttft, p.per, p.seen = ttft, per, true
		}
	}
}

// expected predicts a request's latency for outputs of meanOut tokens:
// the warm-up's TTFT and time per token (at least prewarmMinLatency), or
// prewarmLatency without a warm-up that answered.
func (p *latencyProbe) expected(meanOut float64) time.Duration {
	if p == nil || !p.seen {
		return prewarmLatency
	}
	return max(p.ttft+time.Duration(float64(p.per)*max(meanOut-1, 0)), prewarmMinLatency)
}

// prewarmCount resolves n (PrewarmAuto or a count) for a run: auto is
// --max-concurrency when set, else the schedule's peak in flight predicted
// from its arrivals and the expected latency (each request in flight that
// long); either at most the run's requests and prewarmAutoMax.
func prewarmCount(n, maxConcurrency int, schedule arrival.Schedule, count int64, latency time.Duration) int {
	if n != PrewarmAuto {
		return n
	}
	limit := int(min(count, prewarmAutoMax))
	if maxConcurrency > 0 {
		return min(maxConcurrency, limit)
	}
	return peakInWindow(schedule, latency, limit)
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
func prewarm(ctx context.Context, cfg *Config, pool *client.Pool, schedule arrival.Schedule, st arrival.Stats, probe *latencyProbe, log *Logger) {
	var meanOut float64
	if st.Count > 0 {
		meanOut = float64(st.Output) / float64(st.Count)
	}
	n := prewarmCount(cfg.Prewarm, cfg.MaxConcurrency, schedule, st.Count, probe.expected(meanOut))
	if n <= 0 {
		return
	}
	if limit, open, ok := fileLimit(); ok {
		if room := max(limit-open-fileHeadroom(limit), 0); n > room {
			log.Warnf("--prewarm-connections: %d connections would pass the limit of open files (%d, %d open now; ulimit -n): opening %d, leaving %d for the run's own connections, metrics scrapes and outputs",
				n, limit, open, room, limit-open-room)
			n = room
		}
		if n <= 0 {
			return
		}
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
