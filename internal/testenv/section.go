package testenv

import (
	"encoding/json"
	"testing"
)

// SectionOf decodes the key of a summary, as the summary writes it (sum
// marshals to a JSON object), into v; it reports whether the key is there.
func SectionOf(t testing.TB, sum any, key string, v any) (bool, error) {
	t.Helper()
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		t.Fatal(err)
	}
	raw, ok := all[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}
