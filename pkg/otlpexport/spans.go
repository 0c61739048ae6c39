package otlpexport

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// The spans go out as OTLP messages built here, not through the SDK's
// tracer, batch span processor and its transform: those wake a goroutine
// for every span, allocate some sixty objects a span and transform a
// batch in one burst of milliseconds that does not yield — time the
// dispatcher, sharing the machine's cores, waited for (the send lag's p99
// at 2,000 req/s was worse with the export on: docs/PERFORMANCE.md). A
// batch's messages are kept from one batch to the next (building a span
// allocates nothing once as many have been built) and sent with the SDK's
// OTLP/HTTP client (otlptracehttp: its headers, retries and errors).

// scopeName is the instrumentation scope of the spans.
const scopeName = "github.com/fineserve-gen/fineserve-gen"

// maxAttrs is the most attributes a span has (see spanSlot.fill).
const maxAttrs = 16

// spanFlags are a span's flags: sampled (W3C trace flags 01), and its
// parent known not to be remote (a root span), as the SDK's exporter
// writes them.
const spanFlags = 0x01 | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)

// spanBatch is one export request of spans: one resource, one scope, up
// to len(slots) spans.
type spanBatch struct {
	req   []*tracepb.ResourceSpans
	scope *tracepb.ScopeSpans
	slots []*spanSlot
	spans []*tracepb.Span
	n     int
	ids   *rand.PCG
}

func newSpanBatch(service string, size int) *spanBatch {
	b := &spanBatch{
		scope: &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: scopeName}},
		slots: make([]*spanSlot, size),
		spans: make([]*tracepb.Span, size),
		ids:   rand.NewPCG(rand.Uint64(), rand.Uint64()),
	}
	res := &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name",
		Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}}}}
	b.req = []*tracepb.ResourceSpans{{Resource: res, ScopeSpans: []*tracepb.ScopeSpans{b.scope}}}
	for i := range b.slots {
		b.slots[i] = new(spanSlot)
		b.spans[i] = &b.slots[i].span
	}
	return b
}

// full reports whether the batch holds as many spans as it can.
func (b *spanBatch) full() bool { return b.n == len(b.slots) }

// add builds the span of d into the batch's next slot.
func (b *spanBatch) add(e *Exporter, epoch time.Time, d *spanData) {
	s := b.slots[b.n]
	b.n++
	binary.LittleEndian.PutUint64(s.ids[0:], b.ids.Uint64())
	binary.LittleEndian.PutUint64(s.ids[8:], b.ids.Uint64())
	id := b.ids.Uint64() | 1 // a span id is never all zeros
	binary.LittleEndian.PutUint64(s.ids[16:], id)
	s.fill(e, epoch, d)
}

// request is the batch as an export request; reset empties it once sent.
func (b *spanBatch) request() []*tracepb.ResourceSpans {
	b.scope.Spans = b.spans[:b.n]
	return b.req
}

func (b *spanBatch) reset() { b.n = 0 }

// spanSlot is a span's messages, reused: the span, its attributes and
// their values (one of each kind a slot, by the attribute's position), its
// first token's event and its status.
type spanSlot struct {
	span   tracepb.Span
	ids    [24]byte // trace id, span id
	attrs  [maxAttrs]*commonpb.KeyValue
	kv     [maxAttrs]commonpb.KeyValue
	val    [maxAttrs]commonpb.AnyValue
	str    [maxAttrs]commonpb.AnyValue_StringValue
	num    [maxAttrs]commonpb.AnyValue_IntValue
	dbl    [maxAttrs]commonpb.AnyValue_DoubleValue
	flag   [maxAttrs]commonpb.AnyValue_BoolValue
	arr    [maxAttrs]commonpb.AnyValue_ArrayValue
	list   [maxAttrs]commonpb.ArrayValue
	elem   [maxAttrs]commonpb.AnyValue
	elems  [maxAttrs][1]*commonpb.AnyValue
	elemS  [maxAttrs]commonpb.AnyValue_StringValue
	event  tracepb.Span_Event
	events [1]*tracepb.Span_Event
	status tracepb.Status
	n      int
}

