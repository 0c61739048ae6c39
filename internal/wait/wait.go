// Package wait holds the one cancellable sleep the client (retry backoff)
// and the runner (pauses) share.
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
