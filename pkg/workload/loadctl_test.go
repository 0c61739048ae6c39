package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// TestStagesEveryMode: in replay and parametric mode --stages multiplies
// the speed (a constant 2 halves every offset of the same schedule) and
// the run ends with the stages; in Poisson mode the stages are the rate.
// Each mode's workload carries the target_rate section.
func TestStagesEveryMode(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			c := baseConfig()
			m.set(t, &c)
			c.NumPromptsSet = false
			if m.name == "poisson" {
				c.NumPrompts = 100
				c.Load.Stages = "0s:50,20s:50"
				w, err := Build(c, quiet{})
				if err != nil {
					t.Fatal(err)
				}
				if n := float64(w.Stats.Count); math.Abs(n-1000) > 5*math.Sqrt(1000) || w.Stats.Last.Seconds() >= 20 {
					t.Errorf("%d arrivals over %v, want about 1000 within 20 s", w.Stats.Count, w.Stats.Last)
				}
				if w.TargetRate == nil || w.TargetRate.Unit != "req/s" || w.TargetRate.Expected != 1000 || len(w.TargetRate.Stages) != 2 {
					t.Errorf("target_rate %+v", w.TargetRate)
				}
				return
			}
			c.Duration = 0
			if m.name == "parametric" {
				c.Duration = 600e9
			}
			base, err := Build(c, quiet{})
			if err != nil {
				t.Fatal(err)
			}
			plain := slices.Collect(base.Schedule)
			// Twice the speed for a quarter of the plain span: half the
			// workload.
			d := plain[len(plain)-1].At.Seconds() / 4
			c.Load.Stages = fmt.Sprintf("0s:2,%gs:2", d)
			w, err := Build(c, quiet{})
			if err != nil {
				t.Fatal(err)
			}
			fast := slices.Collect(w.Schedule)
			if len(fast) == 0 || len(fast) >= len(plain) {
				t.Fatalf("%d arrivals at twice the speed for %g s, of %d", len(fast), d, len(plain))
			}
			for i, a := range fast {
				if want := plain[i].At / 2; (a.At - want).Abs() > 2 {
					t.Fatalf("arrival %d at %v, want %v (half of %v)", i, a.At, want, plain[i].At)
				}
				if a.InputTokens != plain[i].InputTokens || a.Model != plain[i].Model {
					t.Fatalf("arrival %d changed size or model", i)
				}
			}
			if next, last := plain[len(fast)].At.Seconds(), plain[len(fast)-1].At.Seconds(); last >= 2*d || next < 2*d-1e-6 {
				t.Errorf("cut between workload times %g and %g s, want at %g s (%g s at twice the speed)", last, next, 2*d, d)
			}
			if w.TargetRate == nil || w.TargetRate.Unit != "x time scale" || math.Abs(w.TargetRate.Expected-2*d) > 1e-9 {
				t.Errorf("target_rate %+v", w.TargetRate)
			}
			// --duration still cuts the staged run, in wall time.
			c.Duration = arrival.Seconds(d / 2)
			short, err := Build(c, quiet{})
			if err != nil {
				t.Fatal(err)
			}
			if short.Stats.Last.Seconds() >= d/2 || short.Stats.Count == 0 || short.Stats.Count >= w.Stats.Count {
				t.Errorf("--duration 30s: last arrival at %v", short.Stats.Last)
			}
		})
	}
}

