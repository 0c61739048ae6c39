// Package merge combines the summaries of copies of one run (shards of one
// schedule, or any summaries that carry a merge_state) into one summary,
// exactly: from their histograms and counters, never their percentiles:
// the copies' states load into metrics' parts, and metrics.Assemble makes
// the merged summary as it makes a run's.
package merge

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// Input is a summary to merge and the name (file) it came from, which
// every error and warning about it gives.
type Input struct {
	Name    string
	Summary *metrics.Summary
}

// Result is a merged summary, what its inputs disagreed on (Warnings), and
// how figures that cannot be exact were combined (Notes). Both lists are in
// the summary too.
type Result struct {
	Summary  *metrics.Summary
	Warnings []string
	Notes    []string
}

// input is what Summaries reads of one summary before merging it.
type input struct {
	name      string
	s         *metrics.Summary
	st        metrics.MergeState
	shard     metrics.ShardInfo
	hash      string
	startAt   string
	start     time.Time
	windows   []metrics.WindowStats
	winStates map[int]metrics.WindowState
	winSecs   float64
}

// maxMergeWindows bounds the windows one summary may hold.
const maxMergeWindows = 10_000_000

// readInput checks one summary and reads what merging needs, without
// decoding its distributions yet.
func readInput(in Input) (*input, error) {
	s := in.Summary
	if s == nil {
		return nil, errors.New("no summary")
	}
	r := &input{name: in.Name, s: s, shard: metrics.ShardInfo{Count: 1, Indices: []int64{0}}}
	if s.MergeState == nil {
		return nil, fmt.Errorf("no %s: not a fineserve-gen run summary that can be merged (a summary written by --summary-json or --output-file holds it; a merge needs the summaries of the copies, not their results JSONL)", metrics.KeyMergeState)
	}
	r.st = *s.MergeState
	switch {
	case r.st.Version != metrics.MergeStateVersion:
		return nil, fmt.Errorf("%s version %d: this build reads version %d", metrics.KeyMergeState, r.st.Version, metrics.MergeStateVersion)
	case r.st.HistEncoding != metrics.HistEncoding:
		return nil, fmt.Errorf("%s: histograms in %q, want %q", metrics.KeyMergeState, r.st.HistEncoding, metrics.HistEncoding)
	case r.st.ElapsedNS < 0:
		return nil, fmt.Errorf("%s: elapsed_ns %d < 0", metrics.KeyMergeState, r.st.ElapsedNS)
	}
	if s.Shard != nil {
		r.shard = *s.Shard
		if err := r.shard.Check(); err != nil {
			return nil, err
		}
	}
	r.hash, r.startAt = s.ScheduleHash, s.StartAt
	var err error
	if r.start, err = time.Parse(time.RFC3339Nano, s.StartedAt); err != nil {
		return nil, fmt.Errorf("started_at %q: want an RFC 3339 time: %w", s.StartedAt, err)
	}
	r.winSecs, r.windows = s.WindowSeconds, s.Windows
	if len(r.windows) > maxMergeWindows {
		return nil, fmt.Errorf("%s: %d windows", metrics.KeyWindows, len(r.windows))
	}
	r.winStates = make(map[int]metrics.WindowState, len(r.st.Windows))
	for _, ws := range r.st.Windows {
		if _, dup := r.winStates[ws.Index]; dup {
			return nil, fmt.Errorf("%s: window %d twice", metrics.KeyMergeState, ws.Index)
		}
		r.winStates[ws.Index] = ws
	}
	seen := make(map[int]bool, len(r.windows))
	for _, w := range r.windows {
		switch {
		case seen[w.Index]:
			return nil, fmt.Errorf("%s: window %d twice", metrics.KeyWindows, w.Index)
		case w.Index < 0 || w.Index > maxMergeWindows:
			return nil, fmt.Errorf("%s: window index %d", metrics.KeyWindows, w.Index)
		case !(w.End >= w.Start && w.Start >= 0) || math.IsInf(w.End, 0):
			return nil, fmt.Errorf("%s: window %d from %g s to %g s", metrics.KeyWindows, w.Index, w.Start, w.End)
		}
		if _, ok := r.winStates[w.Index]; !ok {
			return nil, fmt.Errorf("%s: window %d has no distributions in %s", metrics.KeyWindows, w.Index, metrics.KeyMergeState)
		}
		seen[w.Index] = true
	}
	if len(seen) != len(r.winStates) {
		return nil, fmt.Errorf("%s holds %d windows, %s %d", metrics.KeyMergeState, len(r.winStates), metrics.KeyWindows, len(seen))
	}
	return r, nil
}

