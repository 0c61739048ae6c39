// Package sweep searches for a deployment's capacity: it runs the same
// workload as whole runs at growing loads (request rate, time scale or
// concurrency), judges every step against the SLO, and answers with the
// highest load that meets it and the limit the server's metrics point to.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Variable is what a sweep varies from step to step.
type Variable string

// The variables a sweep can vary.
const (
	Rate           Variable = "rate"            // Poisson request rate (req/s)
	TimeScale      Variable = "time-scale"      // replay/parametric speed-up; the workload's shape is kept
	MaxConcurrency Variable = "max-concurrency" // requests in flight at most
)

// Variables lists the variables in the order the documentation gives.
var Variables = []Variable{Rate, TimeScale, MaxConcurrency}

// Defaults of a Config.
const (
	DefaultTolerance = 0.05
	// SettledTolerance is the default with steps that end when settled.
	SettledTolerance  = 0.03
	DefaultGrowth     = 2
	DefaultMaxSteps   = 40
	DefaultMinGoodput = 0.9
	DefaultMaxLag     = 10.0
	// DefaultSpan is how far above Min a search without Max grows: Min
	// times 1024 (ten doublings).
	DefaultSpan = 1024
)

// Config configures a sweep.
type Config struct {
	Variable Variable
	// Min and Max bound the search: the bracket starts at Min and grows
	// geometrically by Growth until a step fails or Max is reached.
	Min, Max float64
	// Values, when set, are run in increasing order instead of a search.
	Values []float64
	// Tolerance is the relative resolution of the answer: bisection stops
	// once the failing load is within Tolerance of the passing one.
	Tolerance float64
	Growth    float64
	// MaxSteps bounds the number of steps.
	MaxSteps int

	// SLO and MinGoodput are the targets (--goodput, --min-goodput); with
	// no SLO set (metrics.NoSLO; the zero SLO is three targets of 0 ms) a step is judged by its throughput and latency growth
	// (see judge).
	SLO        metrics.SLO
	MinGoodput float64
	// MaxErrorRate is the share of failed requests a step may have.
	MaxErrorRate float64
	// MaxLag is the send-lag p90 (ms) above which a step is the client's
	// limit (default DefaultMaxLag).
	MaxLag float64

	// Workload names the workload in the answer (e.g. Dense_10to30B).
	Workload string
	// ArrivalCV is the coefficient of variation of the steps' gaps (1:
	// Poisson; --burstiness k: 1/√k; 0: unknown, taken as 1). A step of a
	// burstier schedule needs more requests to settle (Evidence).
	ArrivalCV float64

	// StepMin and StepMax, when StepMax > 0, make a step end once its
	// verdict is settled (watch.go), no sooner than StepMin and no later
	// than StepMax (Run's schedule is StepMax long); 0: every step runs
	// its whole schedule.
	StepMin, StepMax time.Duration
	// Below, when set, is a load known to be at or above the capacity —
	// a plan's capacity at a smoother schedule, which a burstier one
	// cannot exceed — and BelowWhy says where it comes from: a rate
	// search starts under it (start.go) instead of probing.
	Below    float64
	BelowWhy string
	// Probe, when set, measures the server's service time and slots
	// before a rate search, which then starts from Little's law's
	// estimate instead of Min (start.go); nil or a probe that finds
	// nothing: the search doubles from Min.
	Probe func(ctx context.Context) (Probe, error)
	// Run performs one whole run at load value and returns its summary
	// (step counts from 1).
	Run func(ctx context.Context, step int, value float64) (*metrics.Summary, error)
	// Idle, when set, waits before every step until the server is idle.
	Idle func(ctx context.Context) error
	// Logf, when set, receives a line per step.
	Logf func(format string, a ...any)
}

// Verdict is the outcome of one step.
type Verdict string

// The verdicts of a step.
const (
	Pass       Verdict = "pass"
	Fail       Verdict = "fail"
	Client     Verdict = "client" // the client could not keep its schedule: not a server failure
	Incomplete Verdict = "incomplete"
)

