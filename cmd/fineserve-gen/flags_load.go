package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addLoadFlags declares the load-control flags: ramps and stages, shared
// prefixes, length mixtures and cancellation (README "Load control").
func addLoadFlags(fs *pflag.FlagSet, o *options.Options) {
	l := &o.Load
	fs.StringVar(&l.Stages, "stages", l.Stages, "k6-style target stages DURATION:TARGET,… (e.g. 30s:10,2m:100,30s:0): the target moves linearly to each stage's value, from 0 (a first stage 0s:R starts at R); the run ends with the last stage. Poisson: the request rate; replay/parametric: a multiplier of the time scale (the workload's shape is kept, its speed follows the stages)")
	fs.StringVar(&l.RampStrategy, "ramp-up-strategy", l.RampStrategy, "Poisson (vLLM): ramp the rate linearly or exponentially from --ramp-up-start-rps to --ramp-up-end-rps over the run (--duration, else the time --num-prompts take)")
	fs.Float64Var(&l.RampStartRPS, "ramp-up-start-rps", l.RampStartRPS, "Poisson (vLLM): rate at the start of the ramp, req/s")
	fs.Float64Var(&l.RampEndRPS, "ramp-up-end-rps", l.RampEndRPS, "Poisson (vLLM): rate at the end of the ramp, req/s")
	fs.Var(durationValue{&o.MaxConcurrencyRamp}, "max-concurrency-ramp", "grow the --max-concurrency bound from 1 to its value over this long from the start, one slot at a time (e.g. 2m)")
	fs.IntVar(&l.PrefixLen, "prefix-len", l.PrefixLen, "start every built prompt with one of --num-prefixes shared prefixes of this many tokens, then tokens unique to the request (0: off; a shorter request gets the prefix cut to its length)")
	fs.IntVar(&l.NumPrefixes, "num-prefixes", l.NumPrefixes, "number of distinct shared prefixes (with --prefix-len)")
	fs.StringVar(&l.PrefixDist, "prefix-dist", l.PrefixDist, "which prefix a request gets: uniform or zipf:S (prefix k has weight 1/k^S)")
	fs.StringVar(&l.Lengths, "lengths", l.Lengths, `Poisson/parametric: input/output length mixture INPUT,OUTPUT:WEIGHT;… (e.g. "128,64:40;512,256:50;4096,512:10"); a length may carry ±R jitter (512±0.1)`)
	fs.Float64Var(&l.CancelShare, "cancel-share", l.CancelShare, "cancel this share of the requests (0 < F ≤ 1, each chosen by the seed; needs --cancel-after): the client closes them at their cut; cancelled requests are counted apart, not as failures (a cancelled session turn ends its session)")
	fs.StringVar(&l.CancelAfter, "cancel-after", l.CancelAfter, "when --cancel-share requests are cut, from their first send: a duration (500ms), uniform:A:B, exp:MEAN or lognormal:MEDIAN:SIGMA, drawn per request by the seed")
}

// finishLoadFlags records which load-control flags were given.
func finishLoadFlags(fs *pflag.FlagSet, o *options.Options) {
	o.Load.RampStartSet = fs.Changed("ramp-up-start-rps")
	o.Load.RampEndSet = fs.Changed("ramp-up-end-rps")
	o.Load.RequestRateSet = fs.Changed("request-rate")
}
