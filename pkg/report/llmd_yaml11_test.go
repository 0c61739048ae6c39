package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// YAML 1.1's implicit types, as PyYAML's resolver (yaml/resolver.py) has
// them: llm-d-benchmark loads reports with PyYAML's safe_load.
var (
	re11Bool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	re11Float = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	re11Int   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	re11Null  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	re11Time  = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	// The specification's own float expression (yaml.org/type/float.html),
	// looser than PyYAML's after the point.
	re11SpecFloat = regexp.MustCompile(`^[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?$`)
)

// yaml11Tag is the tag a YAML 1.1 reader (PyYAML) resolves a plain scalar
// to.
func yaml11Tag(s string) string {
	switch {
	case re11Bool.MatchString(s):
		return "!!bool"
	case re11Float.MatchString(s):
		return "!!float"
	case re11Int.MatchString(s):
		return "!!int"
	case re11Null.MatchString(s):
		return "!!null"
	case re11Time.MatchString(s):
		return "!!timestamp"
	case s == "<<":
		return "!!merge"
	case s == "=":
		return "!!value"
	}
	return "!!str"
}

// edgeFloatSummary is reportSummary with the floats a shortest-form
// writer prints without a decimal point: tiny (1e-06 s), huge (1e+21),
// integral with an exponent (1e+06), a negative zero; in the report's own
// fields, in the settings (native.args) and in the summary's figures
// (native.config.metadata).
func edgeFloatSummary() *metrics.Summary {
	sum := reportSummary()
	sum.TPOT.P99 = 0.001                       // 1e-06 s
	sum.TPOT.P95 = 0.0005                      // 5e-07 s
	sum.ITL.P90 = 0.00012345                   // 1.2345e-07 s
	sum.RequestThroughput = 1e21               // huge
	sum.InputThroughput = 1e6                  // integral, printed with an exponent
	sum.OutputThroughput = 100                 // integral
	sum.TotalThroughput = math.Copysign(0, -1) // negative zero
	sum.MaxOutputTokensPerS = 1.5e300
	sum.SendLag.P99 = 1e-7
	sum.Concurrency = 2.5e-10
	sum.Settings["request-rate"] = 3e-5
	sum.Settings["tiny"] = 1e-300
	sum.Settings["huge"] = 1e22
	sum.Settings["mega"] = 1e6
	sum.Settings["negzero"] = math.Copysign(0, -1)
	sum.Settings["list"] = []any{1e-9, 2e+30, 7.0, -1e-5}
	return sum
}

// sameValue compares a report read back with its JSON form: numbers by
// their bits (a YAML integer as the double it is), so that a negative
// zero read as 0 differs.
func sameValue(path string, got, want any) error {
	num := func(v any) (float64, bool) {
		switch n := v.(type) {
		case float64:
			return n, true
		case int:
			return float64(n), true
		case int64:
			return float64(n), true
		case uint64:
			return float64(n), true
		}
		return 0, false
	}
	if w, ok := num(want); ok {
		g, ok := num(got)
		if !ok || math.Float64bits(g) != math.Float64bits(w) {
			return fmt.Errorf("%s: read back %#v (%T), want %v", path, got, got, w)
		}
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: read back %#v, want %#v", path, got, want)
		}
		var errs []error
		for k, v := range w {
			errs = append(errs, sameValue(path+"/"+k, g[k], v))
		}
		return errors.Join(errs...)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: read back %#v, want %#v", path, got, want)
		}
		var errs []error
		for i, v := range w {
			errs = append(errs, sameValue(fmt.Sprintf("%s/%d", path, i), g[i], v))
		}
		return errors.Join(errs...)
	}
	if got != want {
		return fmt.Errorf("%s: read back %#v (%T), want %#v (%T)", path, got, got, want, want)
	}
	return nil
}

// writeBoth writes sum's report as YAML and as JSON.
func writeBoth(t *testing.T, sum *metrics.Summary) (yml, js []byte) {
	t.Helper()
	var y, j bytes.Buffer
	target := BenchmarkTarget{URLs: []string{"http://127.0.0.1:8000/v1"}}
	if err := WriteBenchmarkReport(&y, sum, target, false); err != nil {
		t.Fatal(err)
	}
	if err := WriteBenchmarkReport(&j, sum, target, true); err != nil {
		t.Fatal(err)
	}
	return y.Bytes(), j.Bytes()
}