// end is when the run ended.
func (r *input) end() time.Time { return r.start.Add(time.Duration(r.st.ElapsedNS)) }

// Summaries merges the summaries of copies of one run — shards of one
// schedule, or any summaries that carry a merge_state — into one summary:
//
//   - distributions merge their histograms (never their percentiles), so
//     every percentile is that of one histogram holding all the values, and
//     means and standard deviations combine exactly from the moments;
//   - counts and tokens add; the duration is the union's, from the
//     earliest start to the latest end, and every throughput is over it;
//   - windows with the same index combine: counts add, rates are the sums
//     over the window, percentiles come from the merged window histograms;
//   - goodput, errors by class and the breakdowns (per_model, per_kind)
//     merge from their counts and histograms.
//
// What the inputs disagree on (schedule hash, seed, mode, start time,
// window length, goodput targets) and shards missing or given twice are
// warnings; a summary that cannot be read is an error naming it.
func Summaries(ins []Input) (*Result, error) {
	if len(ins) == 0 {
		return nil, errors.New("no summary to merge")
	}
	rs := make([]*input, 0, len(ins))
	for _, in := range ins {
		r, err := readInput(in)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in.Name, err)
		}
		rs = append(rs, r)
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].shard.Indices[0] < rs[j].shard.Indices[0] })
	m := &merger{rs: rs}
	m.check()
	return m.merge()
}

type merger struct {
	rs       []*input
	warnings []string
	notes    []string
}

func (m *merger) warnf(format string, a ...any) {
	m.warnings = append(m.warnings, fmt.Sprintf(format, a...))
}
func (m *merger) notef(format string, a ...any) { m.notes = append(m.notes, fmt.Sprintf(format, a...)) }

// disagree warns when the inputs do not all give the same value of what.
// It reports whether they agree.
func (m *merger) disagree(what, why string, val func(*input) string) bool {
	var order []string
	by := map[string][]string{}
	for _, r := range m.rs {
		v := val(r)
		if _, ok := by[v]; !ok {
			order = append(order, v)
		}
		by[v] = append(by[v], r.name)
	}
	if len(order) < 2 {
		return true
	}
	parts := make([]string, len(order))
	for i, v := range order {
		shown := v
		if shown == "" {
			shown = "none"
		}
		parts[i] = fmt.Sprintf("%s (%s)", shown, strings.Join(by[v], ", "))
	}
	m.warnf("the summaries disagree on %s: %s; %s", what, strings.Join(parts, "; "), why)
	return false
}

// check compares the inputs' identities and their shard coverage.
func (m *merger) check() {
	if len(m.rs) > 1 {
		m.checkIdentity()
	}
	if m.all(func(r *input) string { return strconv.FormatInt(r.shard.Count, 10) }) {
		m.checkCoverage()
	}
}

// checkIdentity warns about what the inputs disagree on.
func (m *merger) checkIdentity() {
	m.disagree("the schedule hash", "they did not run the same schedule (different seed, inputs or flags), so the merged figures mix different workloads",
		func(r *input) string { return r.hash })
	m.disagree("the seed", "copies of one run must share --seed", func(r *input) string { return strconv.FormatUint(r.s.Seed, 10) })
	m.disagree("the mode", "copies of one run must share --mode", func(r *input) string { return r.s.Mode })
	m.disagree("the backend", "copies of one run must share --backend", func(r *input) string { return r.s.Backend })
	m.disagree("the shard count N of --shard I/N", "shard coverage is not checked",
		func(r *input) string { return strconv.FormatInt(r.shard.Count, 10) })
	if m.disagree("the start time (--start-at)", "their windows are combined by their offset from each copy's own start",
		func(r *input) string { return r.startAt }) && m.rs[0].startAt == "" {
		first, last := m.rs[0].start, m.rs[0].start
		for _, r := range m.rs {
			first, last = minTime(first, r.start), maxTime(last, r.start)
		}
		m.warnf("no copy was given --start-at: they started %.3f s apart, and their windows are combined by their offset from each copy's own start (give every copy the same --start-at)",
			last.Sub(first).Seconds())
	}
	m.disagree("the window length (window_seconds)", "their windows are left out of the merged summary",
		func(r *input) string { return strconv.FormatFloat(r.winSecs, 'g', -1, 64) })
	m.disagree("the goodput targets", "goodput is merged from each copy's own targets", func(r *input) string {
		if r.st.Goodput == nil {
			return ""
		}
		return fmt.Sprint(r.st.Goodput.SLO)
	})
}

