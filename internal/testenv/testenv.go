// Package testenv holds helpers for the project's tests: which build is
// running, whether timing assertions can be trusted in it, and whether the
// long suite (make test-long) is running.
package testenv

import (
	"os"
	"testing"
)

// SkipUnderRace skips a test whose verdict depends on timing (latency
// within a few milliseconds, send lag): the race detector slows the
// program several-fold. `make test-long` runs these tests (named
// TestTiming*) again without the race detector.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("timing assertions run in the non-race pass (make test-long)")
	}
}

// LongEnv is the environment variable that makes the tests run their long
// forms: `make test-long` sets it to 1 (docs/TESTING.md).
const LongEnv = "FINESERVE_GEN_TEST_LONG"

// Long reports whether the long suite is running (LongEnv set): tests with
// a light form in `make test` (the combination matrix: every value of
// every dimension) run their full form (every pair of values).
func Long() bool { return os.Getenv(LongEnv) != "" }

// SkipHeavyUnderRace skips, under the race detector, a heavy test that runs
// on one goroutine (schedule statistics over a day of arrivals, a 64 MiB
// line): the detector slows it ten-fold and can find nothing in it. `make
// test` runs its package again without the race detector (NORACE_PKGS in
// the Makefile), so it still runs there.
func SkipHeavyUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("a heavy single-goroutine test: it runs in make test's pass without the race detector")
	}
}
