package monitor

import (
	"fmt"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
)

// otlpCloseTimeout bounds the last export at the end of a run.
const otlpCloseTimeout = 10 * time.Second

// newOTLP prepares the export to a collector (Config.OTLP), fed by the
// run's live counters.
func (m *Monitor) newOTLP() error {
	if m.c.OTLP.Endpoint == "" {
		return nil
	}
	c := m.c.OTLP
	c.Scheduled, c.InFlight = m.c.Scheduled, m.inFlightNow
	c.Dispatched = func() int64 {
		if d := m.dispatched.Load(); d != nil {
			return (*d)()
		}
		return 0
	}
	e, err := otlpexport.New(c)
	if err != nil {
		return fmt.Errorf("--otlp-endpoint: %w", err)
	}
	m.otlp = e
	m.c.Log.Infof("otlp: exporting to %s", e.Endpoint())
	return nil
}

// closeOTLP sends what is left, once every result is in, and says how
// the export went: spans exported, dropped (the builder's queue full) and
// failed exports. Safe to call again.
func (m *Monitor) closeOTLP() {
	if m.otlp == nil || m.otlpRes != nil {
		return
	}
	st, err := m.otlp.Close(otlpCloseTimeout)
	c := m.c.OTLP
	m.otlpRes = &metrics.OTLPSummary{Endpoint: m.otlp.Endpoint(), Traces: c.Traces, Sample: c.Sample,
		Spans: st.Spans, SampledOut: st.SampledOut, Dropped: st.Dropped, FailedExports: st.Errors, LastError: st.LastError}
	if !c.Traces {
		m.otlpRes.Sample = 0
	}
	if c.Traces {
		m.c.Log.Infof("otlp: %d span(s) queued for export to %s, %d left out by --otlp-sample, %d dropped", st.Spans, m.otlp.Endpoint(), st.SampledOut, st.Dropped)
	}
	if st.Dropped > 0 {
		m.c.Log.Warnf("otlp: %d span(s) dropped: the exporter's queue (%d) was full; the run's own figures are complete", st.Dropped, otlpexport.DefaultQueue)
	}
	switch {
	case st.Errors > 0:
		m.c.Log.Warnf("otlp: %d failed export(s) to %s; last: %s", st.Errors, m.otlp.Endpoint(), st.LastError)
	case err != nil:
		m.otlpRes.LastError = err.Error()
		m.c.Log.Warnf("otlp: %v", err)
	}
}
