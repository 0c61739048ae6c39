package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// timesTrace writes dir/times.csv, a generic trace of 200 rows with a
// timestamp (ms, 250 apart) and a model column but no lengths, and returns
// its path. Row skip (-1: none) has an empty timestamp.
func timesTrace(t *testing.T, dir string, skip int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("ts,model\n")
	for i := range 200 {
		if i == skip {
			fmt.Fprintf(&b, ",m%d\n", i%3)
			continue
		}
		fmt.Fprintf(&b, "%d,m%d\n", i*250, i%3)
	}
	path := filepath.Join(dir, "times.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTraceFlags: fit and analyze read a trace with the same flags: a bad
// --trace-format and a bad --timestamp-unit are named in one usage error;
// a row that cannot be used is skipped with a warning that names the trace
// and the line, and --strict makes it an error.
func TestTraceFlags(t *testing.T) {
	dir := t.TempDir()
	trace := timesTrace(t, dir, 100) // line 102: no timestamp
	for name, args := range map[string][]string{
		"fit":     {"fit", trace, "-o", filepath.Join(dir, "t"), "--quiet"},
		"analyze": {"analyze", trace, "--key", "model", "--model-column", "model"},
	} {
		t.Run(name, func(t *testing.T) {
			wantUsage(t, append(args, "--trace-format", "fineserv", "--timestamp-unit", "parsec"), "--trace-format", "--timestamp-unit")
			args = append(args, "--timestamp-column", "ts", "--timestamp-unit", "ms")
			_, stderr := mustRun(t, args...)
			if want := "warning: trace " + trace + ": skipped 1 unusable row"; !strings.Contains(stderr, want) || !strings.Contains(stderr, "line 102") {
				t.Errorf("stderr lacks %q at line 102:\n%s", want, stderr)
			}
			wantUsage(t, append(args, "--strict"), "line 102")
		})
	}
}
