package client

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
)

// TestPoolAcquireRelease: with one endpoint every request goes to it and
// no endpoint is noted; with several, a request the schedule placed goes
// where it was placed, and one left to send time goes to the endpoint with
// the fewest in flight, each noted from 1 in the result.
func TestPoolAcquireRelease(t *testing.T) {
	one, err := NewPool(Config{API: api.VLLM}, []string{"http://127.0.0.1:1"}, picker(balance.RoundRobin))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if c := one.Acquire(-1, &r); c != one.First() || r.Endpoint != 0 {
		t.Errorf("one endpoint: client %p (first %p), endpoint %d", c, one.First(), r.Endpoint)
	}
	one.Release(&r)

	urls := []string{"http://u:secret@127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"}
	p, err := NewPool(Config{API: api.VLLM}, urls, picker(balance.LeastInflight))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Len() != 3 || p.Host(0) != "127.0.0.1:1" || !p.Live(2) {
		t.Errorf("len %d, host %q, live %v", p.Len(), p.Host(0), p.Live(2))
	}
	var planned Result
	if c := p.Acquire(2, &planned); c != p.Client(2) || planned.Endpoint != 3 {
		t.Errorf("planned endpoint 2: got endpoint %d", planned.Endpoint)
	}
	held := make([]Result, 2)
	for i := range held {
		p.Acquire(-1, &held[i])
	}
	// Endpoints 1 and 2 (from 1) took the two; 3 holds the planned one: each
	// has one, so the next goes round in turn; after releasing endpoint 2's
	// request, endpoint 2 has the fewest.
	got := map[int]bool{held[0].Endpoint: true, held[1].Endpoint: true}
	if !got[1] || !got[2] {
		t.Fatalf("send-time requests went to %v, want endpoints 1 and 2", got)
	}
	for i := range held {
		if held[i].Endpoint == 2 {
			p.Release(&held[i])
		}
	}
	var next Result
	if p.Acquire(-1, &next); next.Endpoint != 2 {
		t.Errorf("after a release at endpoint 2 the next request went to %d", next.Endpoint)
	}
}

// testLog keeps the model check's notes and warnings.
type testLog struct{ bytes.Buffer }

func (l *testLog) Infof(f string, a ...any) { fmt.Fprintf(&l.Buffer, f+"\n", a...) }
func (l *testLog) Warnf(f string, a ...any) { fmt.Fprintf(&l.Buffer, "warning: "+f+"\n", a...) }

// TestPoolCheckSeveral: of several endpoints one that does not answer is
// warned about and marked down; the model comes from the first that lists
// one; the listed models are returned for the token limit; a model one
// endpoint does not serve names that endpoint.
func TestPoolCheckSeveral(t *testing.T) {
	serve := func(models string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"object":"list","data":[%s]}`, models)
		}))
	}
	a := serve(`{"id":"m1","max_model_len":4096},{"id":"m2"}`)
	defer a.Close()
	b := serve(`{"id":"m1","max_model_len":2048}`)
	defer b.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()

	p, err := NewPool(Config{API: api.VLLM}, []string{dead, a.URL, b.URL}, picker(balance.RoundRobin))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var log testLog
	model, models, err := p.Check(context.Background(), "", &log)
	if err != nil {
		t.Fatal(err)
	}
	if model != "m1" || len(models) != 3 || p.Live(0) || !p.Live(1) || !p.Live(2) {
		t.Errorf("model %q, %d models, live %v %v %v", model, len(models), p.Live(0), p.Live(1), p.Live(2))
	}
	if s := log.String(); !strings.Contains(s, "endpoint 1 ("+strings.TrimPrefix(dead, "http://")+") does not answer") ||
		!strings.Contains(s, "model: m1 (first of /v1/models at endpoint 2)") {
		t.Errorf("log:\n%s", s)
	}
	if _, _, err := p.Check(context.Background(), "m2", &log); err == nil || !strings.Contains(err.Error(), "--model m2 is not served at endpoint 3 ("+strings.TrimPrefix(b.URL, "http://")+"); it serves m1") {
		t.Errorf("m2: %v", err)
	}
}

// picker makes balance's picker of strategy st (the pool's tests take the
// real one; the package itself does not import balance).
func picker(st balance.Strategy) func(n int) Picker {
	return func(n int) Picker { return balance.NewPicker(n, st) }
}
