package metrics

import (
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
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
	// scrapes are the server's samples as taken (at most maxScrapes; past
	// that every other is dropped and only every stride-th is kept), for
	// plots that hold each until the next, as the summary's figures do.
	scrapes     []ServerScrape
	stride      int
	samplesSeen int64
}

// maxScrapes bounds the scrapes a Timeline keeps: a day of scrapes every
// 2 s keeps one every 64 s.
const maxScrapes = 2048

// ServerScrape is one scrape of the server's gauges at At seconds from
// the run's start; NaN marks a gauge the server did not report.
type ServerScrape struct {
	At float64
	ServerSample
}

type timelineBin struct {
	offered, completed, failed int64
	lag                        *hdrhistogram.Histogram // send lags in µs (nil: none)
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
	switch {
	case o.lag == nil:
	case b.lag == nil:
		b.lag = o.lag
	default:
		b.lag.Merge(o.lag)
	}
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

// Add places a request in the timeline.
func (t *Timeline) Add(s *Sample) {
	t.bin(s.Scheduled).offered++
	switch {
	case s.OK:
		t.bin(s.End).completed++
	case !s.Cancelled: // a cancelled request is neither
		t.bin(s.End).failed++
	}
	if s.HasLag {
		b := t.bin(s.Sent)
		if b.lag == nil {
			b.lag = newLagHist()
		}
		_ = b.lag.RecordValue(min(int64(s.Lag/time.Microsecond), histMaxMicros))
		b.lagMax = max(b.lagMax, s.Lag)
	}
	t.addInterval(s.Sent, s.End)
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

// AddServer places a scrape taken at offset at (scrapes come in time
// order).
func (t *Timeline) AddServer(at time.Duration, s ServerSample) {
	if t.stride == 0 {
		t.stride = 1
	}
	if n := t.samplesSeen; n%int64(t.stride) == 0 {
		if len(t.scrapes) == maxScrapes { // keep every other: twice the stride
			for i := range maxScrapes / 2 {
				t.scrapes[i] = t.scrapes[2*i]
			}
			t.scrapes = t.scrapes[:maxScrapes/2]
			t.stride *= 2
		}
		if n%int64(t.stride) == 0 {
			t.scrapes = append(t.scrapes, ServerScrape{At: at.Seconds(), ServerSample: s})
		}
	}
	t.samplesSeen++
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

// Scrapes returns the server's scrapes the timeline kept, in time order
// (all of them up to maxScrapes, then evenly thinned).
func (t *Timeline) Scrapes() []ServerScrape {
	return append([]ServerScrape(nil), t.scrapes...)
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
		if b.lag != nil {
			p.LagP50, p.LagP99 = lagQuantile(b.lag, 0.5), lagQuantile(b.lag, 0.99)
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

// lagSigFigs is the precision of a timeline bin's send lags: one
// significant digit (buckets 1/16 wide), 1 µs to a day, about 4 KiB per bin
// that holds a send (a plot needs no more, and bins are many).
const lagSigFigs = 1

func newLagHist() *hdrhistogram.Histogram { return hdrhistogram.New(0, histMaxMicros, lagSigFigs) }

// lagQuantile returns h's q-quantile in ms (h holds µs).
func lagQuantile(h *hdrhistogram.Histogram, q float64) float64 {
	return float64(h.ValueAtPercentile(q*100)) / 1e3
}
