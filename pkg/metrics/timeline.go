package metrics

import (
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
)

// Timeline is a run's time series for plots: a bounded number of bins of
// equal width. When a time beyond the last bin arrives, the width doubles and
// neighbouring bins merge, so memory stays bounded however long the run is
// and results may come in any order. Requests are placed by their own times:
// offered by scheduled time, finished by end time, send lag by send time;
// in flight is the exact time-weighted mean of the requests' [sent, end]
// intervals. It is used by one goroutine.
type Timeline struct {
	width   time.Duration
	maxBins int
	bins    []timelineBin
}

type timelineBin struct {
	offered, completed, failed int64
	lag                        logHist
	lagMax                     time.Duration
	inFlight                   float64 // request-seconds
	server                     serverBin
}

type serverBin struct {
	samples, idle                 int64
	running, waiting, kv          float64 // sums over samples
	hasRunning, hasWaiting, hasKV int64   // samples that carried each gauge
}

// NewTimeline returns an empty timeline whose bins start at width and
// whose number stays at most maxBins (at least 2).
func NewTimeline(width time.Duration, maxBins int) *Timeline {
	return &Timeline{width: max(width, time.Millisecond), maxBins: max(maxBins, 2)}
}

// Width is the current bin width.
func (t *Timeline) Width() time.Duration { return t.width }

// bin returns the bin holding offset d (negative offsets go to the first).
func (t *Timeline) bin(d time.Duration) *timelineBin {
	if d < 0 {
		d = 0
	}
	i := int(d / t.width)
	for i >= t.maxBins {
		t.coarsen()
		i = int(d / t.width)
	}
	for len(t.bins) <= i {
		t.bins = append(t.bins, timelineBin{})
	}
	return &t.bins[i]
}

// Reduce doubles the bin width until at most n bins (at least 2) are in use.
func (t *Timeline) Reduce(n int) {
	for len(t.bins) > max(n, 2) {
		t.coarsen()
	}
}

// coarsen doubles the width, merging bins pairwise.
func (t *Timeline) coarsen() {
	n := (len(t.bins) + 1) / 2
	for i := 0; i < n; i++ {
		b := t.bins[2*i]
		if 2*i+1 < len(t.bins) {
			b.merge(&t.bins[2*i+1])
		}
		t.bins[i] = b
	}
	clear(t.bins[n:])
	t.bins = t.bins[:n]
	t.width *= 2
}

func (b *timelineBin) merge(o *timelineBin) {
	b.offered += o.offered
	b.completed += o.completed
	b.failed += o.failed
	b.lag.merge(&o.lag)
	b.lagMax = max(b.lagMax, o.lagMax)
	b.inFlight += o.inFlight
	s, os := &b.server, &o.server
	s.samples += os.samples
	s.idle += os.idle
	s.running += os.running
	s.waiting += os.waiting
	s.kv += os.kv
	s.hasRunning += os.hasRunning
	s.hasWaiting += os.hasWaiting
	s.hasKV += os.hasKV
}

// Add places r in the timeline.
func (t *Timeline) Add(r *client.Result) {
	t.bin(r.Scheduled).offered++
	if r.OK() {
		t.bin(r.End).completed++
	} else {
		t.bin(r.End).failed++
	}
	if r.Sent > 0 || r.OK() {
		b := t.bin(r.Sent)
		lag := max(r.Lag(), 0)
		b.lag.record(lag)
		b.lagMax = max(b.lagMax, lag)
	}
	t.addInterval(r.Sent, r.End)
}

// addInterval adds the time a request spent in flight to the bins it
// overlaps.
func (t *Timeline) addInterval(from, to time.Duration) {
	from = max(from, 0)
	if to <= from {
		return
	}
	t.bin(to) // make sure the width covers the whole interval first
	for i := int(from / t.width); ; i++ {
		lo, hi := time.Duration(i)*t.width, time.Duration(i+1)*t.width
		seg := min(hi, to) - max(lo, from)
		if seg > 0 {
			t.bin(lo).inFlight += seg.Seconds()
		}
		if hi >= to {
			return
		}
	}
}

