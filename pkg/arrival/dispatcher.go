package arrival

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Sender performs the request of one arrival. It is called on a worker
// goroutine, never on the dispatcher's, and must record its own send time:
// the arrival was due at Dispatcher.Start + a.At.
type Sender interface {
	Send(ctx context.Context, a Arrival)
}

// SenderFunc adapts a function to Sender.
type SenderFunc func(ctx context.Context, a Arrival)

// Send implements Sender.
func (f SenderFunc) Send(ctx context.Context, a Arrival) { f(ctx, a) }

var _ Sender = SenderFunc(nil)

// Dispatcher keeps a schedule open-loop: one goroutine waits for each
// arrival's absolute due time (Start + At) and hands it to a worker without
// ever waiting for a request to finish. MaxConcurrency bounds the requests
// in flight; arrivals that find every slot taken wait in a FIFO queue and
// keep their scheduled time, so the queueing shows in their latency.
type Dispatcher struct {
	// Start is the wall-clock instant offsets are measured from.
	Start time.Time
	// MaxConcurrency bounds requests in flight; 0 means unbounded.
	MaxConcurrency int
	// ConcurrencyRamp, when > 0 with a MaxConcurrency, grows the bound
	// linearly from 1 at Start to MaxConcurrency at Start +
	// ConcurrencyRamp, one slot at a time; arrivals wait for a slot as
	// they do at the full bound.
	ConcurrencyRamp time.Duration
	// Sender performs the requests.
	Sender Sender
	// Sleep waits until an absolute instant or the context ends; nil uses
	// the precise sleeper of the platform (see SleepUntil).
	Sleep func(ctx context.Context, t time.Time) error
	// OnOffer, when set, is told of every arrival the schedule offers, at
	// its due time (or as soon after as the client gets to it): by the
	// worker about to send it when it was handed out ahead of time (see
	// handOutLead), by the dispatcher otherwise, right after handing it to
	// a worker or to the wait queue. It may be called from several
	// goroutines at once and must return quickly. An arrival never reached
	// because the run was stopped is not offered.
	OnOffer func(a *Arrival)

	// MaxUnstarted bounds the arrivals handed to workers that have not yet
	// started their request (0: DefaultMaxUnstarted). A client short of
	// CPU falls behind its schedule; past this bound the dispatcher waits
	// for its workers instead of starting a goroutine per late arrival, so
	// memory stays bounded and the arrivals it has not reached stay in the
	// schedule. Their send lag, measured from their due time, says how
	// late they were; DispatchStats.MaxBehind and Waits say so too.
	MaxUnstarted int
	// Unwritten, when set, counts the requests the Sender has started but
	// not yet written to the server; the dispatcher holds these within
	// MaxUnstarted too (with the arrivals not yet started), so that a
	// client short of CPU does not pile up requests that wait for CPU.
	// Requests written and waiting for the server do not count: the
	// schedule stays open-loop whatever the server does.
	Unwritten func() int64
	// Go starts the dispatcher's goroutines (the schedule's, the workers',
	// the ramp's); nil starts them plainly. The runner passes one that
	// traps a panic into the run's error (internal/safe), so a bug in a
	// worker stops the run with its stack instead of crashing it.
	Go func(f func())

	dispatched atomic.Int64
	// next is the offset of the arrival the dispatcher holds and has not
	// handed out yet (or, until it takes the next one from the schedule,
	// of the one it has just handed out), plus one (0: none), for Behind.
	next      atomic.Int64
	queued    atomic.Int64
	inFlight  atomic.Int64
	unstarted atomic.Int64
}

// goroutine starts f with Go, or plainly.
func (d *Dispatcher) goroutine(f func()) {
	if d.Go != nil {
		d.Go(f)
		return
	}
	go f()
}

// DefaultMaxUnstarted is the default Dispatcher.MaxUnstarted: about 10 MB
// of goroutines that the Go scheduler has not yet run. A client that keeps
// up has a handful at most.
const DefaultMaxUnstarted = 1024

// An arrival due within handOutLead + handOutBatch is handed to an idle
// worker at once, and the worker waits for its due time on a timer of its
// own, then sends it: the wake-up at the due time is the sender's, with no
// hand-off between goroutines after it (which costs a thread wake-up of
// its own). The dispatcher wakes handOutLead before a due time and hands
// out every arrival due within the next handOutBatch in one go. Arrivals
// that find no idle worker are handed out at their due time, as they
// would be without a lead: to a new worker or, every slot taken, to the
// wait queue.
const (
	handOutLead  = 2 * time.Millisecond
	handOutBatch = time.Millisecond
)

