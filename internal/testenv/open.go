package testenv

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Open opens the file at path for reading; it is closed when the test
// ends.
func Open(t testing.TB, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// ReadFile reads the whole file at path (an output the test checks),
// failing the test when it cannot.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// OpenGzip opens a gzip-compressed file (a bundled trace) and returns its
// decompressed content; the file is closed when the test ends.
func OpenGzip(t testing.TB, path string) io.Reader {
	t.Helper()
	zr, err := gzip.NewReader(Open(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return zr
}

// WriteFile writes content to a file name in a fresh temporary directory
// of t and returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
