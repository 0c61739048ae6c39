package metrics

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// SLO is a set of per-request latency targets in milliseconds, as vLLM's
// --goodput takes them: ttft, tpot and e2el. A NaN field is not set. A
// request meets the SLO when it succeeded and each set figure is at most its
// target; a failed request never meets it.
type SLO struct {
	TTFT, TPOT, E2EL float64
}

// NoSLO is an SLO with no target set.
var NoSLO = SLO{TTFT: math.NaN(), TPOT: math.NaN(), E2EL: math.NaN()}

// sloKeys are the metric names --goodput accepts, in output order.
var sloKeys = []string{"ttft", "tpot", "e2el"}

func (s *SLO) field(key string) *float64 {
	switch key {
	case "ttft":
		return &s.TTFT
	case "tpot":
		return &s.TPOT
	case "e2el":
		return &s.E2EL
	}
	return nil
}

// Set reports whether at least one target is set.
func (s SLO) Set() bool {
	return !math.IsNaN(s.TTFT) || !math.IsNaN(s.TPOT) || !math.IsNaN(s.E2EL)
}

// ParseSLO reads goodput targets: each argument holds one or more KEY:VALUE
// pairs separated by commas or spaces (vLLM's form is one pair per
// argument: --goodput ttft:500 tpot:50 e2el:2000). Keys are ttft, tpot and
// e2el; values are milliseconds ≥ 0. A key given twice is an error.
func ParseSLO(args []string) (SLO, error) {
	s := NoSLO
	var errs []error
	n := 0
	for _, a := range args {
		for _, pair := range strings.FieldsFunc(a, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' }) {
			k, v, ok := strings.Cut(pair, ":")
			if !ok {
				errs = append(errs, fmt.Errorf("goodput %q: want KEY:MS pairs, e.g. ttft:500 tpot:50 e2el:2000", pair))
				continue
			}
			f := s.field(strings.ToLower(strings.TrimSpace(k)))
			if f == nil {
				errs = append(errs, fmt.Errorf("goodput %q: unknown metric %q (want ttft, tpot or e2el)", pair, k))
				continue
			}
			ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) {
				errs = append(errs, fmt.Errorf("goodput %q: want a number of milliseconds ≥ 0", pair))
				continue
			}
			if !math.IsNaN(*f) {
				errs = append(errs, fmt.Errorf("goodput %q: %s is given twice", pair, strings.ToLower(k)))
				continue
			}
			*f = ms
			n++
		}
	}
	if err := errors.Join(errs...); err != nil {
		return NoSLO, err
	}
	if n == 0 {
		return NoSLO, errors.New("goodput: no target given (want KEY:MS pairs, e.g. ttft:500 tpot:50 e2el:2000)")
	}
	return s, nil
}

// String returns the targets as ParseSLO reads them ("ttft:500,tpot:50").
func (s SLO) String() string {
	var parts []string
	for _, k := range sloKeys {
		if v := *s.field(k); !math.IsNaN(v) {
			parts = append(parts, k+":"+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// Targets returns the set targets keyed by name (the summary's
// goodput_slo_ms).
func (s SLO) Targets() map[string]float64 {
	m := map[string]float64{}
	for _, k := range sloKeys {
		if v := *s.field(k); !math.IsNaN(v) {
			m[k] = v
		}
	}
	return m
}

// Met reports whether r meets every target of s: r succeeded, its TTFT,
// TPOT and E2E latency are each at most their target. TPOT is that of the
// request (Sample.TPOT), and does not apply to a request of one output
// token, as in vLLM's benchmark.
func (s SLO) Met(r *record.Request) bool {
	var smp Sample
	smp.From(r, NoSLO)
	return s.met(&smp)
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// KeyGoodputPart names the Goodput part (its state is merge_state.goodput).
const KeyGoodputPart = "goodput"

// Goodput counts the requests that met an SLO among those that finished.
// It is a Part: a run with --goodput, or a merge of copies that all had
// it, writes the summary's goodput keys and merge_state.goodput.
type Goodput struct {
	SLO  SLO
	Good int64 // requests that met every target
	All  int64 // requests that finished, successful or not (not the cancelled ones)
	inSomeCopies
}

var _ Part = (*Goodput)(nil)

// NewGoodput returns an empty Goodput of the targets slo (NoSLO: none,
// nothing is written unless copies' states are merged in).
func NewGoodput(slo SLO) *Goodput { return &Goodput{SLO: slo} }

// Add counts s, good when it met the SLO (Sample.Good: s must be derived
// with g.SLO). A cancelled request does not count: it neither met nor
// missed the SLO.
func (g *Goodput) Add(s *Sample) {
	if s.Cancelled {
		return
	}
	g.All++
	if s.Good {
		g.Good++
	}
}

// Share is the fraction of finished requests that met the SLO (0 when none
// finished).
func (g *Goodput) Share() float64 {
	if g.All == 0 {
		return 0
	}
	return float64(g.Good) / float64(g.All)
}

// Annotate stores the goodput figures in s over a run of the given length
// (request_goodput is per second of it, as vLLM computes it).
func (g *Goodput) Annotate(s *Summary, dur time.Duration) {
	rate := 0.0
	if secs := dur.Seconds(); secs > 0 {
		rate = float64(g.Good) / secs
	}
	s.Goodput = &GoodputSummary{Rate: rate, Share: g.Share(), Requests: g.Good, SLO: g.SLO.Targets()}
}

// on reports whether g writes its figures: a run with targets, or a merge
// of copies that all had goodput.
func (g *Goodput) on() bool { return (g.SLO.Set() || g.loaded) && !g.missing }

// Key implements Part.
func (g *Goodput) Key() string { return KeyGoodputPart }

// Finish implements Part: Annotate, when g is on; a merge of copies only
// some of which had goodput warns instead.
func (g *Goodput) Finish(s *Summary, elapsed time.Duration) {
	g.warnPartial("goodput")
	if g.on() {
		g.Annotate(s, elapsed)
	}
}

// Save implements Part.
func (g *Goodput) Save(st *MergeState) error {
	if g.on() {
		gs := g.State()
		st.Goodput = &gs
	}
	return nil
}

// Load implements Part: the first copy's targets are kept (merge warns
// when the copies' differ).
func (g *Goodput) Load(c *Copy) error {
	if !g.loadCopy(c, c.State.Goodput != nil) {
		return nil
	}
	o, err := GoodputFromState(*c.State.Goodput)
	if err != nil {
		return fmt.Errorf("%s: %w", KeyMergeState, err)
	}
	if !g.loaded {
		g.SLO = o.SLO
	}
	g.loaded = true
	g.Good += o.Good
	g.All += o.All
	return nil
}
