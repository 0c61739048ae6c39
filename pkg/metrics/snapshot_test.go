package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// jsonObject returns v written as JSON and read back as an untyped object:
// the keys and values a reader of the file sees.
func jsonObject(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	return m
}

// throughState returns what from rebuilds of the state state returns, once
// written as JSON and read back: a copy of a run as merge reads it.
func throughState[S, P any](t testing.TB, state func() (S, error), from func(S) (P, error)) P {
	t.Helper()
	st, err := state()
	must(t, err)
	back, _ := testenv.RoundTrip(t, st)
	p, err := from(back)
	must(t, err)
	return p
}

// stater and stateMerger are a part's two sides of its merge state.
type (
	stater interface {
		State() (json.RawMessage, error)
	}
	stateMerger interface{ MergeState(json.RawMessage) error }
)

// mergeStates adds each of froms' states to into, as merge does.
func mergeStates(t testing.TB, into stateMerger, froms ...stater) {
	t.Helper()
	for _, f := range froms {
		raw, err := f.State()
		must(t, err)
		must(t, into.MergeState(raw))
	}
}

func TestHistStateRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		values []time.Duration
	}{
		{"empty", nil},
		{"one", []time.Duration{1234567}},
		{"zeros and negatives", []time.Duration{0, -5, 0}},
		{"exact range", []time.Duration{1500 * time.Nanosecond, 2 * time.Millisecond, 999 * time.Microsecond}},
		{"beyond a day", []time.Duration{48 * time.Hour, time.Millisecond}},
		{"lognormal", func() []time.Duration {
			v := make([]time.Duration, 5000)
			for i := range v {
				v[i] = time.Duration(30e6 * math.Exp(2*r.NormFloat64()))
			}
			return v
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, sig := range []int{histSigFigs, windowSigFigs} {
				h := newHistWith(histMaxMicros, sig)
				for _, v := range tc.values {
					h.Record(v)
				}
				st, err := h.State()
				must(t, err)
				b, err := json.Marshal(st)
				must(t, err)
				var back HistState
				must(t, json.Unmarshal(b, &back))
				g, err := histFromState(back, sig)
				must(t, err)
				if g.Dist() != h.Dist() || g.Clamped() != h.Clamped() || !g.h.Equals(h.h) {
					t.Fatalf("%d digits: %+v, want %+v", sig, g.Dist(), h.Dist())
				}
				if _, err := histFromState(back, 5-sig); len(tc.values) > 0 && err == nil {
					t.Errorf("a %d-digit histogram decoded as %d digits", sig, 5-sig)
				}
			}
		})
	}
}

// FuzzHistState decodes any histogram state: an error or a distribution
// whose figures agree with the state, never a panic.
func FuzzHistState(f *testing.F) {
	h := NewHist()
	for _, v := range []time.Duration{1, 5e6, 7e6, 3e9} {
		h.Record(v)
	}
	st, _ := h.State()
	f.Add(st.HDR, st.Count, st.MeanMS, st.M2, st.MaxNS, int64(0))
	f.Add("HISTFAAAAB94nJNpmSzMwMDAzAABMJoRTM+o/6AAEgRAAgHk", int64(1), 1.0, 0.0, int64(1e6), int64(0))
	f.Add("", int64(0), 0.0, 0.0, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, enc string, n int64, mean, m2 float64, maxNS, clamped int64) {
		for _, sig := range []int{histSigFigs, windowSigFigs} {
			g, err := histFromState(HistState{Count: n, MeanMS: mean, M2: m2, MaxNS: maxNS, Clamped: clamped, HDR: enc}, sig)
			if err != nil {
				continue
			}
			d := g.Dist()
			if d.Count != n || d.Median > d.Max+1e-9 || d.P99 > d.Max+1e-9 {
				t.Fatalf("state %d values decoded as %+v", n, d)
			}
		}
	})
}

// TestStateErrorsNameTheDistribution: the collector, a window and a
// breakdown rebuilt from a state each refuse a distribution that does not
// decode and one that is not theirs, naming both as the state names them,
// and keep every distribution of theirs when there is none (even empty).
func TestStateErrorsNameTheDistribution(t *testing.T) {
	bad := HistState{Count: 1, HDR: "not a histogram"}
	cs, err := NewCollector().State()
	must(t, err)
	if len(cs.Hists) != len(NewCollector().hists()) {
		t.Errorf("collector state keeps %d distributions, want every one", len(cs.Hists))
	}
	cs.Hists["ttft"], cs.Hists["latency"] = bad, HistState{}
	_, err = CollectorFromState(cs)
	wantErrs(t, "collector", err, "hists.ttft: ", "hists.latency: not a distribution of a run")

	w := NewWindowAcc()
	ws, err := w.State(3)
	must(t, err)
	if len(ws.Hists) != 0 {
		t.Errorf("an empty window's state keeps %v", ws.Hists)
	}
	ws.Hists = map[string]HistState{"e2e": bad, "x": {}}
	wantErrs(t, "window", w.AddState(ws), "e2e: ", "x: not a distribution of a window")

	_, err = GroupsFromState(map[string]GroupState{"m": {Hists: map[string]HistState{"tpot": bad, "itl": {}}}})
	wantErrs(t, "group", err, `group "m" tpot: `, `group "m" itl: not a distribution of a group`)
}

func wantErrs(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %v, want %q", what, err, w)
		}
	}
}

// TestTimelineKeepsScrapes: the timeline keeps the server's scrapes in
// order, all of them up to maxScrapes, then every other (evenly thinned),
// never more than maxScrapes.
func TestTimelineKeepsScrapes(t *testing.T) {
	tl := NewTimeline(time.Second, 16)
	for i := range 3 {
		tl.AddServer(time.Duration(i)*time.Second, ServerSample{Running: float64(i)})
	}
	if got := tl.Scrapes(); len(got) != 3 || got[2].At != 2 || got[2].Running != 2 {
		t.Fatalf("scrapes %+v", got)
	}
	tl = NewTimeline(time.Second, 16)
	const n = 5*maxScrapes + 3
	for i := range n {
		tl.AddServer(time.Duration(i)*time.Second, ServerSample{Running: float64(i)})
	}
	got := tl.Scrapes()
	if len(got) > maxScrapes || len(got) < maxScrapes/2 {
		t.Fatalf("%d scrapes kept of %d", len(got), n)
	}
	step := got[1].At - got[0].At
	for i := 1; i < len(got); i++ {
		if got[i].At-got[i-1].At != step || got[i].Running != got[i].At {
			t.Fatalf("scrape %d at %v after %v: not evenly thinned", i, got[i].At, got[i-1].At)
		}
	}
	if got[0].At != 0 || got[len(got)-1].At < n-1-step {
		t.Errorf("kept %v … %v of 0 … %d", got[0].At, got[len(got)-1].At, n-1)
	}
}
