// Package layout holds the test of the project's import rules: which
// package may depend on which (docs/ARCHITECTURE.md, "Packages").
package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/fineserve-gen/fineserve-gen/"

// imports returns the project packages the non-test files of dir import,
// as paths from the module's root ("pkg/client").
func imports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p := strings.Trim(im.Path.Value, `"`)
			if rest, ok := strings.CutPrefix(p, module); ok {
				seen[rest] = true
			}
		}
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestImportLayout states which packages may not import which, so that
// settings stay settings, the API table stays a leaf, and the layers above
// the client do not reach back into it.
func TestImportLayout(t *testing.T) {
	root := filepath.Join("..", "..")
	rules := []struct {
		pkg    string
		banned []string // none of these
		only   []string // if set: nothing but these
		why    string
	}{
		{pkg: "pkg/options", banned: []string{"pkg/runner", "pkg/monitor", "pkg/client", "pkg/launch"},
			why: "settings and their validation only; pkg/launch wires a run from them"},
		{pkg: "pkg/api", only: []string{"internal/reqid"},
			why: "the API kinds are a leaf every layer reads"},
		{pkg: "pkg/workload", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch"},
			why: "the workload is pure: it reads the API kind's row, not the client"},
		{pkg: "pkg/record", only: []string{"pkg/api"},
			why: "the record of a request is a leaf the client fills and every reader reads"},
		{pkg: "pkg/metrics", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch", "pkg/report"},
			why: "figures are derived from the record, not from the client"},
		{pkg: "pkg/report", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch"},
			why: "reports read records and summaries, not client types"},
		{pkg: "pkg/runner", banned: []string{"pkg/options", "pkg/launch"},
			why: "the runner takes its narrow Config, not the settings"},
	}
	for _, r := range rules {
		got := imports(t, filepath.Join(root, r.pkg))
		for _, p := range got {
			if slices.Contains(r.banned, p) || (r.only != nil && !slices.Contains(r.only, p)) {
				t.Errorf("%s imports %s: %s", r.pkg, p, r.why)
			}
		}
	}
}

// TestImportsSeesImports: the reader finds a known import, so the rules
// above cannot pass by reading nothing.
func TestImportsSeesImports(t *testing.T) {
	got := imports(t, filepath.Join("..", "..", "pkg", "launch"))
	for _, want := range []string{"pkg/options", "pkg/runner", "pkg/client"} {
		if !slices.Contains(got, want) {
			t.Errorf("pkg/launch's imports %v lack %s", got, want)
		}
	}
}
