// Package plan answers how many replicas each window of a day's schedule
// needs within the SLO, given one replica's measured capacity curve; pure:
// no clock, no network.
//
// Burstiness is the coefficient of variation (CV) of the gaps between a
// window's consecutive arrivals. CV rather than an index of dispersion of
// counts because it is the unit the measurement controls: a Poisson-mode
// run with --burstiness k has Gamma gaps of CV 1/√k, so a point of the
// curve is measured at exactly the CV a window shows, and the CV needs no
// counting interval of its own (an index of dispersion changes with it).
package plan

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Config is what a plan is made from besides the schedule.
type Config struct {
	// Window is the length of a planning window (e.g. 5 minutes).
	Window time.Duration
	// Horizon is the length of the day planned; 0: up to the last arrival.
	Horizon time.Duration
	// Curve is one replica's capacity against burstiness.
	Curve *Curve
	// MinReplicas is the fewest replicas a window keeps (0: a window with
	// no request needs none).
	MinReplicas int
	// ScaleUpDelay is a reactive autoscaler's lead time: it sees the need
	// of the window at t only at t + ScaleUpDelay (0: no what-if).
	ScaleUpDelay time.Duration
	// ScaleDownDelay is the plan's scale-down stabilization window, as an
	// autoscaler holds one (Kubernetes' HPA: 5 minutes by default): a
	// window's replicas rise to its need at once, but fall to a lower
	// count only once that count has sufficed for the whole delay (see
	// Stabilize). 0: every window has its own count.
	ScaleDownDelay time.Duration
	// DefaultCV is the burstiness of a window with fewer than MinGaps gaps
	// (default 1: Poisson).
	DefaultCV float64
}

// MinGaps is the fewest gaps a window's CV is computed from; a window with
// fewer takes Config.DefaultCV.
const MinGaps = 10

// Window is one planning window.
type Window struct {
	StartS      float64 `json:"start_s"`
	EndS        float64 `json:"end_s"`
	Requests    int64   `json:"requests"`
	OfferedRate float64 `json:"offered_rate"`
	// Burstiness is the CV of the window's inter-arrival gaps.
	Burstiness float64 `json:"burstiness"`
	// ReplicaBurstiness is the burstiness each of the window's replicas
	// sees when the arrivals go round-robin over them: the CV of the
	// window's lag-n gaps (At[i] − At[i−n]) for n replicas.
	ReplicaBurstiness float64 `json:"replica_burstiness"`
	// Capacity is one replica's rate within the SLO at that burstiness.
	Capacity float64 `json:"capacity"`
	// Replicas is the window's own need: the fewest replicas that serve
	// its rate within the SLO.
	Replicas int `json:"replicas"`
	// Stabilized is the replicas the plan holds in the window: Replicas
	// with the scale-down delay (Config.ScaleDownDelay), never fewer.
	Stabilized int `json:"replicas_stabilized"`
	// Utilization is the offered rate over the replicas' capacity.
	Utilization float64 `json:"utilization"`
	// IdleShare is the mean share of the window a replica has no request
	// in flight (the arrivals round-robin over the window's replicas, each
	// request holding its replica TTFT + (n−1)·TPOT; queueing not counted).
	IdleShare float64 `json:"idle_share"`
	// Beyond: the window is burstier than the curve's last point (its
	// capacity is held at that point's: optimistic).
	Beyond bool `json:"beyond_curve,omitempty"`
	// Reactive is the replicas a reactive autoscaler has at the window's
	// start, and UnderMinutes how long in the window it has fewer than
	// Replicas (with ScaleUpDelay).
	Reactive     *int    `json:"reactive_replicas,omitempty"`
	UnderMinutes float64 `json:"under_provisioned_min,omitempty"`
	// fewerCV is the burstiness one replica fewer would each see (0: the
	// window has the fewest it may).
	fewerCV float64
}

