package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
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
