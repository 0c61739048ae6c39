package arrival

import (
	"testing"
	"time"
)

// TestPreciseSleepPausedBetweenReadingsIsNotEarly pauses the thread between
// the two clock readings a wait converts its due time with (as a preempted
// thread would be): the wake-up may come late by the pause, never early.
func TestPreciseSleepPausedBetweenReadingsIsNotEarly(t *testing.T) {
	pause := func() {
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
	}
	c := newPreciseClock()
	if !c.ok() {
		t.Skip("no monotonic clock_nanosleep")
	}
	c.between = pause
	for range 20 {
		due := time.Now().Add(time.Millisecond)
		c.sleepUntil(due)
		if now := time.Now(); now.Before(due) {
			t.Fatalf("woke %v before the due time", due.Sub(now))
		}
	}
}
