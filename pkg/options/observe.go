package options

import (
	"errors"
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// ObserveOptions configure how a run can be watched while it runs and read
// afterwards (docs/OBSERVABILITY.md): live lines, per-window time series,
// goodput, the HTML report, the generator's Prometheus endpoint and the
// server's own metrics.
type ObserveOptions struct {
	// ReportInterval is the time between live lines (0: none).
	ReportInterval time.Duration
	// Window is the length of the summary's windows.
	Window time.Duration
	// Goodput holds the --goodput targets (metrics.NoSLO: none).
	Goodput metrics.SLO
	// MinGoodput is the share of requests that must meet the targets for the
	// run to pass (0: not checked; the command checks it).
	MinGoodput float64
	// ReportHTML is the path of the HTML report ("": none).
	ReportHTML string
	// MetricsAddr is where the generator serves its Prometheus metrics
	// ("": nowhere), e.g. 127.0.0.1:9090.
	MetricsAddr string
	// ScrapeServer polls the target's /metrics: "auto" (on for the vllm
	// backend), "on" or "off".
	ScrapeServer string
	// ServerMetricsInterval is the time between two scrapes of the target.
	ServerMetricsInterval time.Duration
	// ServerMetricsURL overrides the scraped address (default: the base URL
	// + /metrics).
	ServerMetricsURL string
	// GPUMetricsURLs are GPU telemetry exporters (NVIDIA's DCGM exporter),
	// polled every ServerMetricsInterval (nil: none).
	GPUMetricsURLs []string
	// OTLP exports the run to an OpenTelemetry collector (otlp.go).
	OTLP OTLPOptions
}

// DefaultObserveOptions returns the defaults: a live line every 10 s,
// windows of 60 s, server metrics every 2 s when the backend is vLLM.
func DefaultObserveOptions() ObserveOptions {
	return ObserveOptions{
		ReportInterval: 10 * time.Second, Window: time.Minute,
		Goodput: metrics.NoSLO, ScrapeServer: "auto", ServerMetricsInterval: 2 * time.Second,
		OTLP: OTLPOptions{Sample: 1},
	}
}

// validate returns every problem of the observation options.
func (v *ObserveOptions) validate() error {
	var errs []error
	if v.ReportInterval < 0 {
		errs = append(errs, fmt.Errorf("--report-interval %v: want ≥ 0 (0: no live lines)", v.ReportInterval))
	}
	if v.Window < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("--window-seconds %g: want ≥ 0.1", v.Window.Seconds()))
	}
	if !(v.MinGoodput >= 0 && v.MinGoodput <= 1) {
		errs = append(errs, fmt.Errorf("--min-goodput %g: want a share of requests in [0, 1]", v.MinGoodput))
	}
	if v.MinGoodput > 0 && !v.Goodput.Set() {
		errs = append(errs, errors.New("--min-goodput needs --goodput targets (e.g. --goodput ttft:500 tpot:50)"))
	}
	switch v.ScrapeServer {
	case "auto", "on", "off", "":
	default:
		errs = append(errs, fmt.Errorf("--scrape-server-metrics %q: want true or false", v.ScrapeServer))
	}
	if v.ServerMetricsInterval < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("--server-metrics-interval %v: want ≥ 10ms", v.ServerMetricsInterval))
	}
	for _, u := range v.GPUMetricsURLs {
		if err := checkHTTPURL(u); err != nil {
			errs = append(errs, fmt.Errorf("--gpu-metrics-url: %w", err))
		}
	}
	errs = append(errs, v.OTLP.validate())
	return errors.Join(errs...)
}

// ScrapeServer reports whether the target's metrics are polled.
func (o *Options) ScrapeServer() bool {
	switch o.Observe.ScrapeServer {
	case "on":
		return true
	case "off":
		return false
	}
	return o.Kind().Has(api.VLLMServer)
}

// ServerMetricsTarget returns the address of the target's metrics
// (--server-metrics-url, else the base URL + /metrics) and whether a run
// scrapes it. A sweep reads it between steps to wait for an idle server.
func (o *Options) ServerMetricsTarget() (string, bool) {
	url := o.Observe.ServerMetricsURL
	if url == "" {
		url = o.Root() + "/metrics"
	}
	return url, o.ScrapeServer()
}
