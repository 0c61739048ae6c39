package arrival

import (
	"context"
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
	p, err := newPreciseTimer(context.Background())
	if err != nil {
		t.Skip("no timerfd:", err)
	}
	defer p.close()
	p.between = pause
	for range 20 {
		due := time.Now().Add(time.Millisecond)
		if err := p.sleepUntil(due); err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(due) {
			t.Fatalf("woke %v before the due time", due.Sub(now))
		}
	}
}

// TestPreciseSleepEndsWithItsContext: a wait on the precise timer ends
// when the context given to the timer is canceled, long before its due
// time, and so does every later wait.
func TestPreciseSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := newPreciseTimer(ctx)
	if err != nil {
		t.Skip("no timerfd:", err)
	}
	defer p.close()
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	start := time.Now()
	if err := p.sleepUntil(start.Add(time.Hour)); err == nil {
		t.Fatal("a canceled wait returned no error")
	}
	if err := p.sleepUntil(time.Now().Add(time.Hour)); err == nil {
		t.Fatal("a wait after the cancellation returned no error")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("canceled waits took %v", el)
	}
}
