package metrics

import (
	"fmt"
	"maps"
	"time"
)

// maxErrorSamples is how many failed requests' messages are kept.
const maxErrorSamples = 5

// ErrorSample is one failed request, kept for the report.
type ErrorSample struct {
	Index int64 `json:"index"`
	// RequestID is the X-Request-Id it was sent with (--request-id-prefix),
	// to find it in the server's logs.
	RequestID string `json:"request_id,omitempty"`
	Class     string `json:"class"`
	Message   string `json:"message"`
}

// Collector accumulates results: the summary's counters and latency
// distributions. It is used by one goroutine; its memory does not depend
// on the number of results. It is a Part (the first of NewParts): its
// state is merge_state.collector.
type Collector struct {
	TTFT, TPOT, ITL, E2E *Hist
	// Lag is send time minus scheduled time, for every request sent.
	Lag *Hist
	// TTFTSched and E2ESched are measured from the scheduled time, so a
	// client that falls behind cannot hide its delay in the figures.
	TTFTSched, E2ESched *Hist
	// TTFTPer1k is TTFT per thousand prompt tokens (text requests).
	TTFTPer1k *Hist

	// Counters are the counts; FirstSent and LastEnd the first send and
	// the last end, from the run's start.
	Counters
	FirstSent, LastEnd time.Duration
	seen               bool
	// OutputPerSecond counts the output tokens of completed requests by
	// the second of the run they arrived in (from its start; see
	// addOutputTimes): the summary's max_output_tokens_per_s is its
	// largest. It grows by one count a second of the run.
	OutputPerSecond []int64
}

// Tally and ImageTally are the counts a run and each of its groups
// (per_model, per_kind) share, declared once: Counters and GroupCounters
// embed both, and their states write them in place under these keys (two
// structs, so that each state keeps the key order it has always had).
type Tally struct {
	Completed    int64 `json:"completed"`
	Failed       int64 `json:"failed"`
	InputTokens  int64 `json:"input_tokens"`  // of completed requests, as FineServe
	OutputTokens int64 `json:"output_tokens"` // of completed requests
	CachedTokens int64 `json:"cached_tokens"` // prompt tokens served from the prefix cache
}

// ImageTally counts the images sent and those returned by
// image-generation requests.
type ImageTally struct {
	Images          int64 `json:"images"`
	GeneratedImages int64 `json:"generated_images"`
}

// add adds o's counts to n's.
func (n *Tally) add(o *Tally) {
	n.Completed += o.Completed
	n.Failed += o.Failed
	n.InputTokens += o.InputTokens
	n.OutputTokens += o.OutputTokens
	n.CachedTokens += o.CachedTokens
}

// add adds o's counts to n's.
func (n *ImageTally) add(o *ImageTally) {
	n.Images += o.Images
	n.GeneratedImages += o.GeneratedImages
}

// namedTallies adds both tallies' counts to m by their key.
func namedTallies(t *Tally, i *ImageTally, m map[string]int64) map[string]int64 {
	m["completed"], m["failed"], m["input_tokens"], m["output_tokens"] = t.Completed, t.Failed, t.InputTokens, t.OutputTokens
	m["cached_tokens"], m["images"], m["generated_images"] = t.CachedTokens, i.Images, i.GeneratedImages
	return m
}

