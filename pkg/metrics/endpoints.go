package metrics

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// KeyEndpoints is the summary's per-endpoint breakdown of a run with
// several endpoints ([]EndpointSummary, in the order of --base-url).
const KeyEndpoints = "endpoints"

// Endpoints is the breakdown of a run with several endpoints, one group per
// endpoint (by Sample.Endpoint), with its failures by class. Memory grows
// with the number of endpoints only. Like Collector, it is used by one
// goroutine.
type Endpoints struct {
	urls   []string
	groups *Groups // keyed by the endpoint's index
	errs   []map[string]int64
	// cancelled counts the requests the client cut (--cancel-share):
	// neither completed nor failed, so not in the groups.
	cancelled []int64
	// on: the breakdown is written (a run with several endpoints, records
	// that name theirs: Grow, a merge of copies that all had it).
	on bool
	inSomeCopies
}

var _ Part = (*Endpoints)(nil)

// NewEndpoints returns the empty breakdown of the endpoints at urls
// (credentials already stripped: the summary writes them; nil: one
// endpoint, nothing written unless Grow or a merge adds some). It is a
// Part: its state is merge_state.endpoints.
func NewEndpoints(urls []string) *Endpoints {
	e := &Endpoints{urls: urls, groups: NewGroups(endpointKey), errs: make([]map[string]int64, len(urls)), cancelled: make([]int64, len(urls)),
		on: urls != nil}
	for i := range e.errs {
		e.errs[i] = map[string]int64{}
	}
	return e
}

func endpointKey(s *Sample) string { return strconv.Itoa(s.Endpoint) }

// Add implements Sink. A sample of no endpoint (Endpoint < 0) or of one
// out of range is not counted here (the run's own figures have it).
func (e *Endpoints) Add(s *Sample) {
	if s.Endpoint < 0 || s.Endpoint >= len(e.urls) {
		return
	}
	if s.Cancelled { // counted apart: neither completed nor failed
		e.cancelled[s.Endpoint]++
		return
	}
	e.groups.Add(s)
	if !s.OK {
		e.errs[s.Endpoint][s.ErrorClass]++
	}
}

var _ Sink = (*Endpoints)(nil)

// Grow makes room for n endpoints, keeping what was added: the ones it
// adds have no URL (records read back carry an endpoint's index, not its
// URL).
func (e *Endpoints) Grow(n int) {
	e.on = true
	for len(e.urls) < n {
		e.urls = append(e.urls, "")
		e.errs = append(e.errs, map[string]int64{})
		e.cancelled = append(e.cancelled, 0)
	}
}

// URLs returns the endpoints' URLs, in order.
func (e *Endpoints) URLs() []string { return e.urls }

// Merge adds o's figures to e (copies of one run): both must list the same
// endpoints.
func (e *Endpoints) Merge(o *Endpoints) error {
	if len(o.urls) != len(e.urls) {
		return fmt.Errorf("%d endpoints, not %d", len(o.urls), len(e.urls))
	}
	for i := range e.urls {
		if o.urls[i] != e.urls[i] {
			return fmt.Errorf("endpoint %d is %s, not %s", i, o.urls[i], e.urls[i])
		}
	}
	e.groups.Merge(o.groups)
	for i, n := range o.cancelled {
		e.cancelled[i] += n
	}
	for i, m := range o.errs {
		for k, v := range m {
			e.errs[i][k] += v
		}
	}
	return nil
}

// EndpointSummary is one endpoint's figures in the summary: its requests,
// failures by class, tokens, throughputs over the whole run (so the
// endpoints' add up to the run's), TTFT and end-to-end latency, and what
// its own /metrics said (with --server-metrics).
type EndpointSummary struct {
	Index int    `json:"index"`
	URL   string `json:"url"`
	// Requests is every request sent to the endpoint (completed, failed
	// and cancelled).
	Requests  int64 `json:"requests"`
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Cancelled: requests the client cut (--cancel-share), not failures
	// and not in the latencies; present only when some were.
	Cancelled          int64            `json:"cancelled,omitempty"`
	ErrorsByClass      map[string]int64 `json:"errors_by_class"`
	TotalInputTokens   int64            `json:"total_input_tokens"`
	TotalOutputTokens  int64            `json:"total_output_tokens"`
	CachedPromptTokens int64            `json:"cached_prompt_tokens"`
	RequestThroughput  float64          `json:"request_throughput"`
	OutputThroughput   float64          `json:"output_throughput"`
	MeanTTFT           float64          `json:"mean_ttft_ms"`
	MedianTTFT         float64          `json:"median_ttft_ms"`
	P99TTFT            float64          `json:"p99_ttft_ms"`
	MeanE2E            float64          `json:"mean_e2e_latency_ms"`
	MedianE2E          float64          `json:"median_e2e_latency_ms"`
	P99E2E             float64          `json:"p99_e2e_latency_ms"`
	// ServerMetrics is the endpoint's /metrics over the run (absent when
	// not scraped).
	ServerMetrics *ServerSummary `json:"server_metrics,omitempty"`
}

