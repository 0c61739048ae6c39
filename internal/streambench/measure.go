package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
)

// observed is what one side saw (or, for the truth, what the server
// wrote): each stream's TTFT and every inter-token gap, in ms.
type observed struct {
	ttft, gaps []float64
	// ids are the request ids of ttft's requests (a client's side), and
	// byID the truth's TTFT of each request by its id: a client's
	// requests are then matched one for one with the server's ("": not
	// known, and neither is built).
	ids    []string
	byID   map[string]float64
	failed int
	events int64 // token writes (the truth only)
	// late is how late each token write was against the exact schedule
	// (arrival + TTFT + k·ITL), ms (the truth only): a server behind its
	// own schedule is a machine out of CPU, whatever the client.
	late []float64
}

// readTruth reads the mock's chunk log; paceTTFT and paceITL are its pace.
func readTruth(path string, paceTTFT, paceITL time.Duration) (observed, error) {
	f, err := os.Open(path)
	if err != nil {
		return observed{}, err
	}
	defer f.Close()
	recs, err := mockserver.ReadChunkLog(f)
	if err != nil {
		return observed{}, err
	}
	// The truth's TTFT counts from the kernel's receipt of each request
	// when the log has it for every request (on Linux), else from the
	// handler's entry for all: one definition per run.
	received := true
	for _, r := range recs {
		received = received && r.ReceivedNS != nil
	}
	var o observed
	for _, r := range recs {
		ttft := r.FirstWriteNS
		if received {
			ttft = r.TTFTNS()
		}
		o.ttft = append(o.ttft, float64(ttft)/1e6)
		if r.RequestID != "" {
			if o.byID == nil {
				o.byID = make(map[string]float64, len(recs))
			}
			o.byID[r.RequestID] = float64(ttft) / 1e6
		}
		for _, g := range r.GapsNS {
			o.gaps = append(o.gaps, float64(g)/1e6)
		}
		o.events += int64(r.Writes)
		if len(r.GapsNS) == r.Writes-1 { // every write traced
			w := r.FirstWriteNS
			for k := 0; ; k++ {
				o.late = append(o.late, float64(w-int64(paceTTFT)-int64(k)*int64(paceITL))/1e6)
				if k == len(r.GapsNS) {
					break
				}
				w += r.GapsNS[k]
			}
		}
	}
	return o, nil
}

// readFloor reads the floor client's result.
func readFloor(path string) (observed, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return observed{}, err
	}
	var r floorResult
	if err := json.Unmarshal(b, &r); err != nil {
		return observed{}, fmt.Errorf("floor result: %w", err)
	}
	o := observed{failed: r.Failed}
	for _, v := range r.TTFTNS {
		o.ttft = append(o.ttft, float64(v)/1e6)
	}
	if len(r.IDs) == len(r.TTFTNS) {
		o.ids = r.IDs
	}
	for _, v := range r.GapsNS {
		o.gaps = append(o.gaps, float64(v)/1e6)
	}
	return o, nil
}

// record is the part of fineserve-gen's JSONL record read here.
type record struct {
	RequestID  string    `json:"request_id"`
	TTFT       *float64  `json:"ttft_ms"`
	ITL        []float64 `json:"itl_ms"`
	ErrorClass string    `json:"error_class"`
}

// readRecords reads fineserve-gen's --results-jsonl.
func readRecords(path string) (observed, error) {
	f, err := os.Open(path)
	if err != nil {
		return observed{}, err
	}
	defer f.Close()
	return parseRecords(f)
}

func parseRecords(r io.Reader) (observed, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var o observed
	line := 0
	for sc.Scan() {
		line++
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return o, fmt.Errorf("records: line %d: %w", line, err)
		}
		if rec.ErrorClass != "" || rec.TTFT == nil {
			o.failed++
			continue
		}
		o.ttft = append(o.ttft, *rec.TTFT)
		o.ids = append(o.ids, rec.RequestID)
		o.gaps = append(o.gaps, rec.ITL...)
	}
	return o, sc.Err()
}

