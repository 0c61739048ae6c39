package mockserver

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// GPUMetricsPath is where the mock serves its DCGM-like GPU telemetry
// (Config.GPUs > 0).
const GPUMetricsPath = "/metrics-gpu"

// MaxGPUs bounds Config.GPUs.
const MaxGPUs = 64

// The mock GPUs' model: utilisation follows the busy slots, power and the
// SM clock follow utilisation, memory the KV cache.
const (
	gpuIdleW, gpuMaxW        = 75.0, 700.0
	gpuIdleMHz, gpuMaxMHz    = 345.0, 1980.0
	gpuBaseMiB, gpuKVMaxMiB  = 2048.0, 76800.0
	gpuModelName, gpuHostKey = "fineserve mock GPU", "mock"
)

// gpuUtil is the mock GPUs' utilisation in percent: the share of the
// slots (--max-num-seqs) running, or 100 while anything runs when the
// slots are unbounded. Every GPU of the mock is as busy (one model
// sharded over them).
func (s *Server) gpuUtil() float64 {
	r := float64(s.running.Load())
	if s.cfg.MaxNumSeqs > 0 {
		return 100 * min(r/float64(s.cfg.MaxNumSeqs), 1)
	}
	if r > 0 {
		return 100
	}
	return 0
}

// gpuHandler serves DCGM exporter gauges for Config.GPUs GPUs, with its
// labels (gpu, UUID, modelName, Hostname): DCGM_FI_DEV_GPU_UTIL (%),
// DCGM_FI_DEV_FB_USED (MiB), DCGM_FI_DEV_POWER_USAGE (W) and
// DCGM_FI_DEV_SM_CLOCK (MHz).
func (s *Server) gpuHandler() http.Handler {
	reg := prometheus.NewRegistry()
	for g := range s.cfg.GPUs {
		labels := prometheus.Labels{"gpu": strconv.Itoa(g), "UUID": fmt.Sprintf("GPU-00000000-0000-0000-0000-%012d", g),
			"modelName": gpuModelName, "Hostname": gpuHostKey}
		gauge := func(name, help string, f func() float64) {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
		}
		gauge("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", s.gpuUtil)
		gauge("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", func() float64 { return gpuBaseMiB + gpuKVMaxMiB*s.kv.usage() })
		gauge("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", func() float64 { return gpuIdleW + (gpuMaxW-gpuIdleW)*s.gpuUtil()/100 })
		gauge("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", func() float64 { return gpuIdleMHz + (gpuMaxMHz-gpuIdleMHz)*s.gpuUtil()/100 })
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
