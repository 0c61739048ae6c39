package mockserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Fault kinds: how a faulted generation request fails.
const (
	// FaultRefuse closes the connection without answering.
	FaultRefuse = "refuse"
	// FaultReset sends the headers and a first token, then resets the
	// connection (TCP RST).
	FaultReset = "reset"
	// FaultHTTP429 answers 429 with a Retry-After header.
	FaultHTTP429 = "http_429"
	// FaultHTTP500 and FaultHTTP503 answer with a vLLM-style JSON error.
	FaultHTTP500 = "http_500"
	FaultHTTP503 = "http_503"
	// FaultSlowHeaders waits FaultConfig.Delay before the status line, then
	// answers normally.
	FaultSlowHeaders = "slow_headers"
	// FaultGarbageSSE sends a first token, then an event that is not JSON.
	FaultGarbageSSE = "garbage_sse"
	// FaultTruncatedJSON sends a first token, then a chunk cut in the
	// middle of its JSON object, and ends the response.
	FaultTruncatedJSON = "truncated_json"
	// FaultNoDone sends the whole stream but not its final "data: [DONE]"
	// (streamed requests only; a non-streamed response is complete).
	FaultNoDone = "no_done"
	// FaultStall sends the headers and a first token, then nothing, keeping
	// the connection open until the client leaves.
	FaultStall = "stall"
	// FaultEndless sends tokens at the configured inter-token latency (at
	// least 1 ms apart) and never ends the response.
	FaultEndless = "endless"
)

// FaultKinds lists every fault kind.
var FaultKinds = []string{
	FaultRefuse, FaultReset, FaultHTTP429, FaultHTTP500, FaultHTTP503, FaultSlowHeaders,
	FaultGarbageSSE, FaultTruncatedJSON, FaultNoDone, FaultStall, FaultEndless,
}

// Fault is one kind of failure injected into a share of requests.
type Fault struct {
	Kind string
	// Rate is the share of generation requests that get this fault, in
	// (0, 1].
	Rate float64
}

// DefaultFaultDelay is how long slow_headers waits when FaultConfig.Delay
// is zero.
const DefaultFaultDelay = 5 * time.Second

// FaultConfig configures fault injection. The zero value injects nothing.
//
// Which requests fault is deterministic: generation requests are numbered
// 1, 2, … in the order the server receives them, and request n gets the
// fault whose share of [0, 1) holds a hash of (Seed, n) — the faults'
// rates are laid end to end, so they must add up to at most 1. The same
// Seed always faults the same request numbers (see FaultFor).
type FaultConfig struct {
	Faults []Fault
	Seed   uint64
	// Delay is the wait of slow_headers (0: DefaultFaultDelay).
	Delay time.Duration
	// RetryAfter is the Retry-After of http_429, in whole seconds
	// (0: 1 s).
	RetryAfter int
}

// ParseFault parses KIND[:RATE], e.g. "reset" (every request) or
// "http_503:0.1" (10% of requests).
func ParseFault(s string) (Fault, error) {
	kind, rate, hasRate := strings.Cut(strings.TrimSpace(s), ":")
	f := Fault{Kind: strings.ToLower(strings.TrimSpace(kind)), Rate: 1}
	if !slices.Contains(FaultKinds, f.Kind) {
		return Fault{}, fmt.Errorf("fault %q: unknown kind %q (want one of %s)", s, kind, strings.Join(FaultKinds, ", "))
	}
	if hasRate {
		r, err := strconv.ParseFloat(strings.TrimSpace(rate), 64)
		if err != nil || !(r > 0 && r <= 1) {
			return Fault{}, fmt.Errorf("fault %q: rate %q: want a share of requests in (0, 1]", s, rate)
		}
		f.Rate = r
	}
	return f, nil
}

// Validate returns every problem of c at once.
func (c FaultConfig) Validate() error {
	var errs []error
	sum := 0.0
	for _, f := range c.Faults {
		if _, err := ParseFault(f.Kind); err != nil {
			errs = append(errs, err)
		}
		if !(f.Rate > 0 && f.Rate <= 1) {
			errs = append(errs, fmt.Errorf("fault %s: rate %g: want a share of requests in (0, 1]", f.Kind, f.Rate))
		}
		sum += f.Rate
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("fault rates add up to %g: a request gets at most one fault, so the rates must add up to at most 1", sum))
	}
	if c.Delay < 0 {
		errs = append(errs, fmt.Errorf("fault delay %v: want ≥ 0", c.Delay))
	}
	if c.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("fault Retry-After %d: want ≥ 0", c.RetryAfter))
	}
	return errors.Join(errs...)
}

// FaultFor returns the fault kind of generation request number n (1 for the
// first request the server receives), or "" when it is served normally.
func (c FaultConfig) FaultFor(n int64) string {
	if len(c.Faults) == 0 {
		return ""
	}
	h := uint64(n) ^ c.Seed*0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	h ^= h >> 31
	u := float64(h>>11) / (1 << 53)
	cum := 0.0
	for _, f := range c.Faults {
		cum += f.Rate
		if u < cum {
			return f.Kind
		}
	}
	return ""
}

// faultPlan is the server's fault injection state.
type faultPlan struct {
	cfg    FaultConfig
	seq    atomic.Int64
	counts sync.Map // kind → *atomic.Int64
	stop   chan struct{}
	once   sync.Once
}

