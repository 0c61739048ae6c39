package testenv

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"
)

// ReadJSONL decodes every line of a JSON Lines file (a --results-jsonl
// file) into T, failing the test on a line that is not whole JSON.
func ReadJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: line %d is not whole JSON: %v: %q", path, len(out)+1, err, sc.Text())
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
