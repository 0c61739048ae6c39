package session

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

func mustDist(t *testing.T, s string, u Unit) Dist {
	t.Helper()
	d, err := ParseDist(s, u)
	if err != nil {
		t.Fatalf("ParseDist(%q): %v", s, err)
	}
	return d
}

func TestParseDist(t *testing.T) {
	good := []struct {
		in   string
		unit Unit
		want Dist
	}{
		{"5", Count, Dist{Kind: "const", A: 5, Unit: Count}},
		{"uniform:2:8", Count, Dist{Kind: "uniform", A: 2, B: 8, Unit: Count}},
		{"geometric:4", Count, Dist{Kind: "geometric", A: 4, Unit: Count}},
		{"2s", Duration, Dist{Kind: "const", A: 2, Unit: Duration}},
		{"0.5", Duration, Dist{Kind: "const", A: 0.5, Unit: Duration}},
		{"exp:2s", Duration, Dist{Kind: "exp", A: 2, Unit: Duration}},
		{"lognormal:1500ms:0.5", Duration, Dist{Kind: "lognormal", A: 1.5, B: 0.5, Unit: Duration}},
		{"lognormal:300:0.4", Tokens, Dist{Kind: "lognormal", A: 300, B: 0.4, Unit: Tokens}},
	}
	for _, c := range good {
		got, err := ParseDist(c.in, c.unit)
		if err != nil || got != c.want {
			t.Errorf("ParseDist(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if back, err := ParseDist(got.String(), c.unit); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", c.in, got.String(), back, err)
		}
	}
	bad := []struct {
		in   string
		unit Unit
	}{
		{"0", Count}, {"-1", Tokens}, {"uniform:5:2", Count}, {"uniform:3", Count}, {"geometric:0.5", Count},
		{"exp:0s", Duration}, {"lognormal:0:1", Duration}, {"poisson:3", Count}, {"geometric:3s", Duration},
		{"abc", Duration}, {"NaN", Count}, {"", Count},
	}
	for _, c := range bad {
		if d, err := ParseDist(c.in, c.unit); err == nil {
			t.Errorf("ParseDist(%q) = %+v, want an error", c.in, d)
		}
	}
}

// TestPlanIsPureAndPerSession: the same seed and arrival give the same
// plan in any order, another seed another plan, and the first turn is the
// arrival itself.
func TestPlanIsPureAndPerSession(t *testing.T) {
	c := Config{Turns: mustDist(t, "uniform:2:8", Count), Think: mustDist(t, "exp:2s", Duration),
		TurnInput: mustDist(t, "uniform:10:100", Tokens), Seed: 7}
	plans := map[int64][]Turn{}
	for i := range int64(50) {
		a := arrival.Arrival{Index: i, InputTokens: 300, OutputTokens: 40}
		p := c.Plan(nil, &a)
		if p[0] != (Turn{Input: 300, Output: 40}) {
			t.Fatalf("session %d: first turn %+v, want the arrival's sizes", i, p[0])
		}
		if len(p) < 2 || len(p) > 8 {
			t.Fatalf("session %d: %d turns, want 2–8", i, len(p))
		}
		for _, tu := range p[1:] {
			if tu.Input < 10 || tu.Input > 100 || tu.Output != 40 || tu.Think < 0 {
				t.Fatalf("session %d: turn %+v out of its distributions", i, tu)
			}
		}
		plans[i] = p
	}
	for i := int64(49); i >= 0; i-- { // reverse order: no state carried between sessions
		a := arrival.Arrival{Index: i, InputTokens: 300, OutputTokens: 40}
		if p := c.Plan(nil, &a); !slices.Equal(p, plans[i]) {
			t.Fatalf("session %d planned differently the second time", i)
		}
	}
	c.Seed = 8
	a := arrival.Arrival{Index: 3, InputTokens: 300, OutputTokens: 40}
	same := 0
	for i := range int64(20) {
		a.Index = i
		if slices.Equal(c.Plan(nil, &a), plans[i]) {
			same++
		}
	}
	if same > 2 {
		t.Errorf("%d of 20 plans unchanged by another seed", same)
	}
}

