package servermetrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"
)

// Idle waits for a server to be idle between a sweep's steps, so that one step's
// backlog does not spill into the next. Every run ends with no request of
// its own in flight; Idle then polls the server's metrics until they show
// nothing running and nothing waiting (other clients' requests count too),
// or, without metrics, waits Quiet.
type Idle struct {
	// URL is the server's metrics endpoint ("": none, wait Quiet).
	URL string
	// Quiet is the pause taken when the metrics cannot tell.
	Quiet time.Duration
	// Poll is the time between two reads of the metrics (default 100 ms).
	Poll time.Duration
	// Timeout bounds the wait; a server still busy after it is warned
	// about and the sweep goes on (default 2 min).
	Timeout time.Duration
	// Client does the requests (default: one with a 5 s timeout).
	Client *http.Client
	// Warnf receives the warnings.
	Warnf func(format string, a ...any)
}

// Wait returns once the server is idle, after Timeout, or when ctx is done
// (with ctx's error).
func (w *Idle) Wait(ctx context.Context) error {
	poll, timeout := w.Poll, w.Timeout
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	cl := w.Client
	if cl == nil {
		cl = &http.Client{Timeout: 5 * time.Second}
	}
	warn := w.Warnf
	if warn == nil {
		warn = func(string, ...any) {}
	}
	deadline := time.Now().Add(timeout)
	last := ""
	for w.URL != "" {
		s, err := w.read(ctx, cl)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			warn("sweep: server metrics %v: waiting %v between steps instead", err, w.Quiet)
			return sleep(ctx, w.Quiet)
		case math.IsNaN(s.Running) && math.IsNaN(s.Waiting):
			return sleep(ctx, w.Quiet)
		case !(s.Running > 0) && !(s.Waiting > 0):
			return nil
		}
		last = fmt.Sprintf("running %.0f, waiting %.0f", s.Running, s.Waiting)
		if time.Now().After(deadline) {
			warn("sweep: the server is still busy after %v (%s): the next step starts anyway", timeout, last)
			return nil
		}
		if err := sleep(ctx, poll); err != nil {
			return err
		}
	}
	return sleep(ctx, w.Quiet)
}

func (w *Idle) read(ctx context.Context, cl *http.Client) (Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.URL, nil)
	if err != nil {
		return Sample{}, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return Sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return Sample{}, fmt.Errorf("the metrics page answered %s", resp.Status)
	}
	return Parse(io.LimitReader(resp.Body, 64<<20))
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
