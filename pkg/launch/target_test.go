package launch

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// TestTargetChecks: before anything is sent the run asks the server for its
// models; an unserved --model or a server nobody answers for stops it with
// a message that says why, a server without a model list runs.
func TestTargetChecks(t *testing.T) {
	var generations atomic.Int64
	srv := mocktest.New(t, mockserver.Config{Models: []string{"llama-8b", "qwen-7b"},
		OnRequest: func(string, []byte) { generations.Add(1) }})
	withModels := httptest.NewServer(srv.Handler())
	defer withModels.Close()
	noList := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			http.NotFound(w, r)
			return
		}
		srv.Handler().ServeHTTP(w, r)
	}))
	defer noList.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()

	for _, tc := range []struct {
		name, base, model string
		warmup            int
		fails, says       string
		sends             bool
	}{
		{name: "unserved model", base: withModels.URL, model: "gpt-4", fails: "--model gpt-4 is not served at " + strings.TrimPrefix(withModels.URL, "http://") + "; it serves llama-8b, qwen-7b"},
		{name: "unserved model with a warm-up", base: withModels.URL, model: "gpt-4", warmup: 2, fails: "it serves llama-8b, qwen-7b"},
		{name: "served model", base: withModels.URL, model: "qwen-7b", sends: true},
		{name: "first listed model", base: withModels.URL, says: "model: llama-8b (first of /v1/models)", sends: true},
		{name: "nothing listening", base: "http://" + dead, model: "x", fails: "cannot reach the server at " + dead + ": is the server up?"},
		{name: "nothing listening, no model", base: "http://" + dead, fails: "is the server up?"},
		{name: "no model list", base: noList.URL, model: "anything", says: "the server has no model list", sends: true},
		{name: "no model list and no --model", base: noList.URL, fails: "no --model given and the server did not list one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := generations.Load()
			o := testOptions(0)
			o.BaseURL, o.Model, o.WarmupRequests = tc.base, tc.model, tc.warmup
			o.Quiet = false
			o.NumPrompts, o.NumPromptsSet, o.RandomInputLen, o.RandomOutputLen = 3, true, 8, 2
			_, _, errs, err := runCaptured(context.Background(), o)
			sent := generations.Load() - before
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Errorf("error %v, want one saying %q", err, tc.fails)
				}
			} else if err != nil {
				t.Errorf("run: %v", err)
			}
			if !strings.Contains(errs, tc.says) {
				t.Errorf("stderr does not say %q:\n%s", tc.says, errs)
			}
			if want := map[bool]int64{true: 3, false: 0}[tc.sends]; sent != want {
				t.Errorf("%d requests reached the server, want %d", sent, want)
			}
		})
	}
}
