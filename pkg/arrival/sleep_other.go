//go:build !linux

package arrival

import "time"

// preciseClock is unavailable off Linux: waits use Go timers only.
type preciseClock struct{}

func newPreciseClock() preciseClock       { return preciseClock{} }
func (preciseClock) ok() bool             { return false }
func (preciseClock) sleepUntil(time.Time) {}
func lockPreciseThread()                  {}
