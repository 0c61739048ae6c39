package testenv

import (
	"encoding/csv"
	"testing"
)

// ReadCSVRows reads a whole CSV file (an output the test checks), its
// header and every row, failing the test when it is missing or not CSV.
func ReadCSVRows(t testing.TB, path string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(Open(t, path)).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

// ReadCSV reads a whole CSV file, as a test's independent reading of a
// trace or schedule: its header's column positions and its rows.
func ReadCSV(t testing.TB, path string) (col map[string]int, rows [][]string) {
	t.Helper()
	recs := ReadCSVRows(t, path)
	if len(recs) == 0 {
		t.Fatalf("%s: no header", path)
	}
	col = make(map[string]int, len(recs[0]))
	for i, h := range recs[0] {
		col[h] = i
	}
	return col, recs[1:]
}
