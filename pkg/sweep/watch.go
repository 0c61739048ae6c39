package sweep

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The statistics of a step that lasts as long as its evidence needs
// (docs/CAPACITY.md, "Steps that end when settled").
const (
	// Confidence is the level of the growth slope's interval over a whole
	// step; SettleConfidence that of each look while the step runs: the
	// test looks again and again, so each look must be stricter for the
	// step's error to stay small.
	Confidence       = 0.95
	SettleConfidence = 0.99
	// SettleBins is the fewest bins a look fits its slope on.
	SettleBins = 6
	// ShareDelta and ShareAlpha are the goodput test's indifference zone
	// (± around --min-goodput) and error rates (ShareTest).
	ShareDelta = 0.02
	ShareAlpha = 0.05
	// GrowthSlope is the growth of the wait (ms of wait per ms of step)
	// at which latencies grow without bound: a server offered a share g
	// more than it serves has its queue, and so its wait, grow by g/(1+g)
	// per unit of time, so 0.02 is about 2 % over its capacity.
	GrowthSlope = 0.02
	// GrowthBins is how many bins of completion time the step's minimum
	// length is cut into for the slope; a bin needs GrowthBinMin
	// completions to count.
	GrowthBins   = 8
	GrowthBinMin = 3
	// growthBinMin is the shortest bin.
	growthBinMin = 250 * time.Millisecond
	// maxBins bounds the bins a step keeps.
	maxBins = 1 << 14
)

// Ended says why a step ended.
const (
	EndedSettled  = "settled"
	EndedMax      = "max length"
	EndedSchedule = "schedule's end"
	EndedFixed    = "fixed length"
)

// watch follows one step's requests as they finish and stops the step
// once its verdict is settled (Config.StepMin and StepMax): the goodput
// share by a sequential test, the wait's growth by the slope of its bins
// over completion time and its interval.
type watch struct {
	c      *Config
	rate   float64 // the step's nominal rate (req/s; 0: not a rate sweep)
	min    time.Duration
	bin    time.Duration
	stop   func()
	mu     sync.Mutex
	share  *ShareTest
	sum    []float64 // per bin of completion time: the sum of the waits (ms)
	count  []int
	ends   []int // per bin: the requests completed in it
	seen   int
	last   time.Duration // the latest completion, from the run's start
	failed int
	done   int

	settled bool
	verdict Verdict
	why     string
}

func newWatch(c *Config, v float64, stop func()) *watch {
	w := &watch{c: c, min: c.StepMin, stop: stop, bin: max(c.StepMin/GrowthBins, growthBinMin)}
	if c.Variable == Rate {
		w.rate = v
	}
	if c.SLO.Set() {
		w.share = NewShareTest(c.MinGoodput, ShareDelta, ShareAlpha, Evidence(c.ArrivalCV))
	}
	return w
}

// Add implements metrics.Sink: it counts the sample and, past the
// minimum length, settles the step when the evidence is clear.
func (w *watch) Add(s *metrics.Sample) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.Cancelled {
		return
	}
	w.done++
	w.last = max(w.last, s.End)
	if !s.OK {
		w.failed++
		return
	}
	if s.End >= 0 {
		if i := int(s.End / w.bin); i < maxBins {
			for len(w.ends) <= i {
				w.ends = append(w.ends, 0)
			}
			w.ends[i]++
		}
	}
	if w.share != nil {
		w.share.Add(s.Good)
	}
	wait := s.TTFTFromScheduled
	if !s.HasTTFT {
		wait = s.E2EFromScheduled
	}
	i := int(s.End / w.bin)
	if i < maxBins {
		for len(w.sum) <= i {
			w.sum, w.count = append(w.sum, 0), append(w.count, 0)
		}
		w.sum[i] += float64(wait) / float64(time.Millisecond)
		w.count[i]++
	}
	w.seen++
	if w.settled || w.last < w.min || w.seen%8 != 0 {
		return
	}
	if v, why, ok := w.decide(); ok {
		w.settled, w.verdict, w.why = true, v, why
		w.stop()
	}
}

