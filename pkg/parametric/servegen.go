package parametric

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// ServeGen clients (alibaba/ServeGen's per-client statistics) as a
// parametric source. A client is a trace of windows — start (s), rate
// (req/s), the measured CV of its gaps, an arrival pattern (Gamma or
// Weibull) with its shape and scale, or nothing for an idle window — and a
// dataset of length distributions (input and output tokens) by time.
//
// Inside a window of W seconds at rate r, as ServeGen's generator does,
// n = ⌈r·W⌉ gaps are drawn from the pattern with its shape (the scale drops
// out), scaled so that they add up to W, and the window's arrivals are at
// their partial sums before W: n − 1 arrivals, the last gap closing the
// window. So the gaps keep the pattern's CV and the window its rate. Each
// arrival's lengths are drawn from the client's dataset window in force
// (the latest one at or before the window's start, with both
// distributions; else the first one).

// ServeGenWindow is one window of a client.
type ServeGenWindow struct {
	Start, Size float64 // seconds
	Rate, CV    float64
	// Pattern is "Gamma" or "Weibull"; "" for an idle window.
	Pattern      string
	Shape, Scale float64
}

// ServeGenLengths is a client's length distributions from Start on: the
// CDFs of input and output tokens (index = tokens).
type ServeGenLengths struct {
	Start   float64
	In, Out []float64
}

// ServeGenClient is one client's statistics.
type ServeGenClient struct {
	Name    string
	Windows []ServeGenWindow
	Lengths []ServeGenLengths
}

// ServeGenWindowSeconds is the length of a client's last window (ServeGen's
// windows are 600 s; the others end where the next begins).
const ServeGenWindowSeconds = 600

// maxWindowArrivals bounds one client window's arrivals (rate × size).
const maxWindowArrivals = 50_000_000

// ReadServeGenClient reads a client's trace CSV (no header: window start,
// rate, cv, pattern, shape, scale) and dataset JSON ({window start:
// {input_tokens, output_tokens[, reason_ratio]: a Python dict string of the
// PDF}}). Every problem names the file and line or key.
func ReadServeGenClient(name string, trace io.Reader, traceName string, dataset io.Reader, datasetName string) (*ServeGenClient, error) {
	c := &ServeGenClient{Name: name}
	sc := bufio.NewScanner(trace)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != 6 {
			return nil, fmt.Errorf("%s: line %d: %d fields, want 6 (window start, rate, cv, pattern, shape, scale)", traceName, line, len(f))
		}
		w := ServeGenWindow{Pattern: strings.TrimSpace(f[3])}
		nums := []*float64{&w.Start, &w.Rate, &w.CV, nil, &w.Shape, &w.Scale}
		names := []string{"window start", "rate", "cv", "", "shape", "scale"}
		for i, p := range nums {
			if p == nil {
				continue
			}
			s := strings.TrimSpace(f[i])
			if s == "" && w.Pattern == "" {
				continue
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("%s: line %d: %s %q: want a number ≥ 0", traceName, line, names[i], s)
			}
			*p = v
		}
		switch w.Pattern {
		case "":
			w.Rate = 0
		case "Gamma", "Weibull":
			if !(w.Shape > 0) {
				return nil, fmt.Errorf("%s: line %d: shape %g: want > 0", traceName, line, w.Shape)
			}
		default:
			return nil, fmt.Errorf("%s: line %d: pattern %q: want Gamma, Weibull or empty (idle)", traceName, line, w.Pattern)
		}
		if n := len(c.Windows); n > 0 && w.Start <= c.Windows[n-1].Start {
			return nil, fmt.Errorf("%s: line %d: window start %g not after the previous %g", traceName, line, w.Start, c.Windows[n-1].Start)
		}
		c.Windows = append(c.Windows, w)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", traceName, err)
	}
	if len(c.Windows) == 0 {
		return nil, fmt.Errorf("%s: no windows", traceName)
	}
	for i := range c.Windows {
		if i+1 < len(c.Windows) {
			c.Windows[i].Size = c.Windows[i+1].Start - c.Windows[i].Start
		} else {
			c.Windows[i].Size = ServeGenWindowSeconds
		}
		if w := c.Windows[i]; w.Rate*w.Size > maxWindowArrivals {
			return nil, fmt.Errorf("%s: window at %g s: rate %g over %g s is more than %d arrivals", traceName, w.Start, w.Rate, w.Size, maxWindowArrivals)
		}
	}
	var raw map[string]map[string]string
	if err := json.NewDecoder(dataset).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", datasetName, err)
	}
	for key, fields := range raw {
		start, err := strconv.ParseFloat(key, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: key %q: not a window start", datasetName, key)
		}
		l := ServeGenLengths{Start: start}
		for _, f := range []struct {
			name string
			dst  *[]float64
		}{{"input_tokens", &l.In}, {"output_tokens", &l.Out}} {
			s, ok := fields[f.name]
			if !ok {
				return nil, fmt.Errorf("%s: %s: no %s", datasetName, key, f.name)
			}
			cdf, err := parsePDF(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %s: %w", datasetName, key, f.name, err)
			}
			*f.dst = cdf
		}
		if l.In == nil || l.Out == nil {
			continue // an empty distribution: ServeGen skips the window
		}
		c.Lengths = append(c.Lengths, l)
	}
	if len(c.Lengths) == 0 {
		return nil, fmt.Errorf("%s: no window with both length distributions", datasetName)
	}
	sort.Slice(c.Lengths, func(i, j int) bool { return c.Lengths[i].Start < c.Lengths[j].Start })
	return c, nil
}

