package client

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// slowStream answers with one token, then a token every gap, up to n,
// stopping when its client goes away; gone receives whether it did.
func slowStream(n int, gap time.Duration, gone chan<- bool) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range n {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					gone <- true
					return
				}
			}
			fmt.Fprintf(w, "data: %s\n\n", tok)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		gone <- false
	}
}

// TestCancelAfterCutsTheStream: a request with CancelAfter is cut that
// long after its send — not a failure: Cancelled, no error class, the
// tokens and TTFT received before the cut kept, End at the cut — and the
// server sees its client go away. The stream would take 2 s; the cut is at
// 150 ms (a 5× margin either side of the checks).
func TestCancelAfterCutsTheStream(t *testing.T) {
	for _, transport := range []string{api.TransportLean, api.TransportNetHTTP} {
		t.Run(strings.ReplaceAll(transport, "/", "-"), func(t *testing.T) {
			gone := make(chan bool, 1)
			srv := httptest.NewServer(&capture{respond: slowStream(100, 20*time.Millisecond, gone)})
			defer srv.Close()
			c := newTestClient(t, srv, Config{Stream: true, HTTPTransport: transport})
			res := &Result{}
			res.Reset()
			const cut = 150 * time.Millisecond
			c.Do(context.Background(), &Request{MaxTokens: 100, Prompt: []byte(`[1]`), CancelAfter: cut}, res)
			if !res.Cancelled || res.OK() || res.ErrorClass != "" || res.Error != "" || res.CancelAfter != cut {
				t.Fatalf("cancelled %v ok %v class %q error %q after %v", res.Cancelled, res.OK(), res.ErrorClass, res.Error, res.CancelAfter)
			}
			if res.FirstToken <= res.Sent || len(res.TokenTimes) < 2 || len(res.TokenTimes) > 60 || res.CompletionTokens != len(res.TokenTimes) {
				t.Errorf("first token %v (sent %v), %d token times, %d completion tokens: want the tokens before the cut",
					res.FirstToken, res.Sent, len(res.TokenTimes), res.CompletionTokens)
			}
			if e2e := res.E2E(); e2e < cut || e2e > 5*cut {
				t.Errorf("end %v after the send, want the cut at %v", e2e, cut)
			}
			select {
			case g := <-gone:
				if !g {
					t.Error("the server finished the stream: the client did not go away")
				}
			case <-time.After(5 * time.Second):
				t.Error("the server did not see its client go away")
			}
		})
	}
}

// TestCancelAfterLaterThanTheEnd: a request that ends before its cut is a
// normal completion; one cut before any byte (a server that has not
// answered yet) is cancelled with no token.
func TestCancelAfterLaterThanTheEnd(t *testing.T) {
	gone := make(chan bool, 1)
	srv := httptest.NewServer(&capture{respond: slowStream(3, time.Millisecond, gone)})
	defer srv.Close()
	c := newTestClient(t, srv, Config{Stream: true})
	res := &Result{}
	res.Reset()
	c.Do(context.Background(), &Request{MaxTokens: 3, Prompt: []byte(`[1]`), CancelAfter: 5 * time.Second}, res)
	if !res.OK() || res.Cancelled || len(res.TokenTimes) != 3 || res.CancelAfter != 5*time.Second {
		t.Errorf("ok %v cancelled %v class %q, %d tokens: want a completion", res.OK(), res.Cancelled, res.ErrorClass, len(res.TokenTimes))
	}

	silent := httptest.NewServer(&capture{respond: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }})
	defer silent.Close()
	res.Reset()
	newTestClient(t, silent, Config{Stream: true}).Do(context.Background(), &Request{MaxTokens: 3, Prompt: []byte(`[1]`), CancelAfter: 50 * time.Millisecond}, res)
	if !res.Cancelled || res.ErrorClass != "" || res.FirstToken != 0 || len(res.TokenTimes) != 0 || res.Status != 0 {
		t.Errorf("cancelled %v class %q first token %v status %d: want cancelled before any byte", res.Cancelled, res.ErrorClass, res.FirstToken, res.Status)
	}
}

