package arrival

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// goSleep waits on the Go clock, which synctest fakes.
func goSleep(ctx context.Context, t time.Time) error {
	select {
	case <-time.After(time.Until(t)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func fixed(ats ...time.Duration) Schedule {
	return func(yield func(Arrival) bool) {
		for i, at := range ats {
			if !yield(Arrival{Index: int64(i), At: at, Burst: int64(i)}) {
				return
			}
		}
	}
}

type sent struct {
	index   int64
	elapsed time.Duration
}

// recorder is a Sender that records when each arrival reached it and holds
// every request for hold.
type recorder struct {
	start    time.Time
	hold     time.Duration
	mu       sync.Mutex
	sent     []sent
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

func (r *recorder) Send(ctx context.Context, a Arrival) {
	n := r.inFlight.Add(1)
	for m := r.maxIn.Load(); n > m && !r.maxIn.CompareAndSwap(m, n); m = r.maxIn.Load() {
	}
	r.mu.Lock()
	r.sent = append(r.sent, sent{a.Index, time.Since(r.start)})
	r.mu.Unlock()
	select {
	case <-time.After(r.hold):
	case <-ctx.Done():
	}
	r.inFlight.Add(-1)
}

func TestDispatcherSendsAtDueTimesWithoutWaitingForRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: 10 * time.Second}
		d := &Dispatcher{Start: start, Sender: rec, Sleep: goSleep}
		st := d.Run(t.Context(), t.Context(), fixed(0, 100*time.Millisecond, 100*time.Millisecond, 250*time.Millisecond, 3*time.Second))
		if st.Dispatched != 5 || st.NotSent != 0 || st.Queued != 0 {
			t.Fatalf("stats %+v", st)
		}
		want := []time.Duration{0, 100 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 3 * time.Second}
		slices.SortFunc(rec.sent, func(a, b sent) int { return int(a.index - b.index) })
		for i, s := range rec.sent {
			// In a synctest bubble time only moves when every goroutine
			// waits, so an open-loop dispatcher sends exactly on time even
			// though every request takes 10 s.
			if s.elapsed != want[i] {
				t.Errorf("arrival %d sent at %v, want %v", s.index, s.elapsed, want[i])
			}
		}
		if got := rec.maxIn.Load(); got != 5 {
			t.Errorf("max in flight %d, want 5 (open loop)", got)
		}
	})
}

func TestDispatcherMaxConcurrencyQueuesInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: time.Second}
		d := &Dispatcher{Start: start, MaxConcurrency: 2, Sender: rec, Sleep: goSleep}
		// Six arrivals at once, two slots, one second each: they go out in
		// pairs at 0, 1 and 2 s, in schedule order.
		st := d.Run(t.Context(), t.Context(), fixed(0, 0, 0, 0, 0, 0))
		if st.Dispatched != 6 || st.Queued != 4 || st.MaxQueue != 4 {
			t.Fatalf("stats %+v, want 6 dispatched, 4 queued, max queue 4", st)
		}
		if got := rec.maxIn.Load(); got != 2 {
			t.Errorf("max in flight %d, want 2", got)
		}
		var order []int64
		for _, s := range rec.sent {
			order = append(order, s.index)
			if want := time.Duration(s.index/2) * time.Second; s.elapsed != want {
				t.Errorf("arrival %d started at %v, want %v", s.index, s.elapsed, want)
			}
		}
		if !slices.IsSortedFunc(rec.sent, func(a, b sent) int { return int(a.elapsed - b.elapsed) }) {
			t.Errorf("queued arrivals started out of order: %v", order)
		}
	})
}

func TestDispatcherStopDropsQueuedAndCountsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: time.Hour}
		ctx, stop := context.WithCancel(t.Context())
		reqCtx, cancelReqs := context.WithCancel(t.Context())
		d := &Dispatcher{Start: start, MaxConcurrency: 1, Sender: rec, Sleep: goSleep}
		go func() {
			time.Sleep(1500 * time.Millisecond)
			stop()       // stop dispatching
			cancelReqs() // and cancel the request in flight
		}()
		st := d.Run(ctx, reqCtx, fixed(0, 500*time.Millisecond, time.Second, 2*time.Second, 3*time.Second))
		// Index 0 runs; 1 and 2 were due and queued behind it; 3 and 4 were
		// never due.
		if st.Dispatched != 1 || st.NotSent != 2 {
			t.Fatalf("stats %+v, want 1 dispatched and 2 queued arrivals not sent", st)
		}
		if len(rec.sent) != 1 || rec.sent[0].index != 0 {
			t.Fatalf("sent %+v", rec.sent)
		}
	})
}

