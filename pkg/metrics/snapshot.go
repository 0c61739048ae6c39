package metrics

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// windowSigFigs is the precision of a window's distributions (NewWindowAcc).
const windowSigFigs = 2

// HistEncoding names how a summary's histograms are encoded (merge_state's
// hist_encoding): HdrHistogram's V2 compressed format, the interchange
// format every HdrHistogram implementation reads and writes — a 40-byte
// header (range, precision) and the bucket counts as ZigZag LEB128
// varints with runs of empty buckets folded into one negative number,
// deflated (zlib) and written in base64 ("HISTFAAA…").
const HistEncoding = "hdrhistogram-v2-compressed-base64"

// maxEncodedHist bounds one encoded histogram: the densest valid encoding
// of the largest histogram kept (3 digits, 1 µs to 1 day) is far smaller.
const maxEncodedHist = 1 << 20

// HistState is a Hist in a form that goes through JSON unchanged and merges
// exactly: the HdrHistogram's buckets (HDR, in HistEncoding; empty for an
// empty distribution) and the exact moments the buckets cannot give back —
// count, mean, sum of squared deviations (Welford's M2, for the standard
// deviation), the largest value in nanoseconds, and how many values were
// clamped to the histogram's range. Go writes float64 values in JSON with
// the fewest digits that read back to the same bits, so the moments survive
// the round trip exactly.
type HistState struct {
	Count   int64   `json:"count"`
	MeanMS  float64 `json:"mean_ms,omitempty"`
	M2      float64 `json:"m2_ms2,omitempty"`
	MaxNS   int64   `json:"max_ns,omitempty"`
	Clamped int64   `json:"clamped,omitempty"`
	HDR     string  `json:"hdr,omitempty"`
}

// State returns h in its mergeable form.
func (h *Hist) State() (HistState, error) {
	if h.n == 0 {
		return HistState{}, nil
	}
	b, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return HistState{}, fmt.Errorf("encoding a histogram: %w", err)
	}
	return HistState{Count: h.n, MeanMS: h.mean, M2: h.m2, MaxNS: int64(h.max), Clamped: h.clamped, HDR: string(b)}, nil
}

// histFromState rebuilds a Hist of the given precision from s, checking
// that s is one: its buckets have that range and precision, count the
// values s says, and hold its largest value.
func histFromState(s HistState, sigFigs int) (*Hist, error) {
	h := newHistWith(histMaxMicros, sigFigs)
	if s.Count == 0 {
		if s.HDR != "" || s.MeanMS != 0 || s.M2 != 0 || s.MaxNS != 0 || s.Clamped != 0 {
			return nil, errors.New("an empty distribution with values")
		}
		return h, nil
	}
	switch {
	case s.Count < 0:
		return nil, fmt.Errorf("count %d < 0", s.Count)
	case !finiteNonNeg(s.MeanMS) || !finiteNonNeg(s.M2):
		return nil, fmt.Errorf("mean %g or m2 %g is not a finite number ≥ 0", s.MeanMS, s.M2)
	case s.MaxNS < 0 || s.Clamped < 0 || s.Clamped > s.Count:
		return nil, fmt.Errorf("max_ns %d or clamped %d out of range", s.MaxNS, s.Clamped)
	case float64(s.MaxNS)/1e6 < s.MeanMS*(1-1e-9)-1e-9:
		return nil, fmt.Errorf("mean %g ms above the maximum %d ns", s.MeanMS, s.MaxNS)
	}
	dec, err := decodeHDR(s.HDR, h.h)
	if err != nil {
		return nil, err
	}
	if dec.TotalCount() != s.Count {
		return nil, fmt.Errorf("the buckets hold %d values, the count says %d", dec.TotalCount(), s.Count)
	}
	maxUS := min(s.MaxNS/1e3, histMaxMicros)
	if !dec.ValuesAreEquivalent(maxUS, dec.Max()) {
		return nil, fmt.Errorf("the largest bucket (%d µs) does not hold the maximum %d ns", dec.Max(), s.MaxNS)
	}
	h.h = dec
	h.n, h.mean, h.m2, h.max, h.clamped = s.Count, s.MeanMS, s.M2, time.Duration(s.MaxNS), s.Clamped
	return h, nil
}

// histSlot is one of a part's distributions and its place in the part's
// mergeable state; name labels a state that does not decode.
type histSlot struct {
	name  string
	h     *Hist
	state *HistState
}

