package main

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addObserveFlags declares the flags for watching a run and reading it
// afterwards (docs/OBSERVABILITY.md).
func addObserveFlags(fs *pflag.FlagSet, o *options.Options) {
	v := &o.Observe
	fs.Var(durationValue{&v.ReportInterval}, "report-interval", "print one live line every this long (e.g. 10s; 0: none)")
	fs.Var(secondsValue{&v.Window}, "window-seconds", "length in seconds of the summary's windows (windows: [...])")
	fs.Var(&sloValue{slo: &v.Goodput}, "goodput", "SLOs for goodput, vLLM's form: --goodput ttft:MS tpot:MS e2el:MS (also comma-separated or repeated)")
	fs.Float64Var(&v.MinGoodput, "min-goodput", v.MinGoodput, "exit 3 unless at least this share of requests meets every --goodput SLO (0: not checked)")
	fs.StringVar(&v.ReportHTML, "report-html", v.ReportHTML, "write a self-contained HTML report with plots to this file")
	fs.StringVar(&v.MetricsAddr, "metrics-addr", v.MetricsAddr, "serve the generator's Prometheus metrics on this address, e.g. 127.0.0.1:9090")
	f := fs.VarPF(triBool{&v.ScrapeServer}, "scrape-server-metrics", "", "poll the target's /metrics: running, waiting, KV cache, preemptions, idle fraction (default: on for --backend "+
		api.WithCaps(api.VLLMServer)+")")
	f.NoOptDefVal = "true"
	fs.Var(durationValue{&v.ServerMetricsInterval}, "server-metrics-interval", "time between two polls of the target's /metrics")
	fs.StringVar(&v.ServerMetricsURL, "server-metrics-url", v.ServerMetricsURL, "address of the target's metrics (default: the base URL + /metrics)")
	fs.StringArrayVar(&v.GPUMetricsURLs, "gpu-metrics-url", v.GPUMetricsURLs, "poll NVIDIA's DCGM exporter at this URL (repeatable) on the server metrics' interval: GPU utilisation, memory, power, energy per output token")
	fs.StringVar(&v.OTLP.Endpoint, "otlp-endpoint", v.OTLP.Endpoint, "export the run's metrics to this OpenTelemetry collector over OTLP/HTTP, e.g. http://127.0.0.1:4318")
	fs.BoolVar(&v.OTLP.Traces, "otlp-traces", v.OTLP.Traces, "with --otlp-endpoint, also export one span per request (GenAI semantic conventions)")
	fs.Float64Var(&v.OTLP.Sample, "otlp-sample", v.OTLP.Sample, "share of requests whose span is exported, 0 to 1 (which ones: a function of the request's index)")
	fs.StringArrayVar(&v.OTLP.Headers, "otlp-header", v.OTLP.Headers, "send this KEY=VALUE header with every OTLP export (repeatable)")
}

// secondsValue is a pflag.Value of a duration given in (fractional) seconds.
type secondsValue struct{ d *time.Duration }

func (v secondsValue) String() string {
	if v.d == nil {
		return "0"
	}
	return strconv.FormatFloat(v.d.Seconds(), 'g', -1, 64)
}

func (v secondsValue) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e9 {
		return fmt.Errorf("%q: want a number of seconds > 0", s)
	}
	*v.d = time.Duration(f * float64(time.Second))
	return nil
}

func (v secondsValue) Type() string { return "seconds" }

// triBool is a boolean flag whose unset state means "auto".
type triBool struct{ s *string }

func (v triBool) String() string {
	switch *v.s {
	case "on":
		return "true"
	case "off":
		return "false"
	}
	return "" // auto: the usage says what it means

}

func (v triBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q: want true or false", s)
	}
	if b {
		*v.s = "on"
	} else {
		*v.s = "off"
	}
	return nil
}

func (v triBool) Type() string { return "bool" }

// sloValue is --goodput: every occurrence adds its KEY:MS pairs.
type sloValue struct {
	slo  *metrics.SLO
	args []string
}

func (v *sloValue) String() string {
	if v.slo == nil || !v.slo.Set() {
		return ""
	}
	return v.slo.String()
}

func (v *sloValue) Set(s string) error {
	args := append(append([]string(nil), v.args...), s)
	slo, err := metrics.ParseSLO(args)
	if err != nil {
		return err
	}
	v.args, *v.slo = args, slo
	return nil
}

func (v *sloValue) Type() string { return "SLOs" }

// sloPair is one KEY:VALUE argument of vLLM's --goodput.
var sloPair = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*:[^\s/:]+$`)

// joinGoodputArgs folds vLLM's form of --goodput, several space-separated
// KEY:VALUE arguments after one flag (--goodput ttft:500 tpot:50), into one
// argument (--goodput=ttft:500,tpot:50) that the flag parser takes. Only
// arguments that look like KEY:VALUE are taken, so the next flag or a stray
// argument ends the list.
func joinGoodputArgs(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		var pairs []string
		switch {
		case a == "--goodput":
			if i+1 >= len(args) {
				out = append(out, a)
				continue
			}
			i++
			pairs = append(pairs, args[i])
		case strings.HasPrefix(a, "--goodput="):
			pairs = append(pairs, strings.TrimPrefix(a, "--goodput="))
		default:
			out = append(out, a)
			continue
		}
		for i+1 < len(args) && sloPair.MatchString(args[i+1]) {
			i++
			pairs = append(pairs, args[i])
		}
		out = append(out, "--goodput="+strings.Join(pairs, ","))
	}
	return out
}