// ScaleUp is the what-if of a reactive autoscaler with a lead time.
type ScaleUp struct {
	DelayS float64 `json:"delay_s"`
	// UnderMinutes is the time with fewer replicas than planned: SLO
	// violations; UnderWindows counts the windows it falls in, and
	// RequestsAtRisk the requests due then (each window's rate times its
	// under-provisioned time).
	UnderMinutes   float64 `json:"under_provisioned_min"`
	UnderWindows   int     `json:"under_provisioned_windows"`
	RequestsAtRisk float64 `json:"requests_at_risk"`
	// ReplicaHours are the autoscaler's.
	ReplicaHours float64 `json:"replica_hours"`
}

// Result is a planned day.
type Result struct {
	WindowS  float64 `json:"window_s"`
	HorizonS float64 `json:"horizon_s"`
	Requests int64   `json:"requests"`
	// BurstinessMeasure names the burstiness figure: "cv_of_gaps".
	BurstinessMeasure string   `json:"burstiness_measure"`
	Windows           []Window `json:"windows"`

	PeakReplicas int     `json:"peak_replicas"`
	PeakStartS   float64 `json:"peak_start_s"`
	PeakRate     float64 `json:"peak_rate"`
	// ReplicaHours are the plan's, StaticReplicaHours those of the peak
	// count all day; Saving is 1 − their ratio.
	ReplicaHours       float64 `json:"replica_hours"`
	StaticReplicaHours float64 `json:"static_replica_hours"`
	Saving             float64 `json:"saving"`
	// MeanUtilization and MeanIdleShare are replica-time weighted, over
	// the plan and over static peak provisioning.
	MeanUtilization       float64 `json:"mean_utilization"`
	MeanIdleShare         float64 `json:"mean_idle_share"`
	StaticMeanUtilization float64 `json:"static_mean_utilization"`
	// BurstinessLow, Typical and High are the 10th, 50th and 90th
	// percentiles of the windows' burstiness (requests weighted): where
	// the curve should be measured.
	BurstinessLow     float64 `json:"burstiness_p10"`
	BurstinessTypical float64 `json:"burstiness_p50"`
	BurstinessHigh    float64 `json:"burstiness_p90"`
	BurstinessMax     float64 `json:"burstiness_max"`
	BeyondCurve       int     `json:"windows_beyond_curve,omitempty"`
	// BelowCurve counts the windows whose replicas see a burstiness more
	// than 10 % below the curve's first point (capacity held there:
	// conservative).
	BelowCurve int `json:"windows_below_curve,omitempty"`

	ScaleUp *ScaleUp `json:"scale_up,omitempty"`
	Curve   *Curve   `json:"capacity_curve"`

	// ScaleDownDelayS is the scale-down delay the windows' Stabilized
	// counts hold (0: none). StabilizedReplicaHours are theirs, and
	// StabilizedSaving 1 − their ratio to StaticReplicaHours; ReplicaHours
	// and Saving stay those of every window's own count.
	ScaleDownDelayS        float64 `json:"scale_down_delay_s"`
	StabilizedReplicaHours float64 `json:"stabilized_replica_hours"`
	StabilizedSaving       float64 `json:"stabilized_saving"`
	// Runs are the stretches of consecutive windows holding the same
	// Stabilized count, in order: what an operator sets, and what the
	// table lists.
	Runs []Run `json:"replica_runs"`
}

// Run is a stretch of consecutive windows the plan holds at one count of
// replicas.
type Run struct {
	FromS    float64 `json:"from_s"`
	ToS      float64 `json:"to_s"`
	Replicas int     `json:"replicas"`
	Windows  int     `json:"windows"`
	// PeakRate is the highest offered rate of its windows.
	PeakRate float64 `json:"peak_rate"`
	// NeedMin and NeedMax are the fewest and most replicas its windows
	// need on their own (NeedMin < Replicas: a scale-down held).
	NeedMin int `json:"need_min"`
	NeedMax int `json:"need_max"`
	// Beyond: some window of the run is burstier than the curve's last
	// point. UnderMinutes sums its windows' under-provisioned time (with
	// a scale-up delay).
	Beyond       bool    `json:"beyond_curve,omitempty"`
	UnderMinutes float64 `json:"under_provisioned_min,omitempty"`
}

