package report

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// fullDisk is a file that takes half of what is written, then reports the
// disk full.
type fullDisk struct {
	f *os.File
	n int
}

func (d *fullDisk) Write(b []byte) (int, error) {
	if d.n > 0 {
		return 0, &os.PathError{Op: "write", Path: d.f.Name(), Err: syscall.ENOSPC}
	}
	d.n = len(b) / 2
	d.f.Write(b[:d.n])
	return d.n, &os.PathError{Op: "write", Path: d.f.Name(), Err: syscall.ENOSPC}
}

func (d *fullDisk) Close() error { return d.f.Close() }

// TestWriteOutputsOnAFullDisk: every output is attempted and every failure
// named; a file replaced whole (the summary, the HTML report) keeps its old
// content and leaves no temporary file, empty or partial.
func TestWriteOutputsOnAFullDisk(t *testing.T) {
	defer func(f func(string, int) (io.WriteCloser, error)) { openFile = f }(openFile)
	openFile = func(path string, flag int) (io.WriteCloser, error) {
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			return nil, err
		}
		return &fullDisk{f: f}, nil
	}
	dir := t.TempDir()
	summary, line := filepath.Join(dir, "summary.json"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(summary, []byte("old\n"), 0o644)
	sum := &metrics.Summary{Backend: "vllm", Completed: 10}
	var stdout strings.Builder
	err := WriteOutputs(&stdout, TableOutput(sum), SummaryOutput(summary, sum), LineOutput(line, sum))
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "summary "+summary) || !strings.Contains(err.Error(), "output file "+line) {
		t.Fatalf("error %v, want both files named with ENOSPC", err)
	}
	if !strings.Contains(stdout.String(), "Serving Benchmark Result") {
		t.Errorf("the table was not printed: %q", stdout.String())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
	if b, _ := os.ReadFile(summary); string(b) != "old\n" {
		t.Errorf("summary.json holds %q, want the old content", b)
	}
}

// TestWriteOutputsAppendsTheLine: --output-file appends one line a run, and
// "-" writes it to standard output.
func TestWriteOutputsAppendsTheLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	sum := &metrics.Summary{Backend: "vllm", Completed: 3}
	var stdout strings.Builder
	for range 2 {
		if err := WriteOutputs(&stdout, LineOutput(path, sum), LineOutput("-", sum)); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if n := strings.Count(string(b), "\n"); n != 2 || strings.Count(stdout.String(), "\n") != 2 || !strings.Contains(string(b), `"completed":3`) {
		t.Errorf("file %q, stdout %q: want two lines each", b, stdout.String())
	}
}

// SummaryOutputs: the table, then each file that is set, in one order
// whoever asks (a run, a repeated run, a merge, a report), and the HTML
// report's data from its caller.
func TestSummaryOutputs(t *testing.T) {
	sum := &metrics.Summary{Backend: "vllm"}
	names := func(outs []Output) (n []string) {
		for _, o := range outs {
			n = append(n, o.Name)
		}
		return n
	}
	if got := names(SummaryOutputs(sum, SummaryPaths{})); !slices.Equal(got, []string{"the table (standard output)"}) {
		t.Errorf("no paths: %q", got)
	}
	called := false
	outs := SummaryOutputs(sum, SummaryPaths{SummaryJSON: "s.json", OutputFile: "-", BenchmarkReport: "b.yaml", ReportHTML: "r.html",
		HTML: func() *Data { called = true; return &Data{Summary: sum, Source: "x"} }})
	want := []string{"the table (standard output)", "summary s.json", "output file -", BenchmarkReportOutput("b.yaml", sum, BenchmarkTarget{}).Name, HTMLOutput("r.html", nil).Name}
	if got := names(outs); !slices.Equal(got, want) || outs[3].Path != "b.yaml" || outs[4].Path != "r.html" {
		t.Errorf("every path: %q, want %q", got, want)
	}
	if called {
		t.Error("the HTML report's data was built before it was written")
	}
	var b bytes.Buffer
	if err := outs[4].Write(&b); err != nil || !called {
		t.Errorf("writing the report: %v, data asked for %v", err, called)
	}
}
