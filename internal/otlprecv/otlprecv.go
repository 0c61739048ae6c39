// Package otlprecv is a small OTLP/HTTP receiver for tests: it decodes the
// protobuf export requests posted to /v1/traces and /v1/metrics (under any
// path prefix) with the collector's own message types and keeps what
// arrived — spans, metric names, gauges' last values, request headers —
// for the test to check.
package otlprecv

import (
	"compress/gzip"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// maxBody bounds one export request's body.
const maxBody = 64 << 20

// Receiver is an OTLP/HTTP collector on a loopback port.
type Receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.Span
	origins map[string]bool // "service.name scope" of the spans
	metrics map[string]int
	gauges  map[string]float64
	headers []http.Header
	bad     []string
}

// Start serves a receiver until Close.
func Start() *Receiver {
	r := &Receiver{metrics: map[string]int{}, gauges: map[string]float64{}, origins: map[string]bool{}}
	r.srv = httptest.NewServer(r)
	return r
}

// URL is the receiver's base URL (--otlp-endpoint).
func (r *Receiver) URL() string { return r.srv.URL }

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			r.refuse(w, "gzip: "+err.Error())
			return
		}
		body = z
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBody))
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" || req.Method != http.MethodPost {
		r.refuse(w, "not a protobuf POST: "+req.Method+" "+req.Header.Get("Content-Type"))
		return
	}
	// in is the export request, resp its answer; keep keeps what in holds.
	var in, resp proto.Message
	var what string
	var keep func()
	switch {
	case strings.HasSuffix(req.URL.Path, "/v1/traces"):
		m := new(colltrace.ExportTraceServiceRequest)
		in, resp, what = m, &colltrace.ExportTraceServiceResponse{}, "traces"
		keep = func() {
			for _, rs := range m.ResourceSpans {
				service := ""
				for _, kv := range rs.GetResource().GetAttributes() {
					if kv.Key == "service.name" {
						service = kv.GetValue().GetStringValue()
					}
				}
				for _, ss := range rs.ScopeSpans {
					r.spans = append(r.spans, ss.Spans...)
					r.origins[service+" "+ss.GetScope().GetName()] = true
				}
			}
		}
	case strings.HasSuffix(req.URL.Path, "/v1/metrics"):
		m := new(collmetrics.ExportMetricsServiceRequest)
		in, resp, what = m, &collmetrics.ExportMetricsServiceResponse{}, "metrics"
		keep = func() {
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						r.metrics[mt.Name]++
						for _, p := range mt.GetGauge().GetDataPoints() {
							if _, ok := p.Value.(*metricspb.NumberDataPoint_AsInt); ok {
								r.gauges[mt.Name] = float64(p.GetAsInt())
							} else {
								r.gauges[mt.Name] = p.GetAsDouble()
							}
						}
					}
				}
			}
		}
	default:
		r.refuse(w, "path "+req.URL.Path)
		return
	}
	if err := proto.Unmarshal(b, in); err != nil {
		r.refuse(w, what+": "+err.Error())
		return
	}
	r.mu.Lock()
	keep()
	r.headers = append(r.headers, req.Header.Clone())
	r.mu.Unlock()
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (r *Receiver) refuse(w http.ResponseWriter, why string) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, http.StatusBadRequest)
}

// Spans returns the spans received.
func (r *Receiver) Spans() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.spans)
}

// SpanOrigins returns the resources' service.name and the scopes' names
// the spans came with, as "service scope".
func (r *Receiver) SpanOrigins() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.origins))
}

// Metrics returns the names of the metrics received.
func (r *Receiver) Metrics() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for n := range r.metrics {
		out[n] = true
	}
	return out
}

// Gauge returns the value of a gauge's last data point received (false:
// none arrived).
func (r *Receiver) Gauge(name string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.gauges[name]
	return v, ok
}

// Headers returns the headers of every export accepted.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.headers)
}

// Refused returns why requests were refused (none: every one was a valid
// export).
func (r *Receiver) Refused() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bad)
}

// Attrs returns a span's attributes by key.
func Attrs(sp *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, a := range sp.Attributes {
		m[a.Key] = a.Value
	}
	return m
}
