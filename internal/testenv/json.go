package testenv

import (
	"encoding/json"
	"testing"
)

// ReadJSON decodes the JSON file at path (a summary, a merge output, an
// analysis) into a T, failing the test when it is missing or not whole.
func ReadJSON[T any](t testing.TB, path string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ReadFile(t, path), &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// RoundTrip writes v as JSON and reads it back into a fresh T: what a
// reader of the written file sees. It also returns the bytes written.
func RoundTrip[T any](t testing.TB, v T) (T, []byte) {
	t.Helper()
	var back T
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back, b
}
