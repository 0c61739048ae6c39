package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

func TestReplayFlags(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		check func(r options.ReplayOptions) bool
		err   string
	}{
		{"defaults", nil, func(r options.ReplayOptions) bool {
			return r.MinOutputLen == 1 && r.ImageWidth == 512 && r.ImageHeight == 512 && r.TokensPerImage == 0 && !r.TraceBusiest
		}, ""},
		{"alias", []string{"--trace", "a.csv"}, func(r options.ReplayOptions) bool { return r.TracePath == "a.csv" }, ""},
		{"fineserve name", []string{"--request-trace-csv", "b.csv"}, func(r options.ReplayOptions) bool { return r.TracePath == "b.csv" }, ""},
		{"slice", []string{"--trace-start", "1h30m", "--trace-duration", "600"}, func(r options.ReplayOptions) bool {
			return r.TraceStart == 90*time.Minute && r.TraceDuration == 10*time.Minute && !r.TraceBusiest
		}, ""},
		{"busiest", []string{"--trace-start", "Busiest", "--trace-duration", "1h"}, func(r options.ReplayOptions) bool {
			return r.TraceBusiest && r.TraceStart == 0
		}, ""},
		{"images", []string{"--image-size", "640x480", "--tokens-per-image", "576"}, func(r options.ReplayOptions) bool {
			return r.ImageWidth == 640 && r.ImageHeight == 480 && r.TokensPerImage == 576
		}, ""},
		{"rate and rows", []string{"--target-rate", "12.5", "--keep-failed", "--strict", "--min-output-len", "4", "--timestamp-unit", "ms", "--trace-format", "jsonl", "--model-column", "m"},
			func(r options.ReplayOptions) bool {
				return r.TargetRate == 12.5 && r.KeepFailed && r.Strict && r.MinOutputLen == 4 &&
					r.TimestampUnit == "ms" && r.TraceFormat == "jsonl" && r.ModelColumn == "m"
			}, ""},
		{"bad image size", []string{"--image-size", "512"}, nil, "want WxH"},
		{"huge image", []string{"--image-size", "100000x2"}, nil, "want WxH"},
		{"bad trace start", []string{"--trace-start", "soon"}, nil, "duration"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := options.Defaults()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			addReplayFlags(fs, &o)
			err := fs.Parse(c.args)
			if testenv.WantErr(t, err, c.err) {
				return
			}
			if !c.check(o.Replay) {
				t.Errorf("options %+v", o.Replay)
			}
		})
	}
}
