package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/monitor"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

// several reports whether the run has more than one endpoint.
func (o *Options) several() bool { return len(o.BaseURLs) > 1 }

// endpointURLs are the server roots the run talks to: every --base-url
// when several were given, else the one of baseURL.
func (o *Options) endpointURLs() []string {
	if !o.several() {
		return []string{o.baseURL()}
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
	if !o.several() {
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

// endpointOptions is the part of o that spreads the schedule over the
// endpoints.
func (o *Options) endpointOptions() workload.EndpointOptions {
	st, _ := balance.Parse(o.Balance) // checked by Validate
	return workload.EndpointOptions{Count: len(o.endpointURLs()), Strategy: st}
}

// shownURLs are the endpoints' URLs without their credentials, as the
// summary and messages show them.
func (o *Options) shownURLs() []string {
	urls := o.endpointURLs()
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = secret.URL(u)
	}
	return out
}

// endpoints are the run's clients, one per endpoint (the same
// configuration but the URL), and the picker that chooses among several
// when a request is sent.
type endpoints struct {
	clients []*client.Client
	urls    []string
	// live tells the endpoints that answered the model check (checkTarget).
	live   []bool
	picker *balance.Picker // nil with one endpoint
}

// newEndpoints makes the client of every endpoint of o.
func newEndpoints(o *Options) (*endpoints, error) {
	e := &endpoints{urls: o.endpointURLs()}
	e.live = make([]bool, len(e.urls))
	for _, u := range e.urls {
		cfg := clientConfig(o)
		cfg.BaseURL = u
		c, err := client.New(cfg)
		if err != nil {
			e.close()
			return nil, err
		}
		e.clients = append(e.clients, c)
	}
	if len(e.clients) > 1 {
		st, _ := balance.Parse(o.Balance)
		e.picker = balance.NewPicker(len(e.clients), st)
	}
	return e, nil
}

// first is the first endpoint's client (what every endpoint's shares:
// chat or not).
func (e *endpoints) first() *client.Client { return e.clients[0] }

// acquire returns the client a request goes to (planned: the schedule's
// choice, -1 at send time) and notes it in res; release must follow.
func (e *endpoints) acquire(planned int, res *client.Result) *client.Client {
	if e.picker == nil {
		return e.clients[0]
	}
	i := e.picker.Acquire(planned)
	res.Endpoint = i + 1
	return e.clients[i]
}

// release ends the request of res at its endpoint.
func (e *endpoints) release(res *client.Result) {
	if e.picker != nil && res.Endpoint > 0 {
		e.picker.Release(res.Endpoint - 1)
	}
}

// setModel sets the model of every endpoint's client.
func (e *endpoints) setModel(m string) {
	for _, c := range e.clients {
		c.SetModel(m)
	}
}

func (e *endpoints) close() {
	for _, c := range e.clients {
		c.CloseIdleConnections()
	}
}

// warmup sends the warm-up requests (--warmup-requests) to every endpoint
// that answered the model check, each its own n. With several endpoints
// one whose warm-up fails is warned about and kept; the run stops only
// when every endpoint's fails (or with one endpoint, when its fails).
func (e *endpoints) warmup(ctx context.Context, o *Options, wl *workload.Workload, prompts *prompt.Builder, log *logger, panics *requestPanics) error {
	if len(e.clients) == 1 {
		return warmup(ctx, o.WarmupRequests, wl.Images, e.clients[0], prompts, wl.First, log, panics)
	}
	if o.WarmupRequests == 0 {
		return nil
	}
	var first error
	ok, live := 0, 0
	for _, l := range e.live {
		if l {
			live++
		}
	}
	log.Infof("warm-up: %d request(s) to each of %d endpoints", o.WarmupRequests, live)
	quiet := &logger{w: log.w, quiet: true}
	for i, c := range e.clients {
		if !e.live[i] {
			continue
		}
		err := warmup(ctx, o.WarmupRequests, wl.Images, c, prompts, wl.First, quiet, panics)
		if err == nil {
			ok++
			continue
		}
		if first == nil {
			first = err
		}
		log.Warnf("endpoint %d (%s): %v", i+1, hostPort(e.urls[i]), err)
	}
	if ok == 0 && first != nil {
		return fmt.Errorf("every endpoint's warm-up failed; the first: %w", first)
	}
	return nil
}

// setEndpoints adds the per-endpoint breakdown (nil: one endpoint) to the
// summary, with each endpoint's server metrics.
func setEndpoints(sum *metrics.Summary, byEndpoint *metrics.Endpoints, mon *monitor.Monitor, elapsed time.Duration) error {
	if byEndpoint == nil {
		return nil
	}
	sum.Endpoints = byEndpoint.Summary(elapsed)
	for i, r := range mon.EndpointServers() {
		if i < len(sum.Endpoints) {
			sum.Endpoints[i].ServerMetrics = r
		}
	}
	return nil
}
