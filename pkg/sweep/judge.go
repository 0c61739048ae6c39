package sweep

import (
	"fmt"
	"math"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// The rule of a step without --goodput targets (docs/CAPACITY.md).
const (
	// ThroughputShare is the share of the offered rate a step must
	// achieve.
	ThroughputShare = 0.95
	// ThroughputSigmas: a shortfall below ThroughputShare fails a step
	// only when the requests missing (offered rate × busy time − completed)
	// are more than ThroughputSigmas standard deviations of a count of
	// that size (√expected): on a short step a request or two finishing
	// late is counting noise, not a server falling behind.
	ThroughputSigmas = 2.0
	// GrowthFactor and GrowthFloorMS: latencies grow without bound when
	// the median wait of the step's last window is more than GrowthFactor
	// times that of its first and more than GrowthFloorMS above it.
	GrowthFactor  = 2.0
	GrowthFloorMS = 50.0
	// GrowthMinCompleted is the fewest completions a window needs to be
	// compared.
	GrowthMinCompleted = 10
)

// judge returns the verdict of a step and why it did not pass:
//
//   - Incomplete: the step was stopped before its end.
//   - Client: the client fell behind its schedule: its send-lag p90 over
//     the step exceeds MaxLag (p90, not p99, so that a few sends delayed by
//     the operating system on a busy machine do not stop a sweep, while a
//     client late on one send in ten does). The server is not blamed. The
//     run's own self-check (a lag p99 over 1 ms or CPU over 90 % in a
//     window) is reported with the step but does not stop a sweep: a
//     client short of CPU shows it as lag, and a few ms of lag do not move
//     a capacity. A step whose requests in flight reached --max-concurrency
//     is not judged on lag: its lag is queueing for a slot, by design.
//   - Fail: more failed requests than MaxErrorRate allows; an achieved
//     rate below ThroughputShare of the offered rate by more than counting
//     noise (ThroughputSigmas; not with max-concurrency; with
//     --cancel-share, of the offered rate of the requests not cut, which
//     alone can complete); with an SLO, a goodput share below MinGoodput;
//     without one, latencies growing (growth).
//   - Pass otherwise.
func judge(c *Config, f *Figures) (Verdict, []string) {
	if f.Interrupted {
		return Incomplete, []string{"stopped before its end"}
	}
	if f.LagP90 > c.MaxLag && !f.ConcurrencyBound {
		why := fmt.Sprintf("client behind its schedule: send lag p90 %.1f ms > %g ms", f.LagP90, c.MaxLag)
		if f.ClientCPUMax >= metrics.SaturationCPU {
			why += fmt.Sprintf(", client CPU %.0f %% of its cores", 100*f.ClientCPUMax)
		}
		return Client, []string{why}
	}
	var reasons []string
	if f.ErrorRate > c.MaxErrorRate {
		reasons = append(reasons, fmt.Sprintf("%d failed requests (error rate %.3f > %g)", f.Failed, f.ErrorRate, c.MaxErrorRate))
	}
	if c.SLO.Set() {
		switch {
		case f.GoodputShare == nil:
			reasons = append(reasons, "no goodput in the summary")
		case *f.GoodputShare < c.MinGoodput:
			reasons = append(reasons, fmt.Sprintf("goodput %.1f %% < %.0f %%", 100**f.GoodputShare, 100*c.MinGoodput))
		}
	}
	// A server that did not keep up with the offered rate would miss any
	// target on a longer step, SLO or not; with max-concurrency the client
	// holds requests back by design, so only the targets judge.
	if kept := f.keptShare(); c.Variable != MaxConcurrency && shortOfOffered(f, kept) {
		why := fmt.Sprintf("achieved %.2f req/s < %.0f %% of offered %.2f", f.Achieved, 100*ThroughputShare, f.Offered)
		if kept < 1 {
			why += fmt.Sprintf(" less the %.0f %% cancelled by the client", 100*(1-kept))
		}
		reasons = append(reasons, why)
	}
	switch {
	case f.Growth != nil && (!c.SLO.Set() || f.Growth.Lo > GrowthSlope):
		// The trend over the step (watch.go): growing when its estimate
		// is above GrowthSlope and its interval above 0 (with an SLO,
		// above GrowthSlope). Near the knee a stable queue wanders: a
		// step is failed on growth only when it surely grew.
		if g := f.Growth; g.Slope > GrowthSlope && g.Lo > 0 {
			reasons = append(reasons, fmt.Sprintf("latency growing: wait slope %.3f [%.3f, %.3f] > %g", g.Slope, g.Lo, g.Hi, GrowthSlope))
		}
	case !c.SLO.Set():
		if g, ok := growth(f.Windows); ok {
			reasons = append(reasons, g)
		}
	}
	if len(reasons) > 0 {
		return Fail, reasons
	}
	return Pass, nil
}

// shortOfOffered reports whether the step's achieved rate fell below
// ThroughputShare of its offered rate — of the kept share of it, the
// requests not cut by the client — by more than counting noise
// (ThroughputSigmas).
func shortOfOffered(f *Figures, kept float64) bool {
	offered := kept * f.Offered
	if f.Achieved >= ThroughputShare*offered {
		return false
	}
	if f.Achieved <= 0 {
		return true // nothing completed
	}
	busy := float64(f.Completed) / f.Achieved
	expected := offered * busy
	return expected-float64(f.Completed) > ThroughputSigmas*math.Sqrt(expected)
}

// growth reports whether latencies grew without bound over a step: the
// median wait (from the scheduled time to the first token) of the last
// window with at least GrowthMinCompleted completions against the first
// such window. Fewer than two such windows: not judged.
func growth(ws []Window) (string, bool) {
	first, last := -1, -1
	for i, w := range ws {
		if w.Completed >= GrowthMinCompleted {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 || last == first {
		return "", false
	}
	a, b := ws[first].Wait, ws[last].Wait
	if b > GrowthFactor*a && b-a > GrowthFloorMS {
		return fmt.Sprintf("latency growing: median wait %.0f ms in the last window against %.0f ms in the first", b, a), true
	}
	return "", false
}

func joinReasons(r []string) string { return strings.Join(r, "; ") }

// fmtValue formats a load value of v.
func fmtValue(v Variable, x float64) string {
	switch v {
	case MaxConcurrency:
		return fmt.Sprintf("%.0f", x)
	case TimeScale:
		return trimFloat(x, 3)
	}
	return trimFloat(x, 2)
}

// trimFloat formats x with at most prec decimals, without trailing zeros
// but at least two significant ones for small numbers.
func trimFloat(x float64, prec int) string {
	if x != 0 && math.Abs(x) < 1 {
		prec = max(prec, 2-int(math.Floor(math.Log10(math.Abs(x))))-1)
	}
	s := fmt.Sprintf("%.*f", prec, x)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}
