package plan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

func TestLengthMix(t *testing.T) {
	few := arrival.Poisson(arrival.PoissonConfig{Rate: 10, Burstiness: 1, Count: 1000, Seed: 1,
		Lengths: arrival.UniformLengths{Input: 32, Output: 16}})
	if got := LengthMix(few); got != "32,16:100" {
		t.Errorf("one pair: %q", got)
	}
	many := arrival.Poisson(arrival.PoissonConfig{Rate: 10, Burstiness: 1, Count: 20000, Seed: 2,
		Lengths: arrival.UniformLengths{Input: 500, Output: 200, RangeRatio: 0.9}})
	mix := LengthMix(many)
	m, err := arrival.ParseMixture(mix, 1)
	if err != nil {
		t.Fatalf("%q: %v", mix, err)
	}
	if n := strings.Count(mix, ";") + 1; n > LengthMixComponents {
		t.Errorf("%d components, want ≤ %d", n, LengthMixComponents)
	}
	// The mean lengths are kept (to rounding: half a token a component).
	var in, out, wIn, wOut float64
	for a := range many {
		in += float64(a.InputTokens)
		out += float64(a.OutputTokens)
	}
	in, out = in/20000, out/20000
	var total float64
	for _, c := range m.Components {
		wIn += c.Weight * float64(c.Input)
		wOut += c.Weight * float64(c.Output)
		total += c.Weight
	}
	if math.Abs(wIn/total-in) > 1 || math.Abs(wOut/total-out) > 1 {
		t.Errorf("mix means %.1f, %.1f; schedule %.1f, %.1f", wIn/total, wOut/total, in, out)
	}
	if LengthMix(day(1)) != "" {
		t.Error("empty schedule: want no mix")
	}
}

func TestGammaShape(t *testing.T) {
	for cv, k := range map[float64]float64{1: 1, 2: 0.25, 0.5: 4, 0: 100} {
		if got := GammaShape(cv); math.Abs(got-k) > 1e-9 {
			t.Errorf("GammaShape(%g) = %g, want %g", cv, got, k)
		}
	}
	// The shape makes a schedule of that CV.
	ws, _, err := Survey(day(5, seg{rate: 50, k: GammaShape(2.5), d: 10 * time.Minute}), Config{Window: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ws[0].Burstiness/2.5-1) > 0.1 {
		t.Errorf("CV %.3f, want 2.5 ± 10 %%", ws[0].Burstiness)
	}
}
