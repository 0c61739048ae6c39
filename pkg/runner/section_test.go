package runner

import (
	"encoding/json"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// sectionOf decodes the summary's key, as the summary writes it, into v;
// it reports whether the summary has the key.
func sectionOf(t testing.TB, sum *metrics.Summary, key string, v any) (bool, error) {
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
