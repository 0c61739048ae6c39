package sweep

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// line is the answer in one line the user can paste.
func line(c *Config, r *Result) string {
	var b strings.Builder
	b.WriteString("capacity: ")
	of := ""
	if r.Workload != "" {
		of = " of " + r.Workload
	}
	switch a := r.Capacity; {
	case a == nil && r.FailedAt > 0:
		fmt.Fprintf(&b, "below %s %s%s (the lowest step failed)", r.Variable, fmtValue(r.Variable, r.FailedAt), of)
	case a == nil:
		b.WriteString("unknown (no step finished)")
	default:
		at := ""
		if a.AtLeast {
			at = "at least "
		}
		if r.Variable == MaxConcurrency {
			fmt.Fprintf(&b, "%s%s concurrent requests (%s req/s%s)", at, fmtValue(r.Variable, a.Value), trimFloat(a.Rate, 1), of)
		} else {
			fmt.Fprintf(&b, "%s%s req/s (%s %s%s)", at, trimFloat(a.Rate, 1), r.Variable, fmtValue(r.Variable, a.Value), of)
		}
	}
	b.WriteString(" with ")
	b.WriteString(criterion(c))
	if d := r.Limit; d != nil {
		switch d.Kind {
		case "not-reached":
			b.WriteString("; limited by: not reached (no step failed)")
		default:
			fmt.Fprintf(&b, "; limited by: %s (%s)", d.Kind, d.Detail)
		}
	}
	if r.Stopped != "" {
		fmt.Fprintf(&b, "; stopped: %s", r.StopReason)
	}
	if busy := BusyText(r.Steps); busy != "" {
		b.WriteString("; " + busy)
	}
	return b.String()
}

// BusySteps counts the steps whose run found the machine busy — send lag
// from other processes while the client kept up (metrics.Saturation's
// MachineBusy) — among the steps.
func BusySteps(steps []Step) (busy int) {
	for i := range steps {
		if s := steps[i].Summary; s != nil && s.Saturation != nil && s.Saturation.MachineBusy {
			busy++
		}
	}
	return busy
}

// BusyText says how many of the steps ran on a busy machine ("" when
// none): their send lag came from other processes, so their latencies
// from the scheduled time include it and their capacity may be low.
func BusyText(steps []Step) string {
	busy := BusySteps(steps)
	switch {
	case busy == 0:
		return ""
	case busy == len(steps):
		return "every step ran on a busy machine (send lag from other processes: the capacity may be understated)"
	}
	return fmt.Sprintf("%d of %d steps ran on a busy machine (send lag from other processes: the capacity may be understated)", busy, len(steps))
}

// criterion says what a passing step met.
func criterion(c *Config) string {
	if !c.SLO.Set() {
		return fmt.Sprintf("achieved ≥ %.0f %% of offered and no growing latency", 100*ThroughputShare)
	}
	var parts []string
	for _, k := range []string{"ttft", "tpot", "e2el"} {
		if v, ok := c.SLO.Targets()[k]; ok {
			parts = append(parts, fmt.Sprintf("%s ≤ %s ms", k, trimFloat(v, 1)))
		}
	}
	return fmt.Sprintf("%s for ≥ %.0f %% of requests", strings.Join(parts, " and "), 100*c.MinGoodput)
}

