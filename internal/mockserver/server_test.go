package mockserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// start serves cfg on 127.0.0.1 and returns its base URL.
func start(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"m"}
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	port, stop, err := s.ServeLoopback()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s, "http://127.0.0.1:" + strconv.Itoa(port)
}

type reply struct {
	status  int
	body    string
	chunks  []map[string]any
	done    bool
	texts   int
	usage   map[string]any
	elapsed time.Duration
}

func post(t *testing.T, url, path, body string) reply {
	t.Helper()
	t0 := time.Now()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		r.body = string(b)
		var m map[string]any
		json.Unmarshal(b, &m)
		if u, ok := m["usage"].(map[string]any); ok {
			r.usage = u
		}
		r.elapsed = time.Since(t0)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			r.done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		r.chunks = append(r.chunks, m)
		if ch, _ := m["choices"].([]any); len(ch) > 0 {
			c := ch[0].(map[string]any)
			if s, _ := c["text"].(string); s != "" {
				r.texts++
			}
			if d, ok := c["delta"].(map[string]any); ok {
				if s, _ := d["content"].(string); s != "" {
					r.texts++
				}
			}
		}
		if u, ok := m["usage"].(map[string]any); ok {
			r.usage = u
		}
	}
	r.elapsed = time.Since(t0)
	return r
}