// saveHists writes each slot's distribution into its state.
func saveHists(slots ...histSlot) error {
	for _, s := range slots {
		var err error
		if *s.state, err = s.h.State(); err != nil {
			return err
		}
	}
	return nil
}

// checkCounts refuses a part's state that has a negative count among
// counts, or whose counts contradict each other (contradict).
func checkCounts(contradict bool, counts ...int64) error {
	if slices.ContainsFunc(counts, func(n int64) bool { return n < 0 }) {
		return errors.New("a negative count")
	}
	if contradict {
		return errors.New("counts that contradict each other")
	}
	return nil
}

// marshalState saves the slots' distributions into st, a part's state,
// and writes it.
func marshalState(st any, slots []histSlot) (json.RawMessage, error) {
	if err := saveHists(slots...); err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// mergePartState decodes raw, a part's state (marshalState), checks it
// (check: its counts) and adds its distributions (slots) to the part's,
// all of them or none; it returns the state for the part to add its
// counts.
func mergePartState[S any](raw json.RawMessage, check func(*S) error, slots func(*S) []histSlot) (*S, error) {
	st := new(S)
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	if err := mergeHists(slots(st)...); err != nil {
		return nil, err
	}
	return st, nil
}

// mergeHists adds each slot's state to its distribution. The states are
// all decoded first, so a state with one bad distribution adds nothing.
func mergeHists(slots ...histSlot) error {
	hs := make([]*Hist, len(slots))
	for i, s := range slots {
		var err error
		if hs[i], err = histFromState(*s.state, histSigFigs); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	for i, s := range slots {
		s.h.Merge(hs[i])
	}
	return nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// decodeHDR decodes an encoded histogram that must have like's range and
// precision. The header is read first, so a foreign or hostile encoding
// asking for a huge histogram is refused before anything is allocated.
func decodeHDR(enc string, like *hdrhistogram.Histogram) (*hdrhistogram.Histogram, error) {
	if enc == "" {
		return nil, errors.New("no buckets (hdr) for a non-empty distribution")
	}
	if len(enc) > maxEncodedHist {
		return nil, fmt.Errorf("encoded histogram of %d bytes: larger than %d", len(enc), maxEncodedHist)
	}
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("histogram: not base64: %w", err)
	}
	if len(raw) < 8 {
		return nil, errors.New("histogram: truncated")
	}
	if cookie := int32(binary.BigEndian.Uint32(raw)) &^ 0xf0; cookie != hdrhistogram.V2CompressedEncodingCookieBase {
		return nil, fmt.Errorf("histogram: not in %s (cookie %#x)", HistEncoding, uint32(cookie))
	}
	n := int64(int32(binary.BigEndian.Uint32(raw[4:])))
	if n < 0 || n > int64(len(raw)-8) {
		return nil, errors.New("histogram: truncated")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	var hdr [40]byte
	_, err = io.ReadFull(z, hdr[:])
	z.Close()
	if err != nil {
		return nil, fmt.Errorf("histogram header: %w", err)
	}
	sig := int64(int32(binary.BigEndian.Uint32(hdr[12:])))
	lo := int64(binary.BigEndian.Uint64(hdr[16:]))
	hi := int64(binary.BigEndian.Uint64(hdr[24:]))
	if sig != like.SignificantFigures() || max(lo, 1) != like.LowestTrackableValue() || hi != like.HighestTrackableValue() {
		return nil, fmt.Errorf("histogram of %d–%d at %d significant digits, want %d–%d at %d",
			lo, hi, sig, like.LowestTrackableValue(), like.HighestTrackableValue(), like.SignificantFigures())
	}
	h, err := hdrhistogram.Decode([]byte(enc))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
}

// CollectorState is a Collector in its mergeable form (the summary's
// merge_state.collector): its distributions and every counter, exact.
// FirstSentNS and LastEndNS are offsets from the run's start.
type CollectorState struct {
	Hists map[string]HistState `json:"hists"`
	Counters
	Seen        bool  `json:"seen"`
	FirstSentNS int64 `json:"first_sent_ns"`
	LastEndNS   int64 `json:"last_end_ns"`
	// OutputPerSecond is the output tokens counted in each second of the
	// run (Collector.OutputPerSecond), as decimal counts joined by commas
	// (one short string, not an array of thousands of lines), trailing
	// zeros left out; absent when none.
	OutputPerSecond string `json:"output_tokens_per_s,omitempty"`
}

// joinCounts writes counts as decimals joined by commas, without the
// trailing zeros.
func joinCounts(v []int64) string {
	for len(v) > 0 && v[len(v)-1] == 0 {
		v = v[:len(v)-1]
	}
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	return string(b)
}

// splitCounts reads what joinCounts wrote: at most maxOutputSeconds+1
// counts, none negative.
func splitCounts(s string) ([]int64, error) {
	if s == "" {
		return nil, nil
	}
	if n := strings.Count(s, ",") + 1; n > maxOutputSeconds+1 {
		return nil, fmt.Errorf("%d counts, more than %d", n, maxOutputSeconds+1)
	}
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil || x < 0 {
			return nil, fmt.Errorf("count %q: want an integer ≥ 0", f)
		}
		out = append(out, x)
	}
	return out, nil
}

// namedHist is a distribution with its key in a state's hists.
type namedHist struct {
	name string
	h    **Hist
}

// namesHist reports whether one of hs is named k.
func namesHist(hs []namedHist, k string) bool {
	return slices.ContainsFunc(hs, func(e namedHist) bool { return e.name == k })
}

// histStates encodes the distributions hs by name; one with no values is
// left out unless keepEmpty. An error names its distribution after prefix.
func histStates(hs []namedHist, keepEmpty bool, prefix string) (map[string]HistState, error) {
	out := map[string]HistState{}
	for _, e := range hs {
		st, err := (*e.h).State()
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", prefix, e.name, err)
		}
		if keepEmpty || st.Count > 0 {
			out[e.name] = st
		}
	}
	return out, nil
}

// histsFromStates decodes states into the distributions hs (of sigFigs
// significant digits): each replaces its distribution, or with merge is
// merged into it. It returns an error for each state that does not decode
// and each that names no distribution of hs (of what: "a run", "a
// window"…), the distribution named after prefix.
func histsFromStates(states map[string]HistState, hs []namedHist, sigFigs int, merge bool, prefix, what string) []error {
	var errs []error
	for _, e := range hs {
		h, err := histFromState(states[e.name], sigFigs)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s%s: %w", prefix, e.name, err))
		case merge:
			(*e.h).Merge(h)
		default:
			*e.h = h
		}
	}
	for k := range states {
		if !namesHist(hs, k) {
			errs = append(errs, fmt.Errorf("%s%s: not a distribution of %s", prefix, k, what))
		}
	}
	return errs
}

