package options

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// Several reports whether the run has more than one endpoint.
func (o *Options) Several() bool { return len(o.BaseURLs) > 1 }

// EndpointURLs are the server roots the run talks to: every --base-url
// when several were given, else the one of baseURL.
func (o *Options) EndpointURLs() []string {
	if !o.Several() {
		return []string{o.Root()}
	}
	out := make([]string, len(o.BaseURLs))
	for i, u := range o.BaseURLs {
		out[i] = strings.TrimRight(u, "/")
	}
	return out
}

// validateEndpoints checks every --base-url of several, naming each by its
// number from 1, and --balance.
func (o *Options) validateEndpoints() error {
	var errs []error
	if _, err := balance.Parse(o.Balance); err != nil {
		errs = append(errs, err)
	}
	if !o.Several() {
		return errors.Join(errs...)
	}
	seen := map[string]int{}
	for i, u := range o.BaseURLs {
		shown := secret.URL(u)
		switch {
		case u == "":
			errs = append(errs, fmt.Errorf("--base-url %d: empty", i+1))
		case !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://"):
			errs = append(errs, fmt.Errorf("--base-url %d %q: must start with http:// or https://", i+1, shown))
		case seen[strings.TrimRight(u, "/")] > 0:
			errs = append(errs, fmt.Errorf("--base-url %d %q: the same as --base-url %d", i+1, shown, seen[strings.TrimRight(u, "/")]))
		default:
			seen[strings.TrimRight(u, "/")] = i + 1
		}
	}
	return errors.Join(errs...)
}

// EndpointOptions is the part of o that spreads the schedule over the
// endpoints.
func (o *Options) EndpointOptions() workload.EndpointOptions {
	st, _ := balance.Parse(o.Balance) // checked by Validate
	return workload.EndpointOptions{Count: len(o.EndpointURLs()), Strategy: st}
}

// ShownURLs are the endpoints' URLs without their credentials, as the
// summary and messages show them; nil with one endpoint (no per-endpoint
// section).
func (o *Options) ShownURLs() []string {
	if !o.Several() {
		return nil
	}
	urls := o.EndpointURLs()
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = secret.URL(u)
	}
	return out
}
