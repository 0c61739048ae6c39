package launch

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkOTLPSendLag measures what exporting to an OpenTelemetry
// collector (--otlp-endpoint with --otlp-traces, every request's span) does
// to the client's time keeping: the same run at 2,000 req/s against the
// built-in server in a child process, with the export off and on, in turns
// (round=1, 2, …: the machine's own noise shows as the spread between
// rounds). The collector is a receiver in this process that reads and
// discards what it is sent. It reports the p50 and p99 send lag, the
// client's CPU and allocations per request, its garbage collections, and
// the bytes the collector received per request. docs/PERFORMANCE.md has the figures:
//
//	go test -run '^$' -bench OTLPSendLag -benchtime 20000x -count 2 ./pkg/launch
func BenchmarkOTLPSendLag(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads the server's CPU from /proc")
	}
	m := startMockProcess(b)
	var received atomic.Int64
	coll := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(coll.Close)
	for round := 1; round <= 6; round++ {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("round=%d,otlp=%v", round, on), func(b *testing.B) {
				o := testOptions(m.port)
				o.RequestRate, o.Burstiness = 2000, 1e15
				o.NumPrompts, o.NumPromptsSet = int64(b.N), true
				o.RandomInputLen, o.RandomOutputLen = 256, 16
				if on {
					o.Observe.OTLP.Endpoint, o.Observe.OTLP.Traces, o.Observe.OTLP.Sample = coll.URL, true, 1
				}
				benchRun(b, o, func() float64 { return float64(received.Load()) }, "otlp-B/req")
			})
		}
	}
}
