package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// endpointRecords are the records of a run over three endpoints: on
// endpoint i (0, 1, 2), 3+i completed requests, i failed as connect and
// one cancelled on endpoint 1.
func endpointRecords(t *testing.T) []byte {
	t.Helper()
	var jsonl []byte
	var s metrics.Sample
	n := int64(0)
	add := func(ep int, class string, cut bool) {
		r := &record.Request{}
		r.Reset()
		at := time.Duration(n) * time.Millisecond
		r.Index, r.Scheduled, r.Sent, r.Endpoint = n, at, at, ep+1
		r.InputLen, r.OutputLen = 10, 2
		switch {
		case class != "":
			r.End, r.ErrorClass, r.Error = at+time.Millisecond, class, "refused"
		case cut:
			r.End, r.Status, r.Cancelled, r.CancelAfter = at+time.Millisecond, 0, true, time.Millisecond
		default:
			r.FirstToken, r.End, r.Status, r.CompletionTokens = at+5*time.Millisecond, at+9*time.Millisecond, 200, 2
			r.TokenTimes = []time.Duration{r.FirstToken, r.End}
		}
		s.From(r, metrics.NoSLO)
		jsonl = AppendRecord(jsonl, &s)
		n++
	}
	for ep := range 3 {
		for range 3 + ep {
			add(ep, "", false)
		}
		for range ep {
			add(ep, record.ErrConnect, false)
		}
	}
	add(1, "", true)
	return jsonl
}

// TestRecordsRebuildTheEndpoints: a report from the records of a run with
// several endpoints has the endpoints section (by the records' endpoint
// index; the URLs are the summary's), its counts the records', and the
// table lists every endpoint; records of one endpoint give none.
func TestRecordsRebuildTheEndpoints(t *testing.T) {
	d, err := FromRecords(bytes.NewReader(endpointRecords(t)), LoadOptions{SLO: metrics.NoSLO})
	if err != nil {
		t.Fatal(err)
	}
	eps := d.Summary.Endpoints
	if len(eps) != 3 {
		t.Fatalf("%d endpoints, want 3: %+v", len(eps), eps)
	}
	for i, e := range eps {
		cut := int64(0)
		if i == 1 {
			cut = 1
		}
		if e.Index != i || e.URL != "" || e.Completed != int64(3+i) || e.Failed != int64(i) || e.ErrorsByClass[record.ErrConnect] != int64(i) ||
			e.Cancelled != cut || e.Requests != e.Completed+e.Failed+cut || e.MedianTTFT != 5 {
			t.Errorf("endpoint %d: %+v", i, e)
		}
	}
	var b strings.Builder
	if err := WriteBreakdowns(&b, d.Summary); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Requests by Endpoint") || !strings.Contains(b.String(), "#3") {
		t.Errorf("the table does not list the endpoints:\n%s", b.String())
	}

	// One endpoint: no endpoint field, no section.
	var s metrics.Sample
	r := &record.Request{}
	r.Reset()
	r.End, r.Status = time.Millisecond, 200
	s.From(r, metrics.NoSLO)
	d, err = FromRecords(bytes.NewReader(AppendRecord(nil, &s)), LoadOptions{SLO: metrics.NoSLO})
	if err != nil || d.Summary.Endpoints != nil {
		t.Errorf("one endpoint: %v, endpoints %+v", err, d.Summary.Endpoints)
	}
}

// TestRecordsEndpointOutOfRange: a record whose endpoint index is past
// MaxRecordEndpoints is refused with its line number, not grown into.
func TestRecordsEndpointOutOfRange(t *testing.T) {
	jsonl := endpointRecords(t)
	jsonl = append(jsonl, `{"index":99,"scheduled_s":0,"sent_s":0,"e2e_ms":1,"status":200,"endpoint":100000000}`+"\n"...)
	lines := bytes.Count(jsonl, []byte("\n"))
	_, err := FromRecords(bytes.NewReader(jsonl), LoadOptions{SLO: metrics.NoSLO})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d: endpoint 100000000", lines)) {
		t.Errorf("error %v, want line %d naming the endpoint", err, lines)
	}
}