// DispatchStats reports how the schedule was kept.
type DispatchStats struct {
	Dispatched  int64 // arrivals handed to a worker
	Queued      int64 // arrivals that waited for a concurrency slot
	MaxQueue    int   // longest wait queue seen
	NotSent     int64 // arrivals dropped because the run was stopped
	MaxInFlight int64
	// MaxBehind is how late the dispatcher handed out its latest arrival:
	// the largest delay between an arrival's due time and the moment it
	// was handed to a worker (or to the wait queue). Waits counts the times
	// the dispatcher waited for its workers to start the arrivals already
	// handed out (MaxUnstarted): the client itself could not keep up.
	MaxBehind time.Duration
	Waits     int64
}

// InFlight returns the number of requests being sent now.
func (d *Dispatcher) InFlight() int64 { return d.inFlight.Load() }

// Unstarted returns the number of arrivals handed to a worker whose
// request has not started yet (see MaxUnstarted).
func (d *Dispatcher) Unstarted() int64 { return d.unstarted.Load() }

// Dispatched returns the number of arrivals handed to a sender so far.
func (d *Dispatcher) Dispatched() int64 { return d.dispatched.Load() }

// Behind returns how far behind its schedule the dispatcher is at now: how
// late the arrival it holds, due and not yet handed out, is (0 when it
// holds none, or one not yet due). A client short of CPU, or one that
// waits for its workers (MaxUnstarted), falls further behind at every
// look; one that keeps up is at 0 but for a moment's delay. Safe to call
// from any goroutine.
func (d *Dispatcher) Behind(now time.Time) time.Duration {
	at := d.next.Load()
	if at == 0 {
		return 0
	}
	return max(now.Sub(d.Start.Add(time.Duration(at-1))), 0)
}

// Run keeps s until it ends or dispatchCtx is done, then waits for every
// request already handed out to return. Requests run with reqCtx, so a run
// can stop dispatching (dispatchCtx) yet let requests in flight drain.
func (d *Dispatcher) Run(dispatchCtx, reqCtx context.Context, s Schedule) DispatchStats {
	maxUnstarted := d.MaxUnstarted
	if maxUnstarted <= 0 {
		maxUnstarted = DefaultMaxUnstarted
	}
	p := &pool{sender: d.Sender, ctx: reqCtx, stop: dispatchCtx, max: d.MaxConcurrency, work: make(chan handout, 256), d: d,
		maxUnstarted: int64(maxUnstarted), started: make(chan struct{}, 1)}
	p.startRamp()
	done := make(chan bool)
	var behind time.Duration
	// The schedule is kept by one goroutine of its own (see sleep.go for
	// how the default sleeper waits).
	p.d.goroutine(func() {
		sleep := d.Sleep
		if sleep == nil {
			sl := newSleeper(dispatchCtx)
			defer sl.close()
			sleep = sl.sleepUntil
		}
		// keep goes through the schedule; it reports whether dispatching
		// was stopped first.
		keep := func() (stopped bool) {
			defer d.next.Store(0)
			for a := range s {
				if dispatchCtx.Err() != nil {
					return true
				}
				d.next.Store(int64(a.At) + 1)
				due := d.Start.Add(a.At)
				if time.Until(due) > handOutLead+handOutBatch && sleep(dispatchCtx, due.Add(-handOutLead)) != nil {
					return true
				}
				if time.Until(due) > 0 && p.handEarly(a) {
					d.next.Store(0)
					continue // its worker offers it at its due time
				}
				if time.Until(due) > 0 && sleep(dispatchCtx, due) != nil {
					return true
				}
				if !p.waitForWorkers() {
					return true
				}
				behind = max(behind, time.Since(due))
				p.dispatch(a)
				// next keeps a's offset until the schedule yields the
				// next arrival: a look in between (Behind) sees how late a
				// was, not 0 — one look at 0 would hide a whole backlog.
				if d.OnOffer != nil {
					d.OnOffer(&a)
				}
			}
			return false
		}
		done <- keep()
	})
	st := p.finish(<-done)
	st.MaxBehind = behind
	return st
}