// WriteTable writes the steps in load order, one a row, then the answer.
func WriteTable(w io.Writer, r *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\t"+string(r.Variable)+"\toffered/s\tachieved/s\tgoodput\tTTFT p50\tp99\tTPOT p50\tp99\tE2E p50\tp99\trunning\twaiting\tKV max\tlag p99\tverdict\ttime\tended\t")
	for _, st := range sortedSteps(r.Steps) {
		f := &st.Figures
		good := "–"
		if f.GoodputShare != nil {
			good = fmt.Sprintf("%.1f%%", 100**f.GoodputShare)
		}
		run, wait, kv := "–", "–", "–"
		if sv := f.Server; sv != nil {
			run, wait, kv = fmt.Sprintf("%.0f", sv.RunningMax), fmt.Sprintf("%.0f", sv.WaitingMax), fmt.Sprintf("%.0f%%", 100*sv.KVCacheMax)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			st.Index, fmtValue(r.Variable, st.Value), f.Offered, f.Achieved, good,
			ms(f.TTFT.P50, f.NoTokens), ms(f.TTFT.P99, f.NoTokens), ms(f.TPOT.P50, f.NoTokens), ms(f.TPOT.P99, f.NoTokens),
			ms(f.E2E.P50, false), ms(f.E2E.P99, false), run, wait, kv, ms(f.LagP99, false), st.Verdict, secs(st.Seconds), or(st.Ended, "–"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(latencies in ms; running, waiting and KV: the server's maxima over the step; time: the step's wall time in s)")
	for _, st := range sortedSteps(r.Steps) {
		if st.RemeasuredBy > 0 {
			fmt.Fprintf(w, "step %d: %s: %s; measured again at step %d (it failed on growth alone below a passing step)\n", st.Index, st.Verdict, joinReasons(st.Reasons), st.RemeasuredBy)
		} else if len(st.Reasons) > 0 {
			fmt.Fprintf(w, "step %d: %s: %s\n", st.Index, st.Verdict, joinReasons(st.Reasons))
		} else if st.Settled != "" {
			fmt.Fprintf(w, "step %d: %s: settled: %s\n", st.Index, st.Verdict, st.Settled)
		}
	}
	for _, l := range r.Notes() {
		fmt.Fprintln(w, l)
	}
	_, err := fmt.Fprintln(w, r.Line)
	return err
}

// Notes are the lines that follow the table: where the search started,
// the bracket the answer lies in and the time spent.
func (r *Result) Notes() []string {
	var out []string
	if st := r.Start; st != nil {
		out = append(out, fmt.Sprintf("start: %s %s: %s", r.Variable, fmtValue(r.Variable, st.Value), st.Why))
	}
	if b := r.BracketText(); b != "" {
		out = append(out, b)
	}
	if t := r.TimeText(); t != "" {
		out = append(out, t)
	}
	if r.Caveat != "" {
		out = append(out, "note: "+r.Caveat)
	}
	return out
}

// BracketText says between which steps the answer lies: the highest
// passing step (the answer's) and the lowest failing one, with their
// offered rates ("" with neither).
func (r *Result) BracketText() string {
	var pass, fail *Step
	for i := range r.Steps {
		st := &r.Steps[i]
		if r.Capacity != nil && st.Index == r.Capacity.Step {
			pass = st
		}
		if st.Verdict == Fail && st.Value == r.FailedAt && fail == nil {
			fail = st
		}
	}
	side := func(st *Step) string {
		return fmt.Sprintf("%s %s (offered %.2f req/s, step %d)", r.Variable, fmtValue(r.Variable, st.Value), st.Figures.Offered, st.Index)
	}
	switch {
	case pass != nil && fail != nil:
		return fmt.Sprintf("bracket: last pass at %s, first fail at %s: %.1f %% apart", side(pass), side(fail), 100*(fail.Figures.Offered/pass.Figures.Offered-1))
	case pass != nil:
		return "bracket: last pass at " + side(pass) + ", no step failed"
	case fail != nil:
		return "bracket: first fail at " + side(fail) + ", no step passed"
	}
	return ""
}

// TimeText says how long the sweep took: in total, in its steps and its
// probe ("" for a sweep saved before it was measured).
func (r *Result) TimeText() string {
	if !(r.Seconds > 0) {
		return ""
	}
	steps := 0.0
	for i := range r.Steps {
		steps += r.Steps[i].Seconds
	}
	probe := ""
	if r.Start != nil && r.Start.Probe != nil {
		probe = fmt.Sprintf(", the probe %.1f s", r.Start.Probe.Seconds)
	}
	return fmt.Sprintf("time: %.1f s in all: %d steps %.1f s%s", r.Seconds, len(r.Steps), steps, probe)
}

func secs(v float64) string {
	if !(v > 0) {
		return "–"
	}
	return fmt.Sprintf("%.1f", v)
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func ms(v float64, absent bool) string {
	if absent || math.IsNaN(v) {
		return "–"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// sortedSteps returns the steps in load order (ties in run order).
func sortedSteps(steps []Step) []Step {
	out := append([]Step(nil), steps...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Value < out[j-1].Value; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// SortedSteps returns r's steps in load order.
func (r *Result) SortedSteps() []Step { return sortedSteps(r.Steps) }