// checkCoverage warns about shards missing or given more than once.
func (m *merger) checkCoverage() {
	n := m.rs[0].shard.Count
	where := map[int64][]string{}
	for _, r := range m.rs {
		for _, i := range r.shard.Indices {
			where[i] = append(where[i], r.name)
		}
	}
	present := int64(0)
	for _, i := range slices.Sorted(maps.Keys(where)) {
		present++
		if files := where[i]; len(files) > 1 {
			m.warnf("shard %d/%d is in %s: its requests are counted %d times", i, n, strings.Join(files, " and "), len(files))
		}
	}
	var missing []string
	for i := int64(0); i < n && len(missing) < 20; i++ {
		if where[i] == nil {
			missing = append(missing, strconv.FormatInt(i, 10))
		}
	}
	if present < n {
		list := strings.Join(missing, ", ")
		if n-present > int64(len(missing)) {
			list += ", …"
		}
		m.warnf("%d of the %d shards missing (index %s): the merged summary covers %d of them", n-present, n, list, present)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// merge combines the inputs, one at a time so memory does not grow with
// their number: their parts are loaded from their states, the merged run's
// own figures are computed from their summaries (facts), and
// metrics.Assemble makes the summary.
func (m *merger) merge() (*Result, error) {
	start, end := m.rs[0].start, m.rs[0].end()
	for _, r := range m.rs {
		start, end = minTime(start, r.start), maxTime(end, r.end())
	}
	dur := end.Sub(start)

	parts := metrics.NewParts(metrics.PartsConfig{SLO: metrics.NoSLO})
	for _, r := range m.rs {
		if err := metrics.MergeParts(parts, &metrics.Copy{Name: r.name, Summary: r.s, State: &r.st, Offset: r.start.Sub(start), Warnf: m.warnf}); err != nil {
			return nil, err
		}
	}
	facts, windows, copied, err := m.facts(start, dur)
	if err != nil {
		return nil, err
	}
	servers, serversFrom := m.endpointServers()
	s, err := metrics.Assemble(metrics.Facts{Summary: facts, Elapsed: dur, Parts: parts, EndpointServers: servers, State: true, Windows: windows})
	if err != nil {
		return nil, err
	}
	for i := range s.Endpoints {
		if i < len(serversFrom) && serversFrom[i] != "" {
			if len(m.rs) > 1 {
				m.notef("%s' server_metrics are each endpoint's as the first copy that scraped it saw them (not merged)", metrics.KeyEndpoints)
			}
			break
		}
	}

	// A breakdown without its merge state is left out.
	for _, r := range m.rs {
		for _, k := range metrics.BreakdownKeys {
			if r.s.Breakdown(k) != nil && s.Breakdown(k) == nil && copied[k] == "" {
				m.warnf("%s: %s has no merge state: it is left out of the merged summary", r.name, k)
				copied[k] = "-"
			}
		}
	}
	if len(m.rs) > 1 {
		for _, k := range slices.Sorted(maps.Keys(copied)) {
			if copied[k] != "-" {
				m.notef("%s is %s's as it is (not merged)", k, copied[k])
			}
		}
	}
	// An input that is itself a merge keeps what its own merge said.
	for _, r := range m.rs {
		for _, w := range r.s.MergeWarnings {
			m.warnf("%s (an earlier merge): %s", r.name, w)
		}
	}
	s.MergeWarnings, s.MergeNotes = m.warnings, m.notes
	return &Result{Summary: s, Warnings: m.warnings, Notes: m.notes}, nil
}

// facts computes the merged run's own figures from the inputs' summaries
// (what its parts do not hold): identity, schedule keeping, windows and
// the client's self-check, the sections copied from the first input that
// has them (copied: by key, from which input) and what a merge adds
// (shard, merged_from). windows are the merged windows' states.
func (m *merger) facts(start time.Time, dur time.Duration) (s metrics.Summary, windows []metrics.WindowState, copied map[string]string, err error) {
	first := m.rs[0]
	s = metrics.Summary{
		Backend: first.s.Backend, Mode: first.s.Mode, Model: first.s.Model, Seed: first.s.Seed,
		Command: first.s.Command, Settings: first.s.Settings,
		SettingsFile: first.s.SettingsFile, FileSettings: first.s.FileSettings, EffectiveSettings: first.s.EffectiveSettings, RequestRate: first.s.RequestRate, Burstiness: first.s.Burstiness, PromptUnits: first.s.PromptUnits,
		StartedAt: start.UTC().Format(time.RFC3339Nano),
	}
	mc, allMC := 0, true
	for _, r := range m.rs {
		if r.s.MaxConcurrency == nil {
			allMC = false
		} else {
			mc += *r.s.MaxConcurrency
		}
		s.Scheduled += r.s.Scheduled
		s.NotSent += r.s.NotSent
		s.Queued += r.s.Queued
		s.MaxInFlight += r.s.MaxInFlight
		s.ScheduleSpan = max(s.ScheduleSpan, r.s.ScheduleSpan)
		s.Interrupted = s.Interrupted || r.s.Interrupted
	}
	if allMC {
		s.MaxConcurrency = &mc
	}
	if len(m.rs) > 1 {
		m.notef("duration is the union's, from the earliest start to the latest end (%.3f s); every throughput is over it", dur.Seconds())
		m.notef("max_concurrency and max_in_flight are the sums of the copies' (an upper bound of the requests in flight at once)")
	}
	if windows, err = m.setWindows(&s); err != nil {
		return s, nil, nil, err
	}
	cpu, haveCPU := 0.0, false
	for _, r := range m.rs {
		if r.s.ClientCPU != nil {
			cpu, haveCPU = max(cpu, *r.s.ClientCPU), true
		}
	}
	if haveCPU {
		s.ClientCPU = &cpu
		if len(m.rs) > 1 {
			m.notef("%s and each window's client_cpu are the busiest copy's (each copy runs on its own machine)", metrics.KeyClientCPU)
		}
	}

	// Sections the merge does not compute: taken from the first summary
	// that has them. The GPUs are the server's: every copy that watched
	// them saw the same devices, as with its metrics.
	copied = map[string]string{}
	for _, r := range m.rs {
		take := func(key string, found bool, set func()) {
			if _, done := copied[key]; found && !done {
				set()
				copied[key] = r.name
			}
		}
		take(metrics.KeyReplay, r.s.Replay != nil, func() { s.Replay = r.s.Replay })
		take(metrics.KeyTargetRate, r.s.TargetRate != nil, func() { s.TargetRate = r.s.TargetRate })
		take(metrics.KeyLengthMix, r.s.LengthMix != nil, func() { s.LengthMix = r.s.LengthMix })
		take(metrics.KeySharedPrefix, r.s.SharedPrefix != nil, func() { s.SharedPrefix = r.s.SharedPrefix })
		take(metrics.KeyServerMetrics, r.s.ServerMetrics != nil, func() { s.ServerMetrics = r.s.ServerMetrics })
		take(metrics.KeyGPU, r.s.GPU != nil, func() { s.GPU = r.s.GPU })
	}
	s.OTLP = m.otlp()

	// Identity.
	if m.all(func(r *input) string { return r.hash }) && first.hash != "" {
		s.ScheduleHash = first.hash
	}
	if m.all(func(r *input) string { return r.startAt }) && first.startAt != "" {
		s.StartAt = first.startAt
	}
	cov := m.coverage()
	s.Shard = &cov
	for _, r := range m.rs {
		s.MergedFrom = append(s.MergedFrom, metrics.MergedFrom{
			File: r.name, Shard: r.shard.String(), StartedAt: r.s.StartedAt, Duration: r.s.Duration,
			Completed: r.s.Completed, Failed: r.s.Failed, Seed: r.s.Seed, ScheduleHash: r.hash, Command: r.s.Command,
		})
	}
	return s, windows, copied, nil
}

// otlp adds up the copies' exports to an OpenTelemetry collector: each
// copy exported its own requests' spans (nil: none exported).
func (m *merger) otlp() *metrics.OTLPSummary {
	var out *metrics.OTLPSummary
	n := 0
	for _, r := range m.rs {
		o := r.s.OTLP
		if o == nil {
			continue
		}
		n++
		if out == nil {
			c := *o
			out = &c
			continue
		}
		if out.Endpoint != o.Endpoint || out.Sample != o.Sample || out.Traces != o.Traces {
			m.warnf("%s: %s: exported to %s (traces %v, sample %g), the first copy to %s (traces %v, sample %g): the counts are added", r.name, metrics.KeyOTLP, o.Endpoint, o.Traces, o.Sample, out.Endpoint, out.Traces, out.Sample)
		}
		out.Spans += o.Spans
		out.SampledOut += o.SampledOut
		out.Dropped += o.Dropped
		out.FailedExports += o.FailedExports
		if o.LastError != "" {
			out.LastError = o.LastError
		}
	}
	if n > 1 {
		m.notef("%s: the spans, sampled-out, dropped and failed exports are the sums of %d copies'", metrics.KeyOTLP, n)
	}
	return out
}

// setWindows merges the inputs' windows into s, with the client's
// self-check they show and the live intervals every input flagged, and
// returns the merged windows' states.
func (m *merger) setWindows(s *metrics.Summary) ([]metrics.WindowState, error) {
	var states []metrics.WindowState
	if m.haveWindows() {
		ws, wst, err := m.mergeWindows()
		if err != nil {
			return nil, err
		}
		states = wst
		s.WindowSeconds, s.Windows = m.rs[0].winSecs, ws
		s.Saturation = &metrics.Saturation{}
		var sat []metrics.WindowStats
		for _, w := range ws {
			if w.Saturated {
				sat = append(sat, w)
			}
		}
		if len(sat) > 0 {
			s.Saturation.Saturated = true
			for _, w := range sat {
				s.Saturation.Windows = append(s.Saturation.Windows, w.Index)
			}
			s.Saturation.Reason = saturationLine(sat)
		}
		for _, w := range ws {
			if w.MachineBusy {
				s.Saturation.MachineBusy = true
				s.Saturation.BusyWindows = append(s.Saturation.BusyWindows, w.Index)
			}
		}
		s.Saturation.BusyNote = metrics.MachineBusyNote(ws)
	}
	// The live intervals every run flagged, in time order.
	var live []metrics.SaturatedInterval
	for _, r := range m.rs {
		if r.s.Saturation != nil {
			live = append(live, r.s.Saturation.Intervals...)
		}
	}
	if len(live) > 0 {
		slices.SortStableFunc(live, func(a, b metrics.SaturatedInterval) int { return cmp.Compare(a.Start, b.Start) })
		if s.Saturation == nil {
			s.Saturation = &metrics.Saturation{}
		}
		s.Saturation.Saturated = true
		s.Saturation.Intervals = live[:min(len(live), metrics.MaxSaturatedIntervals)]
	}
	// A copy whose send rate fell short of its schedule's: each copy's
	// rates are its own (those that kept up wrote none), so the merge
	// keeps no send_rate_* keys but says which copy fell short, and how.
	var short []string
	for _, r := range m.rs {
		if c := r.s.Saturation; c != nil && c.SendRate != nil {
			short = append(short, r.name+": "+c.SendRate.Reason())
		}
	}
	if len(short) > 0 {
		if s.Saturation == nil {
			s.Saturation = &metrics.Saturation{}
		}
		s.Saturation.Saturated = true
		s.Saturation.Reason = strings.Join(append(short, s.Saturation.Reason), "; ")
		s.Saturation.Reason = strings.TrimSuffix(s.Saturation.Reason, "; ")
	}
	return states, nil
}

// all reports whether every input gives the same value.
func (m *merger) all(val func(*input) string) bool {
	for _, r := range m.rs[1:] {
		if val(r) != val(m.rs[0]) {
			return false
		}
	}
	return true
}

// coverage is the union of the inputs' shards (the first's count).
func (m *merger) coverage() metrics.ShardInfo {
	seen := map[int64]bool{}
	out := metrics.ShardInfo{Count: m.rs[0].shard.Count}
	for _, r := range m.rs {
		out.Count = max(out.Count, r.shard.Count)
		for _, i := range r.shard.Indices {
			if !seen[i] {
				seen[i] = true
				out.Indices = append(out.Indices, i)
			}
		}
	}
	sort.Slice(out.Indices, func(i, j int) bool { return out.Indices[i] < out.Indices[j] })
	return out
}

// haveWindows reports whether every input has windows of one length.
func (m *merger) haveWindows() bool {
	for _, r := range m.rs {
		if len(r.windows) == 0 || r.winSecs != m.rs[0].winSecs {
			return false
		}
	}
	return true
}

// windowPart is one input's window of a given index.
type windowPart struct {
	r *input
	w *metrics.WindowStats
}

// mergeWindows combines the windows of the same index, one index at a
// time (one window accumulator in memory).
func (m *merger) mergeWindows() ([]metrics.WindowStats, []metrics.WindowState, error) {
	by := map[int][]windowPart{}
	for _, r := range m.rs {
		for i := range r.windows {
			w := &r.windows[i]
			by[w.Index] = append(by[w.Index], windowPart{r, w})
		}
	}
	idx := slices.Sorted(maps.Keys(by))
	acc := metrics.NewWindowAcc()
	out := make([]metrics.WindowStats, 0, len(idx))
	states := make([]metrics.WindowState, 0, len(idx))
	multi := len(m.rs) > 1
	for _, i := range idx {
		acc.Reset()
		parts := by[i]
		w := metrics.WindowStats{Index: i, Start: parts[0].w.Start, End: parts[0].w.End, ClientCPU: parts[0].w.ClientCPU}
		withGoodput := false
		for _, p := range parts {
			pw := p.w
			w.Start, w.End = math.Min(w.Start, pw.Start), math.Max(w.End, pw.End)
			w.Offered += pw.Offered
			w.InFlightMean += pw.InFlightMean
			w.InFlightMax += pw.InFlightMax
			w.ClientCPU = math.Max(w.ClientCPU, pw.ClientCPU)
			w.Behind = math.Max(w.Behind, pw.Behind)
			w.MachineBusy = w.MachineBusy || pw.MachineBusy
			if pw.Saturated {
				w.Saturated = true
				for _, reason := range pw.Reasons {
					if multi {
						reason = "shard " + p.r.shard.String() + ": " + reason
					}
					w.Reasons = append(w.Reasons, reason)
				}
			}
			if w.Server == nil {
				w.Server = pw.Server
			}
			acc.Completed += pw.Completed
			acc.Failed += pw.Failed
			acc.Cancelled += pw.Cancelled
			acc.InputTokens += pw.InputTokens
			acc.OutputTokens += pw.OutputTokens
			if pw.Goodput != nil {
				withGoodput = true
				acc.Good += *pw.Goodput
			}
			for k, v := range pw.ErrorsByClass {
				acc.ErrorsByClass[k] += v
			}
			if err := acc.AddState(p.r.winStates[i]); err != nil {
				return nil, nil, fmt.Errorf("%s: %s window %d: %w", p.r.name, metrics.KeyMergeState, i, err)
			}
		}
		acc.Fill(&w, withGoodput)
		ws, err := acc.State(i)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, w)
		states = append(states, ws)
	}
	if multi {
		m.notef("windows: counts and rates add, percentiles come from the merged window histograms (2 significant digits); in_flight_max is the sum of the copies' maxima (an upper bound); server figures are the first copy's that has them")
	}
	return out, states, nil
}

// saturationLine says in one line in which windows the client fell behind.
func saturationLine(sat []metrics.WindowStats) string {
	parts := make([]string, 0, 4)
	for i, w := range sat {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(sat)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("window %d (%s–%s s): %s", w.Index, ftoa(w.Start, 0), ftoa(w.End, 0), strings.Join(w.Reasons, ", ")))
	}
	return strings.Join(parts, "; ")
}

func ftoa(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// endpointServers gives each endpoint the server metrics of the first
// input that has them (a server's own figures are the same whichever copy
// scraped them; they are not added up), and the input they came from.
func (m *merger) endpointServers() (servers []*metrics.ServerSummary, from []string) {
	for i := 0; ; i++ {
		found, some := false, false
		for _, r := range m.rs {
			if i >= len(r.s.Endpoints) {
				continue
			}
			some = true
			if r.s.Endpoints[i].ServerMetrics != nil {
				servers, from = append(servers, r.s.Endpoints[i].ServerMetrics), append(from, r.name)
				found = true
				break
			}
		}
		if !some {
			return servers, from
		}
		if !found {
			servers, from = append(servers, nil), append(from, "")
		}
	}
}