// compare measures what a client saw against the server's truth: its TTFT
// error is its figure less the server's, request by request when each of
// the client's requests is found in the truth by its id (the mean and p99
// of those errors: Matched), else mean less mean and p99 less p99 (the
// distributions); its ITL standard deviation less the server's gaps'; how
// late the server was against its own schedule is the run's too. The
// events are the server's token writes; a stream the client did not see
// through counts as failed.
func compare(seen, truth observed) side {
	errs, matched := matchedErrors(seen, truth)
	var errMean, errP99 float64
	if matched {
		errMean, errP99 = mean(errs), quantile(errs, 0.99)
	} else {
		errMean, errP99 = mean(seen.ttft)-mean(truth.ttft), quantile(seen.ttft, 0.99)-quantile(truth.ttft, 0.99)
	}
	return side{
		TTFTErrMean:    errMean,
		TTFTErrP99:     errP99,
		Matched:        matched,
		ITLStdAdded:    std(seen.gaps) - std(truth.gaps),
		ServerLateMean: mean(truth.late),
		ServerLateP99:  quantile(truth.late, 0.99),
		Events:         truth.events,
		Failed:         seen.failed + max(len(truth.ttft)-len(seen.ttft)-seen.failed, 0),
	}
}

// matchedErrors returns each of seen's TTFTs less the truth's of the same
// request, found by its id; ok is false unless every one of seen's
// requests has an id found in the truth.
func matchedErrors(seen, truth observed) (errs []float64, ok bool) {
	if len(seen.ids) != len(seen.ttft) || len(seen.ttft) == 0 || truth.byID == nil {
		return nil, false
	}
	errs = make([]float64, len(seen.ttft))
	for i, id := range seen.ids {
		t, found := truth.byID[id]
		if !found {
			return nil, false
		}
		errs[i] = seen.ttft[i] - t
	}
	return errs, true
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func std(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m, s := mean(v), 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// quantile is v's q-quantile (nearest rank); v is sorted in place.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

// printRows prints one line per run, fineserve-gen's figure / the floor's,
// and the goals the run misses (TTFT error mean and p99 within 1.2× the
// floor's, 1.5× from 10,000 streams; RSS at most 250 MB from 10,000
// streams); then, per stream count, in how many runs those were met and
// the CPU per event over all its runs (pooled), against its goal of 1.1×
// the floor's.
func printRows(w io.Writer, rows []row) {
	fmt.Fprintf(w, "%8s %4s %23s %23s %19s %19s %17s %21s  %s\n", "streams", "run", "TTFT err mean ms", "TTFT err p99 ms", "ITL std added ms", "CPU µs/event", "RSS MB", "server late p99 ms", "goals missed")
	fmt.Fprintf(w, "%8s %4s %23s %23s %19s %19s %17s %21s\n", "", "", "ours / floor", "ours / floor", "ours / floor", "ours / floor", "ours / floor", "ours / floor")
	pair := func(a, b float64, prec int) string {
		return fmt.Sprintf("%.*f / %.*f", prec, a, prec, b)
	}
	for _, r := range rows {
		missed := strings.Join(missedGoals(r), ", ")
		if missed == "" {
			missed = "none"
		}
		fmt.Fprintf(w, "%8d %4d %23s %23s %19s %19s %17s %21s  %s\n", r.Streams, r.Run,
			pair(r.Ours.TTFTErrMean, r.Floor.TTFTErrMean, 2), pair(r.Ours.TTFTErrP99, r.Floor.TTFTErrP99, 2),
			pair(r.Ours.ITLStdAdded, r.Floor.ITLStdAdded, 2), pair(r.Ours.CPUPerEvent, r.Floor.CPUPerEvent, 1),
			pair(r.Ours.RSSMB, r.Floor.RSSMB, 0), pair(r.Ours.ServerLateP99, r.Floor.ServerLateP99, 1), missed)
		if r.Ours.Failed > 0 || r.Floor.Failed > 0 {
			fmt.Fprintf(w, "%13s failed streams: ours %d, floor %d\n", "", r.Ours.Failed, r.Floor.Failed)
		}
	}
	unmatched := 0
	for _, r := range rows {
		if !r.Ours.Matched || !r.Floor.Matched {
			unmatched++
		}
	}
	if unmatched > 0 {
		fmt.Fprintf(w, "%d of %d runs: TTFT errors of the distributions, not per request (a chunk log without request ids: an older mock-server?)\n", unmatched, len(rows))
	}
	for _, p := range pool(rows) {
		verdict := "met"
		if p.ours > cpuBound*p.floor {
			verdict = "not met"
		}
		fmt.Fprintf(w, "%d streams: latency and memory goals met in %d of %d runs; CPU per event over the %d runs %.2f / %.2f µs = %.2f× the floor's (goal ≤ %.1f×: %s)\n",
			p.streams, p.met, p.runs, p.runs, p.ours, p.floor, p.ours/p.floor, cpuBound, verdict)
	}
}

// cpuBound is the goal of CPU per event: at most this times the floor's.
const cpuBound = 1.1

// pooled is one stream count's runs together: the runs that met the
// latency and memory goals, and the CPU per event over all of them —
// every run's CPU net of the fixed cost over every run's events net of
// its, which a run of 10,000 events alone measures within about a
// microsecond (the fixed cost subtracted varies by milliseconds).
type pooled struct {
	streams, runs, met int
	ours, floor        float64    // µs per event
	cpu                [2]float64 // net CPU (µs), ours and the floor's
	events             [2]int64   // net events, ours and the floor's
}

func pool(rows []row) []pooled {
	var out []pooled
	at := map[int]int{}
	for _, r := range rows {
		i, ok := at[r.Streams]
		if !ok {
			i = len(out)
			at[r.Streams] = i
			out = append(out, pooled{streams: r.Streams})
		}
		p := &out[i]
		p.runs++
		if len(missedGoals(r)) == 0 {
			p.met++
		}
		for j, s := range []side{r.Ours, r.Floor} {
			p.cpu[j] += s.NetCPUUS
			p.events[j] += s.NetEvents
		}
	}
	for i := range out {
		p := &out[i]
		p.ours = p.cpu[0] / float64(max(p.events[0], 1))
		p.floor = p.cpu[1] / float64(max(p.events[1], 1))
	}
	return out
}

// ttftSlack is the TTFT error above the floor's that a run may have
// whatever the ratio (ms): with the truth counted from the kernel's
// receipt of each request, the floor's own error is a few tens of
// microseconds, and its own runs differ by more than this from each other
// (docs/PERFORMANCE.md): a ratio of two such figures says nothing.
const ttftSlack = 0.05

// missedGoals names the goals a run misses: its TTFT error mean or p99
// above 1.2× the floor's (1.5× from 10,000 streams) and more than
// ttftSlack above it, failed streams, RSS above 250 MB from 10,000
// streams. CPU per event is judged over the runs together (pool): one
// run's figure is too noisy to judge within 10 %.
func missedGoals(r row) []string {
	bound := 1.2
	if r.Streams >= 10000 {
		bound = 1.5
	}
	within := func(ours, floor float64) bool { return ours <= bound*math.Max(floor, 0) || ours-floor <= ttftSlack }
	var missed []string
	if !within(r.Ours.TTFTErrMean, r.Floor.TTFTErrMean) {
		missed = append(missed, "TTFT mean")
	}
	if !within(r.Ours.TTFTErrP99, r.Floor.TTFTErrP99) {
		missed = append(missed, "TTFT p99")
	}
	if r.Ours.Failed > 0 {
		missed = append(missed, "failed streams")
	}
	if r.Streams >= 10000 && r.Ours.RSSMB > 250 {
		missed = append(missed, "RSS")
	}
	return missed
}