// State returns c in its mergeable form.
func (c *Collector) State() (CollectorState, error) {
	s := CollectorState{
		Counters: c.Counters.clone(),
		Seen:     c.seen, FirstSentNS: int64(c.FirstSent), LastEndNS: int64(c.LastEnd),
		OutputPerSecond: joinCounts(c.OutputPerSecond),
	}
	var err error
	s.Hists, err = histStates(c.hists(), true, "")
	return s, err
}

// CollectorFromState rebuilds a Collector from its state, checking it.
func CollectorFromState(s CollectorState) (*Collector, error) {
	c := NewCollector()
	errs := histsFromStates(s.Hists, c.hists(), histSigFigs, false, "hists.", "a run")
	if err := nonNegative(s.named()); err != nil {
		errs = append(errs, err)
	}
	for k, v := range s.ErrorsByClass {
		if v < 0 {
			errs = append(errs, fmt.Errorf("errors_by_class.%s: %d < 0", k, v))
		}
		c.ErrorsByClass[k] = v
	}
	for k, v := range s.OutputFrom {
		switch {
		case k != record.OutputChunks && k != record.OutputText && k != record.OutputRequested:
			errs = append(errs, fmt.Errorf("output_from %q: want %s, %s or %s", k, record.OutputChunks, record.OutputText, record.OutputRequested))
		case v < 0:
			errs = append(errs, fmt.Errorf("output_from.%s: %d < 0", k, v))
		}
	}
	perSecond, err := splitCounts(s.OutputPerSecond)
	if err != nil {
		errs = append(errs, fmt.Errorf("output_tokens_per_s: %w", err))
	}
	c.OutputPerSecond = perSecond
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	byClass := c.ErrorsByClass
	c.Counters = s.Counters
	c.ErrorsByClass = byClass
	c.ErrorSamples = append([]ErrorSample(nil), s.ErrorSamples[:min(len(s.ErrorSamples), maxErrorSamples)]...)
	c.seen, c.FirstSent, c.LastEnd = s.Seen, time.Duration(s.FirstSentNS), time.Duration(s.LastEndNS)
	return c, nil
}

// nonNegative reports the counters below 0, by name.
func nonNegative(m map[string]int64) error {
	var errs []error
	for _, k := range sortedKeys(m) {
		if m[k] < 0 {
			errs = append(errs, fmt.Errorf("%s: %d < 0", k, m[k]))
		}
	}
	return errors.Join(errs...)
}