// TestPlanOffIsOneTurn: --turns 1 (or unset) plans one turn per arrival.
func TestPlanOffIsOneTurn(t *testing.T) {
	for _, c := range []Config{{}, {Turns: Const(1, Count), Think: Const(2, Duration)}} {
		if c.On() {
			t.Errorf("%+v: On", c)
		}
		a := arrival.Arrival{Index: 1, InputTokens: 5, OutputTokens: 6}
		if p := c.Plan(nil, &a); len(p) != 1 {
			t.Errorf("%+v: %d turns", c, len(p))
		}
	}
}

// TestThinkTimeDistribution: on a seeded plan, the think times of
// exp:2s have mean 2 s and the exponential's quantiles (p50 = ln 2 · 2 s,
// p90 = ln 10 · 2 s), within 5 % over 20,000 draws (the standard error of
// the mean is 0.7 %); lognormal's median is its MEDIAN; geometric turn
// counts have their mean.
func TestThinkTimeDistribution(t *testing.T) {
	c := Config{Turns: Const(5, Count), Think: mustDist(t, "exp:2s", Duration), Seed: 1}
	var th []float64
	for i := range int64(5000) {
		a := arrival.Arrival{Index: i, InputTokens: 1, OutputTokens: 1}
		for _, tu := range c.Plan(nil, &a)[1:] {
			th = append(th, tu.Think.Seconds())
		}
	}
	sort.Float64s(th)
	mean := 0.0
	for _, v := range th {
		mean += v
	}
	mean /= float64(len(th))
	q := func(p float64) float64 { return th[int(p*float64(len(th)))] }
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 0.05*want {
			t.Errorf("%s = %.4f, want %.4f ± 5%%", name, got, want)
		}
	}
	check("exp mean", mean, 2)
	check("exp p50", q(0.5), 2*math.Ln2)
	check("exp p90", q(0.9), 2*math.Log(10))

	c.Think = mustDist(t, "lognormal:1500ms:0.5", Duration)
	th = th[:0]
	for i := range int64(5000) {
		a := arrival.Arrival{Index: i}
		for _, tu := range c.Plan(nil, &a)[1:] {
			th = append(th, tu.Think.Seconds())
		}
	}
	sort.Float64s(th)
	check("lognormal p50", q(0.5), 1.5)

	c = Config{Turns: mustDist(t, "geometric:4", Count), Seed: 3}
	n, sessions := 0, 20000
	for i := range int64(sessions) {
		a := arrival.Arrival{Index: i}
		n += len(c.Plan(nil, &a))
	}
	check("geometric mean turns", float64(n)/float64(sessions), 4)
}

// TestPlanRows: the sessions CSV writes one row per turn, think time in
// seconds with microseconds.
func TestPlanRows(t *testing.T) {
	got := string(AppendPlanRows(nil, 12, []Turn{{Input: 100, Output: 20}, {Think: 1500 * time.Millisecond, Input: 30, Output: 20}}))
	want := "12,1,0.000000,100,20\n12,2,1.500000,30,20\n"
	if got != want {
		t.Errorf("rows:\n%s\nwant\n%s", got, want)
	}
}

// A token length is at most arrival.MaxLength however far a distribution's
// tail reaches, and a count at most MaxTurns (int of a huge float is
// negative: no turn at all).
func TestDrawIsBounded(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		s    string
		unit Unit
		max  float64
	}{
		{"lognormal:1000000:30", Tokens, arrival.MaxLength},
		{"geometric:16000000", Tokens, arrival.MaxLength},
		{"1e300", Count, MaxTurns},
		{"lognormal:100:40", Count, MaxTurns},
	} {
		d, err := ParseDist(c.s, c.unit)
		if err != nil {
			t.Fatalf("%s: %v", c.s, err)
		}
		hit := false
		for range 1000 {
			v := d.Draw(r)
			if v < 1 || v > c.max {
				t.Fatalf("%s: drew %g, want 1 to %g", c.s, v, c.max)
			}
			hit = hit || v == c.max
		}
		if !hit {
			t.Errorf("%s: never reached the bound %g in 1000 draws", c.s, c.max)
		}
	}
}
