package wait

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestSleep: the whole wait passes unless the context ends first, and then
// it returns at once.
func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), time.Minute) || time.Since(start) != time.Minute {
			t.Errorf("a full sleep returned after %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Errorf("a cancelled sleep returned true or after %v", time.Since(start))
		}
	})
}

// TestEvery: calls at absolute due times — a short call keeps the grid,
// one that overran is followed at once and the grid goes on from there —
// and none after quit closes, whose close also ends a call's context.
func TestEvery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		quit := make(chan struct{})
		var at []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			Every(quit, time.Second, nil, func(ctx context.Context) {
				at = append(at, time.Since(start))
				switch len(at) {
				case 1:
					time.Sleep(300 * time.Millisecond) // within its interval
				case 2:
					time.Sleep(1500 * time.Millisecond) // overruns it
				}
				if len(at) == 5 {
					close(quit)
					<-ctx.Done()
				}
			})
		}()
		<-done
		want := []time.Duration{0, time.Second, 2500 * time.Millisecond, 3500 * time.Millisecond, 4500 * time.Millisecond}
		if len(at) != len(want) {
			t.Fatalf("calls at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Errorf("calls at %v, want %v", at, want)
				break
			}
		}
	})
}