// parsePDF parses a Python dict string of a length PDF ({144: 0.0001, …})
// into its CDF indexed by tokens (nil for {}); the probabilities are
// normalized.
func parsePDF(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, errors.New("not a {value: probability, …} dict")
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if body == "" {
		return nil, nil
	}
	pdf := map[int]float64{}
	top := 0
	for _, item := range strings.Split(body, ",") {
		k, v, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("item %q: want value: probability", strings.TrimSpace(item))
		}
		n, err1 := strconv.Atoi(strings.TrimSpace(k))
		p, err2 := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err1 != nil || err2 != nil || n < 0 || n > 1<<24 || p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("item %q: want a token count ≥ 0 and a probability ≥ 0", strings.TrimSpace(item))
		}
		pdf[n] += p
		top = max(top, n)
	}
	cdf := make([]float64, top+1)
	sum := 0.0
	for i := range cdf {
		sum += pdf[i]
		cdf[i] = sum
	}
	if !(sum > 0) {
		return nil, errors.New("probabilities add up to 0")
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf, nil
}

// draw returns the smallest index whose CDF reaches u (ServeGen's
// searchsorted), at least 1 token.
func draw(cdf []float64, u float64) int {
	return max(sort.SearchFloat64s(cdf, u), 1)
}

// lengthsAt returns the length window in force at t.
func (c *ServeGenClient) lengthsAt(t float64) *ServeGenLengths {
	i := sort.Search(len(c.Lengths), func(i int) bool { return c.Lengths[i].Start > t })
	if i == 0 {
		return &c.Lengths[0]
	}
	return &c.Lengths[i-1]
}

// Span is the end of the client's last window.
func (c *ServeGenClient) Span() float64 {
	w := c.Windows[len(c.Windows)-1]
	return w.Start + w.Size
}

// MeanRate is the client's mean rate over its windows (idle ones count).
func (c *ServeGenClient) MeanRate() float64 {
	var n float64
	for _, w := range c.Windows {
		n += w.Rate * w.Size
	}
	return n / (c.Span() - c.Windows[0].Start)
}

// ChooseServeGenClients returns k of clients (all for k ≤ 0) chosen with
// the seed, in name order.
func ChooseServeGenClients(clients []*ServeGenClient, k int, seed uint64) ([]*ServeGenClient, error) {
	all := slices.Clone(clients)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	if k <= 0 || k == len(all) {
		return all, nil
	}
	if k > len(all) {
		return nil, fmt.Errorf("--num-clients %d: only %d clients", k, len(all))
	}
	r := arrival.Rand(seed, arrival.StreamParams)
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	all = all[:k]
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, nil
}

