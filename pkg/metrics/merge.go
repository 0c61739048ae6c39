package metrics

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MergeStateVersion is the version of MergeState this build writes and
// reads.
const MergeStateVersion = 1

// MergeState is the summary's merge_state: everything besides its figures
// that merging summaries exactly needs — the run's distributions with their
// exact moments, every counter, the windows' distributions, the breakdowns
// (per_model, per_kind…) and goodput counts — and the run's exact length.
type MergeState struct {
	Version      int    `json:"version"`
	HistEncoding string `json:"hist_encoding"`
	// ElapsedNS is the run's length (the summary's duration) in
	// nanoseconds, from started_at.
	ElapsedNS int64                            `json:"elapsed_ns"`
	Collector CollectorState                   `json:"collector"`
	Windows   []WindowState                    `json:"windows,omitempty"`
	Groups    map[string]map[string]GroupState `json:"groups,omitempty"`
	Goodput   *GoodputState                    `json:"goodput,omitempty"`
	// Lengths holds the input and output length distributions (the
	// summary's length_histograms) in HistEncoding.
	Lengths map[string]string `json:"lengths,omitempty"`
	// Sessions holds a run of multi-turn sessions' figures (sessions.go).
	Sessions *SessionsState `json:"sessions,omitempty"`
}

// ShardInfo is the part of a schedule a summary covers: the shards (index %
// Count) it holds. A copy run with --shard I/N holds {N, [I]}; an unsharded
// run {1, [0]}; a merge the union of its inputs'.
type ShardInfo struct {
	Count   int64   `json:"count"`
	Indices []int64 `json:"indices"`
}