// pool is a set of reusable worker goroutines fed by the dispatcher.
type pool struct {
	sender Sender
	ctx    context.Context // requests
	stop   context.Context // dispatching: once done, queued arrivals are not sent
	max    int
	work   chan handout
	d      *Dispatcher

	mu       sync.Mutex
	idle     int
	live     int
	queue    fifo
	maxQueue int
	queued   int64
	notSent  int64
	stopping bool
	wg       sync.WaitGroup // one per arrival handed out
	workers  sync.WaitGroup
	maxIn    atomic.Int64

	rampStop chan struct{} // closed when the run's arrivals are done
	rampDone sync.WaitGroup

	// d.unstarted counts the arrivals handed to workers whose Send has
	// not begun; past maxUnstarted the dispatcher waits for started, which
	// a worker signals when it brings the count back under the bound.
	maxUnstarted int64
	started      chan struct{}
	waits        int64
}

// waitForWorkers returns once fewer than maxUnstarted arrivals wait for
// their worker to start or their request to be written, or false when
// dispatching is stopped meanwhile.
func (p *pool) waitForWorkers() bool {
	if !p.behind() {
		return true
	}
	p.waits++
	poll := time.NewTimer(time.Hour)
	defer poll.Stop()
	for p.behind() {
		// Workers signal started; writes are not signaled: look again soon.
		poll.Reset(200 * time.Microsecond)
		select {
		case <-p.started:
		case <-poll.C:
		case <-p.stop.Done():
			return false
		}
	}
	return true
}

// behind reports whether maxUnstarted arrivals are handed out and not yet
// started, or started and not yet written.
func (p *pool) behind() bool {
	n := p.d.unstarted.Load()
	if n < p.maxUnstarted && p.d.Unwritten != nil {
		n += p.d.Unwritten()
	}
	return n >= p.maxUnstarted
}

// begin marks an arrival handed out by dispatch as started.
func (p *pool) begin() {
	if p.d.unstarted.Add(-1) == p.maxUnstarted-1 {
		select {
		case p.started <- struct{}{}:
		default:
		}
	}
}

// limit is the concurrency bound now: MaxConcurrency, or during a
// ConcurrencyRamp the part of it the ramp has reached (at least 1).
func (p *pool) limit() int {
	r := p.d.ConcurrencyRamp
	if r <= 0 || p.max <= 1 {
		return p.max
	}
	el := time.Since(p.d.Start)
	switch {
	case el >= r:
		return p.max
	case el <= 0:
		return 1
	}
	return 1 + int(int64(p.max-1)*int64(el)/int64(r))
}

// startRamp starts the goroutine that, during a ConcurrencyRamp, hands
// waiting arrivals the slots the growing bound adds, each at the instant it
// is added.
func (p *pool) startRamp() {
	r := p.d.ConcurrencyRamp
	if r <= 0 || p.max <= 1 {
		return
	}
	p.rampStop = make(chan struct{})
	p.rampDone.Add(1)
	p.d.goroutine(func() {
		defer p.rampDone.Done()
		for k := 1; k < p.max; k++ {
			t := time.NewTimer(time.Until(p.d.Start.Add(time.Duration(int64(r) * int64(k) / int64(p.max-1)))))
			select {
			case <-t.C:
			case <-p.rampStop:
				t.Stop()
				return
			}
			p.mu.Lock()
			for p.stop.Err() == nil && p.queue.len() > 0 && p.live < p.limit() {
				a, _ := p.queue.pop()
				p.live++
				p.workers.Add(1)
				p.d.goroutine(func() { p.worker(a) })
			}
			p.mu.Unlock()
		}
	})
}

// handout is an arrival given to an idle worker; early: before its due
// time, which the worker waits for and offers it at.
type handout struct {
	a     Arrival
	early bool
}

// handEarly hands a, not yet due, to an idle worker, if there is one and
// the client is not behind; it reports whether it did.
func (p *pool) handEarly(a Arrival) bool {
	if p.behind() {
		return false
	}
	p.mu.Lock()
	if p.idle == 0 {
		p.mu.Unlock()
		return false
	}
	p.idle--
	p.mu.Unlock()
	p.d.dispatched.Add(1)
	p.wg.Add(1)
	p.d.unstarted.Add(1)
	p.work <- handout{a, true}
	return true
}

