package monitor

import (
	"fmt"

	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

// startEndpoints starts polling the metrics of each of several endpoints
// (Config.EndpointMetricsURLs); the one ServerMetricsURL already polls
// shares its poller.
func (m *Monitor) startEndpoints() {
	if len(m.c.EndpointMetricsURLs) == 0 {
		return
	}
	m.endpoints = make([]*servermetrics.Scraper, len(m.c.EndpointMetricsURLs))
	for i, u := range m.c.EndpointMetricsURLs {
		if u == "" || (u == m.c.ServerMetricsURL && m.scraper != nil) {
			continue
		}
		m.endpoints[i] = servermetrics.Start(servermetrics.Config{
			URL: u, Interval: m.c.ServerMetricsInterval, Epoch: m.start,
			Warnf: func(format string, a ...any) {
				m.println(fmt.Sprintf("warning: endpoint %d: ", i+1) + fmt.Sprintf(format, a...))
			},
		})
	}
}

// stopEndpoints stops the endpoints' pollers and keeps their results;
// safe to call more than once.
func (m *Monitor) stopEndpoints() {
	if m.endpoints == nil || m.endpointRes != nil {
		return
	}
	m.endpointRes = make([]*servermetrics.Result, len(m.endpoints))
	for i, s := range m.endpoints {
		switch {
		case s != nil:
			res := s.Stop()
			m.endpointRes[i] = &res
		case m.c.EndpointMetricsURLs[i] != "" && m.c.EndpointMetricsURLs[i] == m.c.ServerMetricsURL:
			m.endpointRes[i] = m.server
		}
	}
}

// EndpointServers returns what each of several endpoints' /metrics said
// over the run (nil entries: not polled), once the monitor has stopped.
func (m *Monitor) EndpointServers() []*servermetrics.Result { return m.endpointRes }
