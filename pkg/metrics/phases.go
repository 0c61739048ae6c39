package metrics

import (
	"encoding/json"
	"time"
)

// HTTPPhases accumulates the requests' HTTP phases (--http-phases,
// record.Phases): how many went out on a new connection and how many on a
// reused one, and the distributions of connect, TLS handshake, request
// write and wait to the first response byte, so that a TTFT made by
// connection set-up is told from one made by the server. It is a Part; a
// run that timed no phases writes none of its keys.
type HTTPPhases struct {
	// Requests are the attempts whose phases were timed (failed ones too:
	// a refused connection has its connect); Reused those on a pooled
	// connection.
	Requests, Reused int64
	// Connect and TLS hold the new connections' phases (TLS: only those
	// that had a handshake); Write and Wait every request's.
	Connect, TLS, Write, Wait *Hist
}

// PhaseStats is one phase's distribution in the summary, in ms.
type PhaseStats struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// HTTPPhasesSummary is the summary's http_phases section.
type HTTPPhasesSummary struct {
	Requests       int64       `json:"requests"`
	NewConnections int64       `json:"new_connections"`
	Reused         int64       `json:"reused"`
	ConnectMS      *PhaseStats `json:"connect_ms,omitempty"`
	TLSMS          *PhaseStats `json:"tls_ms,omitempty"`
	WriteMS        *PhaseStats `json:"write_ms,omitempty"`
	WaitMS         *PhaseStats `json:"wait_ms,omitempty"`
}

// NewHTTPPhases returns an empty HTTPPhases.
func NewHTTPPhases() *HTTPPhases {
	return &HTTPPhases{Connect: NewHist(), TLS: NewHist(), Write: NewHist(), Wait: NewHist()}
}

// Key implements Part.
func (p *HTTPPhases) Key() string { return "http_phases" }

// Add implements Sink.
func (p *HTTPPhases) Add(s *Sample) {
	ph := &s.HTTP
	if !ph.Measured {
		return
	}
	p.Requests++
	if ph.Reused {
		p.Reused++
	} else if ph.Connect > 0 {
		p.Connect.Record(ph.Connect)
	}
	if ph.TLS > 0 {
		p.TLS.Record(ph.TLS)
	}
	if ph.Write > 0 {
		p.Write.Record(ph.Write)
	}
	if ph.Wait > 0 {
		p.Wait.Record(ph.Wait)
	}
}

func phaseStats(h *Hist) *PhaseStats {
	if h.Count() == 0 {
		return nil
	}
	d := h.Dist()
	return &PhaseStats{Count: d.Count, Mean: d.Mean, P50: d.Median, P90: d.P90, P99: d.P99, Max: d.Max}
}

// Finish implements Part.
func (p *HTTPPhases) Finish(s *Summary, _ time.Duration) {
	if p.Requests == 0 {
		return
	}
	s.HTTPPhases = &HTTPPhasesSummary{Requests: p.Requests, NewConnections: p.Requests - p.Reused, Reused: p.Reused,
		ConnectMS: phaseStats(p.Connect), TLSMS: phaseStats(p.TLS), WriteMS: phaseStats(p.Write), WaitMS: phaseStats(p.Wait)}
}

// httpPhasesState is HTTPPhases in its mergeable form.
type httpPhasesState struct {
	Requests, Reused          int64
	Connect, TLS, Write, Wait HistState
}

// hists pairs p's distributions with their places in st.
func (p *HTTPPhases) hists(st *httpPhasesState) []histSlot {
	return []histSlot{{"connect", p.Connect, &st.Connect}, {"tls", p.TLS, &st.TLS}, {"write", p.Write, &st.Write}, {"wait", p.Wait, &st.Wait}}
}

// State returns the part's state (merge_state.parts): nil when no phase was timed.
func (p *HTTPPhases) State() (json.RawMessage, error) {
	if p.Requests == 0 {
		return nil, nil
	}
	st := httpPhasesState{Requests: p.Requests, Reused: p.Reused}
	return marshalState(&st, p.hists(&st))
}

// MergeState adds a state State returned.
func (p *HTTPPhases) MergeState(raw json.RawMessage) error {
	st, err := mergePartState(raw, func(st *httpPhasesState) error {
		return checkCounts(st.Requests < 0 || st.Reused < 0 || st.Reused > st.Requests)
	}, p.hists)
	if err != nil {
		return err
	}
	p.Requests += st.Requests
	p.Reused += st.Reused
	return nil
}

// Save implements Part: the state under merge_state.parts.
func (p *HTTPPhases) Save(st *MergeState) error { return saveRaw(st, p.Key(), p.State) }

// Load implements Part.
func (p *HTTPPhases) Load(c *Copy) error { return loadRaw(c, p.Key(), p.MergeState) }