// WindowState is what a window of the summary needs besides its figures to
// merge exactly: its distributions (two significant digits, as the window
// keeps them), keyed ttft, tpot, itl, e2e and send_lag.
type WindowState struct {
	Index int                  `json:"index"`
	Hists map[string]HistState `json:"hists"`
}

func (a *WindowAcc) hists() []namedHist {
	return []namedHist{{"ttft", &a.TTFT}, {"tpot", &a.TPOT}, {"itl", &a.ITL}, {"e2e", &a.E2E}, {"send_lag", &a.Lag}}
}

// State returns the distributions of the window index in their mergeable
// form.
func (a *WindowAcc) State(index int) (WindowState, error) {
	hs, err := histStates(a.hists(), false, fmt.Sprintf("window %d ", index))
	return WindowState{Index: index, Hists: hs}, err
}

// AddState adds the distributions of a window's state s to a's (merging
// windows of the same index).
func (a *WindowAcc) AddState(s WindowState) error {
	return errors.Join(histsFromStates(s.Hists, a.hists(), windowSigFigs, true, "", "a window")...)
}

// GroupState is one group of a breakdown (per_model, per_kind) in its
// mergeable form.
type GroupState struct {
	Hists map[string]HistState `json:"hists"` // ttft, tpot, e2e
	GroupCounters
}

func (g *Group) hists() []namedHist {
	return []namedHist{{"ttft", &g.TTFT}, {"tpot", &g.TPOT}, {"e2e", &g.E2E}}
}

// State returns every group of g in its mergeable form, by name.
func (g *Groups) State() (map[string]GroupState, error) {
	out := make(map[string]GroupState, len(g.m))
	for k, gr := range g.m {
		s := GroupState{GroupCounters: gr.GroupCounters}
		var err error
		if s.Hists, err = histStates(gr.hists(), false, fmt.Sprintf("group %q ", k)); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// GroupsFromState rebuilds a breakdown from its state (it is only merged
// and summarized, never added to: it has no key function).
func GroupsFromState(m map[string]GroupState) (*Groups, error) {
	g := &Groups{key: func(*Sample) string { return "" }, m: map[string]*Group{}}
	var errs []error
	for _, k := range sortedKeys(m) {
		s := m[k]
		gr := newGroup()
		errs = append(errs, histsFromStates(s.Hists, gr.hists(), histSigFigs, false, fmt.Sprintf("group %q ", k), "a group")...)
		if err := nonNegative(s.named()); err != nil {
			errs = append(errs, fmt.Errorf("group %q: %w", k, err))
		}
		gr.GroupCounters = s.GroupCounters
		g.m[k] = gr
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// State returns l's buckets in HistEncoding ("" when empty).
func (l *LengthHist) State() (string, error) {
	if l.h.TotalCount() == 0 {
		return "", nil
	}
	b, err := l.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encoding a length histogram: %w", err)
	}
	return string(b), nil
}

// Merge adds o's lengths to l's.
func (l *LengthHist) Merge(o *LengthHist) { l.h.Merge(o.h) }

// LengthFromState rebuilds a length distribution from its encoding.
func LengthFromState(enc string) (*LengthHist, error) {
	l := NewLengthHist()
	if enc == "" {
		return l, nil
	}
	h, err := decodeHDR(enc, l.h)
	if err != nil {
		return nil, err
	}
	l.h = h
	return l, nil
}

// GoodputState is goodput in its mergeable form: the requests that met
// every target, those that finished, and the targets (ms).
type GoodputState struct {
	Good int64              `json:"good"`
	All  int64              `json:"all"`
	SLO  map[string]float64 `json:"slo_ms"`
}

// State returns g in its mergeable form.
func (g *Goodput) State() GoodputState {
	return GoodputState{Good: g.Good, All: g.All, SLO: g.SLO.Targets()}
}

// GoodputFromState rebuilds goodput from its state.
func GoodputFromState(s GoodputState) (*Goodput, error) {
	if s.Good < 0 || s.All < s.Good {
		return nil, fmt.Errorf("goodput: %d good of %d finished", s.Good, s.All)
	}
	slo := NoSLO
	for k, v := range s.SLO {
		f := slo.field(k)
		if f == nil || !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("goodput: target %s %g", k, v)
		}
		*f = v
	}
	return &Goodput{SLO: slo, Good: s.Good, All: s.All}, nil
}
