package servermetrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestIdleWaitsForTheServer polls a metrics page that shows requests for
// its first three answers.
func TestIdleWaitsForTheServer(t *testing.T) {
	var polls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running := 0
		if polls.Add(1) <= 3 {
			running = 2
		}
		w.Write([]byte("vllm:num_requests_running " + string(rune('0'+running)) + "\nvllm:num_requests_waiting 0\n"))
	}))
	defer srv.Close()
	idle := &Idle{URL: srv.URL, Poll: time.Millisecond, Quiet: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := idle.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if n := polls.Load(); n != 4 {
		t.Errorf("%d polls, want 4 (three busy, one idle)", n)
	}
	// Still busy at the timeout: warned, and the sweep goes on.
	polls.Store(-1 << 40)
	var warned string
	idle = &Idle{URL: srv.URL, Poll: time.Millisecond, Timeout: 20 * time.Millisecond, Warnf: func(f string, a ...any) { warned = f }}
	if err := idle.Wait(ctx); err != nil || !strings.Contains(warned, "still busy") {
		t.Errorf("err %v, warning %q", err, warned)
	}
	// No metrics: the quiet pause, cut short by the context.
	idle = &Idle{Quiet: time.Hour}
	short, cancel2 := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel2()
	if err := idle.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v", err)
	}
}
