package testenv

import (
	"slices"
	"sync"
	"time"
)

// WakeLateness measures, until the returned function is called, how late
// this machine wakes a goroutine that sleeps 1 ms at a time, and that
// function returns the p99 of that lateness, less the millisecond a Go
// timer may take on an idle runtime (the runtime's poller waits in whole
// milliseconds: docs/ARCHITECTURE.md, Timer strategy), so that it is about
// 0 on a quiet machine. It is the part of a run's
// send lag that the machine — other processes, a shared core — answers
// for, measured during the run itself: a timing test bounds the client's
// lag by it (plus its own budget) instead of by the wall clock alone, so a
// busy machine does not fail it while a client that falls behind still
// does.
func WakeLateness() (stop func() time.Duration) {
	var (
		mu   sync.Mutex
		late []time.Duration
	)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(time.Millisecond)
		defer t.Stop()
		for {
			due := time.Now().Add(time.Millisecond)
			t.Reset(time.Millisecond)
			select {
			case <-quit:
				return
			case <-t.C:
			}
			mu.Lock()
			late = append(late, max(time.Since(due), 0))
			mu.Unlock()
		}
	}()
	return func() time.Duration {
		close(quit)
		<-done
		if len(late) == 0 {
			return 0
		}
		slices.Sort(late)
		return max(late[min(len(late)-1, len(late)*99/100)]-time.Millisecond, 0)
	}
}
