// Package bounded reads inputs whose size comes from outside — a file, a
// server's answer — up to a limit, so that none can take unbounded memory.
package bounded

import (
	"fmt"
	"io"
	"os"
)

// TooLarge is the error of an input past its limit.
type TooLarge struct{ Limit int64 }

func (e *TooLarge) Error() string {
	if e.Limit >= 1<<20 && e.Limit%(1<<20) == 0 {
		return fmt.Sprintf("larger than %d MiB", e.Limit>>20)
	}
	return fmt.Sprintf("larger than %d bytes", e.Limit)
}

// Read reads r to its end, at most limit bytes; past it, the error is a
// *TooLarge.
func Read(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLarge{Limit: limit}
	}
	return b, nil
}

// ReadFile reads the named file, at most limit bytes.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, limit)
}