// Counters are a run's counts, declared once: the Collector keeps them,
// and its state (merge_state.collector, CollectorState) writes them in
// place under these keys, in this order.
type Counters struct {
	Tally
	Retries int64 `json:"retries"`
	// Cancelled counts the requests the client cut (--cancel-share),
	// neither completed nor failed; CancelledFirstToken those of them that
	// had received a first token, CancelledOutputTokens the tokens they
	// had received (absent from the state when none).
	Cancelled             int64 `json:"cancelled,omitempty"`
	CancelledFirstToken   int64 `json:"cancelled_first_token,omitempty"`
	CancelledOutputTokens int64 `json:"cancelled_output_tokens,omitempty"`
	ImageTally
	// ErrorsByClass counts the failures by class; ErrorSamples are the
	// first failures' messages (at most maxErrorSamples).
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`
	ErrorSamples  []ErrorSample    `json:"error_samples,omitempty"`
	// Prompt sizing: |usage.prompt_tokens − target| over requests whose
	// server reported usage.
	PromptCounted int64 `json:"prompt_counted"`
	PromptErrSum  int64 `json:"prompt_err_sum"`
	PromptErrMax  int64 `json:"prompt_err_max"`
	PromptExact   int64 `json:"prompt_exact"`
	// OutputFrom counts the completed requests whose output tokens the
	// client counted, the server giving none (record.Request.OutputFrom).
	OutputFrom map[string]int64 `json:"output_from,omitempty"`
}

// add adds o's counts to n's (copies of one run, or windows).
func (n *Counters) add(o *Counters) {
	n.Tally.add(&o.Tally)
	n.ImageTally.add(&o.ImageTally)
	n.Cancelled += o.Cancelled
	n.CancelledFirstToken += o.CancelledFirstToken
	n.CancelledOutputTokens += o.CancelledOutputTokens
	n.Retries += o.Retries
	if n.ErrorsByClass == nil && len(o.ErrorsByClass) > 0 {
		n.ErrorsByClass = map[string]int64{}
	}
	for k, v := range o.ErrorsByClass {
		n.ErrorsByClass[k] += v
	}
	for _, s := range o.ErrorSamples {
		if len(n.ErrorSamples) < maxErrorSamples {
			n.ErrorSamples = append(n.ErrorSamples, s)
		}
	}
	for k, v := range o.OutputFrom {
		if n.OutputFrom == nil {
			n.OutputFrom = map[string]int64{}
		}
		n.OutputFrom[k] += v
	}
	n.PromptCounted += o.PromptCounted
	n.PromptErrSum += o.PromptErrSum
	n.PromptErrMax = max(n.PromptErrMax, o.PromptErrMax)
	n.PromptExact += o.PromptExact
}

// clone returns a copy of n that shares nothing with it (no empty map or
// slice: nil).
func (n *Counters) clone() Counters {
	c := *n
	c.ErrorsByClass, c.ErrorSamples = nil, append([]ErrorSample(nil), n.ErrorSamples...)
	c.OutputFrom = nil
	if len(n.OutputFrom) > 0 {
		c.OutputFrom = maps.Clone(n.OutputFrom)
	}
	if len(n.ErrorsByClass) > 0 {
		c.ErrorsByClass = make(map[string]int64, len(n.ErrorsByClass))
		for k, v := range n.ErrorsByClass {
			c.ErrorsByClass[k] = v
		}
	}
	return c
}

// named returns the counts by their key (ErrorsByClass apart).
func (n *Counters) named() map[string]int64 {
	return namedTallies(&n.Tally, &n.ImageTally, map[string]int64{
		"retries": n.Retries, "prompt_counted": n.PromptCounted, "prompt_err_sum": n.PromptErrSum, "prompt_err_max": n.PromptErrMax, "prompt_exact": n.PromptExact,
		"cancelled": n.Cancelled, "cancelled_first_token": n.CancelledFirstToken, "cancelled_output_tokens": n.CancelledOutputTokens,
	})
}

// maxOutputSeconds bounds OutputPerSecond: a token later than this many
// seconds into the run counts in the last second kept (a year).
const maxOutputSeconds = 366 * 24 * 3600

// addOutputTimes counts a completed request's output tokens by the second
// each arrived in: one at each chunk carrying text, those beyond the
// chunks at the last chunk (or at the end, for an answer without chunks:
// a non-streamed one), so the seconds' counts add up to the run's output
// tokens.
func (c *Collector) addOutputTimes(s *Sample) {
	n := int64(s.OutputTokens)
	if n <= 0 {
		return
	}
	put := func(at time.Duration, k int64) {
		i := int(min(max(at, 0)/time.Second, maxOutputSeconds))
		if i >= len(c.OutputPerSecond) {
			c.OutputPerSecond = append(c.OutputPerSecond, make([]int64, i+1-len(c.OutputPerSecond))...)
		}
		c.OutputPerSecond[i] += k
	}
	last := s.End
	for _, t := range s.TokenTimes {
		if n == 1 {
			break
		}
		put(t, 1)
		n--
	}
	if k := len(s.TokenTimes); k > 0 {
		last = s.TokenTimes[k-1]
	}
	put(last, n)
}

// MaxOutputPerSecond is the most output tokens counted in one second.
func (c *Collector) MaxOutputPerSecond() int64 {
	var m int64
	for _, v := range c.OutputPerSecond {
		m = max(m, v)
	}
	return m
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{
		TTFT: NewHist(), TPOT: NewHist(), ITL: NewHist(), E2E: NewHist(),
		Lag: NewHist(), TTFTSched: NewHist(), E2ESched: NewHist(), TTFTPer1k: NewHist(),
		Counters: Counters{ErrorsByClass: map[string]int64{}},
	}
}

// hists names the Collector's distributions, as its mergeable state
// (snapshot.go) keys them.
func (c *Collector) hists() []namedHist {
	return []namedHist{
		{"ttft", &c.TTFT}, {"tpot", &c.TPOT}, {"itl", &c.ITL}, {"e2e", &c.E2E},
		{"send_lag", &c.Lag}, {"ttft_from_scheduled", &c.TTFTSched}, {"e2e_from_scheduled", &c.E2ESched},
		{"ttft_per_1k_prompt_tokens", &c.TTFTPer1k},
	}
}

// Add records one request's figures.
func (c *Collector) Add(s *Sample) {
	if !c.seen || s.Sent < c.FirstSent {
		c.FirstSent = s.Sent
	}
	c.seen = true
	c.LastEnd = max(c.LastEnd, s.End)
	c.Retries += int64(s.Retries)
	if s.HasLag {
		c.Lag.Record(s.Lag)
	}
	if s.Cancelled {
		c.Cancelled++
		c.CancelledOutputTokens += int64(s.OutputTokens)
		if s.FirstToken > 0 {
			c.CancelledFirstToken++
		}
		return
	}
	if !s.OK {
		c.Failed++
		c.ErrorsByClass[s.ErrorClass]++
		if len(c.ErrorSamples) < maxErrorSamples {
			c.ErrorSamples = append(c.ErrorSamples, ErrorSample{Index: s.Index, RequestID: s.RequestID, Class: s.ErrorClass, Message: s.Error})
		}
		return
	}
	c.Completed++
	c.InputTokens += int64(s.InputLen)
	c.OutputTokens += int64(s.OutputTokens)
	if s.OutputFrom != "" {
		if c.OutputFrom == nil {
			c.OutputFrom = map[string]int64{}
		}
		c.OutputFrom[s.OutputFrom]++
	}
	c.addOutputTimes(s)
	c.Images += int64(s.Images)
	if s.Generation {
		c.GeneratedImages += int64(s.Generated)
	}
	if s.CachedTokens > 0 {
		c.CachedTokens += int64(s.CachedTokens)
	}
	if s.HasPromptError {
		c.PromptCounted++
		c.PromptErrSum += s.PromptError
		c.PromptErrMax = max(c.PromptErrMax, s.PromptError)
		if s.PromptError == 0 {
			c.PromptExact++
		}
	}
	latencyHists{TTFT: c.TTFT, TPOT: c.TPOT, ITL: c.ITL, E2E: c.E2E,
		TTFTSched: c.TTFTSched, E2ESched: c.E2ESched, TTFTPer1k: c.TTFTPer1k}.add(s)
}

// latencyHists are the histograms of a request's latencies that the
// summary, each window and each breakdown group keep; a nil one is not
// kept.
type latencyHists struct {
	TTFT, TPOT, ITL, E2E           *Hist
	TTFTSched, E2ESched, TTFTPer1k *Hist
}

// add records the latencies s marks as counting (HasE2E, HasTTFT,
// HasTTFTPer1k, HasTPOT; its inter-token gaps) in the histograms kept.
func (l latencyHists) add(s *Sample) {
	record := func(h *Hist, ok bool, d time.Duration) {
		if ok && h != nil {
			h.Record(d)
		}
	}
	record(l.E2E, s.HasE2E, s.E2E)
	record(l.E2ESched, s.HasE2E, s.E2EFromScheduled)
	record(l.TTFT, s.HasTTFT, s.TTFT)
	record(l.TTFTSched, s.HasTTFT, s.TTFTFromScheduled)
	record(l.TTFTPer1k, s.HasTTFTPer1k, s.TTFTPer1kPrompt)
	record(l.TPOT, s.HasTPOT, s.TPOT)
	if l.ITL == nil {
		return
	}
	for i := 1; i < len(s.ITLTimes); i++ {
		l.ITL.Record(s.ITLTimes[i] - s.ITLTimes[i-1])
	}
}

// Merge adds o's results to c (shards of one run, or windows).
func (c *Collector) Merge(o *Collector) {
	ch, oh := c.hists(), o.hists()
	for i := range ch {
		(*ch[i].h).Merge(*oh[i].h)
	}
	c.Counters.add(&o.Counters)
	if n := len(o.OutputPerSecond); n > len(c.OutputPerSecond) {
		c.OutputPerSecond = append(c.OutputPerSecond, make([]int64, n-len(c.OutputPerSecond))...)
	}
	for i, v := range o.OutputPerSecond {
		c.OutputPerSecond[i] += v
	}
	if o.seen {
		if !c.seen || o.FirstSent < c.FirstSent {
			c.FirstSent = o.FirstSent
		}
		c.seen = true
		c.LastEnd = max(c.LastEnd, o.LastEnd)
	}
}

// KeyCollectorPart names the Collector part (its state is
// merge_state.collector).
const KeyCollectorPart = "collector"

var _ Part = (*Collector)(nil)

// Key implements Part.
func (c *Collector) Key() string { return KeyCollectorPart }

// Finish implements Part: Summarize, and the latency distributions
// sampled for plots (latency_cdfs).
func (c *Collector) Finish(s *Summary, elapsed time.Duration) {
	c.Summarize(s, elapsed)
	if s.LatencyCDFs == nil {
		s.LatencyCDFs = map[string][][2]float64{}
	}
	maps.Copy(s.LatencyCDFs, c.CDFs()) // beside those of other parts (ttfo)
}

// Save implements Part.
func (c *Collector) Save(st *MergeState) error {
	var err error
	st.Collector, err = c.State()
	return err
}

// Load implements Part: the copy's times are shifted by its offset from
// the merged run's start.
func (c *Collector) Load(cp *Copy) error {
	o, err := CollectorFromState(cp.State.Collector)
	if err != nil {
		return fmt.Errorf("%s.collector: %w", KeyMergeState, err)
	}
	o.Shift(cp.Offset)
	c.Merge(o)
	return nil
}