// jsonValue is a JSON document as a value (numbers as float64).
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// TestBenchmarkReportYAML11: every plain scalar of the YAML report is of
// the same type for a YAML 1.1 reader (PyYAML's resolver) as for a YAML
// 1.2 one — a float (1.0e-06, -0.0) matches YAML 1.1's float expression,
// PyYAML's and the specification's, an integer its integer one — and the
// YAML reads back as the JSON form's values, bit for bit.
func TestBenchmarkReportYAML11(t *testing.T) {
	sums := map[string]*metrics.Summary{
		"edge": edgeFloatSummary(), "report": reportSummary(), "sample": sampleSummary(),
		"empty": {Backend: "vllm", Mode: "poisson"},
	}
	for name, sum := range sums {
		t.Run(name, func(t *testing.T) {
			yml, js := writeBoth(t, sum)
			var doc yaml.Node
			if err := yaml.Unmarshal(yml, &doc); err != nil {
				t.Fatal(err)
			}
			floats := 0
			var walk func(n *yaml.Node)
			walk = func(n *yaml.Node) {
				for _, c := range n.Content {
					walk(c)
				}
				if n.Kind != yaml.ScalarNode || n.Style != 0 {
					return
				}
				tag12, tag11 := n.ShortTag(), yaml11Tag(n.Value)
				if tag12 != tag11 {
					t.Errorf("line %d: %q is %s in YAML 1.2 but %s in YAML 1.1", n.Line, n.Value, tag12, tag11)
				}
				if tag12 == "!!float" {
					floats++
					if !re11SpecFloat.MatchString(n.Value) {
						t.Errorf("line %d: float %q does not match YAML 1.1's float expression", n.Line, n.Value)
					}
				}
			}
			walk(&doc)
			if name == "edge" && floats < 15 {
				t.Errorf("%d floats in the report, want the summary's edge cases", floats)
			}
			var back any
			if err := yaml.Unmarshal(yml, &back); err != nil {
				t.Fatal(err)
			}
			if err := sameValue("", back, jsonValue(t, js)); err != nil {
				t.Errorf("the YAML does not read back as the JSON form:\n%v\n%s", err, yml)
			}
		})
	}
}

// TestBenchmarkReportPyYAML loads the YAML report with PyYAML's safe_load
// (YAML 1.1, as llm-d-benchmark loads reports) and validates it against
// the format's schema with Python's jsonschema
// (testdata/pyyaml/validate.py), then compares what PyYAML read with the
// JSON form, bit for bit. The interpreter is FINESERVE_GEN_PYYAML_REF
// (.ci/run sets it to a python3 with both modules, installing Debian's
// python3-yaml and python3-jsonschema when none has them), else python3
// on PATH. It skips without them, and fails in CI (CI=true) without them.
func TestBenchmarkReportPyYAML(t *testing.T) {
	python := os.Getenv("FINESERVE_GEN_PYYAML_REF")
	if python == "" {
		python = "python3"
	}
	script, err := filepath.Abs("testdata/pyyaml/validate.py")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := filepath.Abs("testdata/llmd-benchmark-report/br_v0_2_1_json_schema.json")
	if err != nil {
		t.Fatal(err)
	}
	missing := ""
	if p, err := exec.LookPath(python); err != nil {
		missing = "no " + python + " (set FINESERVE_GEN_PYYAML_REF to a python3 with PyYAML and jsonschema; see .ci/run)"
	} else {
		python = p
		cmd := exec.Command(python, "-c", "import yaml, jsonschema")
		if out, err := cmd.CombinedOutput(); err != nil {
			missing = fmt.Sprintf("%s has no PyYAML or jsonschema (apt-get install python3-yaml python3-jsonschema; see .ci/run): %s", python, bytes.TrimSpace(out))
		}
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PyYAML and jsonschema are missing in CI: %s", missing)
		}
		t.Skipf("PyYAML and jsonschema are missing: %s", missing)
	}
	dir := t.TempDir()
	for name, sum := range map[string]*metrics.Summary{"edge": edgeFloatSummary(), "report": reportSummary(), "sample": sampleSummary()} {
		t.Run(name, func(t *testing.T) {
			yml, js := writeBoth(t, sum)
			path := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(path, yml, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(python, script, schema, path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("PyYAML and jsonschema: %v\n%s\n%s", err, stderr.String(), yml)
			}
			if err := sameValue("", jsonValue(t, out), jsonValue(t, js)); err != nil {
				t.Errorf("PyYAML does not read the YAML as the JSON form:\n%v", err)
			}
		})
	}
	// The check can fail: a float in the shortest 'g' form (what yaml.v3
	// writes) is a string to PyYAML, and the schema wants a number.
	yml, _ := writeBoth(t, reportSummary())
	bad := bytes.Replace(yml, []byte("p99: 0.05209"), []byte("p99: 5e-02"), 1)
	if bytes.Equal(bad, yml) {
		t.Fatal("no ttft p99 of 0.05209 in the report")
	}
	path := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(python, script, schema, path).CombinedOutput(); err == nil {
		t.Errorf("a report with p99: 5e-02 passes PyYAML and jsonschema:\n%s", out)
	}
}
