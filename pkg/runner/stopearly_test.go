package runner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Closing Stop ends dispatching and says when; a run that is not stopped
// reports 0, and its watch ends on release.
func TestStopEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		stop := make(chan struct{})
		dctx, ended, release := stopEarly(context.Background(), stop, start)
		time.Sleep(3 * time.Second)
		if dctx.Err() != nil || ended() != 0 {
			t.Fatalf("before the stop: dispatch %v, ended %v", dctx.Err(), ended())
		}
		close(stop)
		<-dctx.Done()
		if got := ended(); got != 3*time.Second {
			t.Errorf("ended %v after the start, want 3s", got)
		}
		release()

		dctx, ended, release = stopEarly(context.Background(), make(chan struct{}), start)
		release()
		synctest.Wait()
		if dctx.Err() == nil || ended() != 0 {
			t.Errorf("released without a stop: dispatch %v, ended %v; want done and 0", dctx.Err(), ended())
		}
		dctx, ended, _ = stopEarly(context.Background(), nil, start)
		if dctx.Err() != nil || ended() != 0 {
			t.Errorf("no Stop: dispatch %v, ended %v", dctx.Err(), ended())
		}
	})
}
