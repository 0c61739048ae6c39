package promexport

import (
	"math"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// counter returns the value of the series of name whose labels include
// want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == k && l.GetValue() == v
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", name, want)
	return 0
}

func TestScrapeParses(t *testing.T) {
	inFlight := int64(7)
	e := New(Config{InFlight: func() int64 { return inFlight }, Dispatched: func() int64 { return 12 }, Scheduled: 100})
	for i := 0; i < 3; i++ {
		r := &client.Result{}
		r.Reset()
		r.Scheduled, r.Sent, r.FirstToken, r.End = 0, ms(0.5), ms(20), ms(40)
		r.TokenTimes = []time.Duration{ms(20), ms(30), ms(40)}
		r.InputLen, r.CompletionTokens, r.Status = 100, 3, 200
		var s metrics.Sample
		s.From(r, metrics.NoSLO)
		s.Good = i < 2
		e.Add(&s)
	}
	bad := &client.Result{}
	bad.Reset()
	bad.Sent, bad.End, bad.Status, bad.ErrorClass = ms(1), ms(2), 503, record.ErrHTTP5xx
	var s metrics.Sample
	s.From(bad, metrics.NoSLO)
	e.Add(&s)
	// Two requests cut by the client, one mid-stream: counted apart,
	// neither completed nor failed.
	for _, first := range []time.Duration{0, ms(20)} {
		cut := &client.Result{}
		cut.Reset()
		cut.Sent, cut.FirstToken, cut.End, cut.Status, cut.Cancelled, cut.CancelAfter = ms(1), first, ms(30), 200, true, ms(29)
		s.From(cut, metrics.NoSLO)
		e.Add(&s)
	}
	e.SetSaturated(true)

	srv, err := Serve("127.0.0.1:0", e)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	fams := testenv.ScrapeMetrics(t, srv.URL)

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"fineserve_gen_requests_total", map[string]string{"outcome": "completed", "code": "200"}, 3},
		{"fineserve_gen_requests_total", map[string]string{"outcome": "failed", "code": "503"}, 1},
		{"fineserve_gen_request_errors_total", map[string]string{"class": "http_5xx"}, 1},
		{"fineserve_gen_request_errors_total", map[string]string{"class": "timeout"}, 0},
		{"fineserve_gen_ttft_seconds", nil, 3},
		{"fineserve_gen_itl_seconds", nil, 6},
		{"fineserve_gen_tpot_seconds", nil, 3},
		{"fineserve_gen_e2e_latency_seconds", nil, 3},
		{"fineserve_gen_send_lag_seconds", nil, 6},
		{"fineserve_gen_requests_cancelled_total", nil, 2},
		{"fineserve_gen_requests_in_flight", nil, 7},
		{"fineserve_gen_requests_dispatched_total", nil, 12},
		{"fineserve_gen_requests_scheduled", nil, 100},
		{"fineserve_gen_input_tokens_total", nil, 300},
		{"fineserve_gen_output_tokens_total", nil, 9},
		{"fineserve_gen_goodput_requests_total", nil, 2},
		{"fineserve_gen_client_saturated", nil, 1},
	}
	for _, c := range checks {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	h := fams["fineserve_gen_ttft_seconds"].Metric[0].Histogram
	if s := h.GetSampleSum(); math.Abs(s-0.0585) > 1e-9 {
		t.Errorf("TTFT sum %v s, want 3 × 19.5 ms", s)
	}
	if fams["go_goroutines"] == nil || fams["process_cpu_seconds_total"] == nil {
		t.Error("the Go and process collectors are missing")
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}
