package runner

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A summary that cannot be written whole (a full disk) leaves no
// temporary file behind, empty or partial, and the file it would have
// replaced is kept.
func TestWriteFileAtomicLeavesNoTmp(t *testing.T) {
	defer func(f func(string, []byte) error) { writeFile = f }(writeFile)
	writeFile = func(path string, b []byte) error {
		// The file is created, part of it written, then the disk is full.
		os.WriteFile(path, b[:len(b)/2], 0o644)
		return &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	os.WriteFile(path, []byte("old\n"), 0o644)
	err := writeFileAtomic(path, []byte(`{"completed": 10}`))
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("error %v, want ENOSPC", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "summary.json" {
		t.Errorf("files left: %v, want only summary.json", entries)
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Errorf("summary.json holds %q, want the old content", b)
	}
}