// behind reports whether the server completes fewer requests than the
// step's nominal rate beyond doubt (95 %, one-sided; the completions
// counted as Poisson, their variance times the schedule's squared CV) while it is saturated (the bins from the first
// whose mean wait is more than twice the lowest's plus 5 ms, to the last
// finished): the growth is
// the server's, not a burst of the schedule's first seconds denser than
// its rate, which a longer step would absorb. Not a rate sweep: true.
func (w *watch) behind() bool {
	if w.rate <= 0 {
		return true
	}
	lowest := math.Inf(1)
	last := int(w.last/w.bin) - 1 // the last finished bin
	for i := 1; i <= last && i < len(w.count); i++ {
		if w.count[i] >= GrowthBinMin {
			lowest = math.Min(lowest, w.sum[i]/float64(w.count[i]))
		}
	}
	from := -1
	for i := 1; i <= last && i < len(w.count); i++ {
		if w.count[i] >= GrowthBinMin && w.sum[i]/float64(w.count[i]) > 2*lowest+5 {
			from = i
			break
		}
	}
	if from < 0 || last-from+1 < 2 {
		return false
	}
	n := 0
	for i := from; i <= last && i < len(w.ends); i++ {
		n += w.ends[i]
	}
	span := float64(last-from+1) * w.bin.Seconds()
	// Completions of a bursty schedule spread c² times a Poisson count's
	// variance (Evidence).
	served, sd := float64(n)/span, math.Sqrt(float64(n)/Evidence(w.c.ArrivalCV))/span
	return served+1.64*sd < w.rate
}

// trend is the slope of the mean wait of the finished bins (whose end is
// past the latest completion) over their time, with its interval.
func (w *watch) trend(conf float64) (Slope, bool) {
	var x, y []float64
	for i := 1; i < len(w.count); i++ { // the first bin is the step's warm-up: its queue builds from empty
		if time.Duration(i+1)*w.bin > w.last {
			break
		}
		if w.count[i] >= GrowthBinMin {
			x = append(x, (float64(i)+0.5)*w.bin.Seconds()*1e3)
			y = append(y, w.sum[i]/float64(w.count[i]))
		}
	}
	return SlopeCI(x, y, conf)
}

// decide settles the step: it fails once the wait grows faster than
// GrowthSlope beyond doubt, or the goodput share is below the target
// beyond doubt; it passes once the growth is below GrowthSlope beyond
// doubt and (with an SLO) the share above the target.
func (w *watch) decide() (Verdict, string, bool) {
	if w.c.MaxErrorRate < 1 && w.done >= 20 && float64(w.failed) > math.Max(w.c.MaxErrorRate, 0.05)*float64(w.done) {
		return Fail, fmt.Sprintf("%d of %d requests failed", w.failed, w.done), true
	}
	tr, ok := w.trend(SettleConfidence)
	ok = ok && tr.N >= SettleBins
	if ok && tr.Lo > GrowthSlope && w.behind() {
		return Fail, fmt.Sprintf("latency growing: wait slope %.3f [%.3f, %.3f] > %g at %.0f %%", tr.Slope, tr.Lo, tr.Hi, GrowthSlope, 100*SettleConfidence), true
	}
	shareDecision := 1
	if w.share != nil {
		shareDecision = w.share.Decision()
		if shareDecision < 0 {
			return Fail, fmt.Sprintf("goodput %.1f %% below %.0f %% (sequential test, %d requests%s, error rates %.0f %%)",
				100*w.share.Share(), 100*w.c.MinGoodput, w.share.N, w.weighing(), 100*ShareAlpha), true
		}
	}
	if ok && tr.Hi < GrowthSlope && shareDecision > 0 {
		why := fmt.Sprintf("no growth: wait slope %.3f [%.3f, %.3f] < %g at %.0f %%", tr.Slope, tr.Lo, tr.Hi, GrowthSlope, 100*SettleConfidence)
		if w.share != nil {
			why += fmt.Sprintf(", goodput %.1f %% above %.0f %% (sequential test, %d requests%s)", 100*w.share.Share(), 100*w.c.MinGoodput, w.share.N, w.weighing())
		}
		return Pass, why, true
	}
	return "", "", false
}

// weighing says how much a request weighed in the goodput test when the
// schedule is burstier than Poisson: ", each 1/11.6 of one (CV 3.40)".
func (w *watch) weighing() string {
	if e := Evidence(w.c.ArrivalCV); e < 1 {
		return fmt.Sprintf(", each 1/%.3g of one (CV %.2f)", 1/e, w.c.ArrivalCV)
	}
	return ""
}

// outcome returns the settled verdict (settled false: not settled) and
// the step's growth trend over all of it.
func (w *watch) outcome() (settled bool, v Verdict, why string, tr *Slope) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.trend(Confidence); ok {
		tr = &t
	}
	return w.settled, w.verdict, w.why, tr
}

// watchKey carries a step's watch to Config.Run.
type watchKey struct{}

// Watching returns the sink and the channel a step's Run hands to the run
// (runner.IO's Observe and Stop) when the step ends once settled: ok is
// false for a step of fixed length.
func Watching(ctx context.Context) (sink metrics.Sink, stop <-chan struct{}, ok bool) {
	ws, ok := ctx.Value(watchKey{}).(*watchStop)
	if !ok {
		return nil, nil, false
	}
	return ws.w, ws.ch, true
}

type watchStop struct {
	w    *watch
	ch   chan struct{}
	once sync.Once
}
