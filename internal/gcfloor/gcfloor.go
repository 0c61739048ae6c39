// Package gcfloor keeps the garbage collector from running more often than
// a small heap warrants. Go collects when the heap has grown by GOGC % of
// the live heap; a load generator's live heap is small (a few MB) while it
// allocates steadily (about 2 KB per request), so at 10,000 req/s the
// default collects five times a second, and each collection takes one of a
// small machine's processors for about a millisecond — a stall the send
// lag of the requests due then shows. Start raises GOGC after each
// collection so that the next one comes no sooner than a fixed headroom of
// allocation, and never lowers it below the default: a large live heap
// is collected as Go would.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// DefaultHeadroom is the allocation between collections Start keeps at
// least: at 10,000 req/s, about one collection a second and a half instead
// of five a second, for at most this much more resident memory.
const DefaultHeadroom = 32 << 20

// maxPercent bounds GOGC (a live heap of a few hundred KB would ask more).
const maxPercent = 10000

// Percent is the GOGC that gives at least headroom bytes of allocation
// between collections over a live heap of live bytes, and never less than
// Go's default of 100.
func Percent(live, headroom uint64) int {
	if live == 0 {
		return maxPercent
	}
	p := headroom * 100 / live
	return int(min(max(p, 100), maxPercent))
}

// Start collects the garbage there is, then keeps GOGC at
// Percent(live heap, headroom), re-computed after every collection, until
// the returned function is called: called before a run's clock starts, the
// set-up's garbage (a trace read, prompts made) is not collected while the
// first requests go out. Runs in one process may overlap (tests): the
// first Start begins, the last stop puts GOGC back as it was. It does
// nothing when the user set GOGC.
func Start(headroom uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	runtime.GC()
	mu.Lock()
	defer mu.Unlock()
	if users++; users == 1 {
		running = &tuner{headroom: headroom, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
		running.was = debug.SetGCPercent(100)
		running.last = 100
		running.adjust()
		running.arm()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if users--; users == 0 {
				running.stopped.Store(true)
				debug.SetGCPercent(running.was)
				running = nil
			}
		})
	}
}

var (
	mu      sync.Mutex
	users   int
	running *tuner
)

type tuner struct {
	headroom uint64
	sample   []metrics.Sample
	was      int
	last     int // the finalizer goroutine's only
	stopped  atomic.Bool
}

// sentinel is garbage whose finalizer runs once after the collection that
// finds it: one call of adjust per collection, on the runtime's finalizer
// goroutine.
type sentinel struct{ _ [16]byte }

func (t *tuner) arm() {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		if t.stopped.Load() {
			return
		}
		t.adjust()
		t.arm()
	})
}

// adjust is called with mu held (Start) or from the finalizer, which takes
// it, so that a stop's restoring GOGC is never overwritten.
func (t *tuner) adjust() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	p := Percent(t.sample[0].Value.Uint64(), t.headroom)
	// Only a change of more than a tenth is worth telling the runtime.
	if d := p - t.last; d*10 > t.last || -d*10 > t.last {
		debug.SetGCPercent(p)
		t.last = p
	}
}