// TestLengthMixFacts: the length_mix section counts the schedule's
// requests by component, as the CSV shows them.
func TestLengthMixFacts(t *testing.T) {
	for _, mode := range []string{"poisson", "parametric"} {
		c := baseConfig()
		c.NumPrompts = 3000
		if mode == "parametric" {
			modes[2].set(t, &c)
		}
		c.Load.Lengths = "128,64:40;512,256:50;4096,512:10"
		w, err := Build(c, quiet{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[[2]int]int64{}
		for a := range w.Schedule {
			got[[2]int{a.InputTokens, a.OutputTokens}]++
		}
		if len(w.LengthMix) != 3 {
			t.Fatalf("%s: length_mix %+v", mode, w.LengthMix)
		}
		var sum int64
		for _, e := range w.LengthMix {
			if got[[2]int{e.Input, e.Output}] != e.Scheduled {
				t.Errorf("%s: %d,%d: %d scheduled, the schedule has %d", mode, e.Input, e.Output, e.Scheduled, got[[2]int{e.Input, e.Output}])
			}
			if math.Abs(e.Share-e.TargetShare) > 0.04 {
				t.Errorf("%s: %d,%d: share %.3f, target %.3f", mode, e.Input, e.Output, e.Share, e.TargetShare)
			}
			sum += e.Scheduled
		}
		if sum != w.Stats.Count {
			t.Errorf("%s: mixture counts %d requests of %d", mode, sum, w.Stats.Count)
		}
	}
}

// TestSharedPrefixFacts: the shared_prefix section counts truncated
// requests and the tokens a cache can reuse, checked against a direct count
// over the schedule.
func TestSharedPrefixFacts(t *testing.T) {
	c := baseConfig()
	c.NumPrompts, c.RandomInputLen, c.RandomRangeRatio = 400, 500, 0.5
	c.Load.PrefixLen, c.Load.NumPrefixes, c.Load.PrefixDist = 400, 5, "zipf:1"
	w, err := Build(c, quiet{})
	if err != nil {
		t.Fatal(err)
	}
	info := w.SharedPrefixInfo
	if info == nil || w.Prefix == nil {
		t.Fatal("no shared_prefix section")
	}
	var truncated, reused int64
	seen := map[int]int{}
	for a := range w.Schedule {
		p := min(400, a.InputTokens)
		if a.InputTokens < 400 {
			truncated++
		}
		k := w.Prefix.Pick(a.Index)
		reused += int64(min(p, seen[k]))
		seen[k] = max(seen[k], p)
	}
	if info.Truncated != truncated || truncated == 0 || info.ReusedTokens != reused || info.Used != len(seen) || info.Requests != 400 {
		t.Errorf("section %+v; counted %d truncated, %d reused tokens, %d prefixes", info, truncated, reused, len(seen))
	}
	if want := float64(reused) / float64(w.Stats.Input); math.Abs(info.ExpectedCachedShare-want) > 1e-12 {
		t.Errorf("expected cached share %g, want %g", info.ExpectedCachedShare, want)
	}
}

func TestLoadOptionsErrors(t *testing.T) {
	for _, c := range []struct {
		mode string
		l    LoadOptions
		want string
	}{
		{"poisson", LoadOptions{Stages: "30s:10,2m:abc"}, `--stages: stage 2 "2m:abc": rate is not a number`},
		{"poisson", LoadOptions{Stages: "30s:0"}, "--stages: the target is 0 throughout"},
		{"poisson", LoadOptions{Stages: "30s:10", RampStrategy: "linear", RampStartSet: true, RampEndSet: true, RampEndRPS: 1}, "--stages and --ramp-up-strategy"},
		{"poisson", LoadOptions{Stages: "30s:10", RequestRateSet: true}, "--stages and --request-rate"},
		{"poisson", LoadOptions{RampStrategy: "sine"}, `--ramp-up-strategy "sine": want linear or exponential`},
		{"poisson", LoadOptions{RampStrategy: "linear", RampStartSet: true}, "needs --ramp-up-start-rps and --ramp-up-end-rps"},
		{"poisson", LoadOptions{RampStrategy: "exponential", RampStartSet: true, RampEndSet: true, RampEndRPS: 5}, "--ramp-up-start-rps 0: an exponential ramp needs rates > 0"},
		{"poisson", LoadOptions{RampStrategy: "linear", RampStartSet: true, RampEndSet: true, RampStartRPS: -1, RampEndRPS: 5}, "--ramp-up-start-rps -1: want a finite rate"},
		{"poisson", LoadOptions{RampEndSet: true}, "need --ramp-up-strategy"},
		{"replay", LoadOptions{RampStrategy: "linear", RampStartSet: true, RampEndSet: true, RampEndRPS: 5}, "--ramp-up-strategy applies to --mode poisson"},
		{"replay", LoadOptions{Lengths: "1,1:1"}, "--lengths applies to poisson and parametric mode"},
		{"poisson", LoadOptions{Lengths: "1,1:0"}, `--lengths: component 1 "1,1:0": weight must be`},
		{"poisson", LoadOptions{PrefixLen: -3, NumPrefixes: 1}, "--prefix-len -3"},
		{"poisson", LoadOptions{PrefixLen: 10}, "--num-prefixes 0"},
		{"poisson", LoadOptions{PrefixLen: 10, NumPrefixes: 2, PrefixDist: "zipf:0"}, "--prefix-dist"},
		{"poisson", LoadOptions{NumPrefixes: 4, PrefixDist: "uniform"}, "shared prefixes need --prefix-len"},
		{"poisson", LoadOptions{NumPrefixes: 1, PrefixDist: "zipf:1.1"}, "shared prefixes need --prefix-len"},
	} {
		err := c.l.Validate(c.mode)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.mode, c.l, err, c.want)
		}
	}
	if d := DefaultLoadOptions(); d.Validate("replay") != nil {
		err := d.Validate("replay")
		t.Errorf("defaults: %v", err)
	}
	// Conflicts with the other length sources.
	c := baseConfig()
	c.Load.Lengths = "10,10:1"
	c.Mode, c.Parametric.ModelClass, c.Parametric.RequestLengthsCSV = "parametric", "Dense_10to30B", "x.csv"
	if _, err := Build(c, quiet{}); err == nil || !strings.Contains(err.Error(), "--lengths and --request-lengths-csv") {
		t.Errorf("parametric: %v", err)
	}
	c = baseConfig()
	c.Load.Lengths = "600000,600000:1"
	if _, err := Build(c, quiet{}); err == nil || !strings.Contains(err.Error(), "exceeds the token limit") {
		t.Errorf("token limit: %v", err)
	}
}

// TestSharedPrefixFactsWithImages: with images the prefix starts the text
// part, so a request is truncated when its text is shorter than the prefix
// (not its whole input).
func TestSharedPrefixFactsWithImages(t *testing.T) {
	c := baseConfig()
	c.Mode, c.NumPromptsSet, c.TimeScale = "replay", false, 100
	c.Replay.TracePath = tracePath(t, "azure_lmm_2025.csv")
	c.Replay.ImageWidth, c.Replay.ImageHeight = 64, 64
	c.Load.PrefixLen, c.Load.NumPrefixes = 300, 3
	w, err := Build(c, quiet{})
	if err != nil {
		t.Fatal(err)
	}
	var withImages, truncated, byInput int64
	for a := range w.Schedule {
		text := a.InputTokens
		if a.Images > 0 {
			withImages++
			text = w.ImageOptions.TextTokens(a.InputTokens, a.Images)
		}
		if text < 300 {
			truncated++
		}
		if a.InputTokens < 300 {
			byInput++
		}
	}
	if withImages == 0 || truncated == byInput {
		t.Skipf("the trace does not tell text from input lengths here (%d with images)", withImages)
	}
	if got := w.SharedPrefixInfo.Truncated; got != truncated {
		t.Errorf("truncated %d, want %d (by text tokens; %d by input tokens)", got, truncated, byInput)
	}
}
