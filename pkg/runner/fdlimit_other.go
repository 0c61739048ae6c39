//go:build !unix

package runner

// openFileLimit: the limit of open files is not known here.
func openFileLimit() (limit, open int, ok bool) { return 0, 0, false }
