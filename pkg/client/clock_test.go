package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

const textEvent = "data: {\"choices\":[{\"text\":\"x\"}]}\n\n"

// TestResultOffsetsReadTheInjectedClock: every offset of a Result is a
// reading of Config.Now against the epoch, none of the wall clock. The
// injected clock steps 1 ms per reading from an epoch years away from now,
// so a wall-clock reading anywhere would show as a huge offset.
func TestResultOffsetsReadTheInjectedClock(t *testing.T) {
	epoch := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			var readings atomic.Int64
			now := func() time.Time { return epoch.Add(time.Duration(readings.Add(1)) * time.Millisecond) }
			tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				if stream {
					body := &eventReader{rest: []byte(textEvent + textEvent + textEvent + "data: [DONE]\n\n")} // one event per read
					return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(body), Request: req}, nil
				}
				body := `{"choices":[{"text":"xyz"}],"usage":{"prompt_tokens":1,"completion_tokens":3}}`
				return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body)), Request: req}, nil
			})
			c, err := New(Config{BaseURL: "http://x", API: api.VLLM, Model: "m", Stream: stream, StallTimeout: time.Hour,
				Transport: tr, Epoch: epoch, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			res := &Result{}
			res.Reset()
			c.Do(context.Background(), &Request{MaxTokens: 3, Prompt: []byte("[1]")}, res)
			if !res.OK() {
				t.Fatalf("class %q (%s)", res.ErrorClass, res.Error)
			}
			limit := time.Duration(readings.Load()) * time.Millisecond
			times := append([]time.Duration{res.Sent, res.FirstToken}, res.TokenTimes...)
			times = append(times, res.End)
			for _, d := range times {
				if d <= 0 || d > limit || d%time.Millisecond != 0 {
					t.Fatalf("offsets %v (sent, first token, tokens…, end): want whole milliseconds in (0, %v], readings of the injected clock", times, limit)
				}
			}
			if stream && (len(res.TokenTimes) != 3 || !(res.Sent < res.TokenTimes[0] && res.TokenTimes[0] < res.TokenTimes[1] && res.TokenTimes[1] < res.TokenTimes[2] && res.TokenTimes[2] < res.End)) {
				t.Errorf("sent %v, tokens %v, end %v: want one reading per event, in order", res.Sent, res.TokenTimes, res.End)
			}
			if !stream && !(res.Sent < res.End && res.FirstToken == res.End) {
				t.Errorf("sent %v, first token %v, end %v: want the whole answer at its end", res.Sent, res.FirstToken, res.End)
			}
		})
	}
}

// pipeStream answers with a stream written by write on its own goroutine.
// The body ends with the request's context, as a real transport's does.
func pipeStream(write func(w io.Writer)) roundTripFunc {
	return func(req *http.Request) (*http.Response, error) {
		pr, pw := io.Pipe()
		go func() {
			write(pw)
			pw.Close()
		}()
		go func() {
			<-req.Context().Done()
			pw.CloseWithError(req.Context().Err())
		}()
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: req}, nil
	}
}

// TestStallWatchLetsASlowStreamGoOn: a stream whose gaps are each just under
// the stall timeout goes on for many times the timeout (the watch looks
// again after every period rather than ending the request). On synctest's
// fake clock every token time is exact.
func TestStallWatchLetsASlowStreamGoOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const gap, stall, tokens = 90 * time.Millisecond, 100 * time.Millisecond, 40
		tr := pipeStream(func(w io.Writer) {
			for range tokens {
				io.WriteString(w, textEvent)
				time.Sleep(gap)
			}
			io.WriteString(w, "data: [DONE]\n\n")
		})
		c := faultClient(t, "http://x", Config{Stream: true, StallTimeout: stall, Transport: tr})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := &Result{}
		res.Reset()
		c.Do(ctx, &Request{MaxTokens: tokens, Prompt: []byte("[1]")}, res)
		if !res.OK() || len(res.TokenTimes) != tokens || res.E2E() != tokens*gap {
			t.Fatalf("class %q (%s), %d tokens over %v: want all %d, over %v", res.ErrorClass, res.Error, len(res.TokenTimes), res.E2E(), tokens, tokens*gap)
		}
		for i, at := range res.TokenTimes {
			if want := res.Sent + time.Duration(i)*gap; at != want {
				t.Fatalf("token %d at %v, want %v", i, at, want)
			}
		}
	})
}

// TestStallWatchEndsASilentStream: a stream that stops sending ends exactly
// one stall timeout after its last byte, with the tokens that came.
func TestStallWatchEndsASilentStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const gap, stall = 30 * time.Millisecond, 100 * time.Millisecond
		silent := make(chan struct{})
		tr := pipeStream(func(w io.Writer) {
			for i := range 3 {
				if i > 0 {
					time.Sleep(gap)
				}
				io.WriteString(w, textEvent)
			}
			<-silent
		})
		c := faultClient(t, "http://x", Config{Stream: true, StallTimeout: stall, Transport: tr})
		res := &Result{}
		res.Reset()
		start := time.Now()
		c.Do(context.Background(), &Request{MaxTokens: 10, Prompt: []byte("[1]")}, res)
		took := time.Since(start)
		close(silent)
		if res.ErrorClass != record.ErrTimeout || !strings.Contains(res.Error, "stall") || len(res.TokenTimes) != 3 {
			t.Errorf("class %q (%s), %d tokens: want a stall timeout after 3 tokens", res.ErrorClass, res.Error, len(res.TokenTimes))
		}
		if want := 2*gap + stall; took != want {
			t.Errorf("the request ended after %v, want %v (the last byte, then the stall timeout)", took, want)
		}
		// What it records: the tokens that came, and the end at the
		// timeout (not the last token's arrival).
		if res.CompletionTokens != 3 || res.E2E() != 2*gap+stall {
			t.Errorf("recorded %d completion tokens over %v, want 3 over %v", res.CompletionTokens, res.E2E(), 2*gap+stall)
		}
	})
}

// TestRetryWaitsOnTheClock: retries wait the back-off, doubling, or the
// server's Retry-After, exactly.
func TestRetryWaitsOnTheClock(t *testing.T) {
	for _, tc := range []struct {
		name, retryAfter string
		want             time.Duration // from the first attempt to the last
	}{
		{"back-off", "", retryBackoff + 2*retryBackoff + 4*retryBackoff},
		{"Retry-After", "2", 3 * 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent []time.Duration
				start := time.Now()
				tr := roundTripFunc(func(req *http.Request) (*http.Response, error) {
					sent = append(sent, time.Since(start))
					h := http.Header{}
					if tc.retryAfter != "" {
						h.Set("Retry-After", tc.retryAfter)
					}
					return &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: h, Body: io.NopCloser(strings.NewReader("busy")), Request: req}, nil
				})
				res := faultDo(faultClient(t, "http://x", Config{Stream: true, Retries: 3, Transport: tr}))
				if res.ErrorClass != record.ErrHTTP5xx || res.Retries != 3 || len(sent) != 4 {
					t.Fatalf("class %q, %d retries, %d attempts: want http_5xx after 3 retries", res.ErrorClass, res.Retries, len(sent))
				}
				if got := sent[3] - sent[0]; got != tc.want {
					t.Errorf("attempts at %v: the last %v after the first, want %v", sent, got, tc.want)
				}
			})
		})
	}
}
