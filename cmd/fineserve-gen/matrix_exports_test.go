package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

// The matrix's export dimension: --results-parquet and --benchmark-report.

// exportArgs are the flags of c's export value, writing into dir.
func exportArgs(c matrixCase, dir string) []string {
	var args []string
	switch c.v(dExport) {
	case "parquet":
		args = append(args, "--results-parquet", filepath.Join(dir, "results.parquet"))
	case "benchmark-report":
		args = append(args, "--benchmark-report", filepath.Join(dir, "benchmark-report.yaml"))
	case "both-json", "both-dry-run": // both-dry-run: a dry run, which writes neither
		args = append(args, "--results-parquet", filepath.Join(dir, "results.parquet"),
			"--benchmark-report", filepath.Join(dir, "benchmark-report.json"))
	}
	return args
}

// checkCaseExports checks c's exports: the Parquet file has one row per
// record of results.jsonl, each field equal to the record's; the benchmark
// report is valid against the llm-d schema and counts the summary's
// requests and failures; neither file exists without its flag.
func checkCaseExports(t testing.TB, c matrixCase, r *caseRun, sum *metrics.Summary, fail func(string, ...any)) {
	t.Helper()
	v := c.v(dExport)
	pqPath := r.path("results.parquet")
	if v == "parquet" || v == "both-json" {
		if err := compareParquetJSONL(pqPath, r.path("results.jsonl")); err != "" {
			fail("--results-parquet: %s", err)
		}
	} else if _, err := os.Stat(pqPath); err == nil {
		fail("%s without --results-parquet", pqPath)
	}
	brPath := ""
	switch v {
	case "benchmark-report":
		brPath = r.path("benchmark-report.yaml")
	case "both-json":
		brPath = r.path("benchmark-report.json")
	}
	if brPath == "" {
		return
	}
	j, msg := benchmarkReportJSON(t, brPath)
	if msg != "" {
		fail("--benchmark-report: %s", msg)
		return
	}
	var br struct {
		Results struct {
			RequestPerformance struct {
				Aggregate struct {
					Requests struct{ Total, Failures, Incomplete int64 }
				}
			} `json:"request_performance"`
		}
	}
	json.Unmarshal(j, &br)
	if got := br.Results.RequestPerformance.Aggregate.Requests; got.Total != sum.Completed+sum.Failed+sum.Cancelled || got.Failures != sum.Failed || got.Incomplete != sum.Cancelled {
		fail("--benchmark-report requests %+v; the summary: completed %d, failed %d, cancelled %d", got, sum.Completed, sum.Failed, sum.Cancelled)
	}
}

var (
	brSchemaOnce sync.Once
	brSchema     *jsonschema.Schema
	brSchemaErr  error
)

// benchmarkReportSchema is the llm-d Benchmark Report v0.2.1 schema
// (pkg/report's testdata), compiled once.
func benchmarkReportSchema(t testing.TB) *jsonschema.Schema {
	brSchemaOnce.Do(func() {
		f, err := os.Open("../../pkg/report/testdata/llmd-benchmark-report/br_v0_2_1_json_schema.json")
		if err != nil {
			brSchemaErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			brSchemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if brSchemaErr = c.AddResource("br.json", doc); brSchemaErr == nil {
			brSchema, brSchemaErr = c.Compile("br.json")
		}
	})
	if brSchemaErr != nil {
		t.Fatal(brSchemaErr)
	}
	return brSchema
}

// compareParquetJSONL compares a Parquet records file with the JSON Lines
// one, row by row and field by field ("" when they agree).
func compareParquetJSONL(pqPath, jsonlPath string) string {
	b, err := os.ReadFile(pqPath)
	if err != nil {
		return err.Error()
	}
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return err.Error()
	}
	var names []string
	for _, path := range f.Schema().Columns() {
		names = append(names, path[0])
	}
	if want := report.ParquetColumns(); strings.Join(names, ",") != strings.Join(want, ",") {
		return "columns " + strings.Join(names, ",") + ", want " + strings.Join(want, ",")
	}
	lines, err := os.ReadFile(jsonlPath)
	if err != nil {
		return err.Error()
	}
	recs := strings.Split(strings.TrimSpace(string(lines)), "\n")
	if len(lines) == 0 {
		recs = nil
	}
	if f.NumRows() != int64(len(recs)) {
		return "rows: " + itoa(f.NumRows()) + ", records: " + itoa(int64(len(recs)))
	}
	i := 0
	for _, rg := range f.RowGroups() {
		rr := rg.Rows()
		buf := make([]parquet.Row, 128)
		for {
			n, err := rr.ReadRows(buf)
			for _, row := range buf[:n] {
				if msg := compareRow(names, row, recs[i]); msg != "" {
					rr.Close()
					return "record " + itoa(int64(i)) + ": " + msg
				}
				i++
			}
			if err != nil {
				break
			}
		}
		rr.Close()
	}
	return ""
}

// compareRow compares one row with its JSON record.
func compareRow(names []string, row parquet.Row, line string) string {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var rec map[string]any
	if err := dec.Decode(&rec); err != nil {
		return err.Error()
	}
	got := map[string][]string{} // each column's values, as text
	for _, v := range row {
		name := names[v.Column()]
		if v.IsNull() {
			if _, ok := got[name]; !ok {
				got[name] = nil
			}
			continue
		}
		var s string
		switch report.ParquetKindOf(name) {
		case report.ParquetInt64:
			s = itoa(v.Int64())
		case report.ParquetDouble, report.ParquetDoubleList:
			s = strconvFloat(v.Double())
		case report.ParquetString:
			s = string(v.ByteArray())
		case report.ParquetBool:
			s = map[bool]string{true: "true", false: "false"}[v.Boolean()]
		}
		got[name] = append(got[name], s)
	}
	for _, name := range names {
		var want []string
		switch x := rec[name].(type) {
		case nil:
		case []any:
			for _, g := range x {
				f, _ := g.(json.Number).Float64()
				want = append(want, strconvFloat(f))
			}
		case json.Number:
			if report.ParquetKindOf(name) == report.ParquetDouble {
				f, _ := x.Float64()
				want = []string{strconvFloat(f)}
			} else {
				want = []string{x.String()}
			}
		case bool:
			want = []string{map[bool]string{true: "true", false: "false"}[x]}
		case string:
			want = []string{x}
		}
		if strings.Join(got[name], "\x00") != strings.Join(want, "\x00") || len(got[name]) != len(want) {
			return name + " = " + strings.Join(got[name], ",") + ", the record's " + strings.Join(want, ",")
		}
	}
	return ""
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func strconvFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// benchmarkReportJSON reads a benchmark report (YAML, or JSON when path
// ends in .json), validates it against the llm-d schema and returns it as
// JSON, or what is wrong.
func benchmarkReportJSON(t testing.TB, path string) ([]byte, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err.Error()
	}
	if strings.HasSuffix(path, ".json") && !json.Valid(b) {
		return nil, path + " is not JSON"
	}
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err.Error()
	}
	j, _ := json.Marshal(doc)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, err.Error()
	}
	if err := benchmarkReportSchema(t).Validate(inst); err != nil {
		return nil, "not a valid llm-d Benchmark Report: " + err.Error()
	}
	return j, ""
}

// readBenchmarkReport reads a valid benchmark report.
func readBenchmarkReport(t testing.TB, path string) map[string]any {
	t.Helper()
	j, msg := benchmarkReportJSON(t, path)
	if msg != "" {
		t.Fatalf("%s: %s", path, msg)
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