// Summary returns every endpoint's figures over a run of the given
// length, in order (an endpoint that got no request has zeros).
func (e *Endpoints) Summary(elapsed time.Duration) []EndpointSummary {
	gs := e.groups.Summary(elapsed)
	out := make([]EndpointSummary, len(e.urls))
	for i, u := range e.urls {
		g := gs[strconv.Itoa(i)]
		errs := e.errs[i]
		if errs == nil {
			errs = map[string]int64{}
		}
		out[i] = EndpointSummary{
			Index: i, URL: u, Requests: g.Completed + g.Failed + e.cancelled[i], Completed: g.Completed, Failed: g.Failed,
			Cancelled: e.cancelled[i], ErrorsByClass: errs,
			TotalInputTokens: g.TotalInputTokens, TotalOutputTokens: g.TotalOutputTokens, CachedPromptTokens: g.CachedPromptTokens,
			RequestThroughput: g.RequestThroughput, OutputThroughput: g.OutputThroughput,
			MeanTTFT: g.MeanTTFT, MedianTTFT: g.MedianTTFT, P99TTFT: g.P99TTFT,
			MeanE2E: g.MeanE2E, MedianE2E: g.MedianE2E, P99E2E: g.P99E2E,
		}
	}
	return out
}

// EndpointState is one endpoint of the breakdown in its mergeable form
// (merge_state.endpoints).
type EndpointState struct {
	URL    string           `json:"url"`
	Group  GroupState       `json:"group"`
	Errors map[string]int64 `json:"errors,omitempty"`
	// Cancelled counts the requests the client cut.
	Cancelled int64 `json:"cancelled,omitempty"`
}

// State returns the breakdown in its mergeable form, in order.
func (e *Endpoints) State() ([]EndpointState, error) {
	gs, err := e.groups.State()
	if err != nil {
		return nil, err
	}
	out := make([]EndpointState, len(e.urls))
	for i, u := range e.urls {
		g, ok := gs[strconv.Itoa(i)]
		if !ok {
			g = GroupState{Hists: map[string]HistState{}}
		}
		out[i] = EndpointState{URL: u, Group: g, Cancelled: e.cancelled[i]}
		if len(e.errs[i]) > 0 {
			out[i].Errors = e.errs[i]
		}
	}
	return out, nil
}

// EndpointsFromState rebuilds a breakdown from its state.
func EndpointsFromState(st []EndpointState) (*Endpoints, error) {
	urls := make([]string, len(st))
	gm := make(map[string]GroupState, len(st))
	for i, s := range st {
		urls[i] = s.URL
		gm[strconv.Itoa(i)] = s.Group
	}
	g, err := GroupsFromState(gm)
	if err != nil {
		return nil, err
	}
	e := NewEndpoints(urls)
	e.groups = g
	var errs []error
	for i, s := range st {
		if s.Cancelled < 0 {
			errs = append(errs, fmt.Errorf("endpoint %d: cancelled: %d is negative", i, s.Cancelled))
		}
		e.cancelled[i] = max(s.Cancelled, 0)
		for k, v := range s.Errors {
			if v < 0 {
				errs = append(errs, fmt.Errorf("endpoint %d: errors %s: %d is negative", i, k, v))
				continue
			}
			e.errs[i][k] = v
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e, nil
}

// Key implements Part.
func (e *Endpoints) Key() string { return KeyEndpoints }

// Finish implements Part: the summary's endpoints, without their server
// metrics (the run's, or a merge's, to add); a merge of copies only some of
// which had them warns instead.
func (e *Endpoints) Finish(s *Summary, elapsed time.Duration) {
	e.warnPartial(KeyEndpoints)
	if e.on && !e.missing {
		s.Endpoints = e.Summary(elapsed)
	}
}

// Save implements Part.
func (e *Endpoints) Save(st *MergeState) error {
	if !e.on || e.missing {
		return nil
	}
	var err error
	st.Endpoints, err = e.State()
	return err
}

// Load implements Part: the copies of one run list the same endpoints.
func (e *Endpoints) Load(c *Copy) error {
	if !e.loadCopy(c, c.State.Endpoints != nil) {
		return nil
	}
	o, err := EndpointsFromState(c.State.Endpoints)
	if err != nil {
		return fmt.Errorf("%s.endpoints: %w", KeyMergeState, err)
	}
	if !e.loaded {
		e.urls, e.groups, e.errs, e.cancelled = o.urls, o.groups, o.errs, o.cancelled
		e.on, e.loaded = true, true
		return nil
	}
	if err := e.Merge(o); err != nil {
		return fmt.Errorf("%s.endpoints: %w (copies of one run have the same --base-url list)", KeyMergeState, err)
	}
	return nil
}
