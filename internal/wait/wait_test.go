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