// Step is one run of the sweep.
type Step struct {
	Index   int      `json:"step"`
	Value   float64  `json:"value"`
	Verdict Verdict  `json:"verdict"`
	Reasons []string `json:"reasons,omitempty"`
	Figures Figures  `json:"figures"`
	// Ended says why the step ended: settled (its verdict was clear
	// before its maximum length; Settled says how), max length, the
	// schedule's end (a step shorter than its maximum) or fixed length.
	Ended   string `json:"ended,omitempty"`
	Settled string `json:"settled,omitempty"`
	// Seconds is the step's wall time, the wait for an idle server
	// included.
	Seconds float64 `json:"seconds"`
	// RemeasuredBy is the step that measured this one's load again
	// because this one failed on growth alone below a passing step: the
	// answer believes the later one (0: none).
	RemeasuredBy int `json:"remeasured_by,omitempty"`
	// Summary is the step's whole summary.
	Summary *metrics.Summary `json:"summary"`
}

// Answer is the capacity found.
type Answer struct {
	// Value is the variable's value at the highest passing step, Rate the
	// request rate the server completed there (req/s): what the
	// deployment served within the targets.
	Value float64 `json:"value"`
	Rate  float64 `json:"rate"`
	Step  int     `json:"step"`
	// AtLeast is true when no step failed: the capacity is at least this.
	AtLeast bool `json:"at_least,omitempty"`
}

// Result is a sweep's steps and answer (the --sweep-json file).
type Result struct {
	Variable   Variable           `json:"variable"`
	Workload   string             `json:"workload,omitempty"`
	SLO        map[string]float64 `json:"slo_ms,omitempty"`
	MinGoodput float64            `json:"min_goodput,omitempty"`
	Tolerance  float64            `json:"tolerance"`
	// Capacity is nil when even the lowest step failed.
	Capacity *Answer `json:"capacity"`
	// FailedAt is the lowest load that failed (0: none).
	FailedAt float64    `json:"failed_at,omitempty"`
	Limit    *Diagnosis `json:"limit,omitempty"`
	// Stopped says why the sweep ended before its search did: "client",
	// "interrupted", "max-steps" or "error" ("" when it finished).
	Stopped string `json:"stopped,omitempty"`
	// StopReason explains Stopped in one line.
	StopReason string `json:"stop_reason,omitempty"`
	Line       string `json:"line"`
	// Start is where the search started and why (nil for --sweep-values).
	Start *Start `json:"start,omitempty"`
	// Caveat, when set, says why the answer may read high (caveat).
	Caveat string `json:"caveat,omitempty"`
	// Seconds is the sweep's wall time, the probe included.
	Seconds float64 `json:"seconds"`
	Steps   []Step  `json:"steps"`
}

// Validate returns every problem of c.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !slices.Contains(Variables, c.Variable) {
		add("--sweep-variable %q: want rate, time-scale or max-concurrency", c.Variable)
	}
	positive := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	if len(c.Values) > 0 {
		for _, v := range c.Values {
			if !positive(v) {
				add("--sweep-values %g: want numbers > 0", v)
			}
		}
	} else {
		if !positive(c.Min) {
			add("--sweep-min %g: want > 0", c.Min)
		}
		if c.Max != 0 && !(positive(c.Max) && c.Max >= c.Min) {
			add("--sweep-max %g: want ≥ --sweep-min %g", c.Max, c.Min)
		}
	}
	if c.Variable == MaxConcurrency {
		for _, v := range append([]float64{c.Min, c.Max}, c.Values...) {
			if v != math.Trunc(v) {
				add("--sweep-variable max-concurrency: %g is not a whole number", v)
			}
		}
		if !c.SLO.Set() {
			add("--sweep-variable max-concurrency needs --goodput targets: more concurrency never lowers the offered rate, so only latency targets bound it")
		}
	}
	if !(c.Tolerance > 0 && c.Tolerance < 1) {
		add("--sweep-tolerance %g: want a share in (0, 1)", c.Tolerance)
	}
	if !(c.MinGoodput >= 0 && c.MinGoodput <= 1) {
		add("--min-goodput %g: want a share in [0, 1]", c.MinGoodput)
	}
	if c.Run == nil {
		add("sweep: no Run function")
	}
	return errors.Join(errs...)
}