func (p *pool) dispatch(a Arrival) {
	p.d.dispatched.Add(1)
	p.wg.Add(1)
	p.mu.Lock()
	switch {
	case p.idle > 0:
		p.idle--
		p.mu.Unlock()
		p.d.unstarted.Add(1)
		p.work <- handout{a: a}
	case p.max <= 0 || p.live < p.limit():
		p.live++
		p.mu.Unlock()
		p.workers.Add(1)
		p.d.unstarted.Add(1)
		p.d.goroutine(func() { p.begin(); p.worker(a) })
	default:
		p.queue.push(a)
		p.queued++
		p.d.queued.Add(1)
		p.maxQueue = max(p.maxQueue, p.queue.len())
		p.mu.Unlock()
	}
}

func (p *pool) worker(a Arrival) {
	defer p.workers.Done()
	var early bool // a was handed out ahead of its due time
	var sl *sleeper
	defer func() {
		if sl != nil {
			sl.close()
		}
	}()
	for {
		send := true
		if early {
			if sl == nil && p.d.Sleep == nil {
				sl = newSleeper(p.stop)
			}
			send = p.waitDue(sl, &a)
		}
		if send {
			n := p.d.inFlight.Add(1)
			for m := p.maxIn.Load(); n > m && !p.maxIn.CompareAndSwap(m, n); m = p.maxIn.Load() {
			}
			p.sender.Send(p.ctx, a)
			p.d.inFlight.Add(-1)
		}
		p.wg.Done()
		early = false

		p.mu.Lock()
		if p.stop.Err() != nil {
			p.dropQueued()
		} else if next, ok := p.queue.pop(); ok {
			p.mu.Unlock()
			a = next
			continue
		}
		if p.stopping {
			p.live--
			p.mu.Unlock()
			return
		}
		p.idle++
		p.mu.Unlock()
		h, ok := <-p.work
		if !ok {
			return
		}
		a, early = h.a, h.early
		p.begin()
	}
}

// waitDue waits for a's due time on sl (the Dispatcher's Sleep when set)
// and offers it; it reports false, counting a as not sent, if dispatching
// stopped first.
func (p *pool) waitDue(sl *sleeper, a *Arrival) bool {
	due := p.d.Start.Add(a.At)
	var err error
	if p.d.Sleep != nil {
		err = p.d.Sleep(p.stop, due)
	} else {
		err = sl.sleepUntil(p.stop, due) // at once if already due
	}
	if err != nil || p.stop.Err() != nil {
		p.mu.Lock()
		p.notSent++
		p.mu.Unlock()
		return false
	}
	if p.d.OnOffer != nil {
		p.d.OnOffer(a) // the worker's own a: no copy to the heap per offer
	}
	return true
}

// finish waits for every handed-out arrival; when stopped, arrivals still
// waiting for a slot are dropped and counted instead.
func (p *pool) finish(stopped bool) DispatchStats {
	p.mu.Lock()
	if stopped {
		p.dropQueued()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.rampStop != nil {
		close(p.rampStop)
		p.rampDone.Wait()
	}
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
	close(p.work)
	p.workers.Wait()
	return DispatchStats{
		Dispatched:  p.d.dispatched.Load() - p.notSent,
		Queued:      p.queued,
		MaxQueue:    p.maxQueue,
		NotSent:     p.notSent,
		MaxInFlight: p.maxIn.Load(),
		Waits:       p.waits,
	}
}

// dropQueued discards the arrivals waiting for a slot, counting them as not
// sent. p.mu must be held.
func (p *pool) dropQueued() {
	for {
		if _, ok := p.queue.pop(); !ok {
			return
		}
		p.notSent++
		p.wg.Done()
	}
}

// fifo is an unbounded ring-buffer queue of arrivals.
type fifo struct {
	buf        []Arrival
	head, size int
}

func (q *fifo) len() int { return q.size }

func (q *fifo) push(a Arrival) {
	if q.size == len(q.buf) {
		nb := make([]Arrival, max(16, 2*len(q.buf)))
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = a
	q.size++
}

func (q *fifo) pop() (Arrival, bool) {
	if q.size == 0 {
		return Arrival{}, false
	}
	a := q.buf[q.head]
	q.buf[q.head] = Arrival{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return a, true
}
