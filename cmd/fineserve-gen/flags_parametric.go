package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// addParametricFlags declares the flags of --mode parametric.
func addParametricFlags(fs *pflag.FlagSet, o *runner.Options) {
	p := &o.Parametric
	fs.StringVar(&p.GammaParamsCSV, "gamma-params-csv", p.GammaParamsCSV, "parametric: Gamma window parameters (gamma_shape, gamma_scale in ms)")
	fs.StringVar(&p.ModelClass, "model-class", p.ModelClass, "parametric: bundled parameters: Dense_lt10B, Dense_10to30B, Dense_30to100B or MoE_gt100B")
}
