package plan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ClockTime formats an offset in seconds as h:mm (or d+h:mm past a day),
// h:mm:ss when it is not a whole minute.
func ClockTime(s float64) string {
	if sec := int(s) % 60; sec != 0 {
		return fmt.Sprintf("%s:%02d", ClockTime(s-float64(sec)), sec)
	}
	m := int(s / 60)
	if d := m / (24 * 60); d > 0 {
		return fmt.Sprintf("%d+%d:%02d", d, m/60%24, m%60)
	}
	return fmt.Sprintf("%d:%02d", m/60, m%60)
}

// MaxRows is the most runs of equal replicas WriteTable lists; a day with
// more lists the first ones and the peak's (all are in the plan's JSON).
const MaxRows = 48

// writeRuns lists the plan's runs of equal replicas: from–to, the
// replicas held, the windows, the peak rate, what the windows need on
// their own, and the reactive autoscaler's under-provisioned minutes.
func writeRuns(b *strings.Builder, r *Result) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	reactive := r.ScaleUp != nil
	head := "from\tto\treplicas\twindows\tpeak rate/s\tneed\t"
	if reactive {
		head += "under min\t"
	}
	fmt.Fprintln(tw, head)
	skipped := 0
	for i, run := range r.Runs {
		if len(r.Runs) > MaxRows && i >= MaxRows-1 && !(run.FromS <= r.PeakStartS && r.PeakStartS < run.ToS) {
			skipped++
			continue
		}
		need := fmt.Sprint(run.NeedMax)
		if run.NeedMin != run.NeedMax {
			need = fmt.Sprintf("%d–%d", run.NeedMin, run.NeedMax)
		}
		if run.Beyond {
			need += "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.2f\t%s\t", ClockTime(run.FromS), ClockTime(run.ToS), run.Replicas, run.Windows, run.PeakRate, need)
		if reactive {
			fmt.Fprintf(tw, "%.1f\t", run.UnderMinutes)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	held := "every window at its own need (--scale-down-delay 0)"
	if r.ScaleDownDelayS > 0 {
		held = "a scale-down held " + hours(r.ScaleDownDelayS) + " (--scale-down-delay)"
	}
	fmt.Fprintf(b, "(%d runs of equal replicas over %d windows of %s, %s; need: the windows' own counts; per-window figures in --plan-json)\n",
		len(r.Runs), len(r.Windows), hours(r.WindowS), held)
	if skipped > 0 {
		fmt.Fprintf(b, "(%d runs not listed: more than %d; the peak's is)\n", skipped, MaxRows)
	}
}

// WriteTable prints the plan: the curve, the windows, the day's totals
// and the what-if of a reactive autoscaler. name names the workload.
func WriteTable(w io.Writer, r *Result, name string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "plan: %s over %s in windows of %s: %d requests\n", name, hours(r.HorizonS), hours(r.WindowS), r.Requests)
	c := r.Curve
	if busy := c.BusyText(); busy != "" {
		fmt.Fprintf(&b, "note: %s\n", busy)
	}
	fmt.Fprintf(&b, "capacity of one replica (req/s within the SLO%s) against burstiness (CV of the gaps):\n", sloText(c.SLO))
	for _, p := range c.Points {
		extra := ""
		if p.Measured > 0 {
			extra = fmt.Sprintf(" (measured %.2f: held to the smoother point's)", p.Measured)
		}
		src := ""
		if p.Source != "" {
			src = "  " + p.Source
		}
		fmt.Fprintf(&b, "  CV %5.2f  %8.2f req/s%s%s\n", p.CV, p.Rate, extra, src)
	}
	fmt.Fprintf(&b, "  a request holds a slot %.1f ms + %.2f ms per output token after the first\n", c.TTFTms, c.TPOTms)
	fmt.Fprintf(&b, "replicas served round-robin: each of n sees every n-th arrival of its window (CV each: of the lag-n gaps)\n")
	writeRuns(&b, r)
	if r.BeyondCurve > 0 {
		fmt.Fprintf(&b, "* %d windows are burstier than the curve's last point: their capacity is held at it (optimistic); measure at a higher --plan-burstiness\n", r.BeyondCurve)
	}
	if r.BelowCurve > 0 {
		fmt.Fprintf(&b, "%d windows' replicas see less burstiness than the curve's first point: their capacity is held at it (conservative); a lower --plan-burstiness point would tighten them\n", r.BelowCurve)
	}
	fmt.Fprintf(&b, "burstiness of the day (CV, requests weighted): p10 %.2f, p50 %.2f, p90 %.2f, max %.2f\n", r.BurstinessLow, r.BurstinessTypical, r.BurstinessHigh, r.BurstinessMax)
	fmt.Fprintf(&b, "peak: %d replicas at %s (%.2f req/s)\n", r.PeakReplicas, ClockTime(r.PeakStartS), r.PeakRate)
	if r.ScaleDownDelayS > 0 {
		fmt.Fprintf(&b, "replica-hours: %.2f planned, holding a scale-down %s (%.2f were every window at its own need), vs %.2f static at the peak count (%.0f %% saved)\n",
			r.StabilizedReplicaHours, hours(r.ScaleDownDelayS), r.ReplicaHours, r.StaticReplicaHours, 100*r.StabilizedSaving)
	} else {
		fmt.Fprintf(&b, "replica-hours: %.2f planned vs %.2f static at the peak count (%.0f %% saved)\n", r.ReplicaHours, r.StaticReplicaHours, 100*r.Saving)
	}
	fmt.Fprintf(&b, "utilisation: %.0f %% of the planned replicas' capacity (%.0f %% of static provisioning's); idle share per replica %.0f %%\n", 100*r.MeanUtilization, 100*r.StaticMeanUtilization, 100*r.MeanIdleShare)
	if su := r.ScaleUp; su != nil {
		fmt.Fprintf(&b, "scale-up delay %s: a reactive autoscaler is under-provisioned %.1f min in %d windows (~%.0f requests at risk of missing the SLO); its replica-hours %.2f\n",
			hours(su.DelayS), su.UnderMinutes, su.UnderWindows, su.RequestsAtRisk, su.ReplicaHours)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func sloText(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// hours formats seconds as a short duration: 90 s, 5 min, 2.5 h.
func hours(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%g s", roundTo(s, 3))
	case s < 2*3600:
		return fmt.Sprintf("%g min", roundTo(s/60, 3))
	}
	return fmt.Sprintf("%g h", roundTo(s/3600, 3))
}

func roundTo(v float64, digits int) float64 {
	var x float64
	fmt.Sscanf(fmt.Sprintf("%.*g", digits, v), "%g", &x)
	return x
}