// ServeGenConfig describes a schedule of composed ServeGen clients.
type ServeGenConfig struct {
	Clients []*ServeGenClient
	// SkipIdle leaves out the windows in which no client is active (the
	// schedule always starts at the first active one).
	SkipIdle bool
	// Count caps the requests and Duration their span (after TimeScale);
	// with neither, one pass over the windows. Past the last window the
	// windows repeat (fresh draws).
	Count     int64
	Duration  time.Duration
	TimeScale float64
	Seed      uint64
	// Lengths, when set, replaces the datasets' lengths.
	Lengths arrival.Lengths
	// MaxTokens, when > 0, bounds a dataset draw's input + output: a
	// larger draw is clamped (the input to MaxTokens − 1, the output to
	// what is left).
	MaxTokens int
	Model     string
}

// Validate returns every problem of c.
func (c ServeGenConfig) Validate() error {
	var errs []error
	if len(c.Clients) == 0 {
		errs = append(errs, errors.New("no ServeGen clients"))
	}
	active := false
	for _, cl := range c.Clients {
		for _, w := range cl.Windows {
			active = active || (w.Pattern != "" && w.Rate*w.Size >= 2)
		}
	}
	if len(c.Clients) > 0 && !active {
		errs = append(errs, errors.New("no client has a window with two arrivals or more"))
	}
	if c.TimeScale != 0 && (!(c.TimeScale > 0) || math.IsInf(c.TimeScale, 0)) {
		errs = append(errs, fmt.Errorf("time scale %g: want a finite number > 0", c.TimeScale))
	}
	if c.Count < 0 || c.Duration < 0 {
		errs = append(errs, errors.New("count and duration must be ≥ 0"))
	}
	return errors.Join(errs...)
}

// sgSlot is one window start of the composed schedule and the windows of
// the clients that have one there.
type sgSlot struct {
	start, size float64
	windows     []*ServeGenWindow
	clients     []int // the client of each window
	index       []int // each window's index among its client's
}

// slots lays out the composed windows: every distinct window start of the
// clients, from the first active one, idle ones left out with SkipIdle;
// offset is each slot's start in the schedule.
func (c ServeGenConfig) slots() (slots []sgSlot, offsets []float64, pass float64) {
	byStart := map[float64]*sgSlot{}
	for ci, cl := range c.Clients {
		for wi := range cl.Windows {
			w := &cl.Windows[wi]
			s := byStart[w.Start]
			if s == nil {
				s = &sgSlot{start: w.Start}
				byStart[w.Start] = s
			}
			s.size = max(s.size, w.Size)
			s.windows = append(s.windows, w)
			s.clients = append(s.clients, ci)
			s.index = append(s.index, wi)
		}
	}
	for _, s := range byStart {
		slots = append(slots, *s)
	}
	sort.Slice(slots, func(i, j int) bool { return slots[i].start < slots[j].start })
	isActive := func(s sgSlot) bool {
		for _, w := range s.windows {
			if w.Pattern != "" && w.Rate > 0 {
				return true
			}
		}
		return false
	}
	first := slices.IndexFunc(slots, isActive)
	if first < 0 {
		return nil, nil, 0
	}
	slots = slots[first:]
	if c.SkipIdle {
		slots = slices.DeleteFunc(slots, func(s sgSlot) bool { return !isActive(s) })
	}
	at := 0.0
	for i, s := range slots {
		offsets = append(offsets, at)
		if c.SkipIdle || i+1 == len(slots) {
			at += s.size
		} else {
			at += slots[i+1].start - s.start
		}
	}
	return slots, offsets, at
}

// FirstActive returns the trace time of the schedule's start (the first
// active window) and one pass's length.
func (c ServeGenConfig) FirstActive() (start, pass float64) {
	slots, _, pass := c.slots()
	if len(slots) == 0 {
		return 0, 0
	}
	return slots[0].start, pass
}

