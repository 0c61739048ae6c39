package metrics

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/api"
)

// KeyPooling is the summary's section of a run of a batching backend
// (PoolingSummary).
const KeyPooling = "pooling"

// Pooling accumulates what a batching backend's answers held (embeddings,
// pooled outputs, rerank and score: api.Measure.Batches): the inputs
// sent and the vectors or scores returned by the completed requests, and
// the vectors' length. Its timing is the Collector's (E2E, requests and
// input tokens per second); it has no token figures. It is a Part; a run
// of another backend writes none of its keys.
type Pooling struct {
	Measure          api.Measure
	Completed        int64
	Inputs, Returned int64
	MinDims, MaxDims int
	seen             bool
}

// PoolingSummary is the summary's pooling section.
type PoolingSummary struct {
	// Measure is "vectors" (embeddings, pooling) or "scores" (rerank,
	// score).
	Measure string `json:"measure"`
	// Inputs are the inputs the completed requests sent (texts, or a
	// query's documents) and InputsPerS their rate over the run; BatchSize
	// their mean per request.
	Inputs     int64   `json:"total_inputs"`
	InputsPerS float64 `json:"inputs_per_s"`
	BatchSize  float64 `json:"mean_batch_size"`
	// Returned are the vectors or scores their answers held (one an input:
	// a request whose answer held another number failed).
	Returned int64 `json:"total_returned"`
	// VectorDims is the vectors' length (the first of each answer), when
	// all had one; MinDims and MaxDims when they differed.
	VectorDims int `json:"vector_dims,omitempty"`
	MinDims    int `json:"min_vector_dims,omitempty"`
	MaxDims    int `json:"max_vector_dims,omitempty"`
}

// NewPooling returns an empty Pooling.
func NewPooling() *Pooling { return &Pooling{} }

// Key implements Part.
func (p *Pooling) Key() string { return KeyPooling }

// Add implements Sink: completed requests of a batching backend only.
func (p *Pooling) Add(s *Sample) {
	if !s.OK || !s.Measure.Batches() {
		return
	}
	p.seen, p.Measure = true, s.Measure
	p.Completed++
	p.Inputs += int64(s.Inputs)
	p.Returned += int64(s.Returned)
	if s.Dims > 0 {
		if p.MinDims == 0 || s.Dims < p.MinDims {
			p.MinDims = s.Dims
		}
		p.MaxDims = max(p.MaxDims, s.Dims)
	}
}

// Finish implements Part.
func (p *Pooling) Finish(s *Summary, elapsed time.Duration) {
	if !p.seen {
		return
	}
	ps := &PoolingSummary{Measure: p.Measure.String(), Inputs: p.Inputs, Returned: p.Returned}
	if sec := elapsed.Seconds(); sec > 0 {
		ps.InputsPerS = float64(p.Inputs) / sec
	}
	if p.Completed > 0 {
		ps.BatchSize = float64(p.Inputs) / float64(p.Completed)
	}
	if p.MinDims == p.MaxDims {
		ps.VectorDims = p.MaxDims
	} else {
		ps.MinDims, ps.MaxDims = p.MinDims, p.MaxDims
	}
	s.Pooling = ps
}

// poolingState is Pooling in its mergeable form.
type poolingState struct {
	Measure                     string
	Completed, Inputs, Returned int64
	MinDims, MaxDims            int
}

// State returns the part's state (merge_state.parts): nil when p saw nothing.
func (p *Pooling) State() (json.RawMessage, error) {
	if !p.seen {
		return nil, nil
	}
	return json.Marshal(poolingState{Measure: p.Measure.String(), Completed: p.Completed, Inputs: p.Inputs, Returned: p.Returned, MinDims: p.MinDims, MaxDims: p.MaxDims})
}

// MergeState adds a state State returned.
func (p *Pooling) MergeState(raw json.RawMessage) error {
	var st poolingState
	if err := json.Unmarshal(raw, &st); err != nil {
		return err
	}
	if st.Completed < 0 || st.Inputs < 0 || st.Returned < 0 || st.MinDims < 0 || st.MaxDims < st.MinDims {
		return errors.New("counts that contradict each other")
	}
	m := api.MeasureVectors
	if st.Measure == api.MeasureScores.String() {
		m = api.MeasureScores
	}
	if p.seen && m != p.Measure {
		return errors.New("copies of vectors and of scores")
	}
	p.seen, p.Measure = true, m
	p.Completed += st.Completed
	p.Inputs += st.Inputs
	p.Returned += st.Returned
	if st.MinDims > 0 && (p.MinDims == 0 || st.MinDims < p.MinDims) {
		p.MinDims = st.MinDims
	}
	p.MaxDims = max(p.MaxDims, st.MaxDims)
	return nil
}

// Save implements Part: the state under merge_state.parts.
func (p *Pooling) Save(st *MergeState) error { return saveRaw(st, p.Key(), p.State) }

// Load implements Part.
func (p *Pooling) Load(c *Copy) error { return loadRaw(c, p.Key(), p.MergeState) }