// Sweep runs the search c describes. It returns the result so far with
// any error: a stopped context (an interrupt or --max-duration) ends the
// sweep with the finished steps judged and answered.
func Sweep(ctx context.Context, c Config) (*Result, error) {
	if c.Growth <= 1 {
		c.Growth = DefaultGrowth
	}
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MaxLag <= 0 {
		c.MaxLag = DefaultMaxLag
	}
	if c.Max == 0 && len(c.Values) == 0 {
		c.Max = c.Min * DefaultSpan
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	begin := time.Now()
	s := &search{c: &c, res: &Result{Variable: c.Variable, Workload: c.Workload, Tolerance: c.Tolerance}}
	defer func() { s.res.Seconds = time.Since(begin).Seconds() }()
	if c.SLO.Set() {
		s.res.SLO, s.res.MinGoodput = c.SLO.Targets(), c.MinGoodput
	}
	var err error
	if len(c.Values) > 0 {
		err = s.list(ctx)
	} else {
		err = s.bisect(ctx)
	}
	if err != nil && s.res.Stopped == "" {
		s.res.Stopped, s.res.StopReason = "error", err.Error()
	}
	s.answer()
	s.res.Caveat = caveat(&c, s.res)
	return s.res, err
}

// ShortBurstyCV is the burstiness from which an answer measured in steps
// that end when settled can read high (docs/CAPACITY.md: 5–17 % at CV
// 2.31 on the built-in server, where fixed 60 s steps agree with
// interpolating their CV 2 and 3.4 points).
const ShortBurstyCV = 1.5

// caveat is what an answer searched at burstiness ≥ ShortBurstyCV in
// steps that end when settled carries ("" otherwise): goodput there is
// decided by rare surges of arrivals, which a short stretch of schedule
// often lacks, so a sequential test stops more often in a good stretch.
func caveat(c *Config, r *Result) string {
	if r.Capacity == nil || len(c.Values) > 0 || c.Variable == MaxConcurrency || c.StepMax <= 0 || c.ArrivalCV < ShortBurstyCV {
		return ""
	}
	return fmt.Sprintf("the answer at CV %.2f was measured in steps that end when settled (at most %v): at CV ≥ %g they can read high — a short stretch of a bursty schedule often misses its rare surges (docs/CAPACITY.md); for an answer you provision by, measure with --step-duration 60s",
		c.ArrivalCV, c.StepMax, ShortBurstyCV)
}

// search is one sweep's state.
type search struct {
	c   *Config
	res *Result
}

// errStop ends a search early; Result.Stopped says why.
var errStop = errors.New("sweep stopped")

// step runs and judges one step at value v.
func (s *search) step(ctx context.Context, v float64) (Verdict, error) {
	if len(s.res.Steps) >= s.c.MaxSteps {
		s.res.Stopped, s.res.StopReason = "max-steps", fmt.Sprintf("%d steps run, the most a sweep runs", s.c.MaxSteps)
		return "", errStop
	}
	if ctx.Err() != nil {
		s.interrupted(ctx)
		return "", errStop
	}
	began := time.Now()
	if s.c.Idle != nil {
		if err := s.c.Idle(ctx); err != nil {
			if ctx.Err() != nil {
				s.interrupted(ctx)
				return "", errStop
			}
			return "", err
		}
	}
	n := len(s.res.Steps) + 1
	runCtx := ctx
	var ws *watchStop
	if s.c.StepMax > 0 {
		ws = &watchStop{ch: make(chan struct{})}
		ws.w = newWatch(s.c, v, func() { ws.once.Do(func() { close(ws.ch) }) })
		runCtx = context.WithValue(ctx, watchKey{}, ws)
	}
	sum, err := s.c.Run(runCtx, n, v)
	if err != nil && (sum == nil || ctx.Err() == nil) {
		if ctx.Err() != nil {
			s.interrupted(ctx)
			return "", errStop
		}
		return "", fmt.Errorf("step %d (%s %s): %w", n, s.c.Variable, fmtValue(s.c.Variable, v), err)
	}
	st := Step{Index: n, Value: v, Summary: sum, Ended: EndedFixed}
	f, ferr := stepFigures(sum)
	var settled bool
	var sv Verdict
	var why string
	if ws != nil {
		settled, sv, why, f.Growth = ws.w.outcome()
		switch {
		case settled && sum.EndedEarly > 0:
			st.Ended, st.Settled = EndedSettled, why
		case sum.ScheduleSpan >= 0.99*s.c.StepMax.Seconds():
			st.Ended, settled = EndedMax, false
		default:
			st.Ended, settled = EndedSchedule, false
		}
	}
	st.Figures = f
	st.Verdict, st.Reasons = judge(s.c, &f)
	if settled && sv == Fail && st.Verdict == Pass {
		st.Verdict, st.Reasons = Fail, []string{why}
	}
	if ferr != nil {
		st.Reasons = append(st.Reasons, "summary: "+ferr.Error())
	}
	st.Seconds = time.Since(began).Seconds()
	s.res.Steps = append(s.res.Steps, st)
	s.logStep(&st)
	switch st.Verdict {
	case Incomplete:
		s.interrupted(ctx)
		return st.Verdict, errStop
	case Client:
		s.res.Stopped = "client"
		s.res.StopReason = fmt.Sprintf("the client could not keep its schedule at %s %s (%s): this is the client's limit, not the server's; split the load across machines with --shard (docs/SCALE_OUT.md)",
			s.c.Variable, fmtValue(s.c.Variable, v), joinReasons(st.Reasons))
		return st.Verdict, errStop
	}
	return st.Verdict, nil
}

func (s *search) interrupted(ctx context.Context) {
	s.res.Stopped = "interrupted"
	s.res.StopReason = "the sweep was stopped before its search ended; the answer is from the finished steps"
	if errors.Is(context.Cause(ctx), ErrMaxDuration) {
		s.res.StopReason = "--max-duration reached; the answer is from the finished steps"
	}
}

// ErrMaxDuration is the cause of a sweep's context that ran out of
// --max-duration.
var ErrMaxDuration = errors.New("the sweep's --max-duration is reached")

func (s *search) logStep(st *Step) {
	if s.c.Logf == nil {
		return
	}
	f := &st.Figures
	good := ""
	if f.GoodputShare != nil {
		good = fmt.Sprintf(", goodput %.1f %%", 100**f.GoodputShare)
	}
	why := ""
	if len(st.Reasons) > 0 {
		why = ": " + joinReasons(st.Reasons)
	}
	s.c.Logf("sweep: step %d: %s %s: offered %.2f req/s, achieved %.2f req/s%s, TTFT p99 %.1f ms: %s%s",
		st.Index, s.c.Variable, fmtValue(s.c.Variable, st.Value), f.Offered, f.Achieved, good, f.TTFT.P99, st.Verdict, why)
}

// list runs every value of c.Values in increasing order.
func (s *search) list(ctx context.Context) error {
	vals := slices.Clone(s.c.Values)
	slices.Sort(vals)
	vals = slices.Compact(vals)
	for _, v := range vals {
		if _, err := s.step(ctx, v); err != nil {
			return ignoreStop(err)
		}
	}
	return nil
}

// bisect brackets the capacity, then bisects to the tolerance. The
// bracket starts from Little's law's estimate when the probe gives one
// (bracketFrom), else at Min, growing geometrically until a step fails
// (or Max passes: doubling).
func (s *search) bisect(ctx context.Context) error {
	c := s.c
	st := s.start(ctx)
	s.res.Start = st
	if c.Logf != nil {
		c.Logf("sweep: starting at %s %s: %s", c.Variable, fmtValue(c.Variable, st.Value), st.Why)
	}
	var lo, hi float64 // highest passing, lowest failing (0: none yet)
	var err error
	if st.Estimate > 0 {
		lo, hi, err = s.bracketFrom(ctx, st)
	} else {
		lo, hi, err = s.doubling(ctx, st.Value)
	}
	if err != nil {
		return ignoreStop(err)
	}
	if lo == 0 || hi == 0 {
		return nil // even the lowest load fails, or none up to the bound
	}
	if err := s.bisectBetween(ctx, lo, hi); err != nil {
		return err
	}
	return s.remeasure(ctx)
}

// MaxRemeasured is how many contradicted steps a search measures again.
const MaxRemeasured = 2

// remeasure runs again, once each, the steps that failed on growth alone
// below a passing step (a verdict its neighbours above contradict: near
// the knee a stable queue wanders), lowest first, at most MaxRemeasured.
func (s *search) remeasure(ctx context.Context) error {
	for range MaxRemeasured {
		var bad *Step
		for i := range s.res.Steps {
			st := &s.res.Steps[i]
			if st.Verdict != Fail || st.RemeasuredBy > 0 || !growthOnly(st.Reasons) || (bad != nil && bad.Value <= st.Value) {
				continue
			}
			for j := range s.res.Steps {
				if o := &s.res.Steps[j]; o.Verdict == Pass && o.Value > st.Value && o.RemeasuredBy == 0 {
					bad = st
					break
				}
			}
		}
		if bad == nil {
			return nil
		}
		idx, v := bad.Index, bad.Value
		if s.c.Logf != nil {
			s.c.Logf("sweep: step %d failed on growth alone below a passing step: measuring %s %s again", idx, s.c.Variable, fmtValue(s.c.Variable, v))
		}
		if _, err := s.step(ctx, v); err != nil {
			return ignoreStop(err)
		}
		s.res.Steps[idx-1].RemeasuredBy = len(s.res.Steps)
	}
	return nil
}

// growthOnly reports whether a step failed on latency growth alone.
func growthOnly(reasons []string) bool {
	for _, r := range reasons {
		if !strings.HasPrefix(r, "latency growing") {
			return false
		}
	}
	return len(reasons) > 0
}

// bisectBetween bisects between the loads lo (passing) and hi (failing).
func (s *search) bisectBetween(ctx context.Context, lo, hi float64) error {
	c := s.c
	if !(lo > 0 && hi > lo) {
		return nil
	}
	// A budget of bisection steps: the realized loads of steps that end
	// when settled wander around their nominal ones, so the bracket may
	// shrink slower than by half at each step.
	budget := 2 + int(math.Ceil(math.Log2(math.Log(hi/lo)/math.Log1p(c.Tolerance))))
	// The nominal values of the bracket: the highest passing step's and
	// the lowest failing step's above it. The next step halves it. A
	// bursty schedule's realized load jumps where a burst enters a step's
	// window, so the middle of the realized-load bracket, mapped back by
	// the steps' mean ratio, can fall outside the nominal bracket or crawl
	// along one end of it; the search ends once either bracket is within
	// the tolerance.
	loV, hiV := s.nominalBracket()
	for ; budget > 0; budget-- {
		mid := s.nominal((lo + hi) / 2)
		if loV > 0 && hiV > loV {
			mid = s.round((loV + hiV) / 2)
		}
		if (hi-lo)/lo <= c.Tolerance || (loV > 0 && hiV > loV && (hiV-loV)/loV <= c.Tolerance) || s.ran(mid) {
			return nil
		}
		verdict, err := s.step(ctx, mid)
		if err != nil {
			return ignoreStop(err)
		}
		if l := s.load(mid); verdict == Pass {
			lo, loV = max(lo, l), max(loV, mid)
		} else {
			hi, hiV = min(hi, l), minPositive(hiV, mid)
		}
		if lo >= hi { // a step's realized load crossed the bracket: no finer answer
			return nil
		}
	}
	return nil
}

// nominalBracket is the highest passing step's value and the lowest
// failing step's value above it (0: none).
func (s *search) nominalBracket() (lo, hi float64) {
	for i := range s.res.Steps {
		if st := &s.res.Steps[i]; st.Verdict == Pass {
			lo = max(lo, st.Value)
		}
	}
	for i := range s.res.Steps {
		if st := &s.res.Steps[i]; st.Verdict == Fail && st.Value > lo {
			hi = minPositive(hi, st.Value)
		}
	}
	return lo, hi
}

// minPositive is the smaller of a and b, b when a is 0 (none yet).
func minPositive(a, b float64) float64 {
	if a == 0 {
		return b
	}
	return min(a, b)
}

// load is the load a step at v put on the server: for a rate, the rate
// its schedule offered up to its end (a step that ended when settled sent
// the first seconds of its schedule, whose realized rate is off its
// nominal one by counting noise), else v.
func (s *search) load(v float64) float64 {
	if s.c.Variable != Rate {
		return v
	}
	for i := len(s.res.Steps) - 1; i >= 0; i-- {
		if st := &s.res.Steps[i]; st.Value == v && st.Figures.Offered > 0 {
			return st.Figures.Offered
		}
	}
	return v
}

// nominal is the value to run for a load l: l scaled by the steps' mean
// ratio of nominal to realized load (1 for other variables), rounded.
func (s *search) nominal(l float64) float64 {
	if s.c.Variable != Rate {
		return s.round(l)
	}
	var sum float64
	n := 0
	for i := range s.res.Steps {
		st := &s.res.Steps[i]
		if r := st.Value / st.Figures.Offered; st.Figures.Offered > 0 && r > 0.5 && r < 2 {
			sum += r
			n++
		}
	}
	if n > 0 {
		l *= sum / float64(n)
	}
	return s.round(l)
}

// ran reports whether a step already ran at v.
func (s *search) ran(v float64) bool {
	for i := range s.res.Steps {
		if s.res.Steps[i].Value == v {
			return true
		}
	}
	return false
}

// doubling brackets the capacity by growing the load geometrically from
// v until a step fails (or Max passes); it returns the loads (load) of
// the highest passing and the failing step.
func (s *search) doubling(ctx context.Context, v float64) (lo, hi float64, err error) {
	c := s.c
	for {
		verdict, err := s.step(ctx, v)
		if err != nil {
			return lo, hi, err
		}
		if verdict == Fail {
			return lo, s.load(v), nil
		}
		lo = s.load(v)
		if v >= c.Max {
			return lo, 0, nil // no failure up to the bound
		}
		next := s.round(math.Min(v*c.Growth, c.Max))
		if next <= v {
			return lo, 0, nil
		}
		v = next
	}
}

// round rounds a load to what the variable takes: whole numbers of
// requests in flight, else four significant digits.
func (s *search) round(v float64) float64 {
	if s.c.Variable == MaxConcurrency {
		return math.Floor(v)
	}
	if v <= 0 {
		return v
	}
	e := math.Pow(10, math.Floor(math.Log10(v))-3)
	return math.Round(v/e) * e
}

func ignoreStop(err error) error {
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

// answer sets the capacity, the diagnosis and the line from the steps: the
// capacity is the highest passing step below the lowest failing one.
func (s *search) answer() {
	r := s.res
	failed := math.Inf(1)
	for _, st := range r.Steps {
		if st.Verdict == Fail && st.RemeasuredBy == 0 && st.Value < failed {
			failed = st.Value
		}
	}
	var best *Step
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.Verdict == Pass && st.RemeasuredBy == 0 && st.Value < failed && (best == nil || st.Value > best.Value) {
			best = st
		}
	}
	if !math.IsInf(failed, 1) {
		r.FailedAt = failed
	}
	if best != nil {
		r.Capacity = &Answer{Value: best.Value, Rate: best.Figures.Achieved, Step: best.Index, AtLeast: r.FailedAt == 0}
	}
	r.Limit = diagnose(r)
	r.Line = line(s.c, r)
}