func TestDispatcherSpacedArrivalsDoNotOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: 10 * time.Millisecond}
		d := &Dispatcher{Start: start, Sender: rec, Sleep: goSleep}
		ats := make([]time.Duration, 200)
		for i := range ats {
			ats[i] = time.Duration(i) * 50 * time.Millisecond
		}
		st := d.Run(t.Context(), t.Context(), fixed(ats...))
		if st.Dispatched != 200 || st.MaxInFlight != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}

func TestPreciseSleepWakesAfterDueTime(t *testing.T) {
	// The precise sleeper must never return before its due time (an early
	// send would make lag negative and hide lateness elsewhere).
	for range 50 {
		due := time.Now().Add(300 * time.Microsecond)
		if err := SleepUntil(context.Background(), due); err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(due) {
			t.Fatalf("woke %v before the due time", due.Sub(now))
		}
	}
	// A canceled context interrupts a long wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SleepUntil(ctx, time.Now().Add(time.Hour)); err == nil {
		t.Fatal("a canceled context did not interrupt an hour's sleep")
	}
}

func TestDispatcherStopAfterScheduleEndDropsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: 10 * time.Second}
		ctx, stop := context.WithCancel(t.Context())
		d := &Dispatcher{Start: start, MaxConcurrency: 1, Sender: rec, Sleep: goSleep}
		go func() {
			time.Sleep(5 * time.Second) // the schedule ended at 0 s; one request runs, three wait
			stop()
		}()
		st := d.Run(ctx, t.Context(), fixed(0, 0, 0, 0))
		if st.Dispatched != 1 || st.NotSent != 3 {
			t.Fatalf("stats %+v, want 1 sent and 3 dropped when stopped during the drain", st)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Errorf("run returned after %v, want 10 s (the request in flight completes)", got)
		}
	})
}

// TestDispatcherOffersEveryArrivalAtItsTime: OnOffer hears of each arrival
// in schedule order at its due time, whether it went to a worker or to the
// wait queue, and not of the arrivals a stop kept from being reached.
func TestDispatcherOffersEveryArrivalAtItsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: 10 * time.Second}
		ctx, stop := context.WithCancel(t.Context())
		type offer struct {
			index     int64
			at, since time.Duration
		}
		var offers []offer // the dispatcher's goroutine only
		d := &Dispatcher{Start: start, MaxConcurrency: 1, Sender: rec, Sleep: goSleep,
			OnOffer: func(a *Arrival) { offers = append(offers, offer{a.Index, a.At, time.Since(start)}) }}
		go func() {
			time.Sleep(2 * time.Second) // before the arrival due at 3 s
			stop()
		}()
		st := d.Run(ctx, t.Context(), fixed(0, 500*time.Millisecond, 500*time.Millisecond, time.Second, 3*time.Second))
		if len(offers) != 4 {
			t.Fatalf("%d offers %+v, want the 4 arrivals due before the stop", len(offers), offers)
		}
		for i, o := range offers {
			if o.index != int64(i) || o.since != o.at {
				t.Errorf("offer %d: %+v, want arrival %d at its due time", i, o, i)
			}
		}
		if st.Dispatched != 1 || st.NotSent != 3 {
			t.Errorf("stats %+v: 1 sent, 3 queued then dropped", st)
		}
	})
}

// TestDispatcherConcurrencyRamp: with ConcurrencyRamp the bound grows from
// 1 to MaxConcurrency one slot at a time, each slot at its instant: with
// every request held long, the first four of a burst start at 0, 1, 2 and
// 3 s (a 3 s ramp to 4), the rest wait, keeping their order, until a slot
// frees; nothing more than the bound is ever in flight.
func TestDispatcherConcurrencyRamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: 100 * time.Second}
		d := &Dispatcher{Start: start, MaxConcurrency: 4, ConcurrencyRamp: 3 * time.Second, Sender: rec, Sleep: goSleep}
		ats := make([]time.Duration, 8)
		ats[7] = 1500 * time.Millisecond // due while the bound is 2, and both slots are taken
		st := d.Run(t.Context(), t.Context(), fixed(ats...))
		if st.Dispatched != 8 || st.NotSent != 0 || st.MaxInFlight != 4 || rec.maxIn.Load() != 4 {
			t.Fatalf("stats %+v, max in flight seen %d", st, rec.maxIn.Load())
		}
		want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 100 * time.Second, 101 * time.Second, 102 * time.Second, 103 * time.Second}
		for i, s := range rec.sent {
			if s.index != int64(i) || s.elapsed != want[i] {
				t.Errorf("send %d: arrival %d at %v, want arrival %d at %v", i, s.index, s.elapsed, i, want[i])
			}
		}
	})
	// Without a bound the ramp does nothing.
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		rec := &recorder{start: start, hold: time.Second}
		d := &Dispatcher{Start: start, ConcurrencyRamp: 3 * time.Second, Sender: rec, Sleep: goSleep}
		if st := d.Run(t.Context(), t.Context(), fixed(0, 0, 0)); st.MaxInFlight != 3 || st.Queued != 0 {
			t.Errorf("unbounded with a ramp: %+v", st)
		}
	})
}

