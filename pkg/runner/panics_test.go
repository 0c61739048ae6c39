package runner

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
	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// panicOn makes building the prompt of the given arrivals panic, for the
// test's duration.
func panicOn(t *testing.T, indices ...int64) {
	testHookPrompt = func(a *arrival.Arrival) {
		for _, i := range indices {
			if a.Index == i {
				panic(fmt.Sprintf("crafted panic for arrival %d", i))
			}
		}
	}
	t.Cleanup(func() { testHookPrompt = nil })
}

// TestRequestPanicIsItsRecord: a request whose work panics ends as that
// request's failure (class internal, the panic's value as its message); the
// other requests complete, the records and summary are written, and the
// stack is printed once.
func TestRequestPanicIsItsRecord(t *testing.T) {
	port := startMock(t, mockserver.Config{})
	panicOn(t, 3, 7)
	dir := t.TempDir()
	o := testOptions(port)
	o.Quiet = false
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 200, 12, true
	o.RandomInputLen, o.RandomOutputLen = 16, 4
	o.WarmupRequests = 1 // index -1: does not panic
	o.ResultsJSONL = filepath.Join(dir, "r.jsonl")
	var out, errb bytes.Buffer
	sum, err := Run(context.Background(), o, IO{Out: &out, Err: &errb})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if sum.Completed != 10 || sum.Failed != 2 || sum.ErrorsByClass[client.ErrInternal] != 2 {
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
			want = client.ErrInternal
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
	port := startMock(t, mockserver.Config{})
	panicOn(t, -1, -2)
	o := testOptions(port)
	o.NumPrompts, o.NumPromptsSet = 3, true
	o.WarmupRequests = 2
	var out, errb bytes.Buffer
	sum, err := Run(context.Background(), o, IO{Out: &out, Err: &errb})
	var p *safe.Panic
	if !errors.As(err, &p) || sum != nil {
		t.Fatalf("run: %v (summary %v), want a *safe.Panic", err, sum)
	}
	if !strings.Contains(err.Error(), "crafted panic for arrival -") {
		t.Errorf("error %q does not carry the panic's value", err)
	}
}

// TestRecordingPanicIsARecord: a result whose recording panics (here an
// observer) is counted again as an internal error, and the others are not
// lost.
func TestRecordingPanicIsARecord(t *testing.T) {
	results, _, path, collected := startCollect(t, metrics.SinkFunc(func(s *metrics.Sample) {
		if s.Index == 1 && s.OK {
			panic("observer bug")
		}
	}))
	for i := range int64(3) {
		results <- finishedResult(i)
	}
	close(results)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	type rec struct {
		Index      int64  `json:"index"`
		ErrorClass string `json:"error_class"`
		Error      string `json:"error"`
	}
	recs := testenv.ReadJSONL[rec](t, path)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if got, want := r.ErrorClass != "", r.Index == 1; got != want {
			t.Errorf("record %d: class %q error %q", r.Index, r.ErrorClass, r.Error)
		}
	}
}
