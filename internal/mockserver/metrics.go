package mockserver

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultKVCacheTokens is the KV-cache capacity of the mock when
// Config.KVCacheTokens is 0.
const DefaultKVCacheTokens = 262144

// kvCache is the mock's KV-cache model: a running request holds its prompt
// plus its output tokens from the moment it gets a slot until it ends, and
// usage is the tokens held over the capacity (at most 1). A request whose
// tokens do not fit counts as a preemption, as vLLM would evict a running
// request to make room; the mock still runs it.
type kvCache struct {
	mu          sync.Mutex
	capacity    int64
	held        int64
	preemptions int64
}

func (k *kvCache) init(capacity int) {
	if capacity <= 0 {
		capacity = DefaultKVCacheTokens
	}
	k.capacity = int64(capacity)
}

// hold reserves n tokens and returns the function that releases them.
func (k *kvCache) hold(n int) func() {
	k.mu.Lock()
	if k.held+int64(n) > k.capacity {
		k.preemptions++
	}
	k.held += int64(n)
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		k.held -= int64(n)
		k.mu.Unlock()
	}
}

// usage is the share of the capacity held, at most 1.
func (k *kvCache) usage() float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.capacity <= 0 {
		return 0
	}
	return min(float64(k.held)/float64(k.capacity), 1)
}

func (k *kvCache) preempted() float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return float64(k.preemptions)
}

// metricsHandler serves the server's state with vLLM's metric names (V1
// engine), on a registry of its own:
//
//   - vllm:num_requests_running, vllm:num_requests_waiting (gauges);
//   - vllm:kv_cache_usage_perc and its former name vllm:gpu_cache_usage_perc
//     (gauges, 1 = full);
//   - vllm:num_preemptions_total, vllm:prompt_tokens_total,
//     vllm:generation_tokens_total, vllm:request_success_total (counters);
//   - fineserve_mock_requests_aborted_total (counter, the mock's own):
//     requests whose client went away while they waited or generated;
//   - with Config.SpecDecode, vLLM's vllm:spec_decode_num_drafts_total,
//     …_num_draft_tokens_total, …_num_accepted_tokens_total and
//     …_num_accepted_tokens_per_pos_total{position} (specdecode.go).
//
// Every series carries vLLM's model_name and engine labels.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": s.cfg.Models[0], "engine": "0"}
	gauge := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	counter := func(name, help string, f func() float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	gauge("vllm:num_requests_running", "Number of requests in model execution batches.", func() float64 { return float64(s.running.Load()) })
	gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func() float64 { return float64(s.waiting.Load()) })
	gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv.usage)
	gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage (former name). 1 means 100 percent usage.", s.kv.usage)
	counter("vllm:num_preemptions_total", "Cumulative number of preemptions.", s.kv.preempted)
	counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", func() float64 { return float64(s.promptTokens.Load()) })
	counter("vllm:generation_tokens_total", "Number of generation tokens processed.", func() float64 { return float64(s.genTokens.Load()) })
	counter("vllm:request_success_total", "Count of successfully processed requests.", func() float64 { return float64(s.completed.Load()) })
	s.registerSpec(reg, labels)
	counter("fineserve_mock_requests_aborted_total", "Requests whose client went away while they waited for a slot or generated (a generation's slot is freed at once).", func() float64 { return float64(s.aborted.Load()) })
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