// TestDispatcherBoundsUnstartedWorkers: a client short of CPU (here one
// processor, whose only goroutine running is the dispatcher's while
// arrivals are due) hands out at most MaxUnstarted arrivals its workers
// have not started; then it waits for them, and says it did. Without the
// bound, every late arrival gets a goroutine of its own at once.
func TestDispatcherBoundsUnstartedWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 200
	ats := make([]time.Duration, n) // all due at once: the dispatcher is behind from the start
	for _, tc := range []struct {
		name  string
		bound int
	}{{"bound 4", 4}, {"default bound", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Dispatcher{Start: time.Now().Add(-time.Second), MaxUnstarted: tc.bound}
			var seen atomic.Int64 // the most unstarted arrivals a request saw
			var count atomic.Int64
			d.Sender = SenderFunc(func(ctx context.Context, a Arrival) {
				u := d.Unstarted()
				for m := seen.Load(); u > m && !seen.CompareAndSwap(m, u); m = seen.Load() {
				}
				count.Add(1)
			})
			st := d.Run(context.Background(), context.Background(), fixed(ats...))
			if count.Load() != n || st.Dispatched != n {
				t.Fatalf("sent %d, dispatched %d of %d", count.Load(), st.Dispatched, n)
			}
			if st.MaxBehind < time.Second {
				t.Errorf("MaxBehind %v, want at least the 1 s the schedule started before the run", st.MaxBehind)
			}
			if tc.bound > 0 {
				if seen.Load() > int64(tc.bound) || st.Waits == 0 {
					t.Errorf("with MaxUnstarted %d: up to %d unstarted, %d waits", tc.bound, seen.Load(), st.Waits)
				}
			} else if seen.Load() <= 4 || st.Waits != 0 {
				t.Errorf("default bound: up to %d unstarted, %d waits; want more than 4 and none (the bound above is what holds them)", seen.Load(), st.Waits)
			}
		})
	}
}

// TestDispatcherWaitsForUnwrittenRequests: requests started but not yet
// written (Unwritten) hold the dispatcher within MaxUnstarted as arrivals
// not yet started do, and it goes on once they are written.
func TestDispatcherWaitsForUnwrittenRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var unwritten, sent atomic.Int64
		unwritten.Store(4)
		d := &Dispatcher{Start: time.Now(), Sleep: goSleep, MaxUnstarted: 4, Unwritten: unwritten.Load,
			Sender: SenderFunc(func(context.Context, Arrival) { sent.Add(1) })}
		stats := make(chan DispatchStats)
		go func() { stats <- d.Run(context.Background(), context.Background(), fixed(0, 0, 0)) }()
		time.Sleep(time.Second)
		if n := sent.Load(); n != 0 {
			t.Fatalf("%d requests sent while %d were unwritten (bound 4)", n, unwritten.Load())
		}
		unwritten.Store(0)
		st := <-stats
		if sent.Load() != 3 || st.Waits != 1 || st.MaxBehind < time.Second {
			t.Errorf("sent %d, waits %d, max behind %v; want 3, 1, at least 1 s", sent.Load(), st.Waits, st.MaxBehind)
		}
	})
}

