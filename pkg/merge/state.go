package merge

import (
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// RunState is what a run hands to NewMergeState: its length, the states of
// its closed windows and its parts.
type RunState struct {
	Elapsed time.Duration
	Windows []metrics.WindowState
	// Parts are the run's parts (metrics.NewParts), finished: each saves
	// its own state.
	Parts []metrics.Part
}

// NewMergeState encodes a run's state for its summary's merge_state: each
// accumulator's own state, in the summary's histogram encoding. A run
// writes it at its end; Summaries writes the merged summary's the same
// way, so a merged summary can be merged again.
func NewMergeState(p RunState) (metrics.MergeState, error) {
	st := metrics.MergeState{Version: metrics.MergeStateVersion, HistEncoding: metrics.HistEncoding, ElapsedNS: int64(p.Elapsed), Windows: p.Windows}
	if err := metrics.SaveParts(p.Parts, &st); err != nil {
		return st, err
	}
	return st, nil
}
