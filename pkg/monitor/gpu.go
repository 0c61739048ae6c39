package monitor

import (
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/gputelemetry"
)

// startGPU starts polling the GPU telemetry (Config.GPUMetricsURLs).
func (m *Monitor) startGPU() {
	if len(m.c.GPUMetricsURLs) == 0 {
		return
	}
	m.gpu = gputelemetry.Start(gputelemetry.Config{
		URLs: m.c.GPUMetricsURLs, Interval: m.c.ServerMetricsInterval, Epoch: m.start,
		Warnf: func(format string, a ...any) { m.println("warning: " + fmt.Sprintf(format, a...)) },
	})
}

// stopGPU stops the GPU poller and keeps its result; safe to call again.
func (m *Monitor) stopGPU() {
	if m.gpu == nil || m.gpuRes != nil {
		return
	}
	res := m.gpu.Stop()
	m.gpuRes = &res
}
