package runner

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// progress draws a one-line progress bar on a terminal.
type progress struct {
	quit chan struct{}
	done chan struct{}
}

func startProgress(w io.Writer, total int64, finished *atomic.Int64, d *arrival.Dispatcher) *progress {
	p := &progress{quit: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	draw := func() {
		n := finished.Load()
		frac := float64(n) / float64(max(total, 1))
		width := 30
		fill := int(frac * float64(width))
		eta := "--:--"
		if n > 0 && n < total {
			left := time.Duration(float64(time.Since(start)) / frac * (1 - frac))
			eta = fmt.Sprintf("%02d:%02d", int(left.Minutes()), int(left.Seconds())%60)
		}
		fmt.Fprintf(w, "\r[%s%s] %d/%d %3.0f%% in flight %d ETA %s ",
			strings.Repeat("=", fill), strings.Repeat(" ", width-fill), n, total, 100*frac, d.InFlight(), eta)
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				draw()
				fmt.Fprintln(w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	close(p.quit)
	<-p.done
}
