package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addModelFlags declares the flags that route requests to served models
// and adapters (docs/MODELS.md).
func addModelFlags(fs *pflag.FlagSet, o *options.Options) {
	m := &o.Models
	fs.StringVar(&m.Map, "model-map", m.Map, "route requests to served models/adapters: a YAML/JSON file, FROM=TO,… ('*' any; empty TO: --model), or hash, round-robin, zipf:S (with --served-models), keep (the trace's names) (default: every request to --model)")
	fs.StringSliceVar(&m.Served, "served-models", m.Served, "served model or adapter names that --model-map hash, round-robin and zipf:S spread requests over (a,b,c)")
	fs.StringVar(&o.Replay.Scene, "scene", o.Replay.Scene, "replay: keep the rows of this scene_id (Alibaba text-to-image trace: A or B)")
}
