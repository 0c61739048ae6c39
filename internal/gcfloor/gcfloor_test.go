package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{4 << 20, 32 << 20, 800},   // a small live heap: 32 MB between collections
		{32 << 20, 32 << 20, 100},  // as large as the headroom: Go's default
		{500 << 20, 32 << 20, 100}, // larger: never below the default
		{1 << 10, 32 << 20, 10000}, // tiny: bounded
		{0, 32 << 20, 10000},       // nothing live yet
		{10 << 20, 0, 100},         // no headroom: the default
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
}

// current reads GOGC without changing it.
func current() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// stopRestores calls stop and checks that GOGC is back at before.
func stopRestores(t *testing.T, stop func(), before int) {
	t.Helper()
	stop()
	if got := current(); got != before {
		t.Errorf("GOGC %d after the last stop, want %d as before", got, before)
	}
}

// TestStartFollowsTheLiveHeap: after a collection over a small live heap,
// GOGC is raised to keep the headroom; stop puts back what was there.
func TestStartFollowsTheLiveHeap(t *testing.T) {
	before := unsetGOGC(t)
	stop := Start(256 << 20)
	for range 3 {
		runtime.GC()
		runtime.Gosched()
	}
	// The finalizer runs on its own goroutine: give it a moment.
	var got int
	for range 1000 {
		if got = current(); got > 100 {
			break
		}
		runtime.Gosched()
	}
	// A test binary's live heap is a few MB: 256 MB over it is far above
	// the default.
	if got <= 100 {
		t.Errorf("GOGC %d after collections over a small heap, want above 100", got)
	}
	stopRestores(t, stop, before)
}

// TestStartLeavesAUserGOGC: a GOGC the user set is kept.
func TestStartLeavesAUserGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := current()
	stop := Start(256 << 20)
	runtime.GC()
	stopRestores(t, stop, before)
}

// unsetGOGC unsets GOGC for the test (t.Setenv puts it back after: Start
// looks at whether it is set at all) and returns the GC percent in force.
func unsetGOGC(t *testing.T) int {
	t.Helper()
	t.Setenv("GOGC", "")
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	return current()
}

// TestOverlappingRuns: two runs in one process; GOGC comes back only when
// the last one stops.
func TestOverlappingRuns(t *testing.T) {
	before := unsetGOGC(t)
	stop1 := Start(256 << 20)
	stop2 := Start(256 << 20)
	stop1()
	stop1() // twice: once only
	if got := current(); got == before {
		t.Errorf("GOGC back to %d while a run goes on", got)
	}
	stopRestores(t, stop2, before)
}

// TestStartCollectsFirst: Start collects before it tunes, so a run's clock
// starts on a collected heap.
func TestStartCollectsFirst(t *testing.T) {
	unsetGOGC(t)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	stop := Start(DefaultHeadroom)
	runtime.ReadMemStats(&ms)
	stop()
	if ms.NumGC <= before {
		t.Errorf("%d collections after Start, %d before: want one more", ms.NumGC, before)
	}
}
