package bounded

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: an input of the limit is read whole; one byte more is refused
// with a *TooLarge that says the limit in MiB or bytes.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		n, limit int64
		want     string
	}{{10, 10, ""}, {11, 10, "larger than 10 bytes"}, {1<<20 + 1, 1 << 20, "larger than 1 MiB"}} {
		b, err := Read(strings.NewReader(strings.Repeat("x", int(tc.n))), tc.limit)
		var tl *TooLarge
		switch {
		case tc.want == "" && (err != nil || int64(len(b)) != tc.n):
			t.Errorf("%d of %d: %d bytes, %v", tc.n, tc.limit, len(b), err)
		case tc.want != "" && (!errors.As(err, &tl) || err.Error() != tc.want || b != nil):
			t.Errorf("%d of %d: %v, want %q", tc.n, tc.limit, err, tc.want)
		}
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 3); err != nil || string(b) != "abc" {
		t.Errorf("ReadFile: %q %v", b, err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none"), 3); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
