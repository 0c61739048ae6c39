package arrival

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestPreciseSleepPausedBetweenReadingsIsNotEarly pauses the thread between
// the clock readings that calibrate the timer's conversion to the kernel's
// clock (as a preempted thread would be): its waits may come late by the
// pause, never early.
func TestPreciseSleepPausedBetweenReadingsIsNotEarly(t *testing.T) {
	pause := func() {
		for end := time.Now().Add(200 * time.Microsecond); time.Now().Before(end); {
		}
	}
	p, err := newPreciseTimerWith(context.Background(), pause)
	if err != nil {
		t.Skip("no timerfd:", err)
	}
	defer p.close()
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

// TestPreciseSleepKeepsTime: waits on the precise timer, each due 50 µs to
// 2 ms ahead, are never early and mostly on time. The bound on lateness is
// wide (5 ms at p90) for a busy machine; the benchmark measures it tightly.
func TestPreciseSleepKeepsTime(t *testing.T) {
	p, err := newPreciseTimer(context.Background())
	if err != nil {
		t.Skip("no timerfd:", err)
	}
	defer p.close()
	var lates []time.Duration
	for i := range 200 {
		due := time.Now().Add(50*time.Microsecond + time.Duration(i%40)*50*time.Microsecond)
		if err := p.sleepUntil(due); err != nil {
			t.Fatal(err)
		}
		late := time.Since(due)
		if late < 0 {
			t.Fatalf("wait %d woke %v early", i, -late)
		}
		lates = append(lates, late)
	}
	slices.Sort(lates)
	if p90 := lates[len(lates)*9/10]; p90 > 5*time.Millisecond {
		t.Errorf("p90 lateness %v", p90)
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
