package client

import (
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// zeros is an endless body that allocates nothing.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestWholeBodiesShareTheBound: 64 oversized non-streamed bodies read at
// once allocate about the shared bound in all (maxWholeInFlight), not the
// bound of one body times their number, and each is refused saying why; a
// body read into one buffer that doubled as it grew allocated 32 MiB each
// (2 GiB here), and 512 such answers held 937 MB against 256 MiB. A body
// that fits is read whole and exact, and the budget is all given back.
func TestWholeBodiesShareTheBound(t *testing.T) {
	const n = 64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, release, err := readWholeBody(zeros{})
			release()
			errs[i] = err
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "response larger than 16 MiB") && !strings.Contains(err.Error(), "hold more than 256 MiB") {
			t.Errorf("body %d: %v", i, err)
		}
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*maxWholeInFlight {
		t.Errorf("%d oversized bodies allocated %d MiB, want about the shared bound (%d MiB)", n, got>>20, maxWholeInFlight>>20)
	}
	if h := wholeInFlight.Load(); h != 0 {
		t.Errorf("%d bytes still reserved", h)
	}
	for _, size := range []int{0, 10, 4 << 10, 4<<10 + 1, 3*64<<10 + 17, maxWholeResponse} {
		body := strings.Repeat("a", size)
		raw, release, err := readWholeBody(io.LimitReader(strings.NewReader(body), int64(size)))
		if err != nil || string(raw) != body {
			t.Errorf("a body of %d bytes: %d read, %v", size, len(raw), err)
		}
		release()
		if h := wholeInFlight.Load(); h != 0 {
			t.Errorf("a body of %d bytes: %d bytes still reserved", size, h)
		}
	}
}
