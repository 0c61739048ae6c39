package options

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Output is one file a run writes and the flag that names it.
type Output struct{ Flag, Path string }

// Outputs lists the files a run writes (--output-file "-" is stdout, not
// a file).
func (o *Options) Outputs() []Output {
	var out []Output
	for _, f := range []Output{
		{"--schedule-out", o.ScheduleOut},
		{"--sessions-out", o.SessionsOut},
		{"--results-jsonl", o.ResultsJSONL},
		{"--results-parquet", o.ResultsParquet},
		{"--benchmark-report", o.BenchmarkReport},
		{"--summary-json", o.SummaryJSON},
		{"--output-file", o.OutputFile},
		{"--report-html", o.Observe.ReportHTML},
	} {
		if f.Path != "" && f.Path != "-" {
			out = append(out, f)
		}
	}
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
