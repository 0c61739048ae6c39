// Package arrival owns when requests are due: the Arrival type, the pure,
// seeded schedules every mode produces, and the Dispatcher that keeps them.
//
// A Schedule is an iterator of Arrivals with absolute offsets from the start
// of the run. Generating one never reads the clock, sleeps or starts a
// goroutine: the same inputs and seed give the same arrivals, byte for byte.
// Only the Dispatcher looks at the clock.
package arrival

import (
	"iter"
	"math"
	"math/rand/v2"
	"time"
)

// Arrival is one request of a schedule: when it is due and how big it is.
// Every schedule source (Poisson, trace replay, parametric) yields this type,
// so the dispatcher never knows where a schedule came from.
type Arrival struct {
	// Index is the arrival's position in the whole schedule (before any
	// sharding), starting at 0.
	Index int64
	// At is the offset from the start of the run at which the request is due.
	At time.Duration
	// InputTokens and OutputTokens are the target prompt and completion sizes.
	InputTokens  int
	OutputTokens int
	// Model is the model (or adapter) to address; "" means the run's default.
	Model string
	// Images is the number of input images sent with the prompt.
	Images int
	// PrefixBlocks are content ids of consecutive 512-token prompt blocks:
	// equal ids give identical blocks (Mooncake hash_ids), so a server's
	// prefix cache sees the reuse the trace recorded.
	PrefixBlocks []uint64
	// Burst identifies the arrival event this request belongs to; requests of
	// one micro-burst share it. Otherwise it equals Index.
	Burst int64
	// Endpoint is the index of the endpoint (of several --base-url) the
	// request goes to, when the schedule decides it (pkg/balance); -1 when
	// it is decided at send time. 0 with a single endpoint.
	Endpoint int
	// Gen, when set, describes an image-generation request (diffusion
	// traces); nil for text requests. The schedule CSV does not carry it.
	Gen *Generation
	// CancelAfter, when > 0, is how long after its first send the client
	// gives up on the request and closes it (--cancel-share,
	// --cancel-after); 0: not cancelled. The schedule CSV carries it as
	// cancel_after_s when cancellation is on.
	CancelAfter time.Duration
}

// Generation is what an image-generation request asks for: how many images
// (not the input images of Images), how many denoising steps, and the
// adapters applied on top of the model. Schedules share one Generation
// between iterations: do not modify it.
type Generation struct {
	// Images is the number of images to generate (OpenAI's n, ≥ 1).
	Images int
	// Steps is the number of inference steps (0: the server's default).
	Steps int
	// NegativeTokens is the length of the negative prompt (0: none).
	NegativeTokens int
	// LoRAs and ControlNets name the adapters the request uses.
	LoRAs, ControlNets []string
}

// Schedule is an iterator over arrivals in non-decreasing At order. A
// Schedule may be iterated more than once and yields the same arrivals
// each time.
type Schedule = iter.Seq[Arrival]

// Rand returns the deterministic random source for stream of a seeded
// schedule. Independent streams (arrival times, request sizes, …) keep one
// property of a schedule unchanged when another option changes.
func Rand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// Random-stream identifiers, so every package draws from its own stream.
const (
	StreamTimes   uint64 = 1
	StreamLengths uint64 = 2
	StreamModels  uint64 = 3
	StreamBursts  uint64 = 4
	StreamParams  uint64 = 5
)

// MaxSpan is the latest an arrival may be due: a schedule that runs longer
// (a tiny --request-rate or --time-scale, whose offsets overflowed) is an
// error before anything is sent (workload.Build).
const MaxSpan = 366 * 24 * time.Hour

// MaxRequests is the most arrivals one schedule may have (the whole run's,
// every shard's together): the schedule is walked once before the first
// send, at about 8 M arrivals a second, so its largest walk takes about two
// minutes.
const MaxRequests = 1_000_000_000

// Divide returns d/factor rounded to the nanosecond, saturating at the
// largest (or smallest) Duration instead of overflowing (a factor such as
// --time-scale 1e-300).
func Divide(d time.Duration, factor float64) time.Duration {
	v := math.Round(float64(d) / factor)
	switch {
	case v >= float64(math.MaxInt64):
		return math.MaxInt64
	case v <= float64(math.MinInt64):
		return math.MinInt64
	case math.IsNaN(v):
		return 0
	}
	return time.Duration(v)
}

// maxSeconds is the longest offset a time.Duration holds, in seconds.
const maxSeconds = float64(math.MaxInt64) / 1e9

// Seconds converts a non-negative offset in seconds to a Duration, rounding
// to the nanosecond and saturating instead of overflowing.
func Seconds(s float64) time.Duration {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	if s >= maxSeconds {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * 1e9))
}

// Limit returns the arrivals of s up to n arrivals (n ≤ 0: no count limit)
// and strictly before d (d ≤ 0: no time limit). It is how --num-prompts and
// --duration cut any schedule.
func Limit(s Schedule, n int64, d time.Duration) Schedule {
	return func(yield func(Arrival) bool) {
		var i int64
		for a := range s {
			if n > 0 && i >= n {
				return
			}
			if d > 0 && a.At >= d {
				return
			}
			if !yield(a) {
				return
			}
			i++
		}
	}
}

// Scale divides every offset of s by factor (factor > 1 is faster), as
// FineServe's --time-scale does. factor ≤ 0 or 1 returns s unchanged.
func Scale(s Schedule, factor float64) Schedule {
	if factor <= 0 || factor == 1 {
		return s
	}
	return func(yield func(Arrival) bool) {
		for a := range s {
			a.At = Divide(a.At, factor)
			if !yield(a) {
				return
			}
		}
	}
}

// Shard keeps the arrivals with Index % n == i; n ≤ 1 returns s unchanged.
// Every copy of a sharded run computes the same schedule and keeps its part,
// so the union of the shards is exactly the unsharded schedule.
func Shard(s Schedule, i, n int64) Schedule {
	if n <= 1 {
		return s
	}
	return func(yield func(Arrival) bool) {
		for a := range s {
			if a.Index%n == i && !yield(a) {
				return
			}
		}
	}
}

// Stats summarises a schedule without sending anything.
type Stats struct {
	Count  int64
	Last   time.Duration // offset of the last arrival
	Input  int64         // total target input tokens
	Output int64         // total target output tokens
	Images int64
}

// MeanRate is the schedule's average request rate over its span, in req/s.
func (s Stats) MeanRate() float64 {
	if s.Count < 2 || s.Last <= 0 {
		return math.Inf(1)
	}
	return float64(s.Count-1) / s.Last.Seconds()
}

// Summarize walks s once and returns its Stats.
func Summarize(s Schedule) Stats {
	var st Stats
	for a := range s {
		st.Count++
		st.Last = a.At
		st.Input += int64(a.InputTokens)
		st.Output += int64(a.OutputTokens)
		st.Images += int64(a.Images)
	}
	return st
}