// ServeGenSchedule returns the composed schedule of c (which must be
// valid): each window's arrivals of every client, merged in time order.
func ServeGenSchedule(c ServeGenConfig) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		slots, offsets, pass := c.slots()
		if len(slots) == 0 {
			return
		}
		scale := c.TimeScale
		if scale == 0 {
			scale = 1
		}
		ids := make([]uint64, len(c.Clients))
		for i, cl := range c.Clients {
			h := fnv.New64a()
			h.Write([]byte(cl.Name))
			ids[i] = h.Sum64()
		}
		type pending struct {
			t       float64
			in, out int
		}
		var buf []pending
		var index int64
		var lastAt time.Duration
		given := arrival.Rand(c.Seed, arrival.StreamLengths) // --lengths' draws, in schedule order
		for rep := 0; ; rep++ {
			if rep > 0 && c.Count <= 0 && c.Duration <= 0 {
				return
			}
			for si, s := range slots {
				base := float64(rep)*pass + offsets[si]
				if c.Duration > 0 && arrival.Seconds(base/scale) >= c.Duration {
					return
				}
				buf = buf[:0]
				for k, w := range s.windows {
					if w.Pattern == "" || w.Rate <= 0 {
						continue
					}
					ci := s.clients[k]
					cl := c.Clients[ci]
					// One stream per client and window (and pass): a client's
					// arrivals do not depend on the others chosen with it.
					win := uint64(rep)<<32 | uint64(s.index[k])
					times := rand.New(rand.NewPCG(c.Seed^ids[ci], win<<1|1))
					sizes := rand.New(rand.NewPCG(c.Seed^ids[ci], win<<1))
					gaps := windowGaps(w, times)
					ls := cl.lengthsAt(w.Start)
					sum := 0.0
					for _, g := range gaps {
						sum += g
					}
					acc := 0.0
					for _, g := range gaps[:len(gaps)-1] {
						acc += g
						t := acc / sum * w.Size
						if t >= w.Size {
							break
						}
						// Keep the window's arrivals inside it once rounded
						// (the schedule CSV has microseconds).
						t = min(t, w.Size-1e-6)
						p := pending{t: base + t}
						if c.Lengths == nil {
							// One uniform for both, as ServeGen's generator
							// draws them: long inputs go with long outputs.
							u := sizes.Float64()
							p.in, p.out = draw(ls.In, u), draw(ls.Out, u)
							if m := c.MaxTokens; m > 1 && p.in+p.out > m {
								p.in = min(p.in, m-1)
								p.out = m - p.in
							}
						}
						buf = append(buf, p)
					}
				}
				sort.SliceStable(buf, func(i, j int) bool { return buf[i].t < buf[j].t })
				for _, p := range buf {
					at := max(arrival.Seconds(p.t/scale), lastAt)
					if c.Duration > 0 && at >= c.Duration {
						return
					}
					if c.Lengths != nil {
						p.in, p.out = c.Lengths.Draw(given, index)
					}
					if !yield(arrival.Arrival{Index: index, At: at, InputTokens: p.in, OutputTokens: p.out, Model: c.Model, Burst: index}) {
						return
					}
					index++
					lastAt = at
					if c.Count > 0 && index >= c.Count {
						return
					}
				}
			}
		}
	}
}

// windowGaps draws the ⌈rate·size⌉ gaps of a window from its pattern (scale
// 1: the gaps are normalized to the window afterwards).
func windowGaps(w *ServeGenWindow, r *rand.Rand) []float64 {
	n := max(int(math.Ceil(w.Rate*w.Size-1e-9)), 1)
	gaps := make([]float64, n)
	switch w.Pattern {
	case "Weibull":
		d := distuv.Weibull{K: w.Shape, Lambda: 1, Src: r}
		for i := range gaps {
			gaps[i] = d.Rand()
		}
	default:
		d := distuv.Gamma{Alpha: w.Shape, Beta: 1, Src: r}
		for i := range gaps {
			gaps[i] = d.Rand()
		}
	}
	return gaps
}
