// Package testenv holds helpers for the project's tests: which build is
// running, and whether timing assertions can be trusted in it.
package testenv

import "testing"

// SkipUnderRace skips a test whose verdict depends on timing (latency
// within a few milliseconds, send lag): the race detector slows the
// program several-fold. `make test` runs these tests (named TestTiming*)
// again without the race detector.
func SkipUnderRace(t testing.TB) {
	t.Helper()
	if RaceEnabled {
		t.Skip("timing assertions run in the non-race pass (make test)")
	}
}
