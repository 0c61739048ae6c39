package runner

import "github.com/fineserve-gen/fineserve-gen/pkg/arrival"

// SetPromptHook makes f run as each request's prompt is built (nil: none),
// for the tests of package runner_test.
func SetPromptHook(f func(a *arrival.Arrival)) { testHookPrompt = f }
