package runner

import "github.com/fineserve-gen/fineserve-gen/pkg/arrival"

// SetPromptHook makes f run as each request's prompt is built (nil: none),
// for the tests of package runner_test.
func SetPromptHook(f func(a *arrival.Arrival)) { testHookPrompt = f }

// SetFileLimit makes the limit of open files and the count open now what
// prewarming reads, for the tests of package runner_test; it returns a
// function that puts the real one back.
func SetFileLimit(limit, open int) func() {
	was := fileLimit
	fileLimit = func() (int, int, bool) { return limit, open, true }
	return func() { fileLimit = was }
}
