package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/valyala/fastjson"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// LoadOptions configure how a report is built from files.
type LoadOptions struct {
	// SLO, when set, computes goodput from per-request records.
	SLO metrics.SLO
}

// SeriesPoints is the most points a plot over time built from per-request
// records has.
const SeriesPoints = 60

// maxRecordLine bounds one JSONL record (a request's ITL array included).
const maxRecordLine = 256 << 20

// Load reads a file for a report: per-request records (--results-jsonl)
// or a summary (--summary-json, or a FineServe --output-file whose last
// line is used). Records are streamed: memory does not grow with their
// number.
func Load(path string, opt LoadOptions) (*Data, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	kind, err := sniff(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var d *Data
	if kind == kindRecords {
		d, err = FromRecords(br, opt)
	} else {
		var s *metrics.Summary
		var n int
		s, n, err = ReadSummary(br)
		if err == nil {
			d = &Data{Summary: s}
			if n > 1 {
				d.Notes = append(d.Notes, fmt.Sprintf("%s holds %d summaries (one line per run); the last one is shown", filepath.Base(path), n))
			}
			d.Notes = append(d.Notes, "Per-request data: not in a summary; build the report from the results JSONL (or pass it too) for fine time series")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	d.Source = filepath.Base(path)
	return d, nil
}

type fileKind int

const (
	kindSummary fileKind = iota
	kindRecords
)

// sniff tells per-request records from a summary by the first line.
func sniff(br *bufio.Reader) (fileKind, error) {
	for n := 4096; ; n *= 2 {
		b, err := br.Peek(n)
		if i := bytes.IndexByte(b, '\n'); i >= 0 || err != nil {
			if i >= 0 {
				b = b[:i]
			}
			b = bytes.TrimSpace(b)
			if len(b) == 0 && err != nil {
				return 0, errors.New("empty file")
			}
			var p fastjson.Parser
			v, perr := p.ParseBytes(b)
			if perr == nil && v.Type() == fastjson.TypeObject && v.Exists("scheduled_s") {
				return kindRecords, nil
			}
			return kindSummary, nil
		}
		if n >= maxRecordLine {
			return kindSummary, nil
		}
	}
}

// ReadSummary reads a summary JSON: one object (indented or not), or one
// object per line (FineServe's --output-file), in which case the last is
// returned. n is the number of summaries read.
func ReadSummary(r io.Reader) (*metrics.Summary, int, error) {
	dec := json.NewDecoder(r)
	var last *metrics.Summary
	n := 0
	for {
		var s metrics.Summary
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, n, fmt.Errorf("summary %d: %w", n+1, err)
		}
		last = &s
		n++
	}
	if last == nil {
		return nil, 0, errors.New("no summary in the file")
	}
	return last, n, nil
}

// RecordBuilder turns per-request records into a report's data, one record
// at a time: each record is read back into a Result (ParseRecord), its
// Sample derived as in a run, and handed to a Collector for the figures, a
// Timeline for plots over time, length distributions and goodput. Its
// memory does not depend on the number of records.
type RecordBuilder struct {
	col      *metrics.Collector
	timeline *metrics.Timeline
	slo      metrics.SLO
	sinks    metrics.Fanout
	model    string
	res      record.Request
	sample   metrics.Sample
	// parts are the metrics.Part accumulators (metrics.NewParts).
	parts []metrics.Part
	// endpoints is the parts' breakdown by the records' endpoint field
	// (written once a record has one: Grow). The records hold each
	// endpoint's index: its URL is in the run's summary (--summary), whose
	// endpoints section wins.
	endpoints *metrics.Endpoints
	parser    fastjson.Parser
	n         int64
}

// NewRecordBuilder returns an empty builder; slo may be metrics.NoSLO.
func NewRecordBuilder(slo metrics.SLO) *RecordBuilder {
	b := &RecordBuilder{
		timeline: metrics.NewTimeline(250*time.Millisecond, 256),
	}
	b.slo = slo
	b.sinks = metrics.Fanout{b.timeline}
	b.parts = metrics.NewParts(metrics.PartsConfig{SLO: slo, Sessions: true})
	b.endpoints, _ = metrics.PartOf[*metrics.Endpoints](b.parts)
	b.col, _ = metrics.PartOf[*metrics.Collector](b.parts)
	for _, p := range b.parts {
		b.sinks = append(b.sinks, p)
	}
	b.res.TokenTimes = make([]time.Duration, 0, 256)
	return b
}

// AddLine adds one JSONL record.
func (b *RecordBuilder) AddLine(line []byte) error {
	v, err := b.parser.ParseBytes(line)
	if err != nil {
		return err
	}
	if err := ParseRecord(v, &b.res); err != nil {
		return err
	}
	if b.model == "" {
		b.model = b.res.Model
	}
	b.sample.From(&b.res, b.slo)
	if e := b.sample.Endpoint; e >= 0 {
		if e >= MaxRecordEndpoints {
			return fmt.Errorf("endpoint %d: records of at most %d endpoints are read", e, MaxRecordEndpoints)
		}
		b.endpoints.Grow(e + 1)
	}
	b.sinks.Add(&b.sample)
	b.n++
	return nil
}

// MaxRecordEndpoints bounds the endpoint index a record may carry, so a
// bad file cannot make the breakdown by endpoint grow without bound.
const MaxRecordEndpoints = 4096

// Count is the number of records added.
func (b *RecordBuilder) Count() int64 { return b.n }

// Data returns the report data of the records added: a summary computed
// from them (duration: from the start to the last end), with latency CDFs,
// length histograms and goodput, and the timeline.
func (b *RecordBuilder) Data() (*Data, error) {
	s, err := metrics.Assemble(metrics.Facts{Elapsed: b.col.LastEnd, Parts: b.parts,
		Summary: metrics.Summary{Model: b.model, Scheduled: b.col.Completed + b.col.Failed + b.col.Cancelled}})
	if err != nil {
		return nil, err
	}
	b.timeline.Reduce(SeriesPoints)
	return &Data{
		Summary: s, Series: b.timeline.Points(), SeriesNote: fmt.Sprintf("per-request records in bins of %v", b.timeline.Width()),
		Notes: []string{"Windows, server metrics, the command line and the seed are not in per-request records: pass the run's summary too (--summary)"},
	}, nil
}

// FromRecords streams per-request JSONL records from r and returns the
// report's data.
func FromRecords(r io.Reader, opt LoadOptions) (*Data, error) {
	b := NewRecordBuilder(opt.SLO)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxRecordLine)
	line := 0
	for sc.Scan() {
		line++
		l := bytes.TrimSpace(sc.Bytes())
		if len(l) == 0 {
			continue
		}
		if err := b.AddLine(l); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if b.Count() == 0 {
		return nil, errors.New("no record in the file")
	}
	return b.Data()
}

// Merge combines a run's summary file with its per-request records: the
// summary's figures and sections win; the records add the fine time
// series and the sections the summary lacks (the distributions, goodput).
func Merge(summary, records *Data) *Data {
	out := *summary
	s := *summary.Summary
	r := records.Summary
	if s.LatencyCDFs == nil {
		s.LatencyCDFs = r.LatencyCDFs
	}
	if s.LengthHistograms == nil {
		s.LengthHistograms = r.LengthHistograms
	}
	if s.Goodput == nil {
		s.Goodput = r.Goodput
	}
	out.Summary = &s
	out.Series, out.SeriesNote = serverFromWindows(records.Series, s.Windows), records.SeriesNote
	out.Source = summary.Source + " + " + records.Source
	out.Notes = nil
	return &out
}

// serverFromWindows gives the points of a series built from records (which
// know nothing of the server) the server's figures of the summary's window
// each point's middle falls in, held over the point: the report of records
// and summary draws the server's gauges as the summary's own report does.
// pts is returned as is when it holds server figures already or no window
// has any.
func serverFromWindows(pts []metrics.SeriesPoint, ws []metrics.WindowStats) []metrics.SeriesPoint {
	for _, p := range pts {
		if !math.IsNaN(p.ServerRunning) || !math.IsNaN(p.KVCache) {
			return pts
		}
	}
	out := slices.Clone(pts)
	filled := false
	for i := range out {
		p := &out[i]
		mid := (p.Start + p.End) / 2
		j := sort.Search(len(ws), func(k int) bool { return ws[k].End > mid })
		if j == len(ws) || ws[j].Start > mid {
			continue
		}
		if sv := ws[j].Server; sv != nil && sv.Samples > 0 {
			p.ServerRunning, p.ServerWaiting, p.KVCache, p.ServerIdle = sv.RunningMean, sv.WaitingMean, sv.KVCacheMean, sv.IdleFraction
			filled = true
		}
	}
	if !filled {
		return pts
	}
	return out
}
