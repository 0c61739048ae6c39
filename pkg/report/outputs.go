package report

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Output is one of the outputs a run, a merge, a report or a sweep writes
// at its end: a row of the table WriteOutputs writes in order. Every
// command builds its list from the rows below and writes it with
// WriteOutputs, so each output is written the same way wherever it comes
// from: files whole or not at all (a temporary file renamed into place),
// every failure named, none stopping the others.
type Output struct {
	// Name is how a failure names the output ("summary", "--report-html").
	Name string
	// Path is the file ("" for standard output; "-" also means it).
	Path string
	// Append adds to the file instead of replacing it (FineServe's
	// --output-file).
	Append bool
	// Write writes the output.
	Write func(w io.Writer) error
}

// TableOutput is the console table of a summary: FineServe's table, the
// breakdowns (by kind, model, endpoint), the sessions' and the agentic
// conversations' figures, and goodput.
func TableOutput(sum *metrics.Summary) Output {
	return Output{Name: "the table (standard output)", Write: func(w io.Writer) error {
		for _, write := range []func(io.Writer, *metrics.Summary) error{WriteTable, WriteBreakdowns, WriteSessions, WriteAgents, WriteGoodput} {
			if err := write(w, sum); err != nil {
				return err
			}
		}
		return nil
	}}
}

// SummaryPaths are where a finished summary goes ("": not written): the
// files a run, a repeated run, a merge and a report write from one
// summary (SummaryOutputs).
type SummaryPaths struct {
	// SummaryJSON is --summary-json (merge's --output); OutputFile the
	// file the summary is appended to as a line (--output-file, "-":
	// standard output).
	SummaryJSON, OutputFile string
	// BenchmarkReport is the llm-d Benchmark Report (--benchmark-report),
	// Target its endpoints.
	BenchmarkReport string
	Target          BenchmarkTarget
	// ReportHTML is the HTML report (--report-html), HTML its data (the
	// summary alone when nil).
	ReportHTML string
	HTML       func() *Data
}

// summaryOutputs is the table of a summary's outputs, in the order they
// are written: each row's path and how it is made.
var summaryOutputs = []struct {
	path func(*SummaryPaths) string
	make func(p *SummaryPaths, sum *metrics.Summary) Output
}{
	{func(*SummaryPaths) string { return "-" }, func(_ *SummaryPaths, sum *metrics.Summary) Output { return TableOutput(sum) }},
	{func(p *SummaryPaths) string { return p.SummaryJSON }, func(p *SummaryPaths, sum *metrics.Summary) Output { return SummaryOutput(p.SummaryJSON, sum) }},
	{func(p *SummaryPaths) string { return p.OutputFile }, func(p *SummaryPaths, sum *metrics.Summary) Output { return LineOutput(p.OutputFile, sum) }},
	{func(p *SummaryPaths) string { return p.BenchmarkReport }, func(p *SummaryPaths, sum *metrics.Summary) Output {
		return BenchmarkReportOutput(p.BenchmarkReport, sum, p.Target)
	}},
	{func(p *SummaryPaths) string { return p.ReportHTML }, func(p *SummaryPaths, sum *metrics.Summary) Output {
		o := HTMLOutput(p.ReportHTML, &Data{Summary: sum})
		if p.HTML != nil { // its data are gathered when it is written
			o.Write = func(w io.Writer) error { return HTMLOutput(p.ReportHTML, p.HTML()).Write(w) }
		}
		return o
	}},
}

// SummaryOutputs are the outputs of sum at the end of a run, a repeated
// run, a merge or a report: the table, then each file of p that is set,
// in the table's order.
func SummaryOutputs(sum *metrics.Summary, p SummaryPaths) []Output {
	var outs []Output
	for _, o := range summaryOutputs {
		if o.path(&p) != "" {
			outs = append(outs, o.make(&p, sum))
		}
	}
	return outs
}

// SummaryOutput is the summary as an indented JSON file (--summary-json,
// merge's --output).
func SummaryOutput(path string, sum *metrics.Summary) Output {
	return JSONOutput("summary "+path, path, sum)
}

// JSONOutput is v as an indented JSON file.
func JSONOutput(name, path string, v any) Output {
	return Output{Name: name, Path: path, Write: func(w io.Writer) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}}
}

// LineOutput is the summary as one JSON line appended to path, as
// FineServe's --output-file does ("-": standard output, a container's
// log).
func LineOutput(path string, sum *metrics.Summary) Output {
	o := Output{Name: "output file " + path, Path: path, Append: true, Write: func(w io.Writer) error {
		b, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}}
	return o
}

// HTMLOutput is the HTML report of d (--report-html).
func HTMLOutput(path string, d *Data) Output {
	return Output{Name: "--report-html " + path, Path: path, Write: func(w io.Writer) error { return WriteHTML(w, d) }}
}

// WriteOutputs writes every output in order, to stdout or its file, and
// returns every failure, each named.
func WriteOutputs(stdout io.Writer, outs ...Output) error {
	var errs []error
	for _, o := range outs {
		var err error
		switch {
		case o.Path == "" || o.Path == "-":
			err = o.Write(stdout)
		case o.Append:
			err = appendFile(o.Path, o.Write)
		default:
			err = WriteFileAtomic(o.Path, o.Write)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.Name, err))
		}
	}
	return errors.Join(errs...)
}

// WriteFileAtomic writes path with write, buffered, through a temporary
// file renamed into place: a process killed meanwhile, or a full disk,
// leaves no half-written file and no temporary one. A device or pipe
// (e.g. /dev/stdout) is written directly.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return writeTo(path, os.O_WRONLY|os.O_TRUNC, write)
	}
	tmp := path + ".tmp"
	if err := writeTo(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, write); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// appendFile appends to path (created when missing) with write.
func appendFile(path string, write func(io.Writer) error) error {
	return writeTo(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, write)
}

// writeTo opens path with flag and writes it with write, buffered.
func writeTo(path string, flag int, write func(io.Writer) error) error {
	f, err := openFile(path, flag)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openFile opens an output file (a test's hook: a disk that fills up).
var openFile = func(path string, flag int) (io.WriteCloser, error) { return os.OpenFile(path, flag, 0o644) }
