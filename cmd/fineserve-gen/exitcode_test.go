package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// TestOutcome maps every way a run can end to its exit code.
func TestOutcome(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	o := options.Defaults()
	loose := o
	loose.MaxErrorRate = 0.25
	done := func(completed, failed int64) *metrics.Summary {
		return &metrics.Summary{Completed: completed, Failed: failed, ErrorRate: float64(failed) / float64(completed+failed),
			ErrorsByClass: map[string]int64{"http_5xx": failed}}
	}
	internal := func(completed, failed int64) *metrics.Summary {
		s := done(completed, failed)
		s.ErrorsByClass = map[string]int64{"internal": failed}
		return s
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		o    options.Options
		sum  *metrics.Summary
		err  error
		code int
		says string
	}{
		{"clean", live, o, done(10, 0), nil, exitOK, ""},
		{"dry run", live, o, nil, nil, exitOK, ""},
		{"one failure, default budget", live, o, done(9, 1), nil, exitBudget, "http_5xx 1"},
		{"within the budget", live, loose, done(3, 1), nil, exitOK, ""},
		{"over the budget", live, loose, done(2, 1), nil, exitBudget, "--max-error-rate 0.25"},
		{"interrupted", stopped, o, &metrics.Summary{Interrupted: true, Failed: 3, ErrorRate: 1}, nil, exitInterrupted, "interrupted"},
		{"bad input", live, o, nil, &options.UsageError{Err: errors.Join(errors.New("a"), errors.New("b"))}, exitUsage, "2 problems"},
		{"bad input while stopping", stopped, o, nil, &options.UsageError{Err: errors.New("a")}, exitUsage, ""},
		{"server unreachable", live, o, nil, errors.New("warm-up failed"), exitFailure, "warm-up failed"},
		{"stopped before sending", stopped, o, nil, fmt.Errorf("warm-up failed: %w", context.Canceled), exitInterrupted, "interrupted"},
		{"outputs not written", live, o, done(1, 0), errors.New("summary x: permission denied"), exitFailure, "permission denied"},
		{"requests hit an internal error", live, loose, internal(9, 1), nil, exitInternal, "1 request hit an internal error"},
		{"internal errors and the budget", live, o, internal(5, 5), nil, exitInternal, "5 requests hit an internal error"},
		{"internal errors while stopping", stopped, o, &metrics.Summary{Interrupted: true, Failed: 1, ErrorsByClass: map[string]int64{"internal": 1}}, nil, exitInterrupted, "interrupted"},
		{"a panic before the schedule", live, o, nil, fmt.Errorf("warm-up failed: %w", &safe.Panic{Value: "boom"}), exitInternal, "internal error: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var errb bytes.Buffer
			if code := outcome(tc.ctx, &tc.o, tc.sum, tc.err, &errb); code != tc.code {
				t.Errorf("exit %d, want %d (%s)", code, tc.code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.says) {
				t.Errorf("stderr %q does not say %q", errb.String(), tc.says)
			}
		})
	}
}

func TestFlushFinishedWithoutARun(t *testing.T) {
	// No run is collecting: the second signal does not wait for one.
	if flushFinished(make(chan chan<- struct{}), 0, 0) {
		t.Error("reported a flush nobody made")
	}
	abort := make(chan chan<- struct{})
	go func() { done := <-abort; close(done) }()
	if !flushFinished(abort, abortHandoff, abortWrite) {
		t.Error("the flush was not acknowledged")
	}
}

// TestPanicExitsWithItsOwnCode: a panic on the command's goroutine or on one
// it starts ends the process with exitInternal, the panic and its stack on
// stderr; never with Go's own 2, which means a usage error here.
func TestPanicExitsWithItsOwnCode(t *testing.T) {
	for _, where := range []string{"main", "goroutine"} {
		t.Run(where, func(t *testing.T) {
			c := startChild(t, "test-panic", where)
			if code := c.wait(t, 60*time.Second); code != exitInternal {
				t.Errorf("exit %d, want %d\n%s", code, exitInternal, c.stderr.String())
			}
			errs := c.stderr.String()
			if !strings.Contains(errs, "fineserve-gen: internal error: crafted panic") || !strings.Contains(errs, "testPanicCommand") {
				t.Errorf("stderr does not show the panic and its stack:\n%s", errs)
			}
		})
	}
}

// TestRunTrappedReturnsTheCommandsCode: with no panic the command's own
// exit code comes through.
func TestRunTrappedReturnsTheCommandsCode(t *testing.T) {
	trap, disarm := safe.Arm()
	defer disarm()
	var out, errb bytes.Buffer
	if code := runTrapped(context.Background(), trap, []string{"--no-such-flag"}, &out, &errb); code != exitUsage {
		t.Errorf("exit %d, want %d\n%s", code, exitUsage, errb.String())
	}
}
