package arrival

import (
	"testing"
	"time"
)

// TestTimerPolicy drives the choice of clock: precise for a spell at the
// start and after a runtime timer fired late, the runtime's while its
// timers keep time.
func TestTimerPolicy(t *testing.T) {
	p := newTimerPolicy()
	for i := range preciseSpell {
		if !p.usePrecise() {
			t.Fatalf("wait %d of the first spell is not precise", i)
		}
		p.observe(true, 0)
	}
	if p.usePrecise() {
		t.Fatal("after the first spell the runtime's timers are not tried")
	}
	for range 10 {
		p.observe(false, timerTolerance) // on time, within the tolerance
		if p.usePrecise() {
			t.Fatal("a runtime timer within the tolerance switched to the precise timer")
		}
	}
	p.observe(false, timerTolerance+time.Microsecond)
	if !p.usePrecise() {
		t.Fatal("a late runtime timer did not switch to the precise timer")
	}
	for range preciseSpell - 1 {
		p.observe(true, 0)
	}
	if !p.usePrecise() {
		t.Fatal("the spell after a late timer ended early")
	}
	p.observe(true, 0)
	if p.usePrecise() {
		t.Fatal("the spell after a late timer did not end")
	}
}
