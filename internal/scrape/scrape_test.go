package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestFetch: a 200 body reaches parse, bounded; another status is an error
// naming the shown URL, never the real one's credentials.
func TestFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "up 1\n")
	}))
	defer srv.Close()
	got, err := Fetch(context.Background(), srv.Client(), srv.URL+"/metrics", "shown", func(r io.Reader) (string, error) {
		b, err := io.ReadAll(r)
		return string(b), err
	})
	if err != nil || got != "up 1\n" {
		t.Fatalf("body %q, %v", got, err)
	}
	_, err = Fetch(context.Background(), srv.Client(), strings.Replace(srv.URL, "http://", "http://u:secret@", 1)+"/bad", "http://127.0.0.1/bad", func(io.Reader) (string, error) { return "", nil })
	if err == nil || !strings.Contains(err.Error(), "GET http://127.0.0.1/bad: 503") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v", err)
	}
	if Timeout(100*time.Millisecond) != time.Second || Timeout(time.Minute) != 10*time.Second || Timeout(3*time.Second) != 3*time.Second {
		t.Error("the timeout is the interval between 1 s and 10 s")
	}
}

// TestPoller: a poll at once and one every interval on the bubble's clock,
// none after Stop but the last one Stop makes, whose context has the
// scrape's timeout.
func TestPoller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		var lastDeadline time.Duration
		p := Poll(time.Second, time.Now, func(ctx context.Context) {
			at = append(at, time.Since(start))
			if d, ok := ctx.Deadline(); ok {
				lastDeadline = d.Sub(start)
			}
		})
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()
		p.Stop()
		time.Sleep(5 * time.Second)
		want := []time.Duration{0, time.Second, 2 * time.Second, 2500 * time.Millisecond}
		if !slices.Equal(at, want) {
			t.Errorf("polls at %v, want %v", at, want)
		}
		if lastDeadline != 2500*time.Millisecond+Timeout(time.Second) {
			t.Errorf("last poll's deadline %v", lastDeadline)
		}
	})
}

// TestDefaults: the settings left zero are filled in, the ones given kept.
func TestDefaults(t *testing.T) {
	var interval time.Duration
	var client *http.Client
	var warnf func(string, ...any)
	var now func() time.Time
	Defaults(&interval, &client, &warnf, &now)
	if interval != 2*time.Second || client == nil || client.Timeout != 2*time.Second || warnf == nil || now == nil {
		t.Fatalf("defaults: %v %+v %v %v", interval, client, warnf == nil, now == nil)
	}
	warnf("said to no one")
	given := &http.Client{}
	interval, client = 30*time.Second, given
	Defaults(&interval, &client, &warnf, &now)
	if interval != 30*time.Second || client != given {
		t.Errorf("given settings changed: %v %p", interval, client)
	}
}

// TestHealth: a run of failures is counted whole and warned about once; an
// answer after it is warned about only when a sample came before, and
// clears the last error.
func TestHealth(t *testing.T) {
	var warned []string
	warnf := func(format string, a ...any) { warned = append(warned, fmt.Sprintf(format, a...)) }
	var h Health
	h.Answered(warnf, false, "back")
	h.Failed(errors.New("refused"), warnf, "GPU metrics")
	h.Failed(errors.New("timeout"), warnf, "GPU metrics")
	if h.Failures != 2 || h.LastError() != "timeout" {
		t.Errorf("after two failures: %d, %q", h.Failures, h.LastError())
	}
	h.Answered(warnf, false, "back") // nothing sampled yet: no recovery to tell
	h.Failed(errors.New("reset"), warnf, "GPU metrics")
	h.Answered(warnf, true, "back")
	want := []string{"GPU metrics: refused (the run goes on without them)", "GPU metrics: reset (the run goes on without them)", "back"}
	if !slices.Equal(warned, want) || h.Failures != 3 || h.LastError() != "" {
		t.Errorf("warnings %q, failures %d, last %q; want %q, 3, none", warned, h.Failures, h.LastError(), want)
	}
}
