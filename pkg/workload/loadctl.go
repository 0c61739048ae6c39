package workload

import (
	"errors"
	"fmt"
	"math"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/cancel"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// LoadOptions are the load-control options: a target profile (--stages, or
// vLLM's --ramp-up-*), shared-prefix prompts (--prefix-len, --num-prefixes,
// --prefix-dist), a length mixture (--lengths) and request cancellation
// (--cancel-share, --cancel-after). Their zero value is off.
type LoadOptions struct {
	// Stages is --stages: k6-style DURATION:TARGET stages.
	Stages string
	// RampStrategy (linear or exponential), RampStartRPS and RampEndRPS
	// are vLLM's ramp; the *Set fields tell which were given.
	RampStrategy             string
	RampStartRPS, RampEndRPS float64
	RampStartSet, RampEndSet bool
	// RequestRateSet: --request-rate was given (it conflicts with a
	// profile).
	RequestRateSet bool
	// Lengths is --lengths: an input/output length mixture.
	Lengths string
	// PrefixLen (0: off), NumPrefixes and PrefixDist choose the shared
	// prefixes.
	PrefixLen, NumPrefixes int
	PrefixDist             string
	// CancelShare (0: off) is the share of requests the client cancels,
	// CancelAfter when it cuts them (a duration or a distribution).
	CancelShare float64
	CancelAfter string
}

// DefaultLoadOptions returns the options with everything off.
func DefaultLoadOptions() LoadOptions {
	return LoadOptions{NumPrefixes: 1, PrefixDist: "uniform"}
}

// Validate returns every problem of l in mode, each naming its flag (and
// conflicting flags together).
func (l *LoadOptions) Validate(mode string) error {
	m, ok := LookupMode(mode)
	rated, trace := ok && m.Rated, ok && m.Trace
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if l.Stages != "" {
		if st, err := arrival.ParseStages(l.Stages); err != nil {
			add("--stages: %w", err)
		} else if _, err := arrival.StagesProfile(st); err != nil {
			add("--stages: %w", err)
		}
		if l.RampStrategy != "" {
			add("--stages and --ramp-up-strategy: choose one (a ramp is one stage: --stages 0s:START,DURATION:END)")
		}
		if rated && l.RequestRateSet {
			add("--stages and --request-rate: choose one (the stages set the rate)")
		}
	}
	switch l.RampStrategy {
	case "":
		if l.RampStartSet || l.RampEndSet {
			add("--ramp-up-start-rps and --ramp-up-end-rps need --ramp-up-strategy linear or exponential")
		}
	case "linear", "exponential":
		if !rated {
			add("--ramp-up-strategy applies to --mode poisson (in %s mode, --stages changes the speed)", mode)
		}
		if !l.RampStartSet || !l.RampEndSet {
			add("--ramp-up-strategy needs --ramp-up-start-rps and --ramp-up-end-rps")
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"--ramp-up-start-rps", l.RampStartRPS}, {"--ramp-up-end-rps", l.RampEndRPS}} {
			if !(f.v >= 0) || math.IsInf(f.v, 0) {
				add("%s %g: want a finite rate ≥ 0", f.name, f.v)
			} else if l.RampStrategy == "exponential" && f.v == 0 {
				add("%s 0: an exponential ramp needs rates > 0", f.name)
			}
		}
		if l.RampStartSet && l.RampEndSet && l.RampStartRPS == 0 && l.RampEndRPS == 0 {
			add("--ramp-up-start-rps and --ramp-up-end-rps are both 0: no request would be due")
		}
		if rated && l.RequestRateSet {
			add("--ramp-up-strategy and --request-rate: choose one (the ramp sets the rate)")
		}
	default:
		add("--ramp-up-strategy %q: want linear or exponential", l.RampStrategy)
	}
	if l.Lengths != "" {
		if _, err := arrival.ParseMixture(l.Lengths, 0); err != nil {
			add("--lengths: %w", err)
		}
		if trace {
			add("--lengths applies to poisson and parametric mode (a trace gives its own lengths)")
		}
	}
	if l.PrefixLen < 0 || l.PrefixLen > arrival.MaxLength {
		add("--prefix-len %d: want a number of tokens from 1 to %d (0: off)", l.PrefixLen, arrival.MaxLength)
	}
	if l.NumPrefixes < 0 || l.NumPrefixes > prompt.MaxPrefixes || l.NumPrefixes == 0 && l.PrefixLen > 0 {
		add("--num-prefixes %d: want 1 to %d", l.NumPrefixes, prompt.MaxPrefixes)
	}
	if _, err := prompt.ParsePrefixDist(l.PrefixDist); err != nil {
		add("--prefix-dist: %w", err)
	}
	if l.PrefixLen == 0 && (l.NumPrefixes > 1 || l.PrefixDist != "" && l.PrefixDist != "uniform") {
		add("--num-prefixes %d --prefix-dist %s: shared prefixes need --prefix-len N (their length in tokens)", l.NumPrefixes, l.PrefixDist)
	}
	if _, err := cancel.Parse(l.CancelShare, l.CancelAfter, 0); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// cancelPolicy returns the run's cancellation (nil when off).
func (l *LoadOptions) cancelPolicy(c *Config) (*cancel.Policy, error) {
	return cancel.Parse(l.CancelShare, l.CancelAfter, c.Seed)
}

// profile returns the target profile (nil without one). Poisson ramps
// span --duration, else the time --num-prompts requests take on average.
func (l *LoadOptions) profile(c *Config) (*arrival.Profile, string, error) {
	switch {
	case l.Stages != "":
		st, err := arrival.ParseStages(l.Stages)
		if err != nil {
			return nil, "", fmt.Errorf("--stages: %w", err)
		}
		p, err := arrival.StagesProfile(st)
		if err != nil {
			return nil, "", fmt.Errorf("--stages: %w", err)
		}
		return p, "--stages", nil
	case l.RampStrategy != "":
		span := c.Duration.Seconds()
		if c.Duration <= 0 {
			span = arrival.RampSpan(l.RampStrategy, l.RampStartRPS, l.RampEndRPS, c.NumPrompts)
		}
		p, err := arrival.RampProfile(l.RampStrategy, l.RampStartRPS, l.RampEndRPS, span)
		if err != nil {
			return nil, "", fmt.Errorf("--ramp-up-strategy: %w", err)
		}
		if c.Duration <= 0 {
			// vLLM sends --num-prompts requests: the span is the time they
			// take on average; where the draw runs short, the end rate
			// holds until the last (10 standard deviations of the count
			// and more).
			p = p.Hold((10*math.Sqrt(float64(c.NumPrompts)) + 10) / l.RampEndRPS)
		}
		return p, "--ramp-up-strategy " + l.RampStrategy, nil
	}
	return nil, "", nil
}

// mixture returns the --lengths mixture (nil without one), checked against
// the token limit.
func (l *LoadOptions) mixture(c *Config) (*arrival.MixtureLengths, error) {
	if l.Lengths == "" {
		return nil, nil
	}
	m, err := arrival.ParseMixture(l.Lengths, c.Seed)
	if err != nil {
		return nil, fmt.Errorf("--lengths: %w", err)
	}
	limit, from := c.tokenLimit()
	if in, out := m.Max(); int64(in)+int64(out) > int64(limit) {
		return nil, fmt.Errorf("--lengths: the largest request (%d + %d tokens) exceeds the token limit %d (%s): lower it, or set --max-model-len", in, out, limit, from)
	}
	return m, nil
}

// sharedPrefix returns --prefix-len's prefixes (nil when off).
func (l *LoadOptions) sharedPrefix(c *Config) (*prompt.SharedPrefix, error) {
	if l.PrefixLen == 0 {
		return nil, nil
	}
	sp, err := prompt.NewSharedPrefix(l.PrefixLen, l.NumPrefixes, l.PrefixDist, c.Seed)
	if err != nil {
		return nil, fmt.Errorf("--prefix-len %d --num-prefixes %d --prefix-dist %s: %w", l.PrefixLen, l.NumPrefixes, l.PrefixDist, err)
	}
	return sp, nil
}

// targetRate is the summary's target_rate of profile p.
func targetRate(p *arrival.Profile, source, mode string) *metrics.TargetRate {
	t := &metrics.TargetRate{Unit: "req/s", Source: source, Expected: p.Total()}
	if !Rated(mode) {
		t.Unit = "x time scale"
	}
	for _, s := range p.Stages() {
		t.Stages = append(t.Stages, metrics.TargetStage{DurationS: s.DurationS, Target: s.Target, Exponential: s.Exponential})
	}
	return t
}

// loadFacts are what the one pass measures for the load-control options:
// the mixture's counts and the shared prefixes' use. Their memory is one
// counter per mixture component and one length per prefix.
type loadFacts struct {
	mix      *arrival.MixtureLengths
	mixCount []int64

	prefix *prompt.SharedPrefix
	img    prompt.ImageOptions // sizes the text part of requests with images
	seen   []int32             // per prefix: the longest part of it sent so far
	pInfo  metrics.SharedPrefixInfo
}

func newLoadFacts(mix *arrival.MixtureLengths, sp *prompt.SharedPrefix, img prompt.ImageOptions) *loadFacts {
	if mix == nil && sp == nil {
		return nil
	}
	f := &loadFacts{mix: mix, prefix: sp, img: img}
	if mix != nil {
		f.mixCount = make([]int64, len(mix.Components))
	}
	if sp != nil {
		f.seen = make([]int32, sp.Num)
		f.pInfo = metrics.SharedPrefixInfo{PrefixLen: sp.Len, NumPrefixes: sp.Num, Dist: sp.Dist()}
	}
	return f
}

// add counts arrival a of the whole schedule.
func (f *loadFacts) add(a *arrival.Arrival) {
	if f == nil {
		return
	}
	if f.mix != nil {
		f.mixCount[f.mix.Component(a.Index)]++
	}
	if f.prefix == nil {
		return
	}
	n := max(a.InputTokens, 1)
	f.pInfo.InputTokens += int64(n)
	if len(a.PrefixBlocks) > 0 {
		return // a trace's own prefix blocks take precedence
	}
	if a.Images > 0 {
		n = f.img.TextTokens(a.InputTokens, a.Images) // the prefix starts the text part
	}
	k := f.prefix.Pick(a.Index)
	p := min(f.prefix.Len, n)
	f.pInfo.Requests++
	if n < f.prefix.Len {
		f.pInfo.Truncated++
	}
	if f.seen[k] == 0 {
		f.pInfo.Used++
	}
	f.pInfo.ReusedTokens += int64(min(p, int(f.seen[k])))
	f.seen[k] = int32(max(int(f.seen[k]), p))
}

// set writes the facts into w.
func (f *loadFacts) set(w *Workload) {
	if f == nil {
		return
	}
	if f.mix != nil {
		var total int64
		for _, c := range f.mixCount {
			total += c
		}
		for k, c := range f.mix.Components {
			e := metrics.LengthMixEntry{Input: c.Input, Output: c.Output, InputJitter: c.InputJitter, OutputJitter: c.OutputJitter,
				Weight: c.Weight, TargetShare: f.mix.Share(k), Scheduled: f.mixCount[k]}
			if total > 0 {
				e.Share = float64(f.mixCount[k]) / float64(total)
			}
			w.LengthMix = append(w.LengthMix, e)
		}
	}
	if f.prefix != nil {
		info := f.pInfo
		if info.InputTokens > 0 {
			info.ExpectedCachedShare = float64(info.ReusedTokens) / float64(info.InputTokens)
		}
		w.SharedPrefixInfo = &info
	}
}
