package runner_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/launch"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// TestPrewarmCappedByFileLimit: --prewarm-connections above what the limit
// of open files leaves (less the files open and a headroom for the run's
// own connections, scrapes and outputs) opens only that many, with a
// warning saying so; 1000000 opened until "too many open files", and the
// metrics scrapes failed after it.
func TestPrewarmCappedByFileLimit(t *testing.T) {
	port := startMock(t)
	defer runner.SetFileLimit(200, 100)() // 200 − 100 open − 64 headroom: 36
	o := testOptions(port)
	o.Quiet = false
	o.RequestRate, o.NumPrompts, o.NumPromptsSet = 100, 3, true
	o.PrewarmConnections = "1000"
	var out, errb bytes.Buffer
	if _, err := launch.Run(context.Background(), o, runner.IO{Out: &out, Err: &errb}); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	for _, want := range []string{
		"warning: --prewarm-connections: 1000 connections would pass the limit of open files (200, 100 open now; ulimit -n): opening 36, leaving 64",
		"(36 per endpoint asked", // one may be open already: the model check's
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}
