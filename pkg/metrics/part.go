package metrics

import (
	"encoding/json"
	"fmt"
	"time"
)

// Part is an accumulator with the whole lifecycle in one place: it adds
// each Sample, finishes into its fields of the typed Summary, exports its
// exact state for the summary's merge_state (under parts.Key()) and merges
// another copy's state. A run, fineserve-gen merge and the report build
// their parts with NewParts and finish them with FinishParts, so a new
// figure of this kind is one Part and its line in NewParts: nothing in
// the runner, merge or report names it.
type Part interface {
	Sink
	// Key names the part's state in merge_state.parts.
	Key() string
	// Finish writes the part's figures into s, over a run of elapsed
	// (nothing when it saw nothing: its keys stay absent).
	Finish(s *Summary, elapsed time.Duration)
	// State returns the part's exact state (nil: nothing to merge).
	State() (json.RawMessage, error)
	// MergeState adds a state another copy's State returned.
	MergeState(raw json.RawMessage) error
}

// NewParts returns a fresh set of every Part a run keeps: the registry.
func NewParts() []Part {
	return []Part{NewAnswers(), NewAgents(), NewPooling(), NewHTTPPhases()}
}

// FinishParts finishes each part into s and returns their states for
// merge_state.parts (nil when none has one).
func FinishParts(parts []Part, s *Summary, elapsed time.Duration) (map[string]json.RawMessage, error) {
	var states map[string]json.RawMessage
	for _, p := range parts {
		p.Finish(s, elapsed)
		raw, err := p.State()
		if err != nil {
			return states, fmt.Errorf("%s: %w", p.Key(), err)
		}
		if raw == nil {
			continue
		}
		if states == nil {
			states = map[string]json.RawMessage{}
		}
		states[p.Key()] = raw
	}
	return states, nil
}

// MergeParts adds the states of one copy's merge_state.parts to parts
// (a key no part knows is an error: a summary of a newer version).
func MergeParts(parts []Part, states map[string]json.RawMessage) error {
	for k, raw := range states {
		found := false
		for _, p := range parts {
			if p.Key() == k {
				found = true
				if err := p.MergeState(raw); err != nil {
					return fmt.Errorf("parts.%s: %w", k, err)
				}
			}
		}
		if !found {
			return fmt.Errorf("parts.%s: unknown (a summary of a newer fineserve-gen?)", k)
		}
	}
	return nil
}
