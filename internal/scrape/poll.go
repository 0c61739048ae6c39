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