// TestDispatcherHandsOutEarlyAndSendsOnTime: an arrival due within the
// hand-out lead goes to an idle worker ahead of its due time (it counts as
// dispatched before anything is sent), and the worker sends and offers it
// exactly at its due time. One that finds no idle worker is handed out at
// its due time. A stop while a worker waits for its arrival's due time
// leaves it not sent and not offered.
func TestDispatcherHandsOutEarlyAndSendsOnTime(t *testing.T) {
	ats := []time.Duration{0, 100 * time.Millisecond, 100*time.Millisecond + 500*time.Microsecond, 101 * time.Millisecond, 200 * time.Millisecond}
	for _, stopAt := range []time.Duration{0, 99 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			rec := &recorder{start: start, hold: time.Millisecond}
			ctx, stop := context.WithCancel(t.Context())
			var mu sync.Mutex
			offered := map[int64]time.Duration{}
			d := &Dispatcher{Start: start, Sender: rec, Sleep: goSleep,
				OnOffer: func(a *Arrival) {
					mu.Lock()
					offered[a.Index] = time.Since(start)
					mu.Unlock()
				}}
			var dispatched, sent int64
			go func() {
				time.Sleep(99 * time.Millisecond) // the lead began at 98 ms
				dispatched = d.Dispatched()
				rec.mu.Lock()
				sent = int64(len(rec.sent))
				rec.mu.Unlock()
				if stopAt > 0 {
					stop()
				}
			}()
			st := d.Run(ctx, t.Context(), fixed(ats...))
			// At 99 ms arrival 1 is with the worker that sent arrival 0
			// (idle since 1 ms); arrival 2 has no idle worker to go to.
			if dispatched != 2 || sent != 1 {
				t.Fatalf("at 99 ms: %d dispatched, %d sent; want 2 and 1", dispatched, sent)
			}
			if stopAt > 0 {
				if st.Dispatched != 1 || st.NotSent != 1 || len(rec.sent) != 1 || len(offered) != 1 {
					t.Fatalf("stopped at 99 ms: stats %+v, %d sent, offers %v; want 1 sent, 1 not sent, 1 offered", st, len(rec.sent), offered)
				}
				return
			}
			if st.Dispatched != 5 || st.NotSent != 0 || len(rec.sent) != 5 {
				t.Fatalf("stats %+v, %d sent", st, len(rec.sent))
			}
			for _, s := range rec.sent {
				if want := ats[s.index]; s.elapsed != want || offered[s.index] != want {
					t.Errorf("arrival %d sent at %v, offered at %v; want both at %v", s.index, s.elapsed, offered[s.index], want)
				}
			}
		})
	}
}

// TestDispatcherBehind: Behind is 0 while the dispatcher keeps up and
// grows with the wall clock while it cannot hand out an arrival already due
// (here: its one request started waits to be written, MaxUnstarted 1); it
// is 0 again once it has caught up and after the schedule's end.
func TestDispatcherBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var blocked atomic.Bool // the first request stays unwritten
		d := &Dispatcher{Start: start, Sleep: goSleep, MaxUnstarted: 1,
			Unwritten: func() int64 {
				if blocked.Load() {
					return 1
				}
				return 0
			},
			Sender: SenderFunc(func(_ context.Context, a Arrival) { blocked.Store(blocked.Load() || a.Index == 0) })}
		if b := d.Behind(time.Now()); b != 0 {
			t.Errorf("behind %v before the run", b)
		}
		done := make(chan DispatchStats)
		go func() {
			done <- d.Run(context.Background(), context.Background(), fixed(0, 10*time.Millisecond, 20*time.Millisecond, time.Second))
		}()
		for _, at := range []time.Duration{5 * time.Millisecond, 110 * time.Millisecond, 510 * time.Millisecond} {
			time.Sleep(time.Until(start.Add(at)))
			synctest.Wait()
			// The arrival due at 10 ms waits: the request before it is not
			// written.
			if want := max(at-10*time.Millisecond, 0); d.Behind(time.Now()) != want {
				t.Errorf("at %v: behind %v, want %v", at, d.Behind(time.Now()), want)
			}
		}
		blocked.Store(false)
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if b := d.Behind(time.Now()); b != 0 {
			t.Errorf("behind %v once caught up (the next arrival is due at 1 s)", b)
		}
		st := <-done
		if b := d.Behind(time.Now()); b != 0 || st.Dispatched != 4 || st.Waits == 0 {
			t.Errorf("after the run: behind %v, %d dispatched, %d waits", b, st.Dispatched, st.Waits)
		}
	})
}

// TestDispatcherBehindHasNoGapsBetweenArrivals: a dispatcher behind on
// every arrival is never seen at 0 between handing one out and taking the
// next from the schedule — the monitor keeps the least of its looks over a
// span, so one such look would hide the whole backlog. Looks race the
// dispatcher here on purpose (real time, one goroutine looking as fast as
// it can).
func TestDispatcherBehindHasNoGapsBetweenArrivals(t *testing.T) {
	const n = 20000
	ats := make([]time.Duration, n) // all due at the start, a second ago
	d := &Dispatcher{Start: time.Now().Add(-time.Second), Sleep: goSleep,
		Sender:  SenderFunc(func(context.Context, Arrival) {}),
		OnOffer: func(*Arrival) { runtime.Gosched() }}
	done := make(chan struct{})
	var zeros, looks int
	go func() {
		defer close(done)
		seen := false
		for d.Dispatched() < n {
			b := d.Behind(time.Now())
			looks++
			if b > 0 {
				seen = true
			} else if seen && d.Dispatched() < n {
				zeros++ // the schedule still had arrivals to hand out
			}
		}
	}()
	d.Run(context.Background(), context.Background(), fixed(ats...))
	<-done
	if zeros > 0 {
		t.Errorf("%d of %d looks saw the dispatcher at 0 while it was a second behind", zeros, looks)
	}
}
