//go:build !linux

package arrival

import (
	"context"
	"errors"
	"time"
)

// preciseTimer is unavailable off Linux: waits use the runtime's timers.
type preciseTimer struct{}

func newPreciseTimer(context.Context) (*preciseTimer, error) {
	return nil, errors.New("no precise timer on this platform")
}
func (*preciseTimer) close()                     {}
func (*preciseTimer) sleepUntil(time.Time) error { return nil }
