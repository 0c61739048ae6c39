// Package safe keeps a panic from ending the process unannounced: Call turns
// a panic into a value, and Go hands a goroutine's panic to the process's
// Trap, which the command maps to its "internal error" exit code.
package safe

import (
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Panic is a recovered panic: its value and the stack of the goroutine that
// raised it.
type Panic struct {
	Value any
	Stack []byte
}

// Error implements error.
func (p *Panic) Error() string { return fmt.Sprintf("internal error: %v", p.Value) }

// Call runs f and returns its panic, if any (nil when f returned).
func Call(f func()) (p *Panic) {
	defer func() {
		if v := recover(); v != nil {
			p = &Panic{Value: v, Stack: debug.Stack()}
		}
	}()
	f()
	return nil
}

// Trap receives the panics of the goroutines started with Go while it is
// armed. It keeps the first and closes Fired.
type Trap struct {
	once  sync.Once
	first *Panic
	fired chan struct{}
}

// armed is the process's trap, set by the command (never by a library).
var armed atomic.Pointer[Trap]

// Arm makes t the process's trap: from now on a panic in a goroutine
// started with Go is handed to t instead of crashing the process. disarm
// restores the previous trap.
func Arm() (t *Trap, disarm func()) {
	t = &Trap{fired: make(chan struct{})}
	prev := armed.Swap(t)
	return t, func() { armed.CompareAndSwap(t, prev) }
}

// Fired is closed when the trap has caught a panic.
func (t *Trap) Fired() <-chan struct{} { return t.fired }

// Panic returns the first panic caught (nil before Fired is closed).
func (t *Trap) Panic() *Panic {
	select {
	case <-t.fired:
		return t.first
	default:
		return nil
	}
}

// Catch hands p to the trap; only the first panic is kept.
func (t *Trap) Catch(p *Panic) {
	t.once.Do(func() {
		t.first = p
		close(t.fired)
	})
}

// Go runs f on a new goroutine. A panic in f goes to the armed trap; with no
// trap armed (a library used on its own, a test) it crashes the process as
// an ordinary panic would.
func Go(f func()) {
	t := armed.Load()
	if t == nil {
		go f()
		return
	}
	go func() {
		if p := Call(f); p != nil {
			t.Catch(p)
		}
	}()
}
