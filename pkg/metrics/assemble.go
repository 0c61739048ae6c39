package metrics

import (
	"fmt"
	"time"
)

// Facts is what a summary holds besides its parts' figures, and how to
// assemble it: a run's, a merge's or per-request records'.
type Facts struct {
	// Summary holds the figures that come from the run itself, not from
	// its samples: its identity (backend, mode, seed…, started_at), the
	// schedule's keeping (scheduled, not_sent…), the monitor's windows,
	// self-check and server metrics, and the sections a merge copies. The
	// parts' fields are written over it.
	Summary Summary
	// Elapsed is the run's length: every throughput is over it.
	Elapsed time.Duration
	// Parts are the run's accumulators (NewParts), each fed every sample
	// or loaded with the copies' states.
	Parts []Part
	// EndpointServers are each endpoint's server metrics, in the order of
	// the endpoints (nil: not scraped).
	EndpointServers []*ServerSummary
	// State asks for the summary's merge_state; Windows are its windows'
	// distributions.
	State   bool
	Windows []WindowState
}

// Assemble produces the summary of a run, a merge or per-request records:
// the facts' figures, each part's finished into them, the endpoints'
// server metrics and, with f.State, the merge state. It is the one place a
// summary is assembled. On an error (a state that could not be encoded)
// the summary is whole but has no merge state.
func Assemble(f Facts) (*Summary, error) {
	s := new(Summary)
	*s = f.Summary
	FinishParts(f.Parts, s, f.Elapsed)
	if s.GPU != nil {
		s.GPU.SetOutputTokens(s.TotalOutputTokens) // the run's energy per output token
	}
	for i, r := range f.EndpointServers {
		if i < len(s.Endpoints) && r != nil {
			s.Endpoints[i].ServerMetrics = r
		}
	}
	if !f.State {
		return s, nil
	}
	st, err := NewMergeState(f.Elapsed, f.Windows, f.Parts)
	if err != nil {
		return s, fmt.Errorf("merge state: %w", err)
	}
	s.MergeState = &st
	return s, nil
}

// NewMergeState encodes a run's state for its summary's merge_state: its
// length, its windows' distributions and each part's own state, in the
// summary's histogram encoding. A run writes it at its end; a merge writes
// the merged summary's the same way, so a merged summary can be merged
// again.
func NewMergeState(elapsed time.Duration, windows []WindowState, parts []Part) (MergeState, error) {
	st := MergeState{Version: MergeStateVersion, HistEncoding: HistEncoding, ElapsedNS: int64(elapsed), Windows: windows}
	err := SaveParts(parts, &st)
	return st, err
}
