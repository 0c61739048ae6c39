package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// TestProfilesWritten: --cpu-profile, --mem-profile and --mutex-profile
// each write a pprof profile (gzip-compressed protobuf) at the end of a
// run, and the process samples lock contention as it did before the run.
func TestProfilesWritten(t *testing.T) {
	was := runtime.SetMutexProfileFraction(-1)
	_, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	paths := map[string]string{}
	args := baseArgs(port, 20)
	for _, f := range []string{"--cpu-profile", "--mem-profile", "--mutex-profile"} {
		paths[f] = filepath.Join(dir, f[2:]+".pprof")
		args = append(args, f, paths[f])
	}
	if r := runTool(t, args...); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if now := runtime.SetMutexProfileFraction(-1); now != was {
		t.Errorf("mutex profile fraction %d after the run, %d before", now, was)
	}
	for f, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: %d bytes, %v: want a gzip-compressed profile", f, len(b), err)
		}
	}
}

// TestProfileWriteErrors: a profile that cannot be written at the end (a
// full disk) fails the run with exit code 1 and an error naming its flag;
// --cpu-profile /dev/full exited 0 silently (pprof drops the write error)
// and --mem-profile/--mutex-profile errors named no flag.
func TestProfileWriteErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	_, port := mocktest.Start(t, mockserver.Config{})
	for _, flag := range []string{"--cpu-profile", "--mem-profile", "--mutex-profile"} {
		t.Run(flag, func(t *testing.T) {
			r := runTool(t, append(baseArgs(port, 5), flag, "/dev/full")...)
			if r.code != exitFailure {
				t.Errorf("exit %d, want %d", r.code, exitFailure)
			}
			if want := flag + " /dev/full: "; !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		})
	}
}
