package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// faultServer starts the built-in server injecting one fault kind into
// every generation request, and returns its base URL.
func faultServer(t *testing.T, kind string, delay time.Duration) string {
	t.Helper()
	_, port := mocktest.Start(t, mockserver.Config{
		Models: []string{"m"}, ITL: time.Millisecond,
		Faults: mockserver.FaultConfig{Faults: []mockserver.Fault{{Kind: kind, Rate: 1}}, Delay: delay},
	})
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

func faultClient(t *testing.T, url string, cfg Config) *Client {
	t.Helper()
	cfg.BaseURL, cfg.API, cfg.Model, cfg.Epoch = url, api.VLLM, "m", time.Now()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func faultDo(c *Client) *Result {
	res := &Result{}
	res.Reset()
	c.Do(context.Background(), &Request{MaxTokens: 4, Prompt: []byte("[1,2,3]")}, res)
	return res
}

// TestEveryFaultIsClassified sends requests to the built-in server with
// each fault injected, streamed and not, and checks the error class.
func TestEveryFaultIsClassified(t *testing.T) {
	short := 150 * time.Millisecond
	for _, tc := range []struct {
		kind           string
		stream         bool
		cfg            Config
		class, message string
	}{
		{mockserver.FaultRefuse, true, Config{}, record.ErrConnect, "closed"},
		{mockserver.FaultRefuse, false, Config{}, record.ErrConnect, "closed"},
		{mockserver.FaultReset, true, Config{}, record.ErrReset, "reset"},
		{mockserver.FaultReset, false, Config{}, record.ErrReset, "reset"},
		{mockserver.FaultHTTP429, true, Config{}, record.ErrHTTP429, "rate limiting"},
		{mockserver.FaultHTTP500, true, Config{}, record.ErrHTTP5xx, "engine failed"},
		{mockserver.FaultHTTP503, false, Config{}, record.ErrHTTP5xx, "overloaded"},
		{mockserver.FaultSlowHeaders, true, Config{StallTimeout: short}, record.ErrTimeout, "stall"},
		{mockserver.FaultSlowHeaders, true, Config{RequestTimeout: short}, record.ErrTimeout, "request timeout"},
		{mockserver.FaultGarbageSSE, true, Config{}, record.ErrProtocol, "invalid JSON"},
		{mockserver.FaultGarbageSSE, false, Config{}, record.ErrProtocol, "invalid JSON"},
		{mockserver.FaultTruncatedJSON, true, Config{}, record.ErrProtocol, "invalid JSON"},
		{mockserver.FaultTruncatedJSON, false, Config{}, record.ErrProtocol, "invalid JSON"},
		{mockserver.FaultNoDone, true, Config{}, record.ErrProtocol, "[DONE]"},
		{mockserver.FaultNoDone, false, Config{}, "", ""},
		{mockserver.FaultStall, true, Config{StallTimeout: short}, record.ErrTimeout, "stall"},
		{mockserver.FaultStall, false, Config{StallTimeout: short}, record.ErrTimeout, "stall"},
		{mockserver.FaultStall, true, Config{RequestTimeout: short}, record.ErrTimeout, "request timeout"},
		// A stream that goes on past max_tokens (4) plus the margin (8)
		// is cut at once, whatever the timeouts.
		{mockserver.FaultEndless, true, Config{}, record.ErrProtocol, "stream exceeded max_tokens (13 > 4)"},
		{mockserver.FaultEndless, true, Config{RequestTimeout: short, ExtraBody: []byte(`{"max_tokens": 4}`)}, record.ErrTimeout, "request timeout"},
		{mockserver.FaultEndless, false, Config{RequestTimeout: short}, record.ErrTimeout, "request timeout"},
	} {
		name := tc.kind
		if !tc.stream {
			name += "/no-stream"
		}
		if tc.cfg.StallTimeout > 0 && tc.cfg.RequestTimeout == 0 {
			name += "/stall-timeout"
		}
		t.Run(name, func(t *testing.T) {
			url := faultServer(t, tc.kind, 10*short)
			tc.cfg.Stream = tc.stream
			c := faultClient(t, url, tc.cfg)
			for i := range 3 { // fresh and reused connections
				res := faultDo(c)
				if res.ErrorClass != tc.class || !strings.Contains(res.Error, tc.message) {
					t.Fatalf("request %d: class %q error %q, want %q containing %q", i, res.ErrorClass, res.Error, tc.class, tc.message)
				}
				if res.End < res.Sent || res.Sent <= 0 {
					t.Errorf("request %d: sent %v end %v", i, res.Sent, res.End)
				}
				if res.Retries != 0 {
					t.Errorf("request %d: %d retries without --retries", i, res.Retries)
				}
			}
		})
	}
}

// TestSlowHeadersWithoutTimeoutSucceeds: a late status line is latency,
// not an error, when no timeout is set.
func TestSlowHeadersWithoutTimeoutSucceeds(t *testing.T) {
	delay := 100 * time.Millisecond
	url := faultServer(t, mockserver.FaultSlowHeaders, delay)
	res := faultDo(faultClient(t, url, Config{Stream: true}))
	if !res.OK() || res.TTFT() < delay {
		t.Errorf("class %q (%s), ttft %v: want success with ttft ≥ %v", res.ErrorClass, res.Error, res.TTFT(), delay)
	}
}

// flaky answers 503 (with retryAfter) to its first fails requests, then
// streams a short completion.
type flaky struct {
	fails      int64
	retryAfter string
	status     int
	n          atomic.Int64
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.n.Add(1) <= f.fails {
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		w.WriteHeader(f.status)
		w.Write([]byte(`{"object":"error","message":"try again","code":503}`))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Write([]byte("data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\"}]}\n\ndata: [DONE]\n\n"))
}

func TestRetries(t *testing.T) {
	t.Run("none by default", func(t *testing.T) {
		f := &flaky{fails: 1, status: 503}
		hs := httptest.NewServer(f)
		defer hs.Close()
		res := faultDo(faultClient(t, hs.URL, Config{Stream: true}))
		if res.ErrorClass != record.ErrHTTP5xx || res.Retries != 0 || f.n.Load() != 1 {
			t.Errorf("class %q retries %d attempts %d: want one http_5xx attempt", res.ErrorClass, res.Retries, f.n.Load())
		}
	})
	t.Run("503 then success", func(t *testing.T) {
		f := &flaky{fails: 2, status: 503}
		hs := httptest.NewServer(f)
		defer hs.Close()
		res := faultDo(faultClient(t, hs.URL, Config{Stream: true, Retries: 3}))
		if !res.OK() || res.Retries != 2 || f.n.Load() != 3 {
			t.Fatalf("class %q (%s) retries %d attempts %d: want success after 2 retries", res.ErrorClass, res.Error, res.Retries, f.n.Load())
		}
		// Measured from the first attempt: both backoffs (100 + 200 ms)
		// are in the latency.
		if res.TTFT() < 3*retryBackoff || res.Status != 200 || res.CompletionTokens != 2 {
			t.Errorf("ttft %v status %d tokens %d: want ≥ %v from the first send, 200, 2", res.TTFT(), res.Status, res.CompletionTokens, 3*retryBackoff)
		}
	})
	t.Run("gives up after N", func(t *testing.T) {
		f := &flaky{fails: 100, status: 500}
		hs := httptest.NewServer(f)
		defer hs.Close()
		res := faultDo(faultClient(t, hs.URL, Config{Stream: true, Retries: 2}))
		if res.ErrorClass != record.ErrHTTP5xx || res.Retries != 2 || f.n.Load() != 3 || !strings.Contains(res.Error, "try again") {
			t.Errorf("class %q (%s) retries %d attempts %d: want http_5xx after 2 retries", res.ErrorClass, res.Error, res.Retries, f.n.Load())
		}
	})
	t.Run("4xx is not retried", func(t *testing.T) {
		f := &flaky{fails: 100, status: 400}
		hs := httptest.NewServer(f)
		defer hs.Close()
		res := faultDo(faultClient(t, hs.URL, Config{Stream: true, Retries: 2}))
		if res.ErrorClass != record.ErrHTTP4xx || res.Retries != 0 || f.n.Load() != 1 {
			t.Errorf("class %q retries %d attempts %d", res.ErrorClass, res.Retries, f.n.Load())
		}
	})
	t.Run("the request timeout bounds every attempt", func(t *testing.T) {
		f := &flaky{fails: 100, status: 429, retryAfter: "30"}
		hs := httptest.NewServer(f)
		defer hs.Close()
		res := faultDo(faultClient(t, hs.URL, Config{Stream: true, Retries: 5, RequestTimeout: 200 * time.Millisecond}))
		if res.ErrorClass != record.ErrHTTP429 || res.Retries != 0 || f.n.Load() != 1 {
			t.Errorf("class %q retries %d attempts %d: want the 429 kept when the timeout ends the wait", res.ErrorClass, res.Retries, f.n.Load())
		}
	})
	for _, kind := range []string{mockserver.FaultReset, mockserver.FaultStall, mockserver.FaultGarbageSSE} {
		t.Run(kind+" is not retried", func(t *testing.T) {
			url := faultServer(t, kind, 0)
			res := faultDo(faultClient(t, url, Config{Stream: true, Retries: 3, StallTimeout: 100 * time.Millisecond}))
			if res.OK() || res.Retries != 0 {
				t.Errorf("class %q retries %d: want a failure without retry", res.ErrorClass, res.Retries)
			}
		})
	}
	t.Run("refused connections are retried", func(t *testing.T) {
		url := faultServer(t, mockserver.FaultRefuse, 0)
		res := faultDo(faultClient(t, url, Config{Stream: true, Retries: 2}))
		if res.ErrorClass != record.ErrConnect || res.Retries != 2 {
			t.Errorf("class %q retries %d: want connect after 2 retries", res.ErrorClass, res.Retries)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "-3": 0, "2": 2 * time.Second, " 7 ": 7 * time.Second, "99999": maxRetryAfter,
		"soon": 0, "Mon, 02 Jan 2006 15:04:05 GMT": 0, "Mon, 02 Jan 2006 15:03:05 GMT": 0,
		"Mon, 02 Jan 2006 15:04:35 GMT": 30 * time.Second, "Mon, 02 Jan 2006 16:04:05 GMT": time.Hour,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("retryAfter(%q) at %v = %v, want %v", in, now, got, want)
		}
	}
}

func TestRunStopCancelsInFlight(t *testing.T) {
	url := faultServer(t, mockserver.FaultStall, 0)
	c := faultClient(t, url, Config{Stream: true})
	ctx, cancel := context.WithCancel(context.Background())
	res := &Result{}
	res.Reset()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Do(ctx, &Request{MaxTokens: 4, Prompt: []byte("[1]")}, res)
	}()
	cancel()
	<-done
	if res.ErrorClass != record.ErrCanceled {
		t.Errorf("class %q (%s), want canceled", res.ErrorClass, res.Error)
	}
}

// endlessBody is a stream of text chunks that never ends.
type endlessBody struct{ n int }

func (e *endlessBody) Read(p []byte) (int, error) {
	const chunk = "data: {\"choices\":[{\"text\":\"x\"}]}\n\n"
	n := 0
	for len(p)-n >= len(chunk) {
		n += copy(p[n:], chunk)
		e.n++
	}
	return n, nil
}

func (e *endlessBody) Close() error { return nil }

// TestStreamBoundedByMaxTokens: a stream may send max_tokens plus a margin
// (a tenth, at least 8) of chunks carrying text; one more is a protocol
// error that keeps the tokens that came. Without a max_tokens of the
// client's own (the extra body sets it, or asks for several choices) a
// stream is not held to it.
func TestStreamBoundedByMaxTokens(t *testing.T) {
	stream := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString("data: {\"choices\":[{\"text\":\"x\"}]}\n\n")
		}
		return b.String() + "data: [DONE]\n\n"
	}
	for _, tc := range []struct {
		maxTokens, chunks int
		extra             string
		err               string
	}{
		{4, 12, "", ""},
		{4, 13, "", "stream exceeded max_tokens (13 > 4)"},
		{100, 110, "", ""},
		{100, 111, "", "stream exceeded max_tokens (111 > 100)"},
		{1000, 1101, "", "stream exceeded max_tokens (1101 > 1000)"},
		{4, 13, `{"max_tokens": 100}`, ""},
		{4, 13, `{"n": 4}`, ""},
		{4, 13, `{"best_of": 2}`, ""},
		{0, 500, "", ""},
	} {
		t.Run(fmt.Sprintf("%d/%d/%s", tc.maxTokens, tc.chunks, tc.extra), func(t *testing.T) {
			body := stream(tc.chunks)
			tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				h := http.Header{"Content-Type": {"text/event-stream"}}
				return &http.Response{StatusCode: 200, Status: "200 OK", Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
			})
			c := faultClient(t, "http://x", Config{Stream: true, Transport: tr, ExtraBody: []byte(tc.extra)})
			res := &Result{}
			res.Reset()
			c.Do(context.Background(), &Request{MaxTokens: tc.maxTokens, Prompt: []byte("[1]")}, res)
			switch {
			case tc.err == "" && !res.OK():
				t.Errorf("class %q (%s), want success", res.ErrorClass, res.Error)
			case tc.err != "" && (res.ErrorClass != record.ErrProtocol || res.Error != tc.err || len(res.TokenTimes) != tc.chunks || res.FirstToken <= 0):
				t.Errorf("class %q (%s), %d token times, first token %v: want protocol %q with every token that came", res.ErrorClass, res.Error, len(res.TokenTimes), res.FirstToken, tc.err)
			}
		})
	}
}