// Validate returns every problem of c.
func (c *Config) Validate() error {
	var errs []error
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("--plan-window %v: want > 0", c.Window))
	}
	if c.Horizon < 0 {
		errs = append(errs, fmt.Errorf("plan horizon %v: want ≥ 0", c.Horizon))
	}
	if c.MinReplicas < 0 {
		errs = append(errs, fmt.Errorf("--min-replicas %d: want ≥ 0", c.MinReplicas))
	}
	if c.ScaleUpDelay < 0 {
		errs = append(errs, fmt.Errorf("--scale-up-delay %v: want ≥ 0", c.ScaleUpDelay))
	}
	if c.ScaleDownDelay < 0 {
		errs = append(errs, fmt.Errorf("--scale-down-delay %v: want ≥ 0", c.ScaleDownDelay))
	}
	if c.DefaultCV < 0 || math.IsNaN(c.DefaultCV) {
		errs = append(errs, fmt.Errorf("default burstiness %g: want ≥ 0", c.DefaultCV))
	}
	if c.Curve == nil || len(c.Curve.Points) == 0 {
		errs = append(errs, errors.New("no capacity curve"))
	}
	return errors.Join(errs...)
}

// MaxLag is the largest split whose per-replica burstiness is measured
// from the schedule (the CV of its lag-n gaps); a larger one scales the
// lag-MaxLag CV by √(MaxLag/n), as for a renewal process.
const MaxLag = 64

// gapStats accumulates one window's arrivals: for every lag n up to
// MaxLag, the sums of the gaps At[i] − At[i−n] and of their squares.
type gapStats struct {
	n          int64
	ring       [MaxLag]float64 // the last arrivals' times, s
	sum, sumSq [MaxLag]float64 // by lag − 1
	gaps       [MaxLag]int64
}

func (g *gapStats) add(at time.Duration) {
	t := at.Seconds()
	for lag := 1; lag <= MaxLag && int64(lag) <= g.n; lag++ {
		d := t - g.ring[(g.n-int64(lag))%MaxLag]
		g.gaps[lag-1]++
		g.sum[lag-1] += d
		g.sumSq[lag-1] += d * d
	}
	g.ring[g.n%MaxLag] = t
	g.n++
}

// cvLag is the coefficient of variation (population form) of the lag-n
// gaps: what one of n replicas sees when the arrivals go round-robin. With
// fewer than MinGaps such gaps it is def/√n.
func (g *gapStats) cvLag(n int, def float64) float64 {
	if n > MaxLag {
		return g.cvLag(MaxLag, def) * math.Sqrt(float64(MaxLag)/float64(n))
	}
	k := g.gaps[n-1]
	if k < MinGaps || g.sum[n-1] <= 0 {
		return def / math.Sqrt(float64(n))
	}
	m := g.sum[n-1] / float64(k)
	v := max(g.sumSq[n-1]/float64(k)-m*m, 0)
	return math.Sqrt(v) / m
}

// cv is the coefficient of variation of the window's gaps.
func (g *gapStats) cv(def float64) float64 { return g.cvLag(1, def) }

// MaxWindows is the most windows a plan has (each holds about 2 KB while
// it is measured): 366 days of 5-minute windows fit.
const MaxWindows = 1 << 17

// windowsError is a window too short for the horizon: more than MaxWindows.
func windowsError(window, horizon time.Duration) error {
	least := (horizon + MaxWindows - 1) / MaxWindows
	// Round up to a readable length.
	for _, u := range []time.Duration{time.Second, time.Millisecond, time.Microsecond} {
		if least >= u {
			least = (least + u - 1) / u * u
			break
		}
	}
	return fmt.Errorf("--plan-window %v: %v of schedule would be %d windows, more than the most a plan has (%d): want --plan-window ≥ %v",
		window, horizon, int64((horizon+window-1)/window), MaxWindows, least)
}

