package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestHTTPPhasesRecords: a request with timed phases writes them in its
// record (connect and TLS only on a new connection) and reads them back;
// one without writes no http_ key; the CSV has no column for them.
func TestHTTPPhasesRecords(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, ph := range []record.Phases{
		{Measured: true, Connect: ms(0.25), TLS: ms(1.5), Write: ms(0.012), Wait: ms(3)},
		{Measured: true, Reused: true, Write: ms(0.02), Wait: ms(50)},
		{},
	} {
		r := &record.Request{}
		r.Reset()
		r.Index, r.Sent, r.FirstToken, r.End, r.Status = 1, ms(1), ms(60), ms(90), 200
		r.TokenTimes = []time.Duration{ms(60)}
		r.HTTP = ph
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		line := string(AppendRecord(nil, &s))
		for _, k := range []string{"http_reused", "http_connect_ms", "http_tls_ms", "http_write_ms", "http_wait_ms"} {
			want := ph.Measured
			switch k {
			case "http_connect_ms":
				want = ph.Measured && !ph.Reused
			case "http_tls_ms":
				want = ph.TLS > 0
			}
			if got := strings.Contains(line, `"`+k+`"`); got != want {
				t.Errorf("%+v: %s in the record %v, want %v: %s", ph, k, got, want, line)
			}
		}
		back := parseBack(t, []byte(line))
		if back.HTTP != ph {
			t.Errorf("read back %+v, want %+v", back.HTTP, ph)
		}
		if row := string(AppendRecordCSV(nil, &s)); strings.Count(row, ",") != strings.Count(string(CSVHeader()), ",") {
			t.Errorf("CSV row %q does not match the header's columns", row)
		}
	}
	if strings.Contains(string(CSVHeader()), "http_") {
		t.Errorf("CSV header %q has HTTP phase columns", CSVHeader())
	}
}

// TestHTTPPhasesTableAndHTML: a summary with HTTP phases has the table's
// section and the report's; one without has neither.
func TestHTTPPhasesTableAndHTML(t *testing.T) {
	s := &metrics.Summary{Backend: "vllm", Model: "m", Completed: 3, Duration: 1}
	s.TTFT = metrics.Dist{Count: 3, Mean: 30, Median: 25, P99: 80, Max: 95}
	s.E2E = metrics.Dist{Count: 3, Mean: 300, Median: 250, P99: 800, Max: 950}
	plain, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	s.HTTPPhases = &metrics.HTTPPhasesSummary{Requests: 3, NewConnections: 1, Reused: 2,
		ConnectMS: &metrics.PhaseStats{Count: 1, Mean: 812.5, P50: 812.5, P99: 812.5, Max: 812.5},
		WaitMS:    &metrics.PhaseStats{Count: 3, Mean: 1.25, P50: 1, P99: 2, Max: 2}}
	with, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		summary []byte
		want    bool
	}{{plain, false}, {with, true}} {
		var back metrics.Summary
		if err := json.Unmarshal(tc.summary, &back); err != nil {
			t.Fatal(err)
		}
		var tb strings.Builder
		if err := WriteTable(&tb, &back); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(tb.String(), "HTTP Phases") && strings.Contains(tb.String(), "812.50 / 812.50"); got != tc.want {
			t.Errorf("table has the HTTP phases: %v, want %v\n%s", got, tc.want, tb.String())
		}
		p := parseHTML(t, summaryPage(t, tc.summary))
		if got := strings.Contains(p.text("http-phases"), "812.500"); got != tc.want {
			t.Errorf("report has the HTTP phases: %v, want %v: %q", got, tc.want, p.text("http-phases"))
		}
	}
}
