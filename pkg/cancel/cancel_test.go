package cancel

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// TestParse: the flags' values, and every problem naming its flag and the
// wrong part; both off is no policy.
func TestParse(t *testing.T) {
	if p, err := Parse(0, "", 1); p != nil || err != nil {
		t.Fatalf("off: %v, %v", p, err)
	}
	for _, c := range []struct {
		share float64
		after string
		want  string // "" : valid
	}{
		{0.5, "500ms", ""},
		{1, "uniform:100ms:2s", ""},
		{0.1, "exp:1s", ""},
		{0.1, "lognormal:1s:0.5", ""},
		{0.1, "0.25", ""},
		{0.5, "", "--cancel-share needs --cancel-after"},
		{0, "1s", "--cancel-after 1s needs --cancel-share"},
		{1.01, "1s", "--cancel-share 1.01: want a share 0 < F ≤ 1"},
		{math.NaN(), "1s", "--cancel-share NaN"},
		{0.5, "uniform:1s:x", `--cancel-after "uniform:1s:x": "x" is not a duration`},
		{0.5, "uniform:0s:1s", "needs A > 0"},
		{0.5, "0ms", "delay > 0"},
		{0.5, "geometric:3", "geometric is for counts"},
		{0.5, "exp", `--cancel-after "exp": "exp" is not a duration`},
		{0.5, "gamma:1s", `unknown distribution "gamma"`},
	} {
		p, err := Parse(c.share, c.after, 1)
		switch {
		case c.want == "" && (err != nil || !p.On()):
			t.Errorf("%g %q: %v", c.share, c.after, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%g %q: error %v, want %q", c.share, c.after, err, c.want)
		}
	}
}

// TestCutShareAndRange: over many requests the share cancelled is F
// within 4σ, every cut lies in uniform:A:B with its mean within 4σ, and a
// request's decision depends on (seed, index, turn) only.
func TestCutShareAndRange(t *testing.T) {
	p, err := Parse(0.25, "uniform:100ms:2s", 42)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40000
	c := p.NewCutter()
	var k int
	var sum float64
	for i := range int64(n) {
		d := c.Cut(i, 1)
		if d != p.Cut(i, 1) || d != p.NewCutter().Cut(i, 1) {
			t.Fatalf("index %d: the decision depends on the cutter", i)
		}
		if d == 0 {
			continue
		}
		if d < 100*time.Millisecond || d > 2*time.Second {
			t.Fatalf("index %d: cut %v outside 100ms–2s", i, d)
		}
		k++
		sum += d.Seconds()
	}
	if sd := math.Sqrt(n * 0.25 * 0.75); math.Abs(float64(k)-n*0.25) > 4*sd {
		t.Errorf("%d of %d cancelled, want %.0f ± %.0f", k, n, n*0.25, 4*sd)
	}
	mean, sdMean := sum/float64(k), 1.9/math.Sqrt(12)/math.Sqrt(float64(k))
	if math.Abs(mean-1.05) > 4*sdMean {
		t.Errorf("mean cut %.4f s, want 1.05 ± %.4f", mean, 4*sdMean)
	}
	// Another seed, another turn: other decisions.
	q, _ := Parse(0.25, "uniform:100ms:2s", 43)
	var sameSeed, sameTurn int
	for i := range int64(1000) {
		if q.Cut(i, 1) == p.Cut(i, 1) && p.Cut(i, 1) > 0 {
			sameSeed++
		}
		if p.Cut(i, 2) == p.Cut(i, 1) && p.Cut(i, 1) > 0 {
			sameTurn++
		}
	}
	if sameSeed > 5 || sameTurn > 5 {
		t.Errorf("%d equal cuts across seeds, %d across turns", sameSeed, sameTurn)
	}
}

// TestCutShareOne: --cancel-share 1 cancels every request; a fixed delay
// is that delay; exp:MEAN never gives 0 (at least MinCut).
func TestCutShareOne(t *testing.T) {
	p, _ := Parse(1, "250ms", 7)
	e, _ := Parse(1, "exp:1us", 7)
	for i := range int64(2000) {
		if d := p.Cut(i, 1); d != 250*time.Millisecond {
			t.Fatalf("index %d: cut %v, want 250ms", i, d)
		}
		if d := e.Cut(i, 3); d < MinCut {
			t.Fatalf("index %d: exp cut %v < %v", i, d, MinCut)
		}
	}
}

// TestApplyKeepsTheSchedule: Apply sets CancelAfter and nothing else, and
// a nil policy leaves the schedule as it is.
func TestApplyKeepsTheSchedule(t *testing.T) {
	s := arrival.Poisson(arrival.PoissonConfig{Rate: 100, Burstiness: 1, Seed: 3, Count: 500,
		Lengths: arrival.UniformLengths{Input: 100, Output: 10, RangeRatio: 0.5}})
	p, _ := Parse(0.5, "exp:300ms", 3)
	var off []arrival.Arrival
	for a := range (*Policy)(nil).Apply(s) {
		if a.CancelAfter != 0 {
			t.Fatal("a nil policy cancelled a request")
		}
		off = append(off, a)
	}
	i, cut := 0, 0
	for a := range p.Apply(s) {
		if a.CancelAfter != p.Cut(a.Index, 1) {
			t.Fatalf("arrival %d: CancelAfter %v, Cut %v", a.Index, a.CancelAfter, p.Cut(a.Index, 1))
		}
		if a.CancelAfter > 0 {
			cut++
		}
		a.CancelAfter = 0
		if a.Index != off[i].Index || a.At != off[i].At || a.InputTokens != off[i].InputTokens || a.OutputTokens != off[i].OutputTokens {
			t.Fatalf("arrival %d: %+v with cancellation, %+v without", i, a, off[i])
		}
		i++
	}
	if i != len(off) || cut == 0 || cut == i {
		t.Errorf("%d arrivals (%d without), %d cut", i, len(off), cut)
	}
}
