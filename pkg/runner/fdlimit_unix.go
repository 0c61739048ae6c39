//go:build unix

package runner

import (
	"os"
	"syscall"
)

// openFileLimit returns the process's limit of open files (the soft
// limit, which Go raises to the hard one at start) and how many are open
// now; ok is false when the limit is not known.
func openFileLimit() (limit, open int, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0, 0, false
	}
	if es, err := os.ReadDir("/proc/self/fd"); err == nil {
		open = len(es)
	} else if es, err := os.ReadDir("/dev/fd"); err == nil {
		open = len(es)
	}
	return int(rl.Cur), open, true
}