// String writes s as I/N, or {I,J,…}/N for several shards.
func (s ShardInfo) String() string {
	if len(s.Indices) == 1 {
		return fmt.Sprintf("%d/%d", s.Indices[0], s.Count)
	}
	parts := make([]string, len(s.Indices))
	for i, v := range s.Indices {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return "{" + strings.Join(parts, ",") + "}/" + strconv.FormatInt(s.Count, 10)
}

func (s ShardInfo) check() error {
	if s.Count < 1 || len(s.Indices) == 0 || int64(len(s.Indices)) > s.Count {
		return fmt.Errorf("shard: %d indices of %d", len(s.Indices), s.Count)
	}
	seen := map[int64]bool{}
	for _, i := range s.Indices {
		if i < 0 || i >= s.Count || seen[i] {
			return fmt.Errorf("shard: index %d of %d (repeated or out of range)", i, s.Count)
		}
		seen[i] = true
	}
	return nil
}

// MergedFrom is one summary a merged summary was made of.
type MergedFrom struct {
	File         string  `json:"file"`
	Shard        string  `json:"shard"`
	StartedAt    string  `json:"started_at"`
	Duration     float64 `json:"duration"`
	Completed    int64   `json:"completed"`
	Failed       int64   `json:"failed"`
	Seed         uint64  `json:"seed"`
	ScheduleHash string  `json:"schedule_hash,omitempty"`
	Command      string  `json:"command,omitempty"`
}

// MergeInput is a summary to merge and the name (file) it came from, which
// every error and warning about it gives.
type MergeInput struct {
	Name    string
	Summary *Summary
}

// MergeResult is a merged summary, what its inputs disagreed on
// (Warnings), and how figures that cannot be exact were combined (Notes).
// Both lists are in the summary too.
type MergeResult struct {
	Summary  *Summary
	Warnings []string
	Notes    []string
}

// RunState is what a run hands to NewMergeState: its collector and length,
// the states of its closed windows, its breakdowns by summary key, its
// goodput (nil without --goodput) and its length distributions (nil:
// none).
type RunState struct {
	Collector     *Collector
	Elapsed       time.Duration
	Windows       []WindowState
	Groups        map[string]*Groups
	Goodput       *Goodput
	InputLengths  *LengthHist
	OutputLengths *LengthHist
	// Sessions are the run's multi-turn sessions (nil: none).
	Sessions *SessionsRun
}

// NewMergeState encodes a run's state for its summary's merge_state.
func NewMergeState(p RunState) (MergeState, error) {
	st := MergeState{Version: MergeStateVersion, HistEncoding: HistEncoding, ElapsedNS: int64(p.Elapsed), Windows: p.Windows}
	var err error
	if st.Collector, err = p.Collector.State(); err != nil {
		return st, err
	}
	for k, g := range p.Groups {
		if st.Groups == nil {
			st.Groups = map[string]map[string]GroupState{}
		}
		if st.Groups[k], err = g.State(); err != nil {
			return st, fmt.Errorf("%s: %w", k, err)
		}
	}
	if p.Goodput != nil {
		gs := p.Goodput.State()
		st.Goodput = &gs
	}
	if p.Sessions != nil {
		if st.Sessions, err = p.Sessions.State(); err != nil {
			return st, fmt.Errorf("sessions: %w", err)
		}
	}
	for k, l := range map[string]*LengthHist{"input": p.InputLengths, "output": p.OutputLengths} {
		if l == nil {
			continue
		}
		enc, err := l.State()
		if err != nil {
			return st, err
		}
		if enc != "" {
			if st.Lengths == nil {
				st.Lengths = map[string]string{}
			}
			st.Lengths[k] = enc
		}
	}
	return st, nil
}

// input is what MergeSummaries reads of one summary before merging it.
type input struct {
	name      string
	s         *Summary
	st        MergeState
	shard     ShardInfo
	hash      string
	startAt   string
	start     time.Time
	windows   []WindowStats
	winStates map[int]WindowState
	winSecs   float64
}

// maxMergeWindows bounds the windows one summary may hold.
const maxMergeWindows = 10_000_000

// readInput checks one summary and reads what merging needs, without
// decoding its distributions yet.
func readInput(in MergeInput) (*input, error) {
	s := in.Summary
	if s == nil {
		return nil, errors.New("no summary")
	}
	r := &input{name: in.Name, s: s, shard: ShardInfo{Count: 1, Indices: []int64{0}}}
	if s.MergeState == nil {
		return nil, fmt.Errorf("no %s: not a fineserve-gen run summary that can be merged (a summary written by --summary-json or --output-file holds it; a merge needs the summaries of the copies, not their results JSONL)", KeyMergeState)
	}
	r.st = *s.MergeState
	switch {
	case r.st.Version != MergeStateVersion:
		return nil, fmt.Errorf("%s version %d: this build reads version %d", KeyMergeState, r.st.Version, MergeStateVersion)
	case r.st.HistEncoding != HistEncoding:
		return nil, fmt.Errorf("%s: histograms in %q, want %q", KeyMergeState, r.st.HistEncoding, HistEncoding)
	case r.st.ElapsedNS < 0:
		return nil, fmt.Errorf("%s: elapsed_ns %d < 0", KeyMergeState, r.st.ElapsedNS)
	}
	if s.Shard != nil {
		r.shard = *s.Shard
		if err := r.shard.check(); err != nil {
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
		return nil, fmt.Errorf("%s: %d windows", KeyWindows, len(r.windows))
	}
	r.winStates = make(map[int]WindowState, len(r.st.Windows))
	for _, ws := range r.st.Windows {
		if _, dup := r.winStates[ws.Index]; dup {
			return nil, fmt.Errorf("%s: window %d twice", KeyMergeState, ws.Index)
		}
		r.winStates[ws.Index] = ws
	}
	seen := make(map[int]bool, len(r.windows))
	for _, w := range r.windows {
		switch {
		case seen[w.Index]:
			return nil, fmt.Errorf("%s: window %d twice", KeyWindows, w.Index)
		case w.Index < 0 || w.Index > maxMergeWindows:
			return nil, fmt.Errorf("%s: window index %d", KeyWindows, w.Index)
		case !(w.End >= w.Start && w.Start >= 0) || math.IsInf(w.End, 0):
			return nil, fmt.Errorf("%s: window %d from %g s to %g s", KeyWindows, w.Index, w.Start, w.End)
		}
		if _, ok := r.winStates[w.Index]; !ok {
			return nil, fmt.Errorf("%s: window %d has no distributions in %s", KeyWindows, w.Index, KeyMergeState)
		}
		seen[w.Index] = true
	}
	if len(seen) != len(r.winStates) {
		return nil, fmt.Errorf("%s holds %d windows, %s %d", KeyMergeState, len(r.winStates), KeyWindows, len(seen))
	}
	return r, nil
}

// end is when the run ended.
func (r *input) end() time.Time { return r.start.Add(time.Duration(r.st.ElapsedNS)) }

// MergeSummaries merges the summaries of copies of one run — shards of one
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
func MergeSummaries(ins []MergeInput) (*MergeResult, error) {
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
	for _, i := range sortedKeys(where) {
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
// their number.
func (m *merger) merge() (*MergeResult, error) {
	first := m.rs[0]
	start, end := first.start, first.end()
	for _, r := range m.rs {
		start, end = minTime(start, r.start), maxTime(end, r.end())
	}
	dur := end.Sub(start)

	col := NewCollector()
	groups := map[string]*Groups{}
	var good *Goodput
	goodAll := true
	lengths := map[string]*LengthHist{"input": NewLengthHist(), "output": NewLengthHist()}
	for _, r := range m.rs {
		c, err := CollectorFromState(r.st.Collector)
		if err != nil {
			return nil, fmt.Errorf("%s: %s.collector: %w", r.name, KeyMergeState, err)
		}
		if shift := r.start.Sub(start); c.seen {
			c.FirstSent += shift
			c.LastEnd += shift
		}
		col.Merge(c)
		for _, k := range sortedKeys(r.st.Groups) {
			g, err := GroupsFromState(r.st.Groups[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %s.groups.%s: %w", r.name, KeyMergeState, k, err)
			}
			if groups[k] == nil {
				groups[k] = g
			} else {
				groups[k].Merge(g)
			}
		}
		if r.st.Goodput == nil {
			goodAll = false
		} else {
			g, err := goodputFromState(*r.st.Goodput)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", r.name, KeyMergeState, err)
			}
			if good == nil {
				good = g
			} else {
				good.Good += g.Good
				good.All += g.All
			}
		}
		for k, enc := range r.st.Lengths {
			l, err := lengthFromState(enc)
			if err != nil {
				return nil, fmt.Errorf("%s: %s.lengths.%s: %w", r.name, KeyMergeState, k, err)
			}
			dst := lengths[k]
			if dst == nil {
				return nil, fmt.Errorf("%s: %s.lengths.%s: want input or output", r.name, KeyMergeState, k)
			}
			dst.h.Merge(l.h)
		}
	}

	s := &Summary{
		Backend: first.s.Backend, Mode: first.s.Mode, Model: first.s.Model, Seed: first.s.Seed,
		Command: first.s.Command, RequestRate: first.s.RequestRate, StartedAt: start.UTC().Format(time.RFC3339Nano),
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
	col.Summarize(s, dur)
	if len(m.rs) > 1 {
		m.notef("duration is the union's, from the earliest start to the latest end (%.3f s); every throughput is over it", dur.Seconds())
		m.notef("max_concurrency and max_in_flight are the sums of the copies' (an upper bound of the requests in flight at once)")
	}

	run := RunState{Collector: col, Elapsed: dur, Groups: groups, InputLengths: lengths["input"], OutputLengths: lengths["output"]}
	if err := m.mergeSessions(&run, s); err != nil {
		return nil, err
	}

	// Windows.
	if m.haveWindows() {
		ws, wst, err := m.mergeWindows()
		if err != nil {
			return nil, err
		}
		run.Windows = wst
		s.WindowSeconds, s.Windows = first.winSecs, ws
		s.Saturation = &Saturation{}
		var sat []WindowStats
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
	}
	// The live intervals every run flagged, in time order.
	var live []SaturatedInterval
	for _, r := range m.rs {
		if r.s.Saturation != nil {
			live = append(live, r.s.Saturation.Intervals...)
		}
	}
	if len(live) > 0 {
		slices.SortStableFunc(live, func(a, b SaturatedInterval) int { return cmp.Compare(a.Start, b.Start) })
		if s.Saturation == nil {
			s.Saturation = &Saturation{}
		}
		s.Saturation.Saturated = true
		s.Saturation.Intervals = live[:min(len(live), MaxSaturatedIntervals)]
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
			m.notef("%s and each window's client_cpu are the busiest copy's (each copy runs on its own machine)", KeyClientCPU)
		}
	}

	// Goodput, distributions, breakdowns.
	switch {
	case good != nil && goodAll:
		run.Goodput = good
		good.Annotate(s, dur)
	case good != nil:
		m.warnf("goodput is in some summaries only: it is left out of the merged summary")
	}
	s.LatencyCDFs = col.CDFs()
	s.LengthHistograms = LengthHistograms(run.InputLengths, run.OutputLengths)
	for k, g := range groups {
		if err := s.SetBreakdown(k, g.Summary(dur)); err != nil {
			return nil, err
		}
	}
	st, err := NewMergeState(run)
	if err != nil {
		return nil, err
	}

	// Sections the merge does not compute: taken from the first summary
	// that has them; a breakdown without its merge state is left out.
	copied := map[string]string{}
	for _, r := range m.rs {
		for _, k := range BreakdownKeys {
			if r.s.Breakdown(k) != nil && groups[k] == nil && copied[k] == "" {
				m.warnf("%s: %s has no merge state: it is left out of the merged summary", r.name, k)
				copied[k] = "-"
			}
		}
		if r.s.Replay != nil && s.Replay == nil {
			s.Replay, copied[KeyReplay] = r.s.Replay, r.name
		}
		if r.s.ServerMetrics != nil && s.ServerMetrics == nil {
			s.ServerMetrics, copied[KeyServerMetrics] = r.s.ServerMetrics, r.name
		}
	}
	if len(m.rs) > 1 {
		for _, k := range sortedKeys(copied) {
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
		s.MergedFrom = append(s.MergedFrom, MergedFrom{
			File: r.name, Shard: r.shard.String(), StartedAt: r.s.StartedAt, Duration: r.s.Duration,
			Completed: r.s.Completed, Failed: r.s.Failed, Seed: r.s.Seed, ScheduleHash: r.hash, Command: r.s.Command,
		})
	}
	s.MergeWarnings, s.MergeNotes = m.warnings, m.notes
	s.MergeState = &st
	return &MergeResult{Summary: s, Warnings: m.warnings, Notes: m.notes}, nil
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
func (m *merger) coverage() ShardInfo {
	seen := map[int64]bool{}
	out := ShardInfo{Count: m.rs[0].shard.Count}
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
	w *WindowStats
}

// mergeWindows combines the windows of the same index, one index at a
// time (one window accumulator in memory).
func (m *merger) mergeWindows() ([]WindowStats, []WindowState, error) {
	by := map[int][]windowPart{}
	for _, r := range m.rs {
		for i := range r.windows {
			w := &r.windows[i]
			by[w.Index] = append(by[w.Index], windowPart{r, w})
		}
	}
	idx := sortedKeys(by)
	acc := NewWindowAcc()
	out := make([]WindowStats, 0, len(idx))
	states := make([]WindowState, 0, len(idx))
	multi := len(m.rs) > 1
	for _, i := range idx {
		acc.Reset()
		parts := by[i]
		w := WindowStats{Index: i, Start: parts[0].w.Start, End: parts[0].w.End, ClientCPU: parts[0].w.ClientCPU}
		withGoodput := false
		for _, p := range parts {
			pw := p.w
			w.Start, w.End = math.Min(w.Start, pw.Start), math.Max(w.End, pw.End)
			w.Offered += pw.Offered
			w.InFlightMean += pw.InFlightMean
			w.InFlightMax += pw.InFlightMax
			w.ClientCPU = math.Max(w.ClientCPU, pw.ClientCPU)
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
			acc.InputTokens += pw.InputTokens
			acc.OutputTokens += pw.OutputTokens
			if pw.Goodput != nil {
				withGoodput = true
				acc.Good += *pw.Goodput
			}
			for k, v := range pw.ErrorsByClass {
				acc.ErrorsByClass[k] += v
			}
			if err := acc.mergeState(p.r.winStates[i]); err != nil {
				return nil, nil, fmt.Errorf("%s: %s window %d: %w", p.r.name, KeyMergeState, i, err)
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
func saturationLine(sat []WindowStats) string {
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

// mergeSessions merges the inputs' sessions into run and s, exactly: the
// counts add up and the distributions merge. Inputs planned with different
// options, or some without sessions, are warned about.
func (m *merger) mergeSessions(run *RunState, s *Summary) error {
	var all *SessionsRun
	some, none := false, false
	for _, r := range m.rs {
		if r.st.Sessions == nil {
			none = none || r.s.Sessions == nil
			if r.s.Sessions != nil {
				m.warnf("%s: %s has no merge state: it is left out of the merged summary", r.name, KeySessions)
			}
			continue
		}
		x, err := sessionsFromState(r.st.Sessions)
		if err != nil {
			return fmt.Errorf("%s: %s.sessions: %w", r.name, KeyMergeState, err)
		}
		some = true
		if all == nil {
			all = x
			continue
		}
		if a, b := all.Summary, x.Summary; a.Turns != b.Turns || a.ThinkTime != b.ThinkTime || a.TurnInputLen != b.TurnInputLen || a.PlanHash != b.PlanHash {
			m.warnf("%s: sessions planned differently (%s, plan %s) from the first summary's (%s, plan %s)", r.name, b.Turns, b.PlanHash, a.Turns, a.PlanHash)
		}
		all.merge(x)
	}
	if some && none {
		m.warnf("sessions are in some summaries only: the merged sessions and per_turn cover those")
	}
	if all != nil {
		run.Sessions = all
		all.Set(s)
	}
	return nil
}
