package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// mustRun runs the command in process with args and fails the test unless
// it exits 0; it returns what the command wrote to stdout and stderr.
func mustRun(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), args, &out, &errb); code != exitOK {
		t.Fatalf("%v: exit %d\n%s", args, code, errb.String())
	}
	return out.String(), errb.String()
}

// wantUsage runs the command in process with args and fails the test
// unless it exits with a usage error (2) whose message holds every one of
// want.
func wantUsage(t *testing.T, args []string, want ...string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), args, &out, &errb)
	if code != exitUsage || errb.Len() == 0 {
		t.Errorf("%v: exit %d, want %d with a message (stderr %q)", args, code, exitUsage, errb.String())
	}
	for _, w := range want {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("%v: message %q, want %q", args, errb.String(), w)
		}
	}
}
