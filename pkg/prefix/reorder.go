package prefix

import "container/heap"

// DefaultReorderWindow is how many requests Reorder holds to put a trace
// in time order.
const DefaultReorderWindow = 1 << 16

// Reorder puts a stream of requests in time order (equal times in the
// order they came) through a window of held requests: a request earlier
// than one already handed on — more than the window late — is handed on at
// once and counted in Late. Its memory is the window's requests.
type Reorder struct {
	fn     func(*Request) error
	window int
	h      reqHeap
	seq    int64
	out    bool // something was handed on
	last   float64
	// Late counts the requests handed on out of time order.
	Late int
}

// NewReorder returns a reorder of window requests (≤ 0: the default)
// handing them to fn.
func NewReorder(window int, fn func(*Request) error) *Reorder {
	if window <= 0 {
		window = DefaultReorderWindow
	}
	return &Reorder{fn: fn, window: window}
}

// Add takes one request.
func (r *Reorder) Add(q *Request) error {
	if r.out && q.T < r.last {
		r.Late++
		return r.fn(q)
	}
	heap.Push(&r.h, held{q, r.seq})
	r.seq++
	if len(r.h) > r.window {
		return r.pop()
	}
	return nil
}

func (r *Reorder) pop() error {
	x := heap.Pop(&r.h).(held)
	r.out, r.last = true, x.q.T
	return r.fn(x.q)
}

// Flush hands on every held request.
func (r *Reorder) Flush() error {
	for len(r.h) > 0 {
		if err := r.pop(); err != nil {
			return err
		}
	}
	return nil
}

type held struct {
	q   *Request
	seq int64
}

type reqHeap []held

func (h reqHeap) Len() int { return len(h) }
func (h reqHeap) Less(i, j int) bool {
	if h[i].q.T != h[j].q.T {
		return h[i].q.T < h[j].q.T
	}
	return h[i].seq < h[j].seq
}
func (h reqHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *reqHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *reqHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = held{}
	*h = old[:len(old)-1]
	return x
}