func newFaultPlan(cfg FaultConfig) (*faultPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("mock server: %w", err)
	}
	if cfg.Delay == 0 {
		cfg.Delay = DefaultFaultDelay
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = 1
	}
	return &faultPlan{cfg: cfg, stop: make(chan struct{})}, nil
}

// next numbers a generation request and returns its fault ("" for none).
func (p *faultPlan) next() string {
	if p == nil || len(p.cfg.Faults) == 0 {
		return ""
	}
	kind := p.cfg.FaultFor(p.seq.Add(1))
	if kind != "" {
		c, _ := p.counts.LoadOrStore(kind, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	return kind
}

// release ends every stalled or endless response (the server is stopping).
func (p *faultPlan) release() {
	if p != nil {
		p.once.Do(func() { close(p.stop) })
	}
}

// FaultCounts returns how many requests got each fault kind so far.
func (s *Server) FaultCounts() map[string]int64 {
	out := map[string]int64{}
	if s.faults == nil {
		return out
	}
	s.faults.counts.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	return out
}

// faultBeforeResponse applies the faults that act before a response is
// generated; it reports whether the request was answered (or dropped).
// slow_headers only waits and lets the request go on.
func (s *Server) faultBeforeResponse(w http.ResponseWriter, r *http.Request, kind string) bool {
	switch kind {
	case FaultRefuse:
		// The body has been read, so closing sends a FIN, not a reset.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return true
	case FaultHTTP429:
		w.Header().Set("Retry-After", strconv.Itoa(s.faults.cfg.RetryAfter))
		writeError(w, http.StatusTooManyRequests, "TooManyRequestsError", "injected fault: the server is rate limiting requests")
		return true
	case FaultHTTP500:
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected fault: the engine failed while handling the request")
		return true
	case FaultHTTP503:
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "injected fault: the server is overloaded")
		return true
	case FaultSlowHeaders:
		return !s.faultWait(r.Context(), time.Now().Add(s.faults.cfg.Delay))
	}
	return false
}

// faultWritesBody reports whether kind replaces the response body.
func faultWritesBody(kind string, stream bool) bool {
	switch kind {
	case FaultReset, FaultGarbageSSE, FaultTruncatedJSON, FaultStall, FaultEndless:
		return true
	case FaultNoDone:
		return stream
	}
	return false
}

// faultWait waits until t, the client leaves or the server stops; it
// reports whether t was reached.
func (s *Server) faultWait(ctx context.Context, t time.Time) bool {
	tm := time.NewTimer(time.Until(t))
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
	case <-s.faults.stop:
	}
	return false
}

// faultBody writes the response of a request whose body faults, once its
// first token is due.
func (s *Server) faultBody(ctx context.Context, w http.ResponseWriter, kind string, g *generation, first time.Time) {
	if !sleepUntil(ctx, first) {
		return
	}
	rc := http.NewResponseController(w)
	var head []byte // what is sent before the fault acts
	if g.req.stream {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		if g.chat {
			head = g.appendChunk(head, -1)
		}
		if kind != FaultNoDone {
			head = g.appendChunk(head, 0)
		}
	} else {
		w.Header().Set("Content-Type", "application/json")
		whole := g.whole()
		head = whole[:len(whole)/2]
	}
	w.WriteHeader(http.StatusOK)
	w.Write(head)
	rc.Flush()

	switch kind {
	case FaultReset:
		conn, _, err := rc.Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // close sends a reset
		}
		conn.Close()
	case FaultGarbageSSE:
		if g.req.stream {
			io.WriteString(w, "data: \x00\x7f<html>garbage{{{\xff\n\n: not json\n\ndata: [DONE]\n\n")
		} else {
			io.WriteString(w, "\x00<html>garbage")
		}
	case FaultTruncatedJSON:
		if g.req.stream {
			c := g.appendChunk(nil, min(1, g.out-1))
			w.Write(c[:len(c)/2]) // cut mid-object, no end of event
		}
		// A non-streamed response already stopped halfway.
	case FaultNoDone:
		b := []byte(nil)
		for k := range g.out {
			b = g.appendChunk(b, k)
		}
		if g.req.usage {
			b = g.appendUsageChunk(b)
		}
		w.Write(b)
	case FaultStall:
		select {
		case <-ctx.Done():
		case <-s.faults.stop:
		}
	case FaultEndless:
		itl := max(s.cfg.ITL, time.Millisecond)
		next := time.Now()
		eg := *g
		eg.out = math.MaxInt                           // no chunk is the last
		eg.reasoning, eg.tool, eg.answer = 0, nil, nil // plain tokens
		var b []byte
		for k := 1; ; k++ {
			next = next.Add(itl)
			if !s.faultWait(ctx, next) {
				return
			}
			if g.req.stream {
				b = eg.appendChunk(b[:0], k)
			} else {
				b = append(b[:0], tokenText...)
			}
			if _, err := w.Write(b); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}

// String describes the configured faults (the mock's startup line).
func (c FaultConfig) String() string {
	if len(c.Faults) == 0 {
		return "none"
	}
	parts := make([]string, len(c.Faults))
	for i, f := range c.Faults {
		parts[i] = f.Kind + ":" + strconv.FormatFloat(f.Rate, 'g', -1, 64)
	}
	return strings.Join(parts, ",") + " (seed " + strconv.FormatUint(c.Seed, 10) + ")"
}
