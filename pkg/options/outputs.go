package options

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Output is one file a run writes and the flag that names it.
type Output struct{ Flag, Path string }

// OutputKind is when an output is written: as the run goes (a record or
// an arrival at a time) or at its end, from its summary.
type OutputKind int

const (
	// PerRequest outputs stream as the run goes: the schedule, the
	// sessions' plan, the records (JSONL, CSV, Parquet).
	PerRequest OutputKind = iota
	// AtTheEnd outputs are written from the summary when the run ends.
	AtTheEnd
)

// outputFields is the one table of the files a run writes: each output's
// flag, when it is written and its path's field. Outputs, and everything
// that renames a run's outputs (a series' runs, a repeated run's runs),
// read it.
var outputFields = []struct {
	flag string
	kind OutputKind
	path func(*Options) *string
}{
	{"--schedule-out", PerRequest, func(o *Options) *string { return &o.ScheduleOut }},
	{"--sessions-out", PerRequest, func(o *Options) *string { return &o.SessionsOut }},
	{"--results-jsonl", PerRequest, func(o *Options) *string { return &o.ResultsJSONL }},
	{"--results-csv", PerRequest, func(o *Options) *string { return &o.ResultsCSV }},
	{"--results-parquet", PerRequest, func(o *Options) *string { return &o.ResultsParquet }},
	{"--benchmark-report", AtTheEnd, func(o *Options) *string { return &o.BenchmarkReport }},
	{"--summary-json", AtTheEnd, func(o *Options) *string { return &o.SummaryJSON }},
	{"--output-file", AtTheEnd, func(o *Options) *string { return &o.OutputFile }},
	{"--report-html", AtTheEnd, func(o *Options) *string { return &o.Observe.ReportHTML }},
	{"--repeats-csv", AtTheEnd, func(o *Options) *string { return &o.Experiment.RepeatsCSV }},
}

// EachOutput calls f with every output's flag, kind and path field (set or
// not), in the table's order; f may change the path.
func (o *Options) EachOutput(f func(flag string, kind OutputKind, path *string)) {
	for _, of := range outputFields {
		f(of.flag, of.kind, of.path(o))
	}
}

// Outputs lists the files a run writes (--output-file "-" is stdout, not
// a file).
func (o *Options) Outputs() []Output {
	var out []Output
	o.EachOutput(func(flag string, _ OutputKind, path *string) {
		if *path != "" && *path != "-" {
			out = append(out, Output{flag, *path})
		}
	})
	return out
}

// CheckOutputs checks, before anything is sent, that every file of outs
// can be written: its directory exists and takes a new file, an existing
// file opens for writing, and no two flags name the same file. Nothing is
// changed on disk (a probe file is removed). It returns every problem,
// each naming the flag and the path.
func CheckOutputs(outs []Output) error {
	var errs []error
	seen := map[string]string{}
	for _, f := range outs {
		abs, err := filepath.Abs(f.Path)
		if err != nil {
			abs = f.Path
		}
		if prev, ok := seen[abs]; ok {
			errs = append(errs, fmt.Errorf("%s %s: %s names the same file", f.Flag, f.Path, prev))
			continue
		}
		seen[abs] = f.Flag
		if err := checkWritable(f.Path); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", f.Flag, f.Path, err))
		}
	}
	return errors.Join(errs...)
}

// checkWritable reports why path cannot be written, without changing it.
func checkWritable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return errors.New("is a directory")
	case err == nil:
		// An existing file (or a device, e.g. /dev/stdout): it must open
		// for writing; O_APPEND leaves its content as it is.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return cause(err)
		}
		f.Close()
		if !fi.Mode().IsRegular() {
			return nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return cause(err)
	}
	// The file is created, or replaced through a temporary file, in its
	// directory: that directory must exist and take a new file.
	dir := filepath.Dir(path)
	di, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("directory %s does not exist", dir)
		}
		return cause(err)
	}
	if !di.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	probe, err := os.CreateTemp(dir, ".fineserve-gen-check-*")
	if err != nil {
		return fmt.Errorf("directory %s does not take a new file: %w", dir, cause(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// cause is the reason of a path error, without the path (the message names
// it already).
func cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