// next is the next attribute's key-value, keyed k, its value to be set.
func (s *spanSlot) next(k string) (int, *commonpb.AnyValue) {
	i := s.n
	s.n++
	kv := &s.kv[i]
	kv.Key, kv.Value = k, &s.val[i]
	s.attrs[i] = kv
	return i, &s.val[i]
}

func (s *spanSlot) setString(k, v string) {
	i, av := s.next(k)
	s.str[i].StringValue = v
	av.Value = &s.str[i]
}

func (s *spanSlot) setInt(k string, v int64) {
	i, av := s.next(k)
	s.num[i].IntValue = v
	av.Value = &s.num[i]
}

func (s *spanSlot) setFloat(k string, v float64) {
	i, av := s.next(k)
	s.dbl[i].DoubleValue = v
	av.Value = &s.dbl[i]
}

func (s *spanSlot) setBool(k string, v bool) {
	i, av := s.next(k)
	s.flag[i].BoolValue = v
	av.Value = &s.flag[i]
}

// setStrings sets a list of one string.
func (s *spanSlot) setStrings(k, v string) {
	i, av := s.next(k)
	s.elemS[i].StringValue = v
	s.elem[i].Value = &s.elemS[i]
	s.elems[i][0] = &s.elem[i]
	s.list[i].Values = s.elems[i][:]
	s.arr[i].ArrayValue = &s.list[i]
	av.Value = &s.arr[i]
}

// unixNano is t in ns since 1970 (0 before).
func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

// fill sets the span of d: its ids (set by add), name, kind, times,
// attributes (the GenAI and HTTP conventions' and the generator's own),
// first token's event and status.
func (s *spanSlot) fill(e *Exporter, epoch time.Time, d *spanData) {
	sp := &s.span
	sp.TraceId, sp.SpanId = s.ids[0:16], s.ids[16:24]
	sp.Flags = spanFlags
	sp.Kind = tracepb.Span_SPAN_KIND_CLIENT
	sp.Name = e.spanName(d.model)
	end := max(d.end, d.sent)
	sp.StartTimeUnixNano, sp.EndTimeUnixNano = unixNano(epoch.Add(d.sent)), unixNano(epoch.Add(end))

	s.n = 0
	if e.serverAddr != "" {
		s.setString(AttrServerAddr, e.serverAddr)
		if e.serverPort > 0 {
			s.setInt(AttrServerPort, e.serverPort)
		}
	}
	s.setString(AttrOperation, e.cfg.Operation)
	s.setString(AttrRequestModel, d.model)
	s.setInt(AttrIndex, d.index)
	s.setInt(AttrInputTokens, int64(d.inTokens))
	s.setInt(AttrOutputTokens, int64(d.outTokens))
	if d.turn > 0 {
		s.setInt(AttrTurn, int64(d.turn))
	}
	if d.status > 0 {
		s.setInt(AttrStatusCode, int64(d.status))
	}
	if d.requestID != "" {
		s.setStrings(AttrRequestID, d.requestID)
	}
	if d.hasSent {
		s.setFloat(AttrSendLag, d.lag.Seconds())
	}
	if d.hasTTFT {
		s.setFloat(AttrTTFT, d.ttft.Seconds())
	}
	if d.cancelled {
		s.setBool(AttrCancelled, true)
	}
	failed := !d.ok && !d.cancelled
	if failed {
		s.setString(AttrErrorType, d.errClass)
	}
	sp.Attributes = s.attrs[:s.n]

	sp.Events = nil
	if d.hasTTFT && d.firstToken > 0 {
		s.event.Name, s.event.TimeUnixNano = EventFirstToken, unixNano(epoch.Add(d.firstToken))
		s.events[0] = &s.event
		sp.Events = s.events[:]
	}
	s.status.Code, s.status.Message = tracepb.Status_STATUS_CODE_UNSET, ""
	if failed {
		s.status.Code, s.status.Message = tracepb.Status_STATUS_CODE_ERROR, statusText(d.errClass, d.err)
	}
	sp.Status = &s.status
}
