package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// traceFlags are the flags of a command that reads one trace as --mode
// replay does (analyze, fit): its format, timestamp column and unit, and
// --strict. A command adds the columns it reads to ro.
type traceFlags struct {
	ro           replay.Options
	format, unit string
}

// addTraceFlags declares the trace-reading flags on fs.
func addTraceFlags(fs *pflag.FlagSet) *traceFlags {
	tf := &traceFlags{}
	fs.StringVar(&tf.format, "trace-format", "", "trace format (default: detected from the extension and header)")
	fs.StringVar(&tf.ro.TimestampColumn, "timestamp-column", "", "timestamp column (default per format)")
	fs.StringVar(&tf.unit, "timestamp-unit", "", "timestamp unit: s, ms, us, ns or datetime (default per format)")
	fs.BoolVar(&tf.ro.Strict, "strict", false, "fail on unusable rows instead of skipping and counting them")
	return tf
}

// check parses --trace-format and --timestamp-unit into the options and
// returns an error naming the flag for each bad one.
func (tf *traceFlags) check() []error {
	var errs []error
	var err error
	if tf.ro.Format, err = replay.ParseFormat(tf.format); err != nil {
		errs = append(errs, fmt.Errorf("--trace-format: %w", err))
	}
	if tf.ro.Unit, err = replay.ParseUnit(tf.unit); err != nil {
		errs = append(errs, fmt.Errorf("--timestamp-unit: %w", err))
	}
	return errs
}

// load reads the trace at path with the checked options and writes a
// warning line to stderr for the rows it skipped.
func (tf *traceFlags) load(path string, stderr io.Writer) (*replay.Trace, error) {
	tr, err := replay.Load(path, tf.ro)
	if err != nil {
		return nil, err
	}
	for _, w := range tr.Skipped.Warnings() {
		fmt.Fprintf(stderr, "warning: trace %s: %s\n", path, w)
	}
	return tr, nil
}
