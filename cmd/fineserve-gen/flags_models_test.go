package main

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

func TestModelFlags(t *testing.T) {
	o := options.Defaults()
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addModelFlags(fs, &o)
	if err := fs.Parse([]string{"--model-map", "zipf:1.1", "--served-models", "a,b", "--served-models", "c", "--scene", "B"}); err != nil {
		t.Fatal(err)
	}
	if o.Models.Map != "zipf:1.1" || !slices.Equal(o.Models.Served, []string{"a", "b", "c"}) || o.Replay.Scene != "B" {
		t.Fatalf("options %+v %q", o.Models, o.Replay.Scene)
	}
	// The run's flag set has them, once.
	var p profiles
	rfs, _ := runFlags(&o, &p)
	for _, name := range []string{"model-map", "served-models", "scene", "model-column"} {
		if rfs.Lookup(name) == nil {
			t.Errorf("run has no --%s", name)
		}
	}
}
