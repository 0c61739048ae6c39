package main

import (
	"os"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
)

// runFileArgs writes every flag of a case's command line into a run file
// at path (each key the flag's name, its value as a summary records it)
// and returns the command line that reads it: --config path alone. The
// case's checks then hold for a run described by a file.
func runFileArgs(t testing.TB, args []string, path string) []string {
	t.Helper()
	o := options.Defaults()
	var prof profiles
	fs, _ := runFlags(&o, &prof)
	if err := fs.Parse(joinGoodputArgs(args)); err != nil || fs.NArg() > 0 {
		t.Fatalf("the case's flags: %v (left over %q)", err, fs.Args())
	}
	b, err := yaml.Marshal(runfile.Settings(fs, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"--" + runfile.FlagName, path}
}
