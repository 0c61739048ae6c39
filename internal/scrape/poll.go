package scrape

import (
	"context"
	"net/http"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/wait"
)

// Defaults fills in the settings a scraper's configuration left zero: an
// interval of 2 s, a client whose timeout is Timeout(interval), a warnf
// that says nothing and the real clock.
func Defaults(interval *time.Duration, client **http.Client, warnf *func(string, ...any), now *func() time.Time) {
	if *interval <= 0 {
		*interval = 2 * time.Second
	}
	if *client == nil {
		*client = &http.Client{Timeout: Timeout(*interval)}
	}
	if *warnf == nil {
		*warnf = func(string, ...any) {}
	}
	if *now == nil {
		*now = time.Now
	}
}

// Poller runs a scraper's polls on their own goroutine: one at once and
// one every interval after, on now's clock (the waits are the runtime's
// timers, so testing/synctest fakes both).
type Poller struct {
	interval time.Duration
	poll     func(context.Context)
	quit     chan struct{}
	done     chan struct{}
}

// Poll starts polling.
func Poll(interval time.Duration, now func() time.Time, poll func(context.Context)) *Poller {
	p := &Poller{interval: interval, poll: poll, quit: make(chan struct{}), done: make(chan struct{})}
	safe.Go(func() {
		defer close(p.done)
		wait.Every(p.quit, interval, now, poll)
	})
	return p
}

// Stop ends polling, waits for a poll under way, and polls a last time
// (within Timeout(interval)), so that the period covered reaches the end
// of the run.
func (p *Poller) Stop() {
	close(p.quit)
	<-p.done
	ctx, cancel := context.WithTimeout(context.Background(), Timeout(p.interval))
	defer cancel()
	p.poll(ctx)
}

// Health is a scraper's failures: how many, and the last one's error while
// they last (nil from the next answer on). A missing or failing endpoint
// is a warning, never an error of the run.
type Health struct {
	Failures int64
	LastErr  error
}

// Failed counts a failed scrape, and warns of the first of a run of
// failures with what the scraper reads ("server metrics").
func (h *Health) Failed(err error, warnf func(string, ...any), what string) {
	h.Failures++
	if h.LastErr == nil {
		warnf("%s: %v (the run goes on without them)", what, err)
	}
	h.LastErr = err
}

// Answered ends a run of failures, warning again when there was one after
// a sample (sampled) was taken.
func (h *Health) Answered(warnf func(string, ...any), sampled bool, again string) {
	if h.LastErr != nil && sampled {
		warnf("%s", again)
	}
	h.LastErr = nil
}

// LastError is the last failure's message while failures last ("" once
// the endpoint answers).
func (h *Health) LastError() string {
	if h.LastErr == nil {
		return ""
	}
	return h.LastErr.Error()
}
