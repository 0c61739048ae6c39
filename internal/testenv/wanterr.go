package testenv

import (
	"strings"
	"testing"
)

// WantErr checks err against a table case's expected error: with want set,
// err must hold it (else the test fails) and WantErr reports true — the
// case is done; with want empty, err must be nil (else the test fails) and
// WantErr reports false.
func WantErr(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}