// Windows measures s per window: requests and burstiness (two passes are
// not needed: gaps are taken within a window). It returns the windows'
// statistics and the horizon, or an error if there would be more than
// MaxWindows.
func measure(s arrival.Schedule, c *Config) ([]gapStats, time.Duration, error) {
	h := c.Horizon
	if h == 0 {
		// A first walk finds the horizon, so that the windows are counted
		// before any is held.
		var last time.Duration
		n := 0
		for a := range s {
			last = max(last, a.At)
			n++
		}
		h = last
		if h == 0 && n > 0 {
			h = c.Window
		}
	}
	n := h/c.Window + 1
	if n > MaxWindows {
		return nil, 0, windowsError(c.Window, h)
	}
	ws := make([]gapStats, 0, n)
	for a := range s {
		if c.Horizon > 0 && a.At >= c.Horizon {
			continue
		}
		w := int(a.At / c.Window)
		for len(ws) <= w {
			ws = append(ws, gapStats{})
		}
		ws[w].add(a.At)
	}
	for time.Duration(len(ws))*c.Window < h {
		ws = append(ws, gapStats{})
	}
	return ws, h, nil
}

// Survey cuts s into c's windows and measures each one's requests, offered
// rate and burstiness (no curve needed), with the horizon planned.
func Survey(s arrival.Schedule, c Config) ([]Window, time.Duration, error) {
	ws, _, h, err := survey(s, c)
	return ws, h, err
}

func survey(s arrival.Schedule, c Config) ([]Window, []gapStats, time.Duration, error) {
	if c.DefaultCV == 0 {
		c.DefaultCV = 1
	}
	curve := c.Curve
	if c.Curve == nil {
		c.Curve = &Curve{Points: []Point{{Rate: 1}}} // not read
	}
	if err := c.Validate(); err != nil {
		return nil, nil, 0, err
	}
	c.Curve = curve
	stats, horizon, err := measure(s, &c)
	if err != nil {
		return nil, nil, 0, err
	}
	if len(stats) == 0 {
		return nil, nil, 0, errors.New("the schedule is empty: nothing to plan")
	}
	ws := make([]Window, len(stats))
	for i := range stats {
		g := &stats[i]
		start := time.Duration(i) * c.Window
		end := min(start+c.Window, max(horizon, start+1))
		w := &ws[i]
		w.StartS, w.EndS, w.Requests = start.Seconds(), end.Seconds(), g.n
		w.OfferedRate = float64(g.n) / (end - start).Seconds()
		w.Burstiness = g.cv(c.DefaultCV)
	}
	return ws, stats, horizon, nil
}

