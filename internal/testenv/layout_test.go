package testenv

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the project's module.
const module = "github.com/fineserve-gen/fineserve-gen"

// TestImportLayout: the data flows one way, and the import graph shows
// it — at most 8 layers from the command down, the report imported only
// by the runner and the commands (nothing below the runner renders
// outputs, but for the pages a sweep and a plan draw with its kit), and
// the rules of docs/ARCHITECTURE.md's "Packages": settings
// stay settings, the API table and the request record are leaves, and the
// layers that read records do not reach back into the client. It reads
// the packages' imports (not their tests').
func TestImportLayout(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "deploy") {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files
		}
		rel, _ := filepath.Rel(root, path)
		var own []string
		for _, imp := range pkg.Imports {
			if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				own = append(own, p)
			}
		}
		imports[filepath.ToSlash(rel)] = own
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("found %d packages: %v", len(imports), imports)
	}
	depth := map[string]int{}
	var path func(p string, seen []string) int
	path = func(p string, seen []string) int {
		if d, ok := depth[p]; ok {
			return d
		}
		if slices.Contains(seen, p) {
			t.Fatalf("import cycle: %v", append(seen, p))
		}
		d := 1
		for _, q := range imports[p] {
			d = max(d, 1+path(q, append(seen, p)))
		}
		depth[p] = d
		return d
	}
	for p := range imports {
		path(p, nil)
	}
	if d := depth["cmd/fineserve-gen"]; d > 8 || d < 4 {
		t.Errorf("the command is %d layers deep, want at most 8", d)
	}
	for p, imps := range imports {
		if slices.Contains(imps, "pkg/report") && !slices.Contains(pageRenderers, p) && !strings.HasPrefix(p, "cmd/") {
			t.Errorf("%s imports pkg/report: only the runner, the commands and the pages drawn with the report's kit (sweep, plan) render outputs", p)
		}
	}
	for _, r := range importRules {
		for _, p := range imports[r.pkg] {
			if slices.Contains(r.banned, p) || (r.only != nil && !slices.Contains(r.only, p)) {
				t.Errorf("%s imports %s: %s", r.pkg, p, r.why)
			}
		}
		if _, ok := imports[r.pkg]; !ok {
			t.Errorf("rule for %s: no such package", r.pkg)
		}
	}
}

// pageRenderers may import pkg/report besides the commands: the runner
// writes a run's outputs; a sweep and a plan draw their own pages with the
// report's kit (report.PlotView, PlotLoad, …), so the report knows neither.
var pageRenderers = []string{"pkg/runner", "pkg/sweep", "pkg/plan"}

// importRules: which package may not import which (banned), or may import
// nothing but (only, when set).
var importRules = []struct {
	pkg    string
	banned []string
	only   []string
	why    string
}{
	{pkg: "pkg/options", banned: []string{"pkg/runner", "pkg/monitor", "pkg/client", "pkg/launch"},
		why: "settings and their validation only; pkg/launch wires a run from them"},
	{pkg: "pkg/api", only: []string{},
		why: "the API kinds are a leaf every layer reads"},
	{pkg: "pkg/record", only: []string{"pkg/api"},
		why: "the record of a request is a leaf the client fills and every reader reads"},
	{pkg: "pkg/workload", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch"},
		why: "the workload is pure: it reads the API kind's row, not the client"},
	{pkg: "pkg/metrics", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch"},
		why: "figures are derived from the record, not from the client"},
	{pkg: "pkg/report", banned: []string{"pkg/client", "pkg/runner", "pkg/monitor", "pkg/options", "pkg/launch", "pkg/sweep", "pkg/plan"},
		why: "reports read records and summaries, not client types; a sweep's and a plan's pages are theirs, drawn with the report's kit"},
	{pkg: "pkg/runner", banned: []string{"pkg/options", "pkg/launch"},
		why: "the runner takes its narrow Config, not the settings"},
	{pkg: "pkg/monitor", banned: []string{"pkg/client", "pkg/options", "pkg/launch"},
		why: "the monitor watches records and the server, not the client"},
}
