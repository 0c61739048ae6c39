package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestOutputsForScripts: a run with --results-csv writes a header and one
// row per record, the same requests as --results-jsonl; its summary carries
// vLLM's names with the values of ours, and merge_state last.
func TestOutputsForScripts(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	dir := t.TempDir()
	csvPath := dir + "/results.csv"
	r := mustRunTool(t, append(baseArgs(port, 12), "--results-csv", csvPath, "--burstiness", "0.5")...)

	rows := testenv.ReadCSVRows(t, csvPath)
	recs := readRecords(t, r.path("results.jsonl"))
	if len(rows) != 1+len(recs) || rows[0][0] != "index" {
		t.Fatalf("%d CSV rows (header %v) for %d records", len(rows), rows[0], len(recs))
	}
	var fromCSV, fromJSONL []int64
	for i, row := range rows[1:] {
		n, err := strconv.ParseInt(row[0], 10, 64)
		if err != nil {
			t.Fatalf("row %d: index %q", i, row[0])
		}
		fromCSV = append(fromCSV, n)
		fromJSONL = append(fromJSONL, recs[i].Index)
	}
	slices.Sort(fromCSV)
	slices.Sort(fromJSONL)
	if !slices.Equal(fromCSV, fromJSONL) {
		t.Errorf("CSV indices %v, records' %v", fromCSV, fromJSONL)
	}

	raw := testenv.ReadFile(t, r.path("summary.json"))
	var all map[string]any
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	for theirs, ours := range map[string]string{
		"num_prompts": "scheduled", "total_token_throughput": "total_throughput", "max_concurrent_requests": "max_in_flight",
		"mean_e2el_ms": "mean_e2e_latency_ms", "median_e2el_ms": "median_e2e_latency_ms", "p99_e2el_ms": "p99_e2e_latency_ms",
	} {
		if all[theirs] == nil || all[theirs] != all[ours] {
			t.Errorf("%s = %v, %s = %v", theirs, all[theirs], ours, all[ours])
		}
	}
	if all["num_prompts"] != 12.0 || all["burstiness"] != 0.5 {
		t.Errorf("num_prompts %v, burstiness %v", all["num_prompts"], all["burstiness"])
	}
	if peak, total := all["max_output_tokens_per_s"].(float64), all["total_output_tokens"].(float64); !(peak > 0 && peak <= total) {
		t.Errorf("max_output_tokens_per_s %v of %v output tokens", peak, total)
	}
	s := r.summary(t)
	if s.MergeState == nil {
		t.Fatal("no merge_state")
	}
	if i := bytesLastKey(t, raw); i != "merge_state" {
		t.Errorf("last key %q, want merge_state", i)
	}
}

// bytesLastKey is the last top-level key of a JSON object.
func bytesLastKey(t *testing.T, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	last := ""
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		last = k.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return last
}

// TestLiveReportServerSteps: a run's own report draws the server's gauges
// (requests running and waiting, KV cache, idle share) as steps at the
// scrape times: every segment of their lines is level or upright, none
// slanted between two scrapes.
func TestLiveReportServerSteps(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond})
	page := t.TempDir() + "/r.html"
	mustRunTool(t, mockTarget(port, "--num-prompts", "40", "--request-rate", "40", "--random-input-len", "8", "--random-output-len", "8",
		"--seed", "1", "--warmup-requests", "0", "--quiet", "--server-metrics-interval", "100ms", "--report-html", page)...)
	html := string(testenv.ReadFile(t, page))
	i := strings.Index(html, `data-plot="kv_cache"`)
	if i < 0 {
		t.Fatal("no server KV-cache plot in the run's report")
	}
	svg := html[i : i+strings.Index(html[i:], "</svg>")]
	dRE := regexp.MustCompile(`d="(M[^"]*)" style="fill:none;stroke:#[0-9A-F]{6};stroke-width:1.4`)
	ptRE := regexp.MustCompile(`[ML]([-0-9.]+),([-0-9.]+)`)
	lines := 0
	for _, m := range dRE.FindAllStringSubmatch(svg, -1) {
		pts := ptRE.FindAllStringSubmatch(m[1], -1)
		if len(pts) < 4 { // a legend swatch
			continue
		}
		lines++
		for j := 1; j < len(pts); j++ {
			if pts[j][1] != pts[j-1][1] && pts[j][2] != pts[j-1][2] {
				t.Errorf("a slanted segment %v → %v: interpolated between scrapes", pts[j-1][1:], pts[j][1:])
				break
			}
		}
	}
	if lines != 2 {
		t.Errorf("%d server lines in the KV-cache plot, want 2 (usage, idle)", lines)
	}
	// The steps are the scrapes' (not the bins'): the last scrape of each
	// line is a dot.
	if dots := strings.Count(svg, " 0 1 1 "); dots < 2 {
		t.Errorf("%d dots for the last scrapes, want 2: the report did not get the scrapes", dots)
	}
}
