package mockserver

import (
	"bufio"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// gauges scrapes /metrics with the official parser and returns the value
// of each family's first series.
func gauges(t *testing.T, url string) map[string]float64 {
	t.Helper()
	fams := testenv.ScrapeMetrics(t, url+"/metrics")
	out := map[string]float64{}
	for name, f := range fams {
		m := f.Metric[0]
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["model_name"] != "m" || labels["engine"] != "0" {
			t.Errorf("%s: labels %v, want vLLM's model_name and engine", name, labels)
		}
		switch {
		case m.Gauge != nil:
			out[name] = m.Gauge.GetValue()
		case m.Counter != nil:
			out[name] = m.Counter.GetValue()
		}
	}
	return out
}

// TestMetricsLikeVLLM: /metrics carries vLLM's names, and they follow the
// requests: running while one generates, waiting beyond --max-num-seqs, KV
// cache held by the tokens in flight, preemptions when they do not fit.
func TestMetricsLikeVLLM(t *testing.T) {
	_, url := start(t, Config{TTFT: 0, ITL: 20 * time.Millisecond, MaxNumSeqs: 1, KVCacheTokens: 150})
	idle := gauges(t, url)
	for _, name := range []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:gpu_cache_usage_perc", "vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total"} {
		v, ok := idle[name]
		if !ok {
			t.Errorf("no %s", name)
		} else if v != 0 {
			t.Errorf("idle server: %s = %v, want 0", name, v)
		}
	}

	// Two streams of 25 tokens (0.5 s each) with 100 prompt tokens: one
	// runs, the other waits for the single slot.
	body := `{"model":"m","prompt":[` + strings.TrimSuffix(strings.Repeat("1,", 100), ",") + `],"max_tokens":25,"stream":true,"ignore_eos":true}`
	done := make(chan struct{}, 2)
	for i := 0; i < 2; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
			}
		}()
	}
	var busy map[string]float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		busy = gauges(t, url)
		if busy["vllm:num_requests_running"] == 1 && busy["vllm:num_requests_waiting"] == 1 {
			break
		}
	}
	if busy["vllm:num_requests_running"] != 1 || busy["vllm:num_requests_waiting"] != 1 {
		t.Fatalf("running %v waiting %v, want 1 and 1", busy["vllm:num_requests_running"], busy["vllm:num_requests_waiting"])
	}
	// 125 tokens of 150 held.
	if kv := busy["vllm:kv_cache_usage_perc"]; math.Abs(kv-125.0/150) > 1e-9 || busy["vllm:gpu_cache_usage_perc"] != kv {
		t.Errorf("KV cache usage %v (former name %v), want 125/150", kv, busy["vllm:gpu_cache_usage_perc"])
	}
	<-done
	<-done
	after := gauges(t, url)
	if after["vllm:num_requests_running"] != 0 || after["vllm:kv_cache_usage_perc"] != 0 {
		t.Errorf("after the requests: running %v kv %v", after["vllm:num_requests_running"], after["vllm:kv_cache_usage_perc"])
	}
	if after["vllm:prompt_tokens_total"] != 200 || after["vllm:generation_tokens_total"] != 50 {
		t.Errorf("prompt %v generation %v tokens, want 200 and 50", after["vllm:prompt_tokens_total"], after["vllm:generation_tokens_total"])
	}

	// Two at once do not fit in 150 tokens: the second counts a preemption.
	_, url2 := start(t, Config{ITL: 10 * time.Millisecond, KVCacheTokens: 150})
	for i := 0; i < 2; i++ {
		go func() {
			resp, err := http.Post(url2+"/v1/completions", "application/json", strings.NewReader(body))
			if err == nil {
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
				}
				resp.Body.Close()
			}
			done <- struct{}{}
		}()
	}
	<-done
	<-done
	if p := gauges(t, url2)["vllm:num_preemptions_total"]; p != 1 {
		t.Errorf("preemptions %v, want 1", p)
	}
}
