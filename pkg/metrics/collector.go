package metrics

import (
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

// maxErrorSamples is how many failed requests' messages are kept.
const maxErrorSamples = 5

// ErrorSample is one failed request, kept for the report.
type ErrorSample struct {
	Index   int64  `json:"index"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

// Collector accumulates results. It is used by one goroutine; its memory
// does not depend on the number of results.
type Collector struct {
	TTFT, TPOT, ITL, E2E *Hist
	// Lag is send time minus scheduled time, for every request sent.
	Lag *Hist
	// TTFTSched and E2ESched are measured from the scheduled time, so a
	// client that falls behind cannot hide its delay in the figures.
	TTFTSched, E2ESched *Hist

	Completed, Failed         int64
	InputTokens, OutputTokens int64 // of completed requests, as FineServe
	CachedTokens              int64 // prompt tokens served from the prefix cache
	Retries                   int64
	Images                    int64
	GeneratedImages           int64 // images returned by image-generation requests
	ErrorsByClass             map[string]int64
	ErrorSamples              []ErrorSample

	// Prompt sizing: |usage.prompt_tokens − target| over requests whose
	// server reported usage.
	PromptCounted      int64
	PromptErrSum       int64
	PromptErrMax       int64
	PromptExact        int64
	FirstSent, LastEnd time.Duration
	seen               bool
}

// NewCollector returns an empty Collector.
func NewCollector() *Collector {
	return &Collector{
		TTFT: NewHist(), TPOT: NewHist(), ITL: NewHist(), E2E: NewHist(),
		Lag: NewHist(), TTFTSched: NewHist(), E2ESched: NewHist(),
		ErrorsByClass: map[string]int64{},
	}
}

// Add records one result. It does not keep r.
func (c *Collector) Add(r *client.Result) {
	if !c.seen || r.Sent < c.FirstSent {
		c.FirstSent = r.Sent
	}
	c.seen = true
	c.LastEnd = max(c.LastEnd, r.End)
	c.Retries += int64(r.Retries)
	if r.Sent > 0 || r.OK() {
		c.Lag.Record(r.Lag())
	}
	if !r.OK() {
		c.Failed++
		c.ErrorsByClass[r.ErrorClass]++
		if len(c.ErrorSamples) < maxErrorSamples {
			c.ErrorSamples = append(c.ErrorSamples, ErrorSample{Index: r.Index, Class: r.ErrorClass, Message: r.Error})
		}
		return
	}
	c.Completed++
	c.InputTokens += int64(r.InputLen)
	out := r.OutputTokens()
	c.OutputTokens += int64(out)
	c.Images += int64(r.Images)
	if r.CachedTokens > 0 {
		c.CachedTokens += int64(r.CachedTokens)
	}
	if r.PromptTokens >= 0 {
		e := int64(r.PromptTokens - r.InputLen)
		if e < 0 {
			e = -e
		}
		c.PromptCounted++
		c.PromptErrSum += e
		c.PromptErrMax = max(c.PromptErrMax, e)
		if e == 0 {
			c.PromptExact++
		}
	}
	ttft := r.TTFT()
	e2e := r.E2E()
	if r.Generate > 0 { // an image generation: no tokens, end to end only
		c.GeneratedImages += int64(r.Generated)
		c.E2E.Record(e2e)
		c.E2ESched.Record(r.End - r.Scheduled)
		return
	}
	c.TTFT.Record(ttft)
	c.E2E.Record(e2e)
	c.TTFTSched.Record(r.FirstToken - r.Scheduled)
	c.E2ESched.Record(r.End - r.Scheduled)
	if out > 1 {
		c.TPOT.Record((e2e - ttft) / time.Duration(out-1))
	}
	for i := 1; i < len(r.TokenTimes); i++ {
		c.ITL.Record(r.TokenTimes[i] - r.TokenTimes[i-1])
	}
}

// Merge adds o's results to c (shards of one run, or windows).
func (c *Collector) Merge(o *Collector) {
	for _, p := range [][2]*Hist{{c.TTFT, o.TTFT}, {c.TPOT, o.TPOT}, {c.ITL, o.ITL}, {c.E2E, o.E2E}, {c.Lag, o.Lag}, {c.TTFTSched, o.TTFTSched}, {c.E2ESched, o.E2ESched}} {
		p[0].Merge(p[1])
	}
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.InputTokens += o.InputTokens
	c.OutputTokens += o.OutputTokens
	c.CachedTokens += o.CachedTokens
	c.Retries += o.Retries
	c.Images += o.Images
	c.GeneratedImages += o.GeneratedImages
	for k, v := range o.ErrorsByClass {
		c.ErrorsByClass[k] += v
	}
	for _, s := range o.ErrorSamples {
		if len(c.ErrorSamples) < maxErrorSamples {
			c.ErrorSamples = append(c.ErrorSamples, s)
		}
	}
	c.PromptCounted += o.PromptCounted
	c.PromptErrSum += o.PromptErrSum
	c.PromptErrMax = max(c.PromptErrMax, o.PromptErrMax)
	c.PromptExact += o.PromptExact
	if o.seen {
		if !c.seen || o.FirstSent < c.FirstSent {
			c.FirstSent = o.FirstSent
		}
		c.seen = true
		c.LastEnd = max(c.LastEnd, o.LastEnd)
	}
}
