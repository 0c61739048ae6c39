package mockserver

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// postStatus sends body and returns the status and, unless it is a
// stream, the body (a stream is not read: a request the server should
// have refused may never end).
func postStatus(t *testing.T, url, path, body string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, "(a stream)"
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHugeMaxTokens: a max_tokens near the int64 limit gets vLLM's
// context-length 400 with the true sum (it used to overflow the check and
// start an endless generation); without a context length, more than the
// server's output limit is refused; a number that is no int64 is named.
func TestHugeMaxTokens(t *testing.T) {
	_, url := start(t, Config{MaxModelLen: 100, ITL: time.Millisecond})
	_, nolimit := start(t, Config{ITL: time.Millisecond})
	const huge = "9223372036854775806"
	ctxMsg := "This model's maximum context length is 100 tokens. However, you requested 9223372036854775808 tokens (2 in the messages, " + huge + " in the completion)."
	for _, tc := range []struct {
		name, url, path, body, want string
	}{
		{"completion", url, "/v1/completions", `{"prompt":[1,2],"max_tokens":` + huge + `}`, ctxMsg},
		{"completion stream", url, "/v1/completions", `{"prompt":[1,2],"max_tokens":` + huge + `,"stream":true}`, ctxMsg},
		{"chat stream", url, "/v1/chat/completions", `{"messages":[{"role":"user","content":"a b"}],"max_completion_tokens":` + huge + `,"stream":true}`, ctxMsg},
		{"responses", url, "/v1/responses", `{"input":"a b","max_output_tokens":` + huge + `,"stream":true}`, ctxMsg},
		{"no context length", nolimit, "/v1/completions", `{"prompt":[1,2],"max_tokens":` + huge + `,"stream":true}`, "is more than the 16777216 output tokens"},
		{"not an int64", url, "/v1/completions", `{"prompt":[1,2],"max_tokens":1e30}`, "max_tokens: 1e30 is not an integer of 64 bits"},
		{"min_tokens", url, "/v1/completions", `{"prompt":[1,2],"max_tokens":3,"min_tokens":99999999999999999999}`, "min_tokens: 99999999999999999999 is not an integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := postStatus(t, tc.url, tc.path, tc.body)
			if status != 400 || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s\nwant 400 with %q", status, body, tc.want)
			}
		})
	}
}

// TestTokenIDBodyBounded: an 8 MiB body of token ids is refused before it
// is parsed (it cost 1.9 GB), a body beyond the size limit and a
// Content-Length that claims one too, with little memory.
func TestTokenIDBodyBounded(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, MaxModelLen: 131072})
	if err != nil {
		t.Fatal(err)
	}
	big := `{"prompt":[` + strings.Repeat("1,", 4<<20-8) + `1],"max_tokens":1}`
	serveBody := func(path, body string, claim int64) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		if claim > 0 {
			r.ContentLength = claim
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w
	}
	for _, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/responses", "/tokenize"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := serveBody(path, big, 0)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		if w.Code != 400 || !strings.Contains(w.Body.String(), "request body holds more than 266240 JSON values") || alloc > 32<<20 {
			t.Errorf("%s: %d %.200s, %d MiB allocated: want a 400 naming the limit, under 32 MiB", path, w.Code, w.Body.String(), alloc>>20)
		}
	}
	s.cfg.MaxBodyBytes = 1 << 20
	if w := serveBody("/v1/completions", `{"prompt":"`+strings.Repeat("a ", 1<<20)+`"}`, 0); w.Code != 400 || !strings.Contains(w.Body.String(), "request body larger than 1048576 bytes") {
		t.Errorf("2 MiB body: %d %.200s", w.Code, w.Body.String())
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w := serveBody("/v1/completions", `{"prompt":[1]}`, 1<<40)
	runtime.ReadMemStats(&after)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "larger than") || after.TotalAlloc-before.TotalAlloc > 1<<20 {
		t.Errorf("a Content-Length of 1 TiB: %d %s, %d bytes allocated", w.Code, w.Body.String(), after.TotalAlloc-before.TotalAlloc)
	}
	// A prompt of token ids as long as the context still fits.
	s.cfg.MaxBodyBytes = 0
	ok := `{"prompt":[` + strings.Repeat("1,", 131071-1) + `1],"max_tokens":1}`
	if w := serveBody("/v1/completions", ok, 0); w.Code != 200 {
		t.Errorf("a prompt of 131071 ids: %d %.300s", w.Code, w.Body.String())
	}
}

// cancelAfter is a response writer that cancels its request after n
// writes and records the largest write.
type cancelAfter struct {
	*httptest.ResponseRecorder
	n, writes, afterCancel, largest int
	cancel                          context.CancelFunc
}

func (w *cancelAfter) Write(b []byte) (int, error) {
	w.writes++
	w.largest = max(w.largest, len(b))
	if w.writes > w.n {
		w.afterCancel++
	}
	if w.writes == w.n {
		w.cancel()
	}
	return w.ResponseRecorder.Write(b)
}

// TestBackToBackStreamBounded: with no inter-token latency a long stream
// is written in pieces of bounded size, and ends soon after its client
// goes away (it used to be built whole in memory first).
func TestBackToBackStreamBounded(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelAfter{ResponseRecorder: httptest.NewRecorder(), n: 10, cancel: cancel}
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/completions", strings.NewReader(`{"prompt":[1],"max_tokens":1000000,"ignore_eos":true,"stream":true}`))
	s.Handler().ServeHTTP(w, r)
	if w.largest > 2*streamBuffer || w.afterCancel > 1 || s.Stats().Aborted != 1 {
		t.Errorf("largest write %d bytes (want ≤ %d), %d writes after the client left (want ≤ 1), %d aborted (want 1)", w.largest, 2*streamBuffer, w.afterCancel, s.Stats().Aborted)
	}
}

// TestStopEndsRequestsInFlight: stopping the server ends a long stream in
// flight at once — its handler has returned when stop does — instead of
// waiting out a grace period with the generation going on.
func TestStopEndsRequestsInFlight(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, ITL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	port, stop, err := s.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post("http://127.0.0.1:"+strconv.Itoa(port)+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":[1],"max_tokens":1000000,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	stop()
	if st := s.Stats(); st.Running != 0 || st.Aborted != 1 {
		t.Errorf("after stop (%v): %d running, %d aborted; want 0 and 1", time.Since(t0), st.Running, st.Aborted)
	}
}
