package metrics

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestHTTPPhasesPart: the part counts new and reused connections and each
// phase where it happened, writes nothing for a run without phases, and a
// merge of two halves' states gives the whole's summary.
func TestHTTPPhasesPart(t *testing.T) {
	ms := time.Millisecond
	phases := []record.Phases{
		{Measured: true, Connect: 2 * ms, TLS: 3 * ms, Write: ms / 10, Wait: 40 * ms},
		{Measured: true, Reused: true, Write: ms / 20, Wait: 50 * ms},
		{Measured: true, Reused: true, Write: ms / 20, Wait: 60 * ms},
		{Measured: true, Connect: time.Second}, // refused: no write, no wait
		{},                                     // not timed
	}
	whole, a, b := NewHTTPPhases(), NewHTTPPhases(), NewHTTPPhases()
	for i, ph := range phases {
		s := &Sample{Request: record.Request{HTTP: ph}}
		whole.Add(s)
		if i%2 == 0 {
			a.Add(s)
		} else {
			b.Add(s)
		}
	}
	var sum Summary
	whole.Finish(&sum, time.Second)
	p := sum.HTTPPhases
	if p == nil || p.Requests != 4 || p.NewConnections != 2 || p.Reused != 2 || p.ConnectMS.Count != 2 || p.ConnectMS.Max != 1000 ||
		p.TLSMS.Count != 1 || p.WriteMS.Count != 3 || p.WaitMS.Count != 3 || p.WaitMS.Mean != 50 {
		t.Fatalf("summary %+v", p)
	}
	mergeStates(t, b, a)
	var merged Summary
	b.Finish(&merged, time.Second)
	want, _ := json.Marshal(p)
	got, _ := json.Marshal(merged.HTTPPhases)
	if string(got) != string(want) {
		t.Errorf("merged halves %s, want the whole's %s", got, want)
	}

	empty := NewHTTPPhases()
	empty.Add(&Sample{})
	var none Summary
	empty.Finish(&none, time.Second)
	if st, err := empty.State(); none.HTTPPhases != nil || st != nil || err != nil {
		t.Errorf("no phases timed: summary %+v, state %s %v; want neither", none.HTTPPhases, st, err)
	}
	if err := empty.MergeState(json.RawMessage(`{"Requests":1,"Reused":2}`)); err == nil {
		t.Error("a state with more reused than requests merged")
	}
}

// TestMergeStateAllOrNothing: a state whose last distribution does not
// decode is refused by that distribution's name, and adds none of the
// others: the part is as it was.
func TestMergeStateAllOrNothing(t *testing.T) {
	ms := time.Millisecond
	src := NewHTTPPhases()
	src.Add(&Sample{Request: record.Request{HTTP: record.Phases{Measured: true, Connect: 2 * ms, TLS: 3 * ms, Write: ms, Wait: 40 * ms}}})
	raw, err := src.State()
	must(t, err)
	var st httpPhasesState
	must(t, json.Unmarshal(raw, &st))
	st.Wait.Count++ // the buckets hold one value less than the count says
	bad, _ := json.Marshal(st)
	p := NewHTTPPhases()
	err = p.MergeState(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "wait: ") {
		t.Fatalf("merging a state with a bad wait distribution: %v, want a wait: error", err)
	}
	for name, h := range map[string]*Hist{"connect": p.Connect, "tls": p.TLS, "write": p.Write, "wait": p.Wait} {
		if h.Count() != 0 {
			t.Errorf("%s holds %d values after a refused state, want 0", name, h.Count())
		}
	}
}