func TestPromptCountingAndForcedLength(t *testing.T) {
	_, url := start(t, Config{TokensPerImage: 10, EOSMeanTokens: 3})
	for _, tc := range []struct {
		name, path, body string
		prompt, output   float64
	}{
		{"token ids", "/v1/completions", `{"model":"m","prompt":[5,6,7,8],"max_tokens":6,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, 4, 6},
		{"text words", "/v1/completions", `{"prompt":"the quick  brown\nfox","max_tokens":2,"min_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`, 4, 2},
		{"chat parts", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a b c"},{"type":"image_url","image_url":{"url":"data:,"}}]}],"max_completion_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`, 13, 5},
		{"non-stream", "/v1/completions", `{"prompt":[1,2],"max_tokens":3,"ignore_eos":true}`, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, url, tc.path, tc.body)
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if r.usage["prompt_tokens"] != tc.prompt || r.usage["completion_tokens"] != tc.output {
				t.Errorf("usage %v, want prompt %v completion %v", r.usage, tc.prompt, tc.output)
			}
			if strings.Contains(tc.body, `"stream":true`) && (!r.done || float64(r.texts) != tc.output) {
				t.Errorf("stream: %d text chunks, done %v; want %v chunks and [DONE]", r.texts, r.done, tc.output)
			}
		})
	}
	// Without ignore_eos or min_tokens the server stops at its own EOS
	// (mean 3 tokens here), never beyond max_tokens.
	short := 0
	for range 20 {
		r := post(t, url, "/v1/completions", `{"prompt":[1],"max_tokens":50,"stream":true,"stream_options":{"include_usage":true}}`)
		n := r.usage["completion_tokens"].(float64)
		if n < 1 || n > 50 || float64(r.texts) != n {
			t.Fatalf("EOS run: %v tokens, %d chunks", n, r.texts)
		}
		if n < 50 {
			short++
		}
	}
	if short < 15 {
		t.Errorf("only %d of 20 unforced requests stopped early", short)
	}
}

func TestUsageOnlyWhenAskedInStreams(t *testing.T) {
	_, url := start(t, Config{})
	r := post(t, url, "/v1/completions", `{"prompt":[1],"max_tokens":2,"stream":true}`)
	if r.usage != nil || !r.done {
		t.Errorf("usage %v without include_usage; done %v", r.usage, r.done)
	}
}

func TestErrorsLikeVLLM(t *testing.T) {
	_, url := start(t, Config{MaxModelLen: 10})
	for _, tc := range []struct {
		body   string
		status int
		msg    string
	}{
		{`{"model":"nope","prompt":[1]}`, 404, "does not exist"},
		{`{"prompt":[1,2,3,4,5,6,7,8],"max_tokens":5}`, 400, "maximum context length is 10"},
		{`{"prompt":`, 400, "invalid JSON"},
		{`{"prompt":[[1,2]]}`, 400, "prompt"},
		{`{"prompt":[1],"max_tokens":2,"min_tokens":3}`, 400, "min_tokens"},
	} {
		r := post(t, url, "/v1/completions", tc.body)
		if r.status != tc.status || !strings.Contains(r.body, tc.msg) {
			t.Errorf("%s: %d %s, want %d containing %q", tc.body, r.status, r.body, tc.status, tc.msg)
		}
	}
}

// flushTimes records when each flush of a response happened.
type flushTimes struct {
	*httptest.ResponseRecorder
	t0 time.Time
	at []time.Duration
	// took is when the handler returned.
	took time.Duration
}

func (f *flushTimes) Flush() { f.at = append(f.at, time.Since(f.t0)); f.ResponseRecorder.Flush() }

// serve runs one request through the server's handler on the caller's
// goroutine (no socket: inside a testing/synctest bubble the fake clock
// times it exactly) and returns the flush times from its start.
func serve(s *Server, path, body string) *flushTimes {
	w := &flushTimes{ResponseRecorder: httptest.NewRecorder(), t0: time.Now()}
	s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	w.took = time.Since(w.t0)
	return w
}

// TestLatencyModel: on synctest's fake clock the latency model is exact.
func TestLatencyModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{Models: []string{"m"}, TTFT: 30 * time.Millisecond, ITL: 10 * time.Millisecond, PrefillPerToken: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// 20 prompt tokens: first token at 30 + 20 ms, then 4 × 10 ms; the
		// headers go out at once, the last token with the end.
		w := serve(s, "/v1/completions", `{"prompt":[`+strings.Repeat("1,", 19)+`1],"max_tokens":5,"ignore_eos":true,"stream":true}`)
		ms := time.Millisecond
		if want := []time.Duration{0, 50 * ms, 60 * ms, 70 * ms, 80 * ms}; w.Code != 200 || !slices.Equal(w.at, want) || w.took != 90*ms {
			t.Errorf("status %d, flushes at %v, end at %v: want flushes at %v, the end at 90 ms", w.Code, w.at, w.took, want)
		}
	})
}

// TestMaxNumSeqsQueues: two run, three wait; each finishing request lets
// the next in, in whole TTFTs on the fake clock.
func TestMaxNumSeqsQueues(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttft = 200 * time.Millisecond
		s, err := New(Config{Models: []string{"m"}, MaxNumSeqs: 2, TTFT: ttft})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() { serve(s, "/v1/completions", `{"prompt":[1],"max_tokens":1,"ignore_eos":true}`) })
		}
		for _, want := range []struct{ running, waiting, completed int64 }{{2, 3, 0}, {2, 1, 2}, {1, 0, 4}} {
			synctest.Wait()
			if st := s.Stats(); st.Running != want.running || st.Waiting != want.waiting || st.Completed != want.completed {
				t.Errorf("at %v: running %d waiting %d completed %d, want %d, %d, %d", time.Since(s.startedAt), st.Running, st.Waiting, st.Completed, want.running, want.waiting, want.completed)
			}
			time.Sleep(ttft)
		}
		wg.Wait()
		if st := s.Stats(); st.Completed != 5 || st.Running != 0 || st.Waiting != 0 {
			t.Errorf("after: %+v", st)
		}
	})
}

func TestModelsAndTokenize(t *testing.T) {
	_, url := start(t, Config{Models: []string{"a", "b"}})
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) != 2 || list.Data[0].ID != "a" {
		t.Errorf("models %+v", list)
	}
	r := post(t, url, "/tokenize", `{"model":"a","prompt":"one two three"}`)
	var tk struct{ Count int }
	json.Unmarshal([]byte(r.body), &tk)
	if tk.Count != 3 {
		t.Errorf("tokenize: %s", r.body)
	}
}

// TestPacerReuse: one pacer waits for due times one after another on the
// same timer, answers at once for a time past, and gives up when the
// request's context ends, however far the due time. On the fake clock:
// each wait ends exactly at its due time, and the cancel comes while the
// hour's wait is in progress.
func TestPacerReuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p pacer
		defer p.stop()
		ctx := context.Background()
		start := time.Now()
		for k := 1; k <= 3; k++ {
			if !p.until(ctx, start.Add(time.Duration(k)*2*time.Millisecond)) {
				t.Fatalf("wait %d: gave up with a live context", k)
			}
			if since := time.Since(start); since != time.Duration(k)*2*time.Millisecond {
				t.Fatalf("wait %d returned after %v, not at its due time", k, since)
			}
		}
		if !p.until(ctx, start) {
			t.Fatal("a time past: gave up")
		}
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(time.Millisecond); cancel() }() // the bubble's clock
		began := time.Now()
		if p.until(cctx, time.Now().Add(time.Hour)) {
			t.Fatal("a cancelled request's wait of an hour reported done")
		}
		if waited := time.Since(began); waited != time.Millisecond {
			t.Fatalf("the cancelled wait ended after %v, want at the cancel (1ms)", waited)
		}
		if !p.until(ctx, time.Now().Add(time.Millisecond)) {
			t.Fatal("the timer is not reusable after a cancelled wait")
		}
	})
}
