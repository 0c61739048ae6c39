//go:build !unix

package monitor

import "time"

// processCPU cannot measure the process's CPU time on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
