package workload

import (
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/balance"
)

// EndpointOptions is how the run's requests are spread over several
// endpoints (--base-url given more than once, --balance).
type EndpointOptions struct {
	// Count is the number of endpoints (0 or 1: one, no step).
	Count    int
	Strategy balance.Strategy
}

// several reports whether the run has more than one endpoint.
func (e EndpointOptions) several() bool { return e.Count > 1 }

// column reports whether the schedule CSV carries the endpoint column:
// several endpoints, decided ahead of time.
func (e EndpointOptions) column() bool { return e.several() && e.Strategy.Ahead() }

// balanceEndpoints gives every arrival its endpoint (a pure step of the
// whole schedule, before sharding) and keeps the plan for the sessions'
// later turns.
func balanceEndpoints(c *Config, w *Workload, s arrival.Schedule) arrival.Schedule {
	if !c.Endpoints.several() {
		return s
	}
	p := &balance.Plan{N: c.Endpoints.Count, Strategy: c.Endpoints.Strategy, Sessions: c.Sessions.On() || c.MultiTurn || w.Agentic != nil, Shards: c.ShardCount}
	if w.Prefix != nil {
		p.PrefixOf = w.Prefix.Pick
	}
	w.Balance = p
	return p.Apply(s)
}
