package safe

import (
	"strings"
	"testing"
	"time"
)

func TestCall(t *testing.T) {
	if p := Call(func() {}); p != nil {
		t.Fatalf("a function that returned reported %v", p)
	}
	p := Call(func() {
		var m map[string]int
		m["x"]++ // a nil map write panics
	})
	if p == nil {
		t.Fatal("the panic was not caught")
	}
	if !strings.Contains(p.Error(), "internal error: assignment to entry in nil map") {
		t.Errorf("error %q", p.Error())
	}
	if !strings.Contains(string(p.Stack), "TestCall") {
		t.Errorf("the stack does not reach the panicking function:\n%s", p.Stack)
	}
}

func TestGoHandsPanicsToTheTrap(t *testing.T) {
	trap, disarm := Arm()
	defer disarm()
	if trap.Panic() != nil {
		t.Fatal("a fresh trap holds a panic")
	}
	ran := make(chan struct{})
	Go(func() { close(ran) })
	<-ran
	for i := range 3 {
		Go(func() { panic(i) })
	}
	select {
	case <-trap.Fired():
	case <-time.After(10 * time.Second):
		t.Fatal("the trap did not fire")
	}
	p := trap.Panic()
	if p == nil {
		t.Fatal("fired without a panic")
	}
	if _, ok := p.Value.(int); !ok {
		t.Errorf("value %#v, want one of the ints", p.Value)
	}
	disarm()
	if armed.Load() == trap {
		t.Error("disarm left the trap armed")
	}
}
