package metrics

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func TestParseSLO(t *testing.T) {
	tests := []struct {
		name             string
		args             []string
		ttft, tpot, e2el float64 // NaN: not set
		err              string
	}{
		{name: "vLLM form, one pair an argument", args: []string{"ttft:500", "tpot:50", "e2el:2000"}, ttft: 500, tpot: 50, e2el: 2000},
		{name: "comma-separated", args: []string{"ttft:500,tpot:50"}, ttft: 500, tpot: 50, e2el: math.NaN()},
		{name: "space-separated in one argument", args: []string{"ttft:1.5 e2el:100"}, ttft: 1.5, tpot: math.NaN(), e2el: 100},
		{name: "repeated flag", args: []string{"ttft:10", "tpot:2.5"}, ttft: 10, tpot: 2.5, e2el: math.NaN()},
		{name: "upper-case key", args: []string{"TTFT:10"}, ttft: 10, tpot: math.NaN(), e2el: math.NaN()},
		{name: "zero is a target", args: []string{"ttft:0"}, ttft: 0, tpot: math.NaN(), e2el: math.NaN()},
		{name: "empty", args: []string{""}, err: "no target"},
		{name: "no colon", args: []string{"ttft=5"}, err: "KEY:MS"},
		{name: "unknown metric", args: []string{"itl:5"}, err: "unknown metric"},
		{name: "negative", args: []string{"ttft:-1"}, err: "≥ 0"},
		{name: "not a number", args: []string{"ttft:fast"}, err: "≥ 0"},
		{name: "infinite", args: []string{"ttft:inf"}, err: "≥ 0"},
		{name: "twice", args: []string{"ttft:5", "ttft:6"}, err: "twice"},
		{name: "every problem at once", args: []string{"itl:5,ttft:-1"}, err: "unknown metric"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSLO(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseSLO(%q) = %v, want an error with %q", tt.args, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"ttft", s.TTFT, tt.ttft}, {"tpot", s.TPOT, tt.tpot}, {"e2el", s.E2EL, tt.e2el}} {
				if !(c.got == c.want || math.IsNaN(c.got) && math.IsNaN(c.want)) {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
	if _, err := ParseSLO([]string{"itl:5,ttft:-1"}); err == nil || !strings.Contains(err.Error(), "≥ 0") {
		t.Errorf("every problem should be reported: %v", err)
	}
}

// result builds a request that was sent at 0 and whose first token came at
// ttft, then one token every itl ms, out tokens in all.
func result(ttft, itl float64, out int) *record.Request {
	r := &record.Request{}
	r.Reset()
	r.FirstToken = ms(ttft)
	for i := 0; i < out; i++ {
		r.TokenTimes = append(r.TokenTimes, ms(ttft+float64(i)*itl))
	}
	r.End = r.TokenTimes[len(r.TokenTimes)-1]
	r.CompletionTokens = out
	r.Status = 200
	return r
}

// TestGoodputHandComputation checks goodput against a computation by hand
// on six requests with targets ttft ≤ 100 ms, tpot ≤ 20 ms, e2el ≤ 1000 ms:
//
//	ttft  itl  out  tpot  e2e   meets
//	  50   10   10    10   140  yes
//	 100   20   10    20   280  yes (targets are inclusive)
//	 101   10   10    10   191  no  (ttft)
//	  50   25   10    25   275  no  (tpot)
//	 500    0    1     0   500  no  (ttft)
//	  90   20   46    20   990  yes
//	failed                      no  (a failed request never meets SLOs)
//
// 3 of 7 finished requests meet every target: share 3/7, and over a 2 s run
// request_goodput is 1.5 req/s.
func TestGoodputHandComputation(t *testing.T) {
	slo, err := ParseSLO([]string{"ttft:100", "tpot:20", "e2el:1000"})
	if err != nil {
		t.Fatal(err)
	}
	failed := &record.Request{}
	failed.Reset()
	failed.ErrorClass = record.ErrHTTP5xx
	rs := []struct {
		r    *record.Request
		good bool
	}{
		{result(50, 10, 10), true},
		{result(100, 20, 10), true},
		{result(101, 10, 10), false},
		{result(50, 25, 10), false},
		{result(500, 0, 1), false},
		{result(90, 20, 46), true},
		{failed, false},
	}
	g := Goodput{SLO: slo}
	for i, c := range rs {
		var s Sample
		s.From(c.r, slo)
		if s.Good != c.good {
			t.Errorf("request %d: met = %v, want %v", i, s.Good, c.good)
		}
		g.Add(&s)
	}
	if g.Good != 3 || g.All != 7 {
		t.Fatalf("good %d of %d, want 3 of 7", g.Good, g.All)
	}
	var s Summary
	g.Annotate(&s, 2*time.Second)
	rate, share := s.Goodput.Rate, s.Goodput.Share
	if rate != 1.5 || math.Abs(share-3.0/7) > 1e-12 {
		t.Errorf("request_goodput %v share %v, want 1.5 and 3/7", rate, share)
	}
	// Only the targets that are set are checked.
	only := NoSLO
	only.TPOT = 20
	if !only.Met(result(500, 20, 3)) {
		t.Error("a request meeting the only target (tpot) must count")
	}
}

// FuzzParseSLO: the parser never panics, accepts only finite targets ≥ 0,
// and what it accepts prints back (String) to the same targets.
func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft:500", "ttft:500,tpot:50 e2el:2000", "TPOT:1e3", "e2el:0.5,", ":", "ttft:", "ttft:1:2", "ttft:5,ttft:6", "x:1", "ttft:NaN", "tpot:-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		slo, err := ParseSLO([]string{s})
		if err != nil {
			if slo.Set() {
				t.Fatalf("ParseSLO(%q) failed (%v) yet returned targets %v", s, err, slo)
			}
			return
		}
		if !slo.Set() {
			t.Fatalf("ParseSLO(%q) succeeded with no target", s)
		}
		for _, v := range []float64{slo.TTFT, slo.TPOT, slo.E2EL} {
			if !math.IsNaN(v) && (v < 0 || math.IsInf(v, 0)) {
				t.Fatalf("ParseSLO(%q) = %v: a target out of range", s, slo)
			}
		}
		again, err := ParseSLO([]string{slo.String()})
		if err != nil {
			t.Fatalf("ParseSLO(%q) = %v, whose String %q does not parse: %v", s, slo, slo.String(), err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(again.TTFT, slo.TTFT) || !same(again.TPOT, slo.TPOT) || !same(again.E2EL, slo.E2EL) {
			t.Fatalf("round trip of %q: %v → %q → %v", s, slo, slo.String(), again)
		}
	})
}