// ServerSample is one scrape of a server's gauges; NaN marks a gauge the
// server did not report.
type ServerSample struct {
	Running, Waiting, KVCache float64
}

// AddServer places a scrape taken at offset at.
func (t *Timeline) AddServer(at time.Duration, s ServerSample) {
	b := &t.bin(at).server
	b.samples++
	if !math.IsNaN(s.Running) {
		b.hasRunning++
		b.running += s.Running
		if s.Running == 0 {
			b.idle++
		}
	}
	if !math.IsNaN(s.Waiting) {
		b.hasWaiting++
		b.waiting += s.Waiting
	}
	if !math.IsNaN(s.KVCache) {
		b.hasKV++
		b.kv += s.KVCache
	}
}

// SeriesPoint is one point of a time series for plots. Rates are per
// second, latencies in milliseconds; NaN marks a figure with no data.
type SeriesPoint struct {
	Start, End                   float64 // seconds from the start of the run
	OfferedRate, AchievedRate    float64
	FailedRate                   float64
	LagP50, LagP99, LagMax       float64
	InFlight                     float64
	ServerRunning, ServerWaiting float64
	KVCache                      float64
	ServerIdle                   float64 // share of samples with nothing running
}

// Points returns the timeline's bins as series points, up to the last bin
// that holds anything.
func (t *Timeline) Points() []SeriesPoint {
	out := make([]SeriesPoint, 0, len(t.bins))
	w := t.width.Seconds()
	for i := range t.bins {
		b := &t.bins[i]
		p := SeriesPoint{
			Start: float64(i) * w, End: float64(i+1) * w,
			OfferedRate: float64(b.offered) / w, AchievedRate: float64(b.completed) / w, FailedRate: float64(b.failed) / w,
			LagP50: math.NaN(), LagP99: math.NaN(), LagMax: math.NaN(),
			InFlight:      b.inFlight / w,
			ServerRunning: math.NaN(), ServerWaiting: math.NaN(), KVCache: math.NaN(), ServerIdle: math.NaN(),
		}
		if b.lag.n > 0 {
			p.LagP50, p.LagP99 = b.lag.quantile(0.5), b.lag.quantile(0.99)
			p.LagMax = float64(b.lagMax) / 1e6
			p.LagP50, p.LagP99 = min(p.LagP50, p.LagMax), min(p.LagP99, p.LagMax)
		}
		s := &b.server
		if s.hasRunning > 0 {
			p.ServerRunning = s.running / float64(s.hasRunning)
			p.ServerIdle = float64(s.idle) / float64(s.hasRunning)
		}
		if s.hasWaiting > 0 {
			p.ServerWaiting = s.waiting / float64(s.hasWaiting)
		}
		if s.hasKV > 0 {
			p.KVCache = s.kv / float64(s.hasKV)
		}
		out = append(out, p)
	}
	return out
}

// logHist is a small latency histogram with buckets 10 % wide (quantiles
// within 5 %), 1 µs to a day, for timeline bins.
type logHist struct {
	n      int64
	counts [logHistBuckets]uint32
}

const logHistBuckets = 272

var logHistStep = math.Log(1.1)

func logHistIndex(d time.Duration) int {
	us := float64(d) / 1e3
	if us < 1 {
		return 0
	}
	return min(1+int(math.Log(us)/logHistStep), logHistBuckets-1)
}

func (h *logHist) record(d time.Duration) {
	h.counts[logHistIndex(d)]++
	h.n++
}

func (h *logHist) merge(o *logHist) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the q-quantile in ms: the geometric middle of its bucket.
func (h *logHist) quantile(q float64) float64 {
	if h.n == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			if i == 0 {
				return 0.0005
			}
			lo := math.Exp(float64(i-1) * logHistStep)
			return lo * math.Sqrt(1.1) / 1e3
		}
	}
	return math.NaN()
}
