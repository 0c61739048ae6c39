package metrics

import (
	"encoding/json"
	"fmt"
	"time"
)

// Groups is a keyed breakdown of results: per kind of request (text or
// image), per model, … Each group keeps streaming distributions, so memory
// grows with the number of groups, never with the number of requests. Like
// Collector, it is used by one goroutine.
type Groups struct {
	key func(*Sample) string
	m   map[string]*Group
}

// Group is one group's accumulated results: its distributions and counts.
type Group struct {
	TTFT, TPOT, E2E *Hist
	GroupCounters
}

// GroupCounters are a group's counts, declared once: the Group keeps them,
// and its state (GroupState) writes them in place under these keys, in
// this order.
type GroupCounters struct {
	Tally
	ImageTally
	// Text and Generations count the group's token requests and its
	// requests without tokens — image generations, pooling batches
	// (completed or failed).
	Text        int64 `json:"text"`
	Generations int64 `json:"generations"`
}

// add adds o's counts to n's.
func (n *GroupCounters) add(o *GroupCounters) {
	n.Tally.add(&o.Tally)
	n.ImageTally.add(&o.ImageTally)
	n.Text += o.Text
	n.Generations += o.Generations
}

// named returns the counts by their key.
func (n *GroupCounters) named() map[string]int64 {
	return namedTallies(&n.Tally, &n.ImageTally, map[string]int64{"text": n.Text, "generations": n.Generations})
}

// NewGroups returns an empty breakdown whose group of a result is key(r).
func NewGroups(key func(*Sample) string) *Groups {
	return &Groups{key: key, m: map[string]*Group{}}
}

func newGroup() *Group {
	return &Group{TTFT: NewHist(), TPOT: NewHist(), E2E: NewHist()}
}

// Add records s in its group.
func (g *Groups) Add(s *Sample) {
	if s.Cancelled {
		return // breakdowns count completed and failed requests
	}
	k := g.key(s)
	gr := g.m[k]
	if gr == nil {
		gr = newGroup()
		g.m[k] = gr
	}
	if !s.Measure.Tokens() { // an image generation, a pooling batch: no tokens
		gr.Generations++
	} else {
		gr.Text++
	}
	if !s.OK {
		gr.Failed++
		return
	}
	gr.Completed++
	gr.InputTokens += int64(s.InputLen)
	gr.OutputTokens += int64(s.OutputTokens)
	gr.Images += int64(s.Images)
	if s.CachedTokens > 0 {
		gr.CachedTokens += int64(s.CachedTokens)
	}
	if s.Generation {
		gr.GeneratedImages += int64(s.Generated)
	}
	latencyHists{TTFT: gr.TTFT, TPOT: gr.TPOT, E2E: gr.E2E}.add(s) // no ITL by group
}

// Merge adds o's groups to g (shards of one run).
func (g *Groups) Merge(o *Groups) {
	for k, og := range o.m {
		gr := g.m[k]
		if gr == nil {
			gr = newGroup()
			g.m[k] = gr
		}
		gr.TTFT.Merge(og.TTFT)
		gr.TPOT.Merge(og.TPOT)
		gr.E2E.Merge(og.E2E)
		gr.add(&og.GroupCounters)
	}
}

// Keys returns the group names, sorted.
func (g *Groups) Keys() []string { return sortedKeys(g.m) }

// Get returns the group named k, or nil.
func (g *Groups) Get(k string) *Group { return g.m[k] }

// GroupSummary is one group's figures in the summary, with FineServe's key
// names; throughputs are over the whole run, so the groups' add up to the
// run's.
type GroupSummary struct {
	Completed          int64   `json:"completed"`
	Failed             int64   `json:"failed"`
	TotalInputTokens   int64   `json:"total_input_tokens"`
	TotalOutputTokens  int64   `json:"total_output_tokens"`
	CachedPromptTokens int64   `json:"cached_prompt_tokens"`
	Images             int64   `json:"total_input_images"`
	RequestThroughput  float64 `json:"request_throughput"`
	InputThroughput    float64 `json:"input_throughput"`
	OutputThroughput   float64 `json:"output_throughput"`
	MeanTTFT           float64 `json:"mean_ttft_ms"`
	MedianTTFT         float64 `json:"median_ttft_ms"`
	P99TTFT            float64 `json:"p99_ttft_ms"`
	MeanTPOT           float64 `json:"mean_tpot_ms"`
	MedianTPOT         float64 `json:"median_tpot_ms"`
	P99TPOT            float64 `json:"p99_tpot_ms"`
	MeanE2E            float64 `json:"mean_e2e_latency_ms"`
	MedianE2E          float64 `json:"median_e2e_latency_ms"`
	P99E2E             float64 `json:"p99_e2e_latency_ms"`
	// Image generation: images returned and images/s over the run.
	GeneratedImages int64   `json:"total_generated_images,omitempty"`
	ImageThroughput float64 `json:"image_throughput,omitempty"`
	// NoTokens marks a group of image generations only: its TTFT and TPOT
	// keys are left out (absent, not zero).
	NoTokens bool `json:"-"`
}

