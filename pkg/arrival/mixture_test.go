package arrival

import (
	"math"
	"strings"
	"testing"
)

// chiSquareCritical999 is the 0.999 quantile of χ² with df degrees of
// freedom (df 1…5): a correct mixture fails the test once in 1,000 seeds.
var chiSquareCritical999 = []float64{0, 10.83, 13.82, 16.27, 18.47, 20.52}

// TestMixtureChiSquare draws a seeded Poisson schedule with a length
// mixture, reads it back from its CSV, assigns each request to its
// component by its lengths, and checks the counts against the weights with
// a χ² test; jittered lengths stay in their ranges.
func TestMixtureChiSquare(t *testing.T) {
	for _, spec := range []string{"128,64:40;512,256:50;4096,512:10", "100±0.2,10:1;1000,100±0.5:3;5000±0.1,7:1"} {
		for _, seed := range []uint64{1, 2, 3} {
			m, err := ParseMixture(spec, seed)
			if err != nil {
				t.Fatal(err)
			}
			const n = 20000
			arr := exported(t, Poisson(PoissonConfig{Rate: 100, Burstiness: 1, Count: n, Seed: seed, Lengths: m}))
			counts := make([]float64, len(m.Components))
			for _, a := range arr {
				k := -1
				for j, c := range m.Components {
					if inRange(a.InputTokens, c.Input, c.InputJitter) && inRange(a.OutputTokens, c.Output, c.OutputJitter) {
						k = j
						break
					}
				}
				if k < 0 {
					t.Fatalf("%s: request %d has lengths %d,%d outside every component", spec, a.Index, a.InputTokens, a.OutputTokens)
				}
				if k != m.Component(a.Index) {
					t.Fatalf("%s: request %d drawn from component %d, Component says %d", spec, a.Index, k, m.Component(a.Index))
				}
				counts[k]++
			}
			chi := 0.0
			for k, c := range counts {
				e := n * m.Share(k)
				chi += (c - e) * (c - e) / e
			}
			df := len(counts) - 1
			if chi > chiSquareCritical999[df] {
				t.Errorf("%s seed %d: χ² = %.2f with %d df > %.2f (counts %v)", spec, seed, chi, df, chiSquareCritical999[df], counts)
			}
			t.Logf("%s seed %d: counts %v, χ² %.2f (df %d)", spec, seed, counts, chi, df)
		}
	}
}

func inRange(v, l int, r float64) bool {
	if r == 0 {
		return v == l
	}
	lo := max(1, int(math.Floor(float64(l)*(1-r))))
	hi := max(lo, int(math.Ceil(float64(l)*(1+r))))
	return v >= lo && v <= hi
}

// TestMixtureChiSquareDetectsWrongWeights: the same test rejects a schedule
// drawn with other weights, so it has the power to fail.
func TestMixtureChiSquareDetectsWrongWeights(t *testing.T) {
	want, _ := ParseMixture("128,64:40;512,256:50;4096,512:10", 1)
	got, _ := ParseMixture("128,64:45;512,256:45;4096,512:10", 1)
	counts := make([]float64, 3)
	const n = 20000
	for i := range int64(n) {
		counts[got.Component(i)]++
	}
	chi := 0.0
	for k, c := range counts {
		e := n * want.Share(k)
		chi += (c - e) * (c - e) / e
	}
	if chi < chiSquareCritical999[2] {
		t.Errorf("weights 45/45/10 against 40/50/10: χ² = %.2f, want > %.2f", chi, chiSquareCritical999[2])
	}
}

func TestParseMixture(t *testing.T) {
	m, err := ParseMixture(" 128,64:40; 512+-0.1,256±0.25:50 ", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != "128,64:40;512±0.1,256±0.25:50" {
		t.Errorf("String = %q", got)
	}
	if in, out := m.Max(); in != 564 || out != 320 {
		t.Errorf("Max = %d, %d, want 564, 320", in, out)
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"128,64", `component 1 "128,64": want INPUT,OUTPUT:WEIGHT`},
		{"128:5", `component 1 "128:5": want INPUT,OUTPUT before the ':'`},
		{"128,64:40;abc,1:2", `component 2 "abc,1:2": input length "abc" is not a whole number`},
		{"128,0:40", `component 1 "128,0:40": output length "0"`},
		{"128,64:x", `component 1 "128,64:x": weight is not a number`},
		{"128,64:0", "weight must be a finite number > 0"},
		{"128±1.5,64:1", `input jitter "1.5": want a ratio`},
		{"128,64±x:1", `output jitter "x"`},
	} {
		_, err := ParseMixture(c.in, 0)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseMixture(%q) = %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func FuzzParseMixture(f *testing.F) {
	for _, s := range []string{"128,64:40;512,256:50;4096,512:10", "1±0.5,1:1e-3", ";;", "1,1:1;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseMixture(s, 7)
		if err != nil {
			return
		}
		again, err := ParseMixture(m.String(), 7)
		if err != nil || again.String() != m.String() {
			t.Fatalf("round trip of %q via %q: %v", s, m.String(), err)
		}
		r := Rand(1, 2)
		for i := range int64(50) {
			if in, out := m.Draw(r, i); in < 1 || out < 1 {
				t.Fatalf("%q: drew %d, %d", s, in, out)
			}
		}
	})
}
