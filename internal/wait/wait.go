// Package wait holds the waits several parts share: the one cancellable
// sleep (the client's retry backoff, the runner's pauses) and the one
// polling loop (the server-metrics and GPU-telemetry scrapers).
package wait

import (
	"context"
	"time"
)

// Sleep waits d or until ctx is done; it reports whether the whole d
// passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Every calls do at once and then every interval until quit is closed,
// at absolute due times (a call shorter than the interval does not shift
// the later ones; one that overran it is followed at once, and the grid
// goes on from there); do's context ends when quit closes. now is the
// clock (nil: time.Now).
func Every(quit <-chan struct{}, interval time.Duration, now func() time.Time, do func(context.Context)) {
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	next := now()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
		}
		do(ctx)
		next = next.Add(interval)
		n := now()
		if next.Before(n) {
			next = n
		}
		t.Reset(next.Sub(n))
	}
}
