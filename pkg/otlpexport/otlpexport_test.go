package otlpexport

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// receiver is a small OTLP/HTTP collector: it decodes the protobuf bodies
// posted to /v1/traces and /v1/metrics and keeps them.
type receiver struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics map[string]bool
	headers []http.Header
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = z
	}
	b, err := io.ReadAll(io.LimitReader(body, 64<<20))
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad body", 400)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.headers = append(r.headers, req.Header.Clone())
	switch req.URL.Path {
	case "/otlp/v1/traces":
		var m colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/otlp/v1/metrics":
		var m collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &m); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rm := range m.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, mt := range sm.Metrics {
					r.metrics[mt.Name] = true
				}
			}
		}
		out, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, req)
	}
}

func attrs(kv []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, a := range kv {
		m[a.Key] = a.Value
	}
	return m
}

func sample(i int64) *metrics.Sample {
	s := &metrics.Sample{Request: record.Request{Index: i, Model: "m", Sent: time.Duration(i) * time.Millisecond,
		FirstToken: time.Duration(i)*time.Millisecond + 20*time.Millisecond, End: time.Duration(i)*time.Millisecond + 100*time.Millisecond,
		InputLen: 50, PromptTokens: 51, Status: 200, RequestID: "run-" + string(rune('a'+i%26))},
		OK: true, HasLag: true, Lag: time.Millisecond, HasTTFT: true, TTFT: 20 * time.Millisecond, HasE2E: true, E2E: 100 * time.Millisecond}
	s.OutputTokens = 10
	if i == 3 {
		s.OK, s.Status, s.ErrorClass, s.Error = false, 503, "http_5xx", "503 Service Unavailable"
	}
	return s
}

// TestExportToReceiver: the spans that arrive are the sampled requests' —
// as many as Keep chooses, with the GenAI attributes, the request id, the
// record's send and end times from the epoch and the first token's event —
// and the metrics arrive under the Prometheus endpoint's names; the
// headers given go with every export.
func TestExportToReceiver(t *testing.T) {
	rcv := &receiver{metrics: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	const n, share = 200, 0.25
	e, err := New(Config{Endpoint: srv.URL + "/otlp/", Traces: true, Sample: share, Operation: "chat",
		ServerURL: "http://10.0.0.7:8000/v1", Headers: map[string]string{"Authorization": "Bearer tok"},
		Scheduled: n, InFlight: func() int64 { return 0 }, Dispatched: func() int64 { return n }})
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Unix(1_800_000_000, 0)
	e.Begin(epoch)
	want := map[int64]bool{}
	for i := range int64(n) {
		e.Add(sample(i))
		if Keep(i, share) {
			want[i] = true
		}
	}
	st, err := e.Close(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < n*share*0.6 || len(want) > n*share*1.4 {
		t.Fatalf("Keep chose %d of %d at %g", len(want), n, share)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != len(want) || st.Spans != int64(len(want)) || st.SampledOut != int64(n-len(want)) || st.Dropped != 0 {
		t.Fatalf("%d spans arrived, stats %+v; want %d", len(rcv.spans), st, len(want))
	}
	for _, sp := range rcv.spans {
		a := attrs(sp.Attributes)
		i := a[AttrIndex].GetIntValue()
		if !want[i] {
			t.Errorf("span of request %d, not sampled", i)
		}
		if a[AttrOperation].GetStringValue() != "chat" || a[AttrRequestModel].GetStringValue() != "m" || a[AttrInputTokens].GetIntValue() != 51 ||
			a[AttrOutputTokens].GetIntValue() != 10 || a[AttrServerAddr].GetStringValue() != "10.0.0.7" || a[AttrServerPort].GetIntValue() != 8000 {
			t.Errorf("span %d attributes %v", i, a)
		}
		if id := a[AttrRequestID].GetArrayValue().GetValues(); len(id) != 1 || id[0].GetStringValue() != sample(i).RequestID {
			t.Errorf("span %d request id %v", i, id)
		}
		if sp.Name != "chat m" || sp.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Errorf("span %d name %q kind %v", i, sp.Name, sp.Kind)
		}
		start := epoch.Add(time.Duration(i) * time.Millisecond)
		if sp.StartTimeUnixNano != uint64(start.UnixNano()) || sp.EndTimeUnixNano != uint64(start.Add(100*time.Millisecond).UnixNano()) {
			t.Errorf("span %d from %d to %d, want the record's send and end", i, sp.StartTimeUnixNano, sp.EndTimeUnixNano)
		}
		if i == 3 {
			if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || a[AttrErrorType].GetStringValue() != "http_5xx" {
				t.Errorf("failed request's span: status %v, error.type %v", sp.Status, a[AttrErrorType])
			}
			continue
		}
		if len(sp.Events) != 1 || sp.Events[0].Name != EventFirstToken || sp.Events[0].TimeUnixNano != uint64(start.Add(20*time.Millisecond).UnixNano()) ||
			a[AttrTTFT].GetDoubleValue() != 0.02 {
			t.Errorf("span %d first token: events %v, ttft %v", i, sp.Events, a[AttrTTFT])
		}
	}
	for _, name := range []string{"fineserve_gen_requests", "fineserve_gen_ttft_seconds", "fineserve_gen_e2e_latency_seconds", "fineserve_gen_send_lag_seconds",
		"fineserve_gen_output_tokens", "fineserve_gen_request_errors", "fineserve_gen_requests_in_flight", "fineserve_gen_requests_dispatched", "fineserve_gen_requests_scheduled"} {
		if !rcv.metrics[name] {
			t.Errorf("metric %s did not arrive (got %v)", name, rcv.metrics)
		}
	}
	for _, h := range rcv.headers {
		if h.Get("Authorization") != "Bearer tok" {
			t.Errorf("an export without the header: %v", h)
		}
	}
}

// TestFullQueueDrops: when the span builder cannot keep up, Add drops
// spans and counts them instead of waiting.
func TestFullQueueDrops(t *testing.T) {
	rcv := &receiver{metrics: map[string]bool{}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	e, err := New(Config{Endpoint: srv.URL + "/otlp", Traces: true, Sample: 1, Queue: 4, Operation: "text_completion"})
	if err != nil {
		t.Fatal(err)
	}
	// Not begun: nothing takes from the queue, so the fifth span on is
	// dropped, and Add returns at once every time.
	done := make(chan struct{})
	go func() {
		for i := range int64(10) {
			e.Add(sample(i))
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Add waited for room in the queue")
	}
	st, _ := e.Close(5 * time.Second)
	if st.Spans != 4 || st.Dropped != 6 {
		t.Errorf("stats %+v: want 4 queued, 6 dropped", st)
	}
}

func TestKeepIsAShare(t *testing.T) {
	n := 0
	for i := range int64(100000) {
		if Keep(i, 0.1) {
			n++
		}
		if !Keep(i, 1) || Keep(i, 0) {
			t.Fatal("shares 1 and 0")
		}
	}
	if n < 9700 || n > 10300 { // ±3 %: about 3 standard deviations
		t.Errorf("Keep(·, 0.1) chose %d of 100000", n)
	}
}

func TestBadEndpoint(t *testing.T) {
	_, err := New(Config{Endpoint: "ftp://user:secretpw@host/"})
	if err == nil || strings.Contains(err.Error(), "secretpw") {
		t.Errorf("error %v: want one, without the password", err)
	}
}
