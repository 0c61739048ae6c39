package otlpexport

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/fineserve-gen/fineserve-gen/internal/otlprecv"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/promexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

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
	rcv := otlprecv.Start()
	defer rcv.Close()
	const n, share = 200, 0.25
	e, err := New(Config{Endpoint: rcv.URL() + "/otlp/", Traces: true, Sample: share, Operation: "chat",
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
	spans := rcv.Spans()
	if len(spans) != len(want) || st.Spans != int64(len(want)) || st.SampledOut != int64(n-len(want)) || st.Dropped != 0 {
		t.Fatalf("%d spans arrived, stats %+v; want %d", len(spans), st, len(want))
	}
	if o := rcv.SpanOrigins(); len(o) != 1 || o[0] != "fineserve-gen github.com/fineserve-gen/fineserve-gen" {
		t.Errorf("spans from %q, want service.name fineserve-gen and the tool's scope", o)
	}
	ids := map[string]bool{}
	for _, sp := range spans {
		a := otlprecv.Attrs(sp)
		i := a[AttrIndex].GetIntValue()
		if !want[i] {
			t.Errorf("span of request %d, not sampled", i)
		}
		// A root span of a trace of its own: ids of their size, none
		// zero, none repeated; sampled, its parent not remote.
		tid, sid := string(sp.TraceId), string(sp.SpanId)
		if len(tid) != 16 || len(sid) != 8 || tid == string(make([]byte, 16)) || sid == string(make([]byte, 8)) || ids[tid] || ids[sid] ||
			len(sp.ParentSpanId) != 0 || sp.Flags != 0x101 {
			t.Errorf("span %d: trace id %x span id %x parent %x flags %#x", i, sp.TraceId, sp.SpanId, sp.ParentSpanId, sp.Flags)
		}
		ids[tid], ids[sid] = true, true
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
		if sp.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET || a[AttrErrorType] != nil || len(a) != 11 {
			t.Errorf("span %d: status %v, %d attributes %v", i, sp.Status, len(a), a)
		}
		if len(sp.Events) != 1 || sp.Events[0].Name != EventFirstToken || sp.Events[0].TimeUnixNano != uint64(start.Add(20*time.Millisecond).UnixNano()) ||
			a[AttrTTFT].GetDoubleValue() != 0.02 {
			t.Errorf("span %d first token: events %v, ttft %v", i, sp.Events, a[AttrTTFT])
		}
	}
	for _, name := range []string{"fineserve_gen_requests", "fineserve_gen_ttft_seconds", "fineserve_gen_e2e_latency_seconds", "fineserve_gen_send_lag_seconds",
		"fineserve_gen_output_tokens", "fineserve_gen_request_errors", "fineserve_gen_requests_in_flight", "fineserve_gen_requests_dispatched", "fineserve_gen_requests_scheduled"} {
		if !rcv.Metrics()[name] {
			t.Errorf("metric %s did not arrive (got %v)", name, rcv.Metrics())
		}
	}
	if bad := rcv.Refused(); len(bad) > 0 {
		t.Errorf("the receiver refused exports: %q", bad)
	}
	for _, h := range rcv.Headers() {
		if h.Get("Authorization") != "Bearer tok" {
			t.Errorf("an export without the header: %v", h)
		}
	}
}

// TestFullQueueDrops: when the span builder cannot keep up, Add drops
// spans and counts them instead of waiting.
func TestFullQueueDrops(t *testing.T) {
	rcv := otlprecv.Start()
	defer rcv.Close()
	e, err := New(Config{Endpoint: rcv.URL() + "/otlp", Traces: true, Sample: 1, Queue: 4, Operation: "text_completion"})
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

// BenchmarkAdd is the exporter's cost per request with every span exported
// to a receiver in this process: Add on the collecting goroutine, the
// span's building and its export on the exporter's own.
func BenchmarkAdd(b *testing.B) {
	rcv := otlprecv.Start()
	defer rcv.Close()
	e, err := New(Config{Endpoint: rcv.URL(), Traces: true, Sample: 1, Operation: "text_completion", ServerURL: "http://127.0.0.1:8000"})
	if err != nil {
		b.Fatal(err)
	}
	e.Begin(time.Now())
	s := sample(1)
	s.ITLTimes = make([]time.Duration, 16)
	for i := range s.ITLTimes {
		s.ITLTimes[i] = time.Duration(i) * time.Millisecond
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Index = int64(i)
		e.Add(s)
	}
	st, _ := e.Close(time.Minute)
	b.StopTimer()
	if st.Dropped > 0 {
		b.Logf("%d dropped", st.Dropped)
	}
}

func TestNamespaceIsPrometheus(t *testing.T) {
	if Namespace != promexport.Namespace {
		t.Errorf("metric names under %q, the Prometheus endpoint's under %q", Namespace, promexport.Namespace)
	}
}

// TestSameFiguresAsPrometheus: the metrics that arrive over OTLP are the
// Prometheus endpoint's figures, every one and no other (its names less
// the _total a collector's Prometheus exporter adds back to counters; not
// the Go runtime's and the process's, which a collector has of its own),
// fed the same requests and the same self-check; client_saturated arrives
// at its value. A figure added to one exporter and not the other fails
// here.
func TestSameFiguresAsPrometheus(t *testing.T) {
	const n = 20
	samples := []*metrics.Sample{}
	for i := range int64(n) {
		s := sample(i)
		switch i {
		case 0:
			s.Good = true
			s.HasTPOT, s.TPOT = true, 9*time.Millisecond
			s.ITLTimes = []time.Duration{20 * time.Millisecond, 29 * time.Millisecond, 38 * time.Millisecond}
		case 5:
			s.OK, s.Cancelled = false, true
		case 6:
			s.Status = 201 // completed, another code
		}
		samples = append(samples, s)
	}
	live := func() int64 { return 3 }

	prom := promexport.New(promexport.Config{Scheduled: n, InFlight: live, Dispatched: live})
	for _, s := range samples {
		prom.Add(s)
	}
	prom.SetSaturated(true)
	families, err := prom.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range families {
		name, ok := strings.CutPrefix(f.GetName(), promexport.Namespace+"_")
		if !ok {
			continue // go_…, process_…
		}
		if f.GetType() == dto.MetricType_COUNTER {
			name = strings.TrimSuffix(name, "_total")
		}
		want[Namespace+"_"+name] = true
	}

	rcv := otlprecv.Start()
	defer rcv.Close()
	e, err := New(Config{Endpoint: rcv.URL(), Operation: "chat", Scheduled: n, InFlight: live, Dispatched: live})
	if err != nil {
		t.Fatal(err)
	}
	e.Begin(time.Now())
	for _, s := range samples {
		e.Add(s)
	}
	e.SetSaturated(true)
	if _, err := e.Close(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	got := rcv.Metrics()
	for name := range want {
		if !got[name] {
			t.Errorf("%s is on the Prometheus endpoint but was not exported over OTLP", name)
		}
	}
	for name := range got {
		if !want[name] {
			t.Errorf("%s was exported over OTLP but is not on the Prometheus endpoint", name)
		}
	}
	if len(want) < 15 {
		t.Errorf("only %d figures on the Prometheus endpoint: %v", len(want), slices.Sorted(maps.Keys(want)))
	}
	if v, ok := rcv.Gauge(Namespace + "_client_saturated"); !ok || v != 1 {
		t.Errorf("client_saturated arrived as %v (%v), want 1", v, ok)
	}
}

// TestSpansAllocateNothing: once a batch has held as many spans, building
// more — every attribute, the event, an error status — allocates nothing
// but a failed request's status message (the SDK's tracer and transform
// allocated some sixty objects a span).
func TestSpansAllocateNothing(t *testing.T) {
	e := &Exporter{cfg: Config{Operation: "chat", Service: "fineserve-gen"}, names: map[string]string{}}
	e.serverAddr, e.serverPort = serverOf("http://10.0.0.7:8000/v1")
	b := newSpanBatch("fineserve-gen", 64)
	epoch := time.Unix(1_800_000_000, 0)
	data := make([]spanData, 64)
	for i := range data {
		s := sample(int64(i))
		s.Turn, s.Cancelled = i%3, i%5 == 0
		data[i] = spanData{index: s.Index, turn: s.Turn, model: s.Model, requestID: s.RequestID, errClass: s.ErrorClass, err: s.Error,
			sent: s.Sent, firstToken: s.FirstToken, end: s.End, hasTTFT: s.HasTTFT, ttft: s.TTFT, lag: s.Lag,
			inTokens: s.InputLen, outTokens: s.OutputTokens, status: s.Status, ok: s.OK, cancelled: s.Cancelled, hasSent: s.HasLag}
	}
	fill := func() {
		b.reset()
		for i := range data {
			b.add(e, epoch, &data[i])
		}
	}
	fill()
	failed := 0
	for _, d := range data {
		if !d.ok && !d.cancelled {
			failed++
		}
	}
	if n := testing.AllocsPerRun(20, fill); n > float64(failed) {
		t.Errorf("%v allocations a batch of %d spans, %d of them failed", n, len(data), failed)
	}
	// The batch is what was built: the failed request's span has its
	// error, the sixth no first token event once cancelled.
	req := b.request()
	spans := req[0].ScopeSpans[0].Spans
	if len(spans) != len(data) || spans[3].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || otlprecv.Attrs(spans[3])[AttrErrorType].GetStringValue() != "http_5xx" ||
		otlprecv.Attrs(spans[5])[AttrCancelled].GetBoolValue() != true || spans[7].Name != "chat m" {
		t.Errorf("batch of %d spans: %v", len(spans), spans[3])
	}
}

// TestOperation: each API kind's spans carry the GenAI conventions'
// operation name where one fits (chat, text_completion, embeddings), else
// the endpoint's last path part; --endpoint decides over the kind.
func TestOperation(t *testing.T) {
	for name, want := range map[string]string{
		"vllm": "text_completion", "openai-chat": "chat", "openai-responses": "chat", "anthropic-messages": "chat",
		"sglang-generate": "text_completion", "kserve-generate": "text_completion", "openai-embeddings": "embeddings",
		"vllm-rerank": "rerank", "openai-transcriptions": "transcriptions",
	} {
		k, ok := api.Lookup(name)
		if !ok {
			t.Fatalf("no API kind %s", name)
		}
		if got := Operation(k, ""); got != want {
			t.Errorf("%s (%s): %q, want %q", name, k.Path, got, want)
		}
	}
	if k, _ := api.Lookup("openai-chat"); Operation(k, "/v1/completions") != "text_completion" {
		t.Errorf("--endpoint /v1/completions with openai-chat: %q", Operation(k, "/v1/completions"))
	}
}
