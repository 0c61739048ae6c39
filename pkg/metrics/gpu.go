package metrics

// GPUStats is what GPU telemetry (NVIDIA's DCGM exporter) said over a
// period: time-weighted figures of the GPUs scraped, held from each scrape
// to the next as the server metrics are. Utilisation is the mean over the
// GPUs; memory and power are their sums.
type GPUStats struct {
	Samples int64 `json:"samples"`
	// Observed is the time covered by the scrapes, in seconds.
	Observed float64 `json:"observed_s"`
	// GPUs is the number of GPUs seen.
	GPUs int `json:"gpus"`
	// UtilMean and UtilMax are utilisation in percent (DCGM_FI_DEV_GPU_UTIL).
	UtilMean float64 `json:"util_mean_pct"`
	UtilMax  float64 `json:"util_max_pct"`
	// MemUsedMean and MemUsedMax are the frame buffer used, in MiB
	// (DCGM_FI_DEV_FB_USED).
	MemUsedMean float64 `json:"mem_used_mean_mib"`
	MemUsedMax  float64 `json:"mem_used_max_mib"`
	// SMClockMean is the SM clock in MHz (DCGM_FI_DEV_SM_CLOCK; absent when
	// not exported).
	SMClockMean float64 `json:"sm_clock_mean_mhz,omitempty"`
	// Power is present when the exporter reports power.
	Power *GPUPower `json:"power,omitempty"`
}

// GPUPower is the power drawn over a period (DCGM_FI_DEV_POWER_USAGE), its
// integral over time, and that energy per output token of the period.
type GPUPower struct {
	MeanW   float64 `json:"mean_w"`
	MaxW    float64 `json:"max_w"`
	EnergyJ float64 `json:"energy_j"`
	// JoulesPerOutputToken is EnergyJ over the output tokens of the
	// requests that completed in the period (absent without any).
	JoulesPerOutputToken float64 `json:"joules_per_output_token,omitempty"`
}

// SetOutputTokens sets the energy per output token from the period's
// output tokens.
func (s *GPUStats) SetOutputTokens(n int64) {
	if s == nil || s.Power == nil || n <= 0 {
		return
	}
	s.Power.JoulesPerOutputToken = s.Power.EnergyJ / float64(n)
}

// GPUDevice is one GPU's figures over the run.
type GPUDevice struct {
	// ID is the GPU's gpu label, with its exporter's number when there are
	// several (--gpu-metrics-url): "1/0"; UUID and Model its UUID and
	// modelName labels.
	ID    string `json:"id"`
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
	GPUStats
}

// GPUSummary is the summary's gpu section: what the GPU telemetry said over
// the run, each GPU's part, and how scraping it went.
type GPUSummary struct {
	URLs     []string `json:"urls"`
	Interval float64  `json:"interval_s"`
	// Available is false when no scrape succeeded.
	Available bool   `json:"available"`
	Failures  int64  `json:"failed_scrapes"`
	LastError string `json:"last_error,omitempty"`
	*GPUStats
	Devices []GPUDevice `json:"devices,omitempty"`
}

// OTLPSummary is the summary's otlp section: how the export to an
// OpenTelemetry collector went (--otlp-endpoint).
type OTLPSummary struct {
	Endpoint string `json:"endpoint"`
	Traces   bool   `json:"traces"`
	// Sample is the share of requests whose span is exported; Spans
	// counts the spans handed to the exporter, SampledOut those the share
	// left out, Dropped those its full queue dropped.
	Sample     float64 `json:"sample"`
	Spans      int64   `json:"spans"`
	SampledOut int64   `json:"sampled_out"`
	Dropped    int64   `json:"dropped"`
	// FailedExports counts the exports the collector did not take.
	FailedExports int64  `json:"failed_exports"`
	LastError     string `json:"last_error,omitempty"`
}
