package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// addReplayFlags declares the flags of --mode replay.
func addReplayFlags(fs *pflag.FlagSet, o *runner.Options) {
	r := &o.Replay
	fs.StringVar(&r.TracePath, "request-trace-csv", r.TracePath, "replay: trace file (CSV or JSONL)")
	fs.StringVar(&r.TimestampColumn, "timestamp-column", r.TimestampColumn, "replay: timestamp column")
	fs.StringVar(&r.InputLengthColumn, "input-length-column", r.InputLengthColumn, "replay: input length column")
	fs.StringVar(&r.OutputLengthColumn, "output-length-column", r.OutputLengthColumn, "replay: output length column")
	fs.StringVar(&r.TimestampUnit, "timestamp-unit", r.TimestampUnit, "replay: timestamp unit: s, ms, us, ns or datetime (default per format)")
	fs.StringVar(&r.TraceFormat, "trace-format", r.TraceFormat, "replay: trace format (default: detected from the header)")
	fs.BoolVar(&r.Strict, "strict", r.Strict, "replay: fail on unusable rows instead of skipping and counting them")
}
