// Package scrape is what the scrapers of Prometheus text endpoints share
// (the server's /metrics, the GPUs' DCGM exporter): one bounded GET and
// the timeout of one scrape.
package scrape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
)

// Timeout bounds one scrape: the interval, between 1 s and 10 s.
func Timeout(interval time.Duration) time.Duration {
	return min(max(interval, time.Second), 10*time.Second)
}

// Fetch GETs a Prometheus text endpoint (url, shown without its
// credentials in errors) and returns what parse makes of its body, at
// most 64 MiB; a status other than 200 is an error naming it.
func Fetch[T any](ctx context.Context, client *http.Client, url, shown string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return zero, errors.New(secret.URLs(err.Error()))
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := client.Do(req)
	if err != nil {
		return zero, fmt.Errorf("GET %s: %s", shown, secret.URLs(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return zero, fmt.Errorf("GET %s: %s", shown, resp.Status)
	}
	v, err := parse(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return zero, fmt.Errorf("GET %s: %w", shown, err)
	}
	return v, nil
}

// Value is the numeric value of a gauge, counter or untyped sample (ok
// false for a histogram or summary).
func Value(m *dto.Metric) (float64, bool) {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}
