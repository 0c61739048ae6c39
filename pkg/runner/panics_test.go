package runner_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// startMock serves the built-in server on 127.0.0.1 for the test and
// returns its port.
func startMock(t *testing.T) int {
	_, port := mocktest.Start(t, mockserver.Config{})
	return port
}

// testOptions are a quiet run of seed 1 against port, without a warm-up.
func testOptions(port int) options.Options {
	o := options.Defaults()
	o.Port, o.Seed, o.Quiet, o.WarmupRequests = port, 1, true, 0
	return o
}

// panicOn makes building the prompt of the given arrivals panic, for the
// test's duration.
func panicOn(t *testing.T, indices ...int64) {
	runner.SetPromptHook(func(a *arrival.Arrival) {
		for _, i := range indices {
			if a.Index == i {
				panic(fmt.Sprintf("crafted panic for arrival %d", i))
			}
		}
	})
	t.Cleanup(func() { runner.SetPromptHook(nil) })
}

// TestRequestPanicIsItsRecord: a request whose work panics ends as that
// request's failure (class internal, the panic's value as its message); the
// other requests complete, the records and summary are written, and the
// stack is printed once.
func TestRequestPanicIsItsRecord(t *testing.T) {
	port := startMock(t)
	panicOn(t, 3, 7)
	dir := t.TempDir()
	o := testOptions(port)
	o.Quiet = false
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 200, 12, true
	o.RandomInputLen, o.RandomOutputLen = 16, 4
	o.WarmupRequests = 1 // index -1: does not panic
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	var out, errb bytes.Buffer
	sum, err := launch.Run(context.Background(), o, runner.IO{Out: &out, Err: &errb})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if sum.Completed != 10 || sum.Failed != 2 || sum.ErrorsByClass[record.ErrInternal] != 2 {
		t.Errorf("completed %d failed %d by class %v; want 10, 2 internal", sum.Completed, sum.Failed, sum.ErrorsByClass)
	}
	type rec struct {
		Index      int64  `json:"index"`
		ErrorClass string `json:"error_class"`
		Error      string `json:"error"`
	}
	recs := testenv.ReadJSONL[rec](t, o.ResultsJSONL)
	if len(recs) != 12 {
		t.Fatalf("%d records, want 12", len(recs))
	}
	for _, r := range recs {
		want := ""
		if r.Index == 3 || r.Index == 7 {
			want = record.ErrInternal
			if r.Error != fmt.Sprintf("crafted panic for arrival %d", r.Index) {
				t.Errorf("record %d: error %q, want the panic's value", r.Index, r.Error)
			}
		}
		if r.ErrorClass != want {
			t.Errorf("record %d: class %q, want %q (%s)", r.Index, r.ErrorClass, want, r.Error)
		}
	}
	if n := len(regexp.MustCompile(`goroutine \d+ \[`).FindAllString(errb.String(), -1)); n != 1 {
		t.Errorf("%d stacks printed, want 1:\n%s", n, errb.String())
	}
	if !strings.Contains(errb.String(), "internal error in request") || !strings.Contains(errb.String(), "panicOn") {
		t.Errorf("stderr does not show the panic and its stack:\n%s", errb.String())
	}
}

// TestWarmupPanicIsAnInternalError: when every warm-up request panics the run
// stops before the schedule with an error the command maps to "internal".
func TestWarmupPanicIsAnInternalError(t *testing.T) {
	port := startMock(t)
	panicOn(t, -1, -2)
	o := testOptions(port)
	o.NumPrompts, o.NumPromptsSet = 3, true
	o.WarmupRequests = 2
	var out, errb bytes.Buffer
	sum, err := launch.Run(context.Background(), o, runner.IO{Out: &out, Err: &errb})
	var p *safe.Panic
	if !errors.As(err, &p) || sum != nil {
		t.Fatalf("run: %v (summary %v), want a *safe.Panic", err, sum)
	}
	if !strings.Contains(err.Error(), "crafted panic for arrival -") {
		t.Errorf("error %q does not carry the panic's value", err)
	}
}
