package parametric

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Extension is how windows continue past the end of the file.
type Extension int

const (
	// RepeatJitter cycles the rows, multiplying shape and scale by
	// independent factors uniform in [1−r, 1+r) (FineServe's default).
	RepeatJitter Extension = iota
	// ModelSample draws (log shape, log scale) for every window from the
	// bivariate normal fitted to the rows (a correlated lognormal).
	ModelSample
)

func (e Extension) String() string {
	if e == ModelSample {
		return "model_sample"
	}
	return "repeat_jitter"
}

// ParseExtension parses FineServe's --parametric-extension-mode.
func ParseExtension(s string) (Extension, error) {
	switch strings.TrimSpace(s) {
	case "", "repeat_jitter":
		return RepeatJitter, nil
	case "model_sample":
		return ModelSample, nil
	}
	return 0, fmt.Errorf("extension mode %q: want repeat_jitter or model_sample", s)
}

// Window is one window of a run's timeline.
type Window struct {
	// Index is the window's position in the run, from 0; Pass is 0 for the
	// file's own windows and p for its p-th repetition; Row is the file row
	// whose time slot it takes (and, for RepeatJitter, whose parameters).
	Index int64
	Pass  int64
	Row   int
	// Start and End are seconds from the start of the run, before any time
	// scale.
	Start, End float64
	// Paused is the silent time before the window (between windows with
	// explicit bounds that do not touch), in seconds: the arrival process
	// runs on a clock that stops there.
	Paused  float64
	Shape   float64
	ScaleMS float64
}

// MeanGap is the window's mean request gap shape·scale, in seconds.
func (w Window) MeanGap() float64 { return w.Shape * w.ScaleMS / 1e3 }

// Plan is a validated timeline: the file's windows and how they extend.
type Plan struct {
	rows          []Row
	start, end    []float64 // seconds from the first window's start
	paused        []float64 // silence before each row, from the pass start
	period        float64
	passPause     float64 // silence in one pass
	ext           Extension
	jitter        float64
	mean          [2]float64 // of (log shape, log scale)
	l11, l21, l22 float64    // Cholesky factor of their covariance
}

// PlanConfig describes a timeline.
type PlanConfig struct {
	Table *Table
	// Window is the length of every window of a table without bounds
	// (FineServe's --parametric-window-seconds, default 300 s).
	Window      time.Duration
	Extension   Extension
	JitterRatio float64 // RepeatJitter's r, in [0, 1)
}

// NewPlan validates c and returns its timeline.
func NewPlan(c PlanConfig) (*Plan, error) {
	var errs []error
	if c.Table == nil || len(c.Table.Rows) == 0 {
		errs = append(errs, errors.New("no Gamma windows"))
	}
	if !c.Table.hasBounds() && c.Window <= 0 {
		errs = append(errs, fmt.Errorf("window length %v: want > 0", c.Window))
	}
	if !(c.JitterRatio >= 0 && c.JitterRatio < 1) {
		errs = append(errs, fmt.Errorf("jitter ratio %g: want 0 ≤ r < 1 (factors stay positive)", c.JitterRatio))
	}
	if c.Extension != RepeatJitter && c.Extension != ModelSample {
		errs = append(errs, fmt.Errorf("extension mode %d unknown", c.Extension))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	p := &Plan{rows: c.Table.Rows, ext: c.Extension, jitter: c.JitterRatio}
	n := len(p.rows)
	p.start, p.end = make([]float64, n), make([]float64, n)
	w := c.Window.Seconds()
	for i, r := range p.rows {
		if c.Table.Bounds {
			p.start[i] = (r.StartMS - p.rows[0].StartMS) / 1e3
			p.end[i] = (r.EndMS - p.rows[0].StartMS) / 1e3
		} else {
			p.start[i] = float64(i) * w
			p.end[i] = float64(i+1) * w
		}
	}
	p.period = p.end[n-1]
	p.paused = make([]float64, n)
	for i := 1; i < n; i++ {
		p.paused[i] = p.paused[i-1] + (p.start[i] - p.end[i-1])
	}
	p.passPause = p.paused[n-1]
	ls, lc := make([]float64, n), make([]float64, n)
	for i, r := range p.rows {
		ls[i], lc[i] = math.Log(r.Shape), math.Log(r.ScaleMS)
	}
	p.mean = [2]float64{stat.Mean(ls, nil), stat.Mean(lc, nil)}
	if n > 1 {
		v1, v2 := stat.Variance(ls, nil), stat.Variance(lc, nil)
		cov := stat.Covariance(ls, lc, nil)
		p.l11 = math.Sqrt(v1)
		if p.l11 > 0 {
			p.l21 = cov / p.l11
		}
		p.l22 = math.Sqrt(max(v2-p.l21*p.l21, 0))
	}
	return p, nil
}

func (t *Table) hasBounds() bool { return t != nil && t.Bounds }

// Rows is the number of windows in one pass over the file.
func (p *Plan) Rows() int { return len(p.rows) }

// PassEnd is the end of the file's last window: the length of one pass, in
// seconds.
func (p *Plan) PassEnd() float64 { return p.period }

// LogMoments are the mean and covariance of (log shape, log scale) over the
// file's rows, from which ModelSample draws.
func (p *Plan) LogMoments() (mean [2]float64, cov [2][2]float64) {
	c12 := p.l11 * p.l21
	return p.mean, [2][2]float64{{p.l11 * p.l11, c12}, {c12, p.l21*p.l21 + p.l22*p.l22}}
}

// Windows returns the run's windows, without end, from the parameter
// stream of seed. Window i is always the same for the same plan and seed.
func (p *Plan) Windows(seed uint64) iter.Seq[Window] {
	return func(yield func(Window) bool) {
		s := p.source(seed)
		for {
			if !yield(s.next()) {
				return
			}
		}
	}
}

// windowSource hands out the windows one by one.
type windowSource struct {
	p   *Plan
	rnd *rand.Rand
	i   int64
}

func (p *Plan) source(seed uint64) *windowSource {
	return &windowSource{p: p, rnd: arrival.Rand(seed, arrival.StreamParams)}
}

func (s *windowSource) next() Window {
	p := s.p
	n := int64(len(p.rows))
	pass, row := s.i/n, int(s.i%n)
	off := float64(pass) * p.period
	w := Window{Index: s.i, Pass: pass, Row: row, Start: off + p.start[row], End: off + p.end[row],
		Paused: float64(pass)*p.passPause + p.paused[row]}
	s.i++
	r := p.rows[row]
	switch {
	case pass == 0:
		w.Shape, w.ScaleMS = r.Shape, r.ScaleMS
	case p.ext == RepeatJitter:
		f1 := 1 + p.jitter*(2*s.rnd.Float64()-1)
		f2 := 1 + p.jitter*(2*s.rnd.Float64()-1)
		w.Shape, w.ScaleMS = r.Shape*f1, r.ScaleMS*f2
	default: // ModelSample
		z1, z2 := s.rnd.NormFloat64(), s.rnd.NormFloat64()
		w.Shape = math.Exp(p.mean[0] + p.l11*z1)
		w.ScaleMS = math.Exp(p.mean[1] + p.l21*z1 + p.l22*z2)
	}
	// A draw far in the tail must not make a window uncomputable.
	w.Shape = min(max(w.Shape, MinShape), MaxShape)
	w.ScaleMS = min(max(w.ScaleMS, MinMeanGapMS/w.Shape), MaxScaleMS)
	return w
}