// TestRunStopIsNotACut: the run stopping under a request (its context
// cancelled) is the error class canceled, not a cancellation, even when
// the request had a planned cut still to come.
func TestRunStopIsNotACut(t *testing.T) {
	gone := make(chan bool, 1)
	srv := httptest.NewServer(&capture{respond: slowStream(100, 20*time.Millisecond, gone)})
	defer srv.Close()
	c := newTestClient(t, srv, Config{Stream: true})
	ctx, stop := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, stop)
	res := &Result{}
	res.Reset()
	c.Do(ctx, &Request{MaxTokens: 100, Prompt: []byte(`[1]`), CancelAfter: 10 * time.Second}, res)
	if res.Cancelled || res.ErrorClass != record.ErrCanceled {
		t.Errorf("cancelled %v class %q: want the class canceled", res.Cancelled, res.ErrorClass)
	}
}

// TestCutDuringDialIsACut: a cut that falls while the connection is being
// made ends the dial at the cut's deadline, and the dial can report its
// timeout a moment before the cut's own timer fires. Such a request is
// cancelled, not a timeout: every request to a port nobody listens on,
// cut after 1 µs to 200 µs, is either cancelled or refused (connect).
func TestCutDuringDialIsACut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	for _, transport := range []string{api.TransportLean, api.TransportNetHTTP} {
		c, err := New(Config{BaseURL: dead, API: api.VLLM, Model: "m", Stream: true, HTTPTransport: transport, Epoch: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		var cancelled, refused int
		res := &Result{}
		for i := range 300 {
			res.Reset()
			cut := time.Microsecond + time.Duration(i%200)*time.Microsecond
			c.Do(context.Background(), &Request{MaxTokens: 3, Prompt: []byte(`[1]`), CancelAfter: cut}, res)
			switch {
			case res.Cancelled && res.ErrorClass == "":
				cancelled++
			case res.ErrorClass == record.ErrConnect:
				refused++
			default:
				t.Fatalf("%s: request %d cut after %v: cancelled %v class %q error %q; want cancelled or connect",
					transport, i, cut, res.Cancelled, res.ErrorClass, res.Error)
			}
		}
		t.Logf("%s: %d cancelled, %d refused", transport, cancelled, refused)
	}
}

// TestRunStopEndsEveryAttempt: the attempts made under the run's context
// are watched together (Client.watchParent): when it ends, every stream
// in flight ends as canceled, an attempt begun after the end fails at
// once, and none stays in the watch; an attempt under another context is
// watched on its own and goes on until that one ends.
func TestRunStopEndsEveryAttempt(t *testing.T) {
	const streams = 20
	started := make(chan struct{}, streams+2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			fmt.Fprintf(w, "data: %s\n\n", tok)
			w.(http.Flusher).Flush()
			if i == 0 {
				started <- struct{}{}
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer srv.Close()
	c := newTestClient(t, srv, Config{Stream: true, HTTPTransport: api.TransportLean})
	run, stop := context.WithCancel(context.Background())
	other, otherStop := context.WithCancel(context.Background())
	defer otherStop()
	type done struct {
		res  *Result
		took time.Duration
	}
	do := func(ctx context.Context, out chan<- done) {
		res := &Result{}
		res.Reset()
		t0 := time.Now()
		c.Do(ctx, &Request{MaxTokens: 1 << 20, Prompt: []byte(`[1]`)}, res)
		out <- done{res, time.Since(t0)}
	}
	runs, others := make(chan done, streams+1), make(chan done, 1)
	for range streams {
		go do(run, runs)
	}
	for range streams {
		<-started
	}
	go do(other, others)
	<-started
	if w := c.parents.Load(); w == nil || w.done != run.Done() {
		t.Fatal("the run's context is not the one watched for all")
	}
	stop()
	for range streams {
		d := <-runs
		if d.res.ErrorClass != record.ErrCanceled {
			t.Errorf("a stream under the stopped run: class %q (%s), want canceled", d.res.ErrorClass, d.res.Error)
		}
	}
	go do(run, runs)
	if d := <-runs; d.res.ErrorClass != record.ErrCanceled {
		t.Errorf("an attempt after the stop: class %q, want canceled", d.res.ErrorClass)
	}
	select {
	case d := <-others:
		t.Fatalf("the stream under another context ended with the run: %q %s", d.res.ErrorClass, d.res.Error)
	case <-time.After(100 * time.Millisecond):
	}
	otherStop()
	if d := <-others; d.res.ErrorClass != record.ErrCanceled {
		t.Errorf("the other stream: class %q, want canceled", d.res.ErrorClass)
	}
	w := c.parents.Load()
	left := 0
	w.attempts.Range(func(_, _ any) bool { left++; return true })
	if left != 0 {
		t.Errorf("%d attempts still in the shared watch after they ended", left)
	}
}
