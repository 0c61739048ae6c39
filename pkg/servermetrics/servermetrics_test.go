package servermetrics

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// v1Exposition is what a vLLM V1 server's /metrics looks like (two
// engines, shortened).
const v1Exposition = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 0.0
# HELP vllm:kv_cache_usage_perc KV-Cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.25
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="m"} 7.0
vllm:num_preemptions_total{engine="1",model_name="m"} 1.0
# HELP vllm:iteration_tokens_total Histogram of number of tokens per engine_step.
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{le="1.0",model_name="m"} 3.0
vllm:iteration_tokens_total_bucket{le="+Inf",model_name="m"} 3.0
vllm:iteration_tokens_total_sum{model_name="m"} 0.0
vllm:iteration_tokens_total_count{model_name="m"} 3.0
`

// v0Exposition uses the KV-cache gauge's former name.
const v0Exposition = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 0.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 0.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.125
`

func TestParse(t *testing.T) {
	tests := []struct {
		name                        string
		text                        string
		running, waiting, kv, preem float64 // NaN: absent
	}{
		{"V1 names, two engines", v1Exposition, 5, 1, 0.375, 8},
		{"V0 KV-cache name", v0Exposition, 0, 0, 0.125, math.NaN()},
		{"both KV-cache names: the newer wins", v0Exposition + "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.75\n", 0, 0, 0.75, math.NaN()},
		{"no vLLM metric", "# TYPE other gauge\nother 1\n", math.NaN(), math.NaN(), math.NaN(), math.NaN()},
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !same(s.Running, tt.running) || !same(s.Waiting, tt.waiting) || !same(s.KVCache, tt.kv) || !same(s.Preemptions, tt.preem) {
				t.Errorf("got %+v, want running %v waiting %v kv %v preemptions %v", s, tt.running, tt.waiting, tt.kv, tt.preem)
			}
		})
	}
	if _, err := Parse(strings.NewReader("vllm:num_requests_running{ 1\n")); err == nil {
		t.Error("a malformed exposition must be an error")
	}
}

// TestTotalsTimeWeighted: each sample's values hold until the next sample,
// so means and the idle fraction are weighted by time, not by sample.
func TestTotalsTimeWeighted(t *testing.T) {
	var tot totals
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	nan := math.NaN()
	// running 0 for 3 s, 4 for 1 s, 0 for 6 s; counter 2 → 5, then a
	// restart (back to 1): 3 + 1 preemptions.
	tot.add(at(0), Sample{Running: 0, Waiting: 0, KVCache: 0, Preemptions: 2})
	tot.add(at(3), Sample{Running: 4, Waiting: 2, KVCache: 0.5, Preemptions: 5})
	tot.add(at(4), Sample{Running: 0, Waiting: 0, KVCache: 0, Preemptions: 1})
	tot.add(at(10), Sample{Running: 0, Waiting: nan, KVCache: nan, Preemptions: nan})
	st := tot.Stats()
	if st.Samples != 4 || st.Observed != 10 {
		t.Fatalf("samples %d observed %v s", st.Samples, st.Observed)
	}
	if st.IdleFraction != 0.9 || st.RunningMean != 0.4 || st.WaitingMean != 0.2 || st.KVCacheMean != 0.05 {
		t.Errorf("idle %v running %v waiting %v kv %v, want 0.9 0.4 0.2 0.05", st.IdleFraction, st.RunningMean, st.WaitingMean, st.KVCacheMean)
	}
	if st.Preemptions != 4 || st.RunningMax != 4 || st.KVCacheMax != 0.5 {
		t.Errorf("preemptions %v running max %v kv max %v", st.Preemptions, st.RunningMax, st.KVCacheMax)
	}
}

// fakeServer serves a running gauge the test sets.
type fakeServer struct {
	running atomic.Int64
	fail    atomic.Bool
	hits    atomic.Int64
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	if f.fail.Load() {
		http.Error(w, "nope", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %d\n", f.running.Load())
}

func TestScraperWindowsAndStop(t *testing.T) {
	f := &fakeServer{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var mu sync.Mutex
	var samples int
	s := Start(Config{URL: srv.URL, Interval: 5 * time.Millisecond, Epoch: time.Now(),
		OnSample: func(time.Duration, Sample) { mu.Lock(); samples++; mu.Unlock() }})
	for f.hits.Load() < 5 {
		time.Sleep(time.Millisecond)
	}
	w := s.Window()
	if w == nil || w.Samples < 5 || w.IdleFraction != 1 {
		t.Fatalf("first window %+v: want ≥ 5 samples, all idle", w)
	}
	f.running.Store(3)
	for h := f.hits.Load(); f.hits.Load() < h+5; {
		time.Sleep(time.Millisecond)
	}
	w = s.Window()
	if w == nil || w.RunningMax != 3 {
		t.Fatalf("second window %+v: want running max 3", w)
	}
	res := s.Stop()
	if !res.Available || res.Failures != 0 || res.ServerStats == nil || res.Samples < 10 {
		t.Fatalf("result %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(samples) != res.Samples {
		t.Errorf("OnSample saw %d samples, result counts %d", samples, res.Samples)
	}
}

// A missing or failing endpoint is a warning, once, never an error.
func TestScraperFailingEndpointWarnsOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.Handler
	}{
		{"404", http.NotFoundHandler()},
		{"not vLLM", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "# TYPE x gauge\nx 1") })},
		{"not Prometheus", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "<html>hello</html>") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			var warnings atomic.Int64
			s := Start(Config{URL: srv.URL + "/metrics", Interval: 2 * time.Millisecond, Epoch: time.Now(),
				Warnf: func(string, ...any) { warnings.Add(1) }})
			for s.failuresNow() < 5 {
				time.Sleep(time.Millisecond)
			}
			res := s.Stop()
			if res.Available || res.LastError == "" || res.ServerStats != nil {
				t.Errorf("result %+v: want unavailable with the error", res)
			}
			if n := warnings.Load(); n != 1 {
				t.Errorf("%d warnings, want 1", n)
			}
		})
	}
	// Nothing listening.
	s := Start(Config{URL: "http://127.0.0.1:1/metrics", Interval: time.Hour, Epoch: time.Now()})
	if res := s.Stop(); res.Available || res.Failures == 0 {
		t.Errorf("refused: %+v", res)
	}
}

func (s *Scraper) failuresNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}
