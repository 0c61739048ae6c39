package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// TestReportConvertsToBenchmarkReport: `fineserve-gen report SUMMARY.json
// --benchmark-report FILE` writes the report the run itself wrote (JSON
// there, YAML here): valid, with the same results and scenario. It takes
// one run only.
func TestReportConvertsToBenchmarkReport(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	sum, live, conv := filepath.Join(dir, "s.json"), filepath.Join(dir, "br.json"), filepath.Join(dir, "br.yaml")
	mustRun(t, append(baseArgs(port, 20), "--summary-json", sum, "--benchmark-report", live)...)
	mustRun(t, "report", sum, "--benchmark-report", conv)
	a, b := readBenchmarkReport(t, live), readBenchmarkReport(t, conv)
	for _, k := range []string{"results", "scenario", "run"} {
		if !reflect.DeepEqual(a[k], b[k]) {
			t.Errorf("%s differs:\nrun:    %v\nreport: %v", k, a[k], b[k])
		}
	}
	if total := a["results"].(map[string]any)["request_performance"].(map[string]any)["aggregate"].(map[string]any)["requests"].(map[string]any)["total"]; total != 20.0 {
		t.Errorf("requests.total %v, want 20", total)
	}
	code, _, stderr := runCmd("report", sum, sum, "--benchmark-report", conv)
	if code != exitUsage || !strings.Contains(stderr, "--benchmark-report writes one run") {
		t.Errorf("two files: exit %d, %s", code, stderr)
	}
}