// Plan plans the day of schedule s.
func Plan(s arrival.Schedule, c Config) (*Result, error) {
	if c.DefaultCV == 0 {
		c.DefaultCV = 1
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	ws, stats, horizon, err := survey(s, c)
	if err != nil {
		return nil, err
	}
	r := &Result{WindowS: c.Window.Seconds(), HorizonS: horizon.Seconds(), BurstinessMeasure: "cv_of_gaps", Curve: c.Curve, Windows: ws}
	var capacityHours, loadHours float64
	for i := range ws {
		w := &ws[i]
		g := &stats[i]
		w.Replicas, w.ReplicaBurstiness, w.Capacity, w.Beyond = split(w.OfferedRate, c.MinReplicas, c.Curve, func(n int) float64 { return g.cvLag(n, c.DefaultCV) })
		if n := w.Replicas - 1; n >= max(c.MinReplicas, 1) {
			w.fewerCV = g.cvLag(n, c.DefaultCV)
		}
		if w.Beyond {
			r.BeyondCurve++
		}
		if w.Requests > 0 && w.ReplicaBurstiness < 0.9*c.Curve.Points[0].CV {
			r.BelowCurve++
		}
		if w.Replicas > 0 {
			w.Utilization = w.OfferedRate / (float64(w.Replicas) * w.Capacity)
		}
		r.Requests += w.Requests
		hours := (w.EndS - w.StartS) / 3600
		r.ReplicaHours += float64(w.Replicas) * hours
		capacityHours += float64(w.Replicas) * hours * w.Capacity
		loadHours += w.OfferedRate * hours
		if w.Replicas > r.PeakReplicas || (w.Replicas == r.PeakReplicas && w.OfferedRate > r.PeakRate) {
			r.PeakReplicas, r.PeakStartS, r.PeakRate = w.Replicas, w.StartS, w.OfferedRate
		}
	}
	idle(s, &c, r)
	r.StaticReplicaHours = float64(r.PeakReplicas) * horizon.Hours()
	if r.StaticReplicaHours > 0 {
		r.Saving = 1 - r.ReplicaHours/r.StaticReplicaHours
	}
	var idleHours, staticCap float64
	for i := range r.Windows {
		w := &r.Windows[i]
		hours := w.EndS/3600 - w.StartS/3600
		idleHours += float64(w.Replicas) * hours * w.IdleShare
		staticCap += float64(r.PeakReplicas) * hours * w.Capacity
	}
	if capacityHours > 0 {
		r.MeanUtilization = loadHours / capacityHours
	}
	if r.ReplicaHours > 0 {
		r.MeanIdleShare = idleHours / r.ReplicaHours
	}
	if staticCap > 0 {
		r.StaticMeanUtilization = loadHours / staticCap
	}
	r.BurstinessLow, r.BurstinessTypical, r.BurstinessHigh, r.BurstinessMax = BurstinessRange(r.Windows)
	if c.ScaleUpDelay > 0 {
		r.ScaleUp = reactive(r.Windows, c.Window, horizon, c.ScaleUpDelay)
	}
	stabilize(r, c.Window, c.ScaleDownDelay)
	return r, nil
}

// stabilize sets r's windows' Stabilized counts, their replica-hours and
// saving, and the runs of equal counts.
func stabilize(r *Result, window, delay time.Duration) {
	need := make([]int, len(r.Windows))
	for i := range r.Windows {
		need[i] = r.Windows[i].Replicas
	}
	held := Stabilize(need, window, delay)
	r.ScaleDownDelayS, r.StabilizedReplicaHours, r.Runs = delay.Seconds(), 0, nil
	for i := range r.Windows {
		w := &r.Windows[i]
		w.Stabilized = held[i]
		r.StabilizedReplicaHours += float64(w.Stabilized) * (w.EndS - w.StartS) / 3600
		n := len(r.Runs)
		if n == 0 || r.Runs[n-1].Replicas != w.Stabilized {
			r.Runs = append(r.Runs, Run{FromS: w.StartS, Replicas: w.Stabilized, NeedMin: w.Replicas, NeedMax: w.Replicas})
			n++
		}
		run := &r.Runs[n-1]
		run.ToS, run.Windows = w.EndS, run.Windows+1
		run.PeakRate = max(run.PeakRate, w.OfferedRate)
		run.NeedMin, run.NeedMax = min(run.NeedMin, w.Replicas), max(run.NeedMax, w.Replicas)
		run.Beyond = run.Beyond || w.Beyond
		run.UnderMinutes += w.UnderMinutes
	}
	if r.StaticReplicaHours > 0 {
		r.StabilizedSaving = max(1-r.StabilizedReplicaHours/r.StaticReplicaHours, 0) // never above static: 0, not −0, when equal
	}
}

// Stabilize returns the replicas an autoscaler with a scale-down
// stabilization window of delay holds over windows of length window whose
// own needs are need: it scales up at once, and down to a lower count only
// once that count has sufficed for the whole delay. Window i holds the
// most that windows i−k … i need, k = ⌈delay / window⌉: a drop at a
// window's start is followed after exactly the delay when the delay is a
// whole number of windows, else at the first window start past it. A delay
// of 0 returns need's counts.
func Stabilize(need []int, window, delay time.Duration) []int {
	out := make([]int, len(need))
	if delay <= 0 || window <= 0 {
		copy(out, need)
		return out
	}
	k := int64(delay / window)
	if delay%window != 0 {
		k++
	}
	// A deque of indices whose needs decrease: its front is the most
	// needed within the last k windows (O(1) amortised a window).
	var dq []int
	for i, n := range need {
		for len(dq) > 0 && need[dq[len(dq)-1]] <= n {
			dq = dq[:len(dq)-1]
		}
		dq = append(dq, i)
		if int64(i-dq[0]) > k {
			dq = dq[1:]
		}
		out[i] = need[dq[0]]
	}
	return out
}

// split is the fewest replicas, at least least, that serve rate when the
// arrivals go round-robin over them: n replicas each see rate/n with the
// burstiness cvOf(n) (the CV of the window's lag-n gaps), and serve up to
// the curve's capacity at it. It returns n, that burstiness, the capacity
// and whether the burstiness lies beyond the curve.
func split(rate float64, least int, c *Curve, cvOf func(n int) float64) (n int, cv, capacity float64, beyond bool) {
	n = max(least, 1)
	if rate <= 0 {
		n = least
		cv = cvOf(max(n, 1))
		capacity, beyond = c.At(cv)
		return n, cv, capacity, beyond
	}
	// n = ⌈rate / the curve's lowest capacity⌉ always serves: stop there.
	upper := max(Replicas(rate, c.Points[len(c.Points)-1].Rate, least), n)
	for ; ; n++ {
		cv = cvOf(n)
		capacity, beyond = c.At(cv)
		if n >= upper || rate/float64(n) <= capacity*(1+1e-6) {
			return n, cv, capacity, beyond
		}
	}
}

// Replicas is the fewest replicas, at least least, whose capacity at the
// window's burstiness covers rate: ⌈rate / capacity⌉.
func Replicas(rate, capacity float64, least int) int {
	if rate <= 0 {
		return least
	}
	// A rate within a millionth above a multiple of the capacity is that
	// multiple (floating-point noise, not a need).
	n := int(math.Ceil(rate/capacity - 1e-6))
	return max(n, least, 1)
}

// BurstinessRange returns the 10th, 50th and 90th percentiles of the
// windows' burstiness, each window weighted by its requests, and the
// highest burstiness of a window with requests.
func BurstinessRange(ws []Window) (p10, p50, p90, top float64) {
	type wv struct {
		cv float64
		n  int64
	}
	var vs []wv
	var total int64
	for _, w := range ws {
		if w.Requests > 0 {
			vs = append(vs, wv{w.Burstiness, w.Requests})
			total += w.Requests
			top = max(top, w.Burstiness)
		}
	}
	if total == 0 {
		return
	}
	slices.SortFunc(vs, func(a, b wv) int { return cmp.Compare(a.cv, b.cv) })
	q := func(p float64) float64 {
		target := p * float64(total)
		var acc int64
		for _, v := range vs {
			acc += v.n
			if float64(acc) >= target {
				return v.cv
			}
		}
		return vs[len(vs)-1].cv
	}
	return q(0.1), q(0.5), q(0.9), top
}

// idle walks s again and sets each window's idle share: the arrivals go
// round-robin to the window's replicas, each keeping its replica busy for
// its service time; a replica's busy time is the union of its requests'.
func idle(s arrival.Schedule, c *Config, r *Result) {
	type replica struct {
		busyUntil, busy float64
	}
	cur := -1
	var reps []replica
	var next int
	flush := func() {
		if cur < 0 {
			return
		}
		w := &r.Windows[cur]
		if w.Replicas == 0 {
			return
		}
		length := w.EndS - w.StartS
		var busy float64
		for _, p := range reps {
			busy += min(p.busy, length)
		}
		w.IdleShare = 1 - busy/(length*float64(w.Replicas))
	}
	for i := range r.Windows {
		r.Windows[i].IdleShare = 1 // a window with no request
	}
	horizon := arrival.Seconds(r.HorizonS)
	for a := range s {
		if c.Horizon > 0 && a.At >= c.Horizon || a.At > horizon {
			continue
		}
		wi := min(int(a.At/c.Window), len(r.Windows)-1)
		if wi != cur {
			flush()
			cur, next = wi, 0
			reps = make([]replica, r.Windows[wi].Replicas)
		}
		if len(reps) == 0 {
			continue
		}
		p := &reps[next]
		next = (next + 1) % len(reps)
		t := a.At.Seconds()
		end := t + c.Curve.ServiceSeconds(a.OutputTokens)
		switch {
		case t >= p.busyUntil:
			p.busy += end - t
			p.busyUntil = end
		case end > p.busyUntil:
			p.busy += end - p.busyUntil
			p.busyUntil = end
		}
	}
	flush()
}

// reactive is the what-if of an autoscaler that provisions, at time t, the
// replicas of the window holding t − delay (the first window's before
// that): the time and requests it leaves under-provisioned.
func reactive(ws []Window, window, horizon, delay time.Duration) *ScaleUp {
	su := &ScaleUp{DelayS: delay.Seconds()}
	need := func(t time.Duration) int { // the plan's replicas at t
		i := min(int(max(t, 0)/window), len(ws)-1)
		return ws[i].Replicas
	}
	// Segment boundaries: every window edge and every window edge shifted
	// by the delay.
	for i := range ws {
		w := &ws[i]
		start := time.Duration(i) * window
		end := min(start+window, max(horizon, start+1))
		have0 := need(start - delay)
		w.Reactive = &have0
		var under time.Duration
		t := start
		for t < end {
			// The next change of the autoscaler's count is the next edge
			// of the shifted windows.
			k := (t-delay)/window + 1
			next := min(k*window+delay, end)
			if t-delay < 0 {
				next = min(delay, end)
			}
			if next <= t {
				next = end
			}
			have := need(t - delay)
			hours := (next - t).Hours()
			su.ReplicaHours += float64(have) * hours
			if have < w.Replicas {
				under += next - t
			}
			t = next
		}
		if under > 0 {
			w.UnderMinutes = under.Minutes()
			su.UnderMinutes += under.Minutes()
			su.UnderWindows++
			su.RequestsAtRisk += w.OfferedRate * under.Seconds()
		}
	}
	return su
}

// BelowPoints returns where a curve should be measured next when the
// replicas of r's windows see a burstiness more than 10 % below its first
// point, where their capacity is held at it (conservative). A point there
// changes a window's replicas only when one replica fewer would also see
// less than the first point — its capacity, held too, is what turned the
// fewer down — and, with a ceiling (req/s, 0: none) no replica exceeds,
// when the fewer could carry the window's rate under it. BelowPoints
// returns the 10th, 50th and 90th percentiles of those fewer replicas'
// CVs, requests weighted, within 10 % of each other taken once; none when
// no window's replicas could change.
func BelowPoints(r *Result, ceiling float64) []float64 {
	first := r.Curve.Points[0].CV
	var below []Window
	for _, w := range r.Windows {
		n := float64(w.Replicas - 1)
		if w.Requests > 0 && w.fewerCV > 0 && w.fewerCV < 0.9*first && (ceiling <= 0 || w.OfferedRate/n <= ceiling) {
			w.Burstiness = w.fewerCV
			below = append(below, w)
		}
	}
	if len(below) == 0 {
		return nil
	}
	p10, p50, p90, _ := BurstinessRange(below)
	return Spread([]float64{p10, p50, p90}, 0.1)
}