// TestEndlessStreamIsBounded: a stream that never ends stops at maxChunks
// as a protocol error, however fast it comes, instead of growing without
// bound until the request timeout.
func TestEndlessStreamIsBounded(t *testing.T) {
	body := &endlessBody{}
	tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		h := http.Header{"Content-Type": {"text/event-stream"}}
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: h, Body: body, Request: req}, nil
	})
	c := faultClient(t, "http://x", Config{Stream: true, Transport: tr})
	res := &Result{}
	res.Reset()
	c.Do(context.Background(), &Request{Prompt: []byte("[1]")}, res) // no max_tokens: no bound of its own
	if res.ErrorClass != record.ErrProtocol || !strings.Contains(res.Error, "does not end") || len(res.TokenTimes) != maxChunks+1 {
		t.Errorf("class %q (%s), %d token times", res.ErrorClass, res.Error, len(res.TokenTimes))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestAPIErrorMessages: each API's error answers, in its own shape, give
// the record the server's message — Anthropic's {"type":"error","error":
// {"type","message"}}, SGLang's {"error":{"message"}} (400) and its
// OpenAI-style {"object":"error","message"} (other statuses), KServe's
// {"error":"message"} — after the HTTP status, classified by it: from the
// built-in server (its faults and its own refusals) and in a stream's
// error event.
func TestAPIErrorMessages(t *testing.T) {
	overloaded, limited := "injected fault: the server is overloaded", "injected fault: the server is rate limiting requests"
	for _, kind := range []*api.Kind{api.Anthropic, api.SGLang, api.KServe} {
		for _, stream := range []bool{true, false} {
			for _, tc := range []struct {
				fault, class, msg string
				status, maxTokens int
				model             string
			}{
				{mockserver.FaultHTTP503, record.ErrHTTP5xx, overloaded, 503, 4, "m"},
				{mockserver.FaultHTTP429, record.ErrHTTP429, limited, 429, 4, "m"},
				{"", record.ErrHTTP4xx, "This model's maximum context length is 64 tokens.", 400, 100, "m"},
				{"", record.ErrHTTP4xx, "The model `other` does not exist.", 404, 4, "other"},
			} {
				if tc.model != "m" && kind != api.KServe {
					continue // the model is in the path of KServe's requests only (SGLang's has none)
				}
				name := fmt.Sprintf("%s/stream=%v/%d", kind.Name, stream, tc.status)
				t.Run(name, func(t *testing.T) {
					var url string
					if tc.fault != "" {
						url = faultServer(t, tc.fault, 0)
					} else {
						_, port := mocktest.Start(t, mockserver.Config{Models: []string{"m"}, ITL: time.Millisecond, MaxModelLen: 64})
						url = "http://127.0.0.1:" + strconv.Itoa(port)
					}
					c, err := New(Config{BaseURL: url, API: kind, Model: tc.model, Stream: stream, Epoch: time.Now()})
					if err != nil {
						t.Fatal(err)
					}
					res := &Result{}
					res.Reset()
					c.Do(context.Background(), &Request{MaxTokens: tc.maxTokens, Prompt: []byte(`"a b"`)}, res)
					status, msg, _ := strings.Cut(res.Error, ": ")
					if res.ErrorClass != tc.class || res.Status != wantStatus(kind, tc.status) || !strings.HasPrefix(status, strconv.Itoa(res.Status)) ||
						!strings.HasPrefix(msg, tc.msg) || strings.ContainsAny(msg, "{}") {
						t.Errorf("%s %d %q, want %s %d with the message %q", res.ErrorClass, res.Status, res.Error, tc.class, wantStatus(kind, tc.status), tc.msg)
					}
				})
			}
		}
	}
	for _, tc := range []struct {
		kind  *api.Kind
		event string
		want  string
	}{
		{api.KServe, `{"error":"model failed"}`, "error in stream: model failed"},
		{api.SGLang, `{"error":{"message":"The input is too long"}}`, "error in stream: The input is too long"},
	} {
		srv := httptest.NewServer(&capture{respond: sse(tc.event)})
		res := do(newTestClient(t, srv, Config{API: tc.kind, Stream: true}), `"x"`, 3)
		srv.Close()
		if res.ErrorClass != record.ErrProtocol || res.Error != tc.want {
			t.Errorf("%s: %q %q, want %q", tc.kind.Name, res.ErrorClass, res.Error, tc.want)
		}
	}
}

// wantStatus is the status an API answers the built-in server's status
// with: Anthropic's 529 for a 503.
func wantStatus(kind *api.Kind, status int) int {
	if kind == api.Anthropic && status == 503 {
		return 529
	}
	return status
}