// MarshalJSON writes g, without the token figures of a group that has no
// tokens.
func (g GroupSummary) MarshalJSON() ([]byte, error) {
	type plain GroupSummary
	b, err := json.Marshal(plain(g))
	if err != nil || !g.NoTokens {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms"} {
		delete(m, k)
	}
	return json.Marshal(m)
}

// Summary returns every group's figures over a run of the given length,
// keyed by group name (the shape of the summary's per_kind and per_model
// entries).
func (g *Groups) Summary(elapsed time.Duration) map[string]GroupSummary {
	out := make(map[string]GroupSummary, len(g.m))
	sec := elapsed.Seconds()
	per := func(n int64) float64 {
		if sec <= 0 {
			return 0
		}
		return float64(n) / sec
	}
	for k, gr := range g.m {
		ttft, tpot, e2e := gr.TTFT.Dist(), gr.TPOT.Dist(), gr.E2E.Dist()
		out[k] = GroupSummary{
			Completed: gr.Completed, Failed: gr.Failed,
			TotalInputTokens: gr.InputTokens, TotalOutputTokens: gr.OutputTokens,
			CachedPromptTokens: gr.CachedTokens, Images: gr.Images,
			RequestThroughput: per(gr.Completed), InputThroughput: per(gr.InputTokens), OutputThroughput: per(gr.OutputTokens),
			MeanTTFT: ttft.Mean, MedianTTFT: ttft.Median, P99TTFT: ttft.P99,
			MeanTPOT: tpot.Mean, MedianTPOT: tpot.Median, P99TPOT: tpot.P99,
			MeanE2E: e2e.Mean, MedianE2E: e2e.Median, P99E2E: e2e.P99,
			GeneratedImages: gr.GeneratedImages, ImageThroughput: per(gr.GeneratedImages),
			NoTokens: gr.Generations > 0 && gr.Text == 0,
		}
	}
	return out
}

// UnmarshalJSON reads a group written by MarshalJSON: a group without
// token figures (mean_ttft_ms absent) is one of image generations only.
func (g *GroupSummary) UnmarshalJSON(b []byte) error {
	type plain GroupSummary
	p, keys, err := decodeKeyed[plain](b)
	if err != nil {
		return err
	}
	_, hasTTFT := keys["mean_ttft_ms"]
	p.NoTokens = !hasTTFT
	*g = GroupSummary(p)
	return nil
}

// Breakdown is one of the summary's breakdowns (KeyPerKind: by request
// kind, KeyPerModel: by served model) as a Part: its state is
// merge_state.groups[Key()]. Without Groups (a run that does not call for
// it, or a merge until a copy's state holds it) it writes nothing.
type Breakdown struct {
	key string
	*Groups
}

var _ Part = (*Breakdown)(nil)

// NewBreakdown returns the empty breakdown key (one of BreakdownKeys).
func NewBreakdown(key string) *Breakdown {
	group := func(s *Sample) string { return s.Model }
	if key == KeyPerKind {
		group = func(s *Sample) string { return s.Kind }
	}
	return &Breakdown{key: key, Groups: NewGroups(group)}
}

// Key implements Part: the breakdown's summary key.
func (b *Breakdown) Key() string { return b.key }

// Add implements Sink.
func (b *Breakdown) Add(s *Sample) {
	if b.Groups != nil {
		b.Groups.Add(s)
	}
}

// Finish implements Part.
func (b *Breakdown) Finish(s *Summary, elapsed time.Duration) {
	if b.Groups != nil {
		_ = s.SetBreakdown(b.key, b.Summary(elapsed)) // b.key is one of BreakdownKeys
	}
}

// Save implements Part.
func (b *Breakdown) Save(st *MergeState) error {
	if b.Groups == nil {
		return nil
	}
	gs, err := b.State()
	if err != nil {
		return err
	}
	if st.Groups == nil {
		st.Groups = map[string]map[string]GroupState{}
	}
	st.Groups[b.key] = gs
	return nil
}

// Load implements Part.
func (b *Breakdown) Load(c *Copy) error {
	gs, ok := c.State.Groups[b.key]
	if !ok {
		return nil
	}
	c.mark("groups." + b.key)
	g, err := GroupsFromState(gs)
	if err != nil {
		return fmt.Errorf("%s.groups.%s: %w", KeyMergeState, b.key, err)
	}
	if b.Groups == nil {
		b.Groups = g
	} else {
		b.Merge(g)
	}
	return nil
}
