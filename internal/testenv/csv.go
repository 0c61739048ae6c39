package testenv

import (
	"encoding/csv"
	"os"
	"testing"
)

// ReadCSV reads a whole CSV file, as a test's independent reading of a
// trace or schedule: its header's column positions and its rows.
func ReadCSV(t testing.TB, path string) (col map[string]int, rows [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) == 0 {
		t.Fatalf("%s: no header", path)
	}
	col = make(map[string]int, len(recs[0]))
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}
