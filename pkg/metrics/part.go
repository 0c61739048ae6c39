package metrics

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Part is an accumulator with the whole lifecycle in one place: it adds
// each Sample, finishes into its fields of the typed Summary, saves its
// exact state into its place in the summary's merge_state and loads
// another copy's from there. A run, fineserve-gen merge and the report
// build their parts with NewParts (a merge loads them with MergeParts) and
// hand them to Assemble, so a new figure of this kind is one Part and its
// line in NewParts: nothing in the runner, merge or report names it.
type Part interface {
	Sink
	// Key names the part (its state in merge_state.parts, for a part
	// without a field of its own in MergeState).
	Key() string
	// Finish writes the part's figures into s, over a run of elapsed
	// (nothing when it saw nothing: its keys stay absent).
	Finish(s *Summary, elapsed time.Duration)
	// Save writes the part's exact state into its place in st (nothing:
	// nothing to merge).
	Save(st *MergeState) error
	// Load adds the state of one copy of the run (c.State) to the part.
	Load(c *Copy) error
}

// Copy is one summary a merge loads into its parts: its name (a file),
// its summary and merge state, and where its times start.
type Copy struct {
	Name    string
	Summary *Summary
	State   *MergeState
	// Offset is the copy's start from the merged run's start.
	Offset time.Duration
	// Warnf notes what the copies disagree on (the merged summary's
	// merge_warnings); a part may keep it to warn when it finishes.
	Warnf func(format string, a ...any)
	// read are the places in State a part took by key ("parts.answers",
	// "groups.per_kind"): MergeParts refuses the others.
	read map[string]bool
}

// inSomeCopies is the merge bookkeeping of a part that copies of a run may
// each have or not (goodput, the endpoints): loaded, a copy's state was
// merged in; missing, a copy had none — the part is then left out of the
// merged summary, with a warning when it finishes.
type inSomeCopies struct {
	loaded, missing bool
	warnf           func(format string, a ...any)
}

// loadCopy notes a copy that has the part's state (has) or not, and
// reports whether to merge it.
func (p *inSomeCopies) loadCopy(c *Copy, has bool) bool {
	p.warnf = c.Warnf
	if !has {
		p.missing = true
	}
	return has
}

// warnPartial warns, when some copies only had the part, that what is
// left out.
func (p *inSomeCopies) warnPartial(what string) {
	if p.loaded && p.missing && p.warnf != nil {
		p.warnf("%s is in some summaries only: it is left out of the merged summary", what)
	}
}

// PartsConfig is what a run's parts need beyond its samples: the
// --goodput targets (NoSLO: none), the breakdowns the workload calls for
// (BreakdownKeys), the endpoints' URLs (nil: one endpoint) and whether
// the turns of sessions are kept (a run of sessions, records read back).
type PartsConfig struct {
	SLO        SLO
	Breakdowns []string
	Endpoints  []string
	Sessions   bool
	// Steady chooses the steady-state window (zero: none).
	Steady SteadyConfig
}

// NewParts returns a fresh set of every Part a run keeps: the registry.
// A merge's parts are NewParts(PartsConfig{SLO: NoSLO}): they take what
// the copies' states hold.
func NewParts(c PartsConfig) []Part {
	// In this order: a merge's warnings come in it (sessions, goodput,
	// endpoints).
	parts := []Part{NewCollector(), NewAnswers(), NewAgents(), NewPooling(), NewHTTPPhases(), NewLengths(),
		NewSessions(c.Sessions), NewGoodput(c.SLO), NewEndpoints(c.Endpoints), NewSteadyState(c.Steady)}
	for _, k := range BreakdownKeys {
		b := NewBreakdown(k)
		if !slices.Contains(c.Breakdowns, k) {
			b.Groups = nil // off: a merge's, until a copy has it
		}
		parts = append(parts, b)
	}
	return parts
}

// FinishParts finishes each part into s.
func FinishParts(parts []Part, s *Summary, elapsed time.Duration) {
	for _, p := range parts {
		p.Finish(s, elapsed)
	}
}

// SaveParts saves each part's state into st; it returns the first failure
// to save one (the others are saved).
func SaveParts(parts []Part, st *MergeState) error {
	var first error
	for _, p := range parts {
		if err := p.Save(st); err != nil && first == nil {
			first = fmt.Errorf("%s: %w", p.Key(), err)
		}
	}
	return first
}

// MergeParts loads one copy's states into parts (a key of
// merge_state.parts no part knows is an error: a summary of a newer
// version). An error names the copy.
func MergeParts(parts []Part, c *Copy) error {
	if c.State == nil {
		c.State = &MergeState{}
	}
	if c.Warnf == nil {
		c.Warnf = func(string, ...any) {}
	}
	c.read = map[string]bool{}
	for _, p := range parts {
		if err := p.Load(c); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	for _, keyed := range []struct {
		place string
		keys  []string
	}{{"parts", sortedKeys(c.State.Parts)}, {"groups", sortedKeys(c.State.Groups)}} {
		for _, k := range keyed.keys {
			if !c.read[keyed.place+"."+k] {
				return fmt.Errorf("%s: %s.%s.%s: unknown (a summary of a newer fineserve-gen?)", c.Name, KeyMergeState, keyed.place, k)
			}
		}
	}
	return nil
}

// mark notes that a part took the place key of c.State.
func (c *Copy) mark(key string) {
	if c.read != nil {
		c.read[key] = true
	}
}

// PartOf returns the part of type T in parts.
func PartOf[T Part](parts []Part) (T, bool) {
	i := slices.IndexFunc(parts, func(p Part) bool { _, ok := p.(T); return ok })
	if i < 0 {
		var zero T
		return zero, false
	}
	return parts[i].(T), true
}

// saveRaw saves the state state returns under merge_state.parts.key (a
// part without a field of its own in MergeState).
func saveRaw(st *MergeState, key string, state func() (json.RawMessage, error)) error {
	raw, err := state()
	if err != nil || raw == nil {
		return err
	}
	if st.Parts == nil {
		st.Parts = map[string]json.RawMessage{}
	}
	st.Parts[key] = raw
	return nil
}

// loadRaw merges the copy's state under merge_state.parts.key, if any.
func loadRaw(c *Copy, key string, merge func(json.RawMessage) error) error {
	raw, ok := c.State.Parts[key]
	if !ok {
		return nil
	}
	c.mark("parts." + key)
	if err := merge(raw); err != nil {
		return fmt.Errorf("%s.parts.%s: %w", KeyMergeState, key, err)
	}
	return nil
}
