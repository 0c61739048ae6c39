package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

func TestWriteBreakdowns(t *testing.T) {
	var s metrics.Summary
	var out bytes.Buffer
	if err := WriteBreakdowns(&out, &s); err != nil || out.Len() != 0 {
		t.Fatalf("no breakdown: %q, %v", out.String(), err)
	}
	s.PerKind = map[string]metrics.GroupSummary{
		"text":  {Completed: 2, RequestThroughput: 1, MeanTTFT: 20, P99E2E: 130},
		"image": {Completed: 1, Failed: 1, MeanTTFT: 50},
	}
	if err := WriteBreakdowns(&out, &s); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	image, text := strings.Index(got, "\nimage "), strings.Index(got, "\ntext ")
	if !strings.Contains(got, "Requests by Kind") || image < 0 || text < image || strings.Contains(got, "by Model") {
		t.Errorf("breakdown:\n%s", got)
	}
	if !strings.Contains(got[text:], "130.00") {
		t.Errorf("text row lacks its P99 E2E:\n%s", got)
	}
	if err := json.Unmarshal([]byte(`{"per_kind":"broken"}`), &s); err == nil || !strings.Contains(err.Error(), "per_kind") {
		t.Errorf("a malformed entry: %v, want an error naming it", err)
	}
}
