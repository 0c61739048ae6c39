package options

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
)

// OTLPOptions export a run to an OpenTelemetry collector over OTLP/HTTP
// (docs/OBSERVABILITY.md): the run's metrics, and with Traces one span per
// request.
type OTLPOptions struct {
	// Endpoint is the collector's base URL, e.g. http://127.0.0.1:4318
	// ("": no export); metrics go to /v1/metrics and spans to /v1/traces
	// under it.
	Endpoint string
	// Traces exports one span per request.
	Traces bool
	// Sample is the share of requests whose span is exported, in [0, 1]
	// (which ones is a function of the request's index).
	Sample float64
	// Headers are sent with every export (--otlp-header K=V), e.g. an
	// authorization token.
	Headers []string
}

// On reports whether the run exports to a collector.
func (o OTLPOptions) On() bool { return o.Endpoint != "" }

// HeaderMap returns the headers as a map (validated: each is K=V).
func (o OTLPOptions) HeaderMap() map[string]string {
	if len(o.Headers) == 0 {
		return nil
	}
	m := make(map[string]string, len(o.Headers))
	for _, h := range o.Headers {
		k, v, _ := strings.Cut(h, "=")
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

func (o OTLPOptions) validate() error {
	var errs []error
	if o.Endpoint != "" {
		if err := checkHTTPURL(o.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("--otlp-endpoint: %w", err))
		}
	} else if o.Traces || len(o.Headers) > 0 {
		errs = append(errs, errors.New("--otlp-traces and --otlp-header need --otlp-endpoint"))
	}
	if !(o.Sample >= 0 && o.Sample <= 1) {
		errs = append(errs, fmt.Errorf("--otlp-sample %g: want a share of requests in [0, 1]", o.Sample))
	}
	for _, h := range o.Headers {
		if k, _, ok := strings.Cut(h, "="); !ok || strings.TrimSpace(k) == "" {
			// The value may be a secret: only the key is shown.
			errs = append(errs, fmt.Errorf("--otlp-header %q: want KEY=VALUE", strings.TrimSpace(k)))
		}
	}
	return errors.Join(errs...)
}

// checkHTTPURL checks that u is an absolute http or https URL; its error
// shows the URL without credentials.
func checkHTTPURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("%q: want an http:// or https:// URL", secret.URL(u))
	}
	return nil
}
