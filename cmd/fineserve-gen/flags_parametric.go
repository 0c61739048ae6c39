package main

import (
	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// addParametricFlags declares the flags of --mode parametric (FineServe's
// names, defaults and meanings; see docs/PARAMETRIC.md).
func addParametricFlags(fs *pflag.FlagSet, o *options.Options) {
	p := &o.Parametric
	fs.StringVar(&p.ModelClass, "model-class", p.ModelClass, "parametric: bundled parameters of Dense_lt10B, Dense_10to30B, Dense_30to100B or MoE_gt100B")
	fs.StringVar(&p.GammaParamsCSV, "gamma-params-csv", p.GammaParamsCSV, "parametric: Gamma window file (gamma_shape, gamma_scale in ms; optional window_start_ms, window_end_ms); overrides the class's")
	fs.StringVar(&p.DataRoot, "parametric-data-root", p.DataRoot, "parametric: read the class's files from DIR/gamma and DIR/nb instead of the bundled copies")
	fs.StringVar(&p.WindowStartColumn, "window-start-column", p.WindowStartColumn, "parametric: window start column of the Gamma file (ms)")
	fs.StringVar(&p.WindowEndColumn, "window-end-column", p.WindowEndColumn, "parametric: window end column of the Gamma file (ms)")
	fs.StringVar(&p.ShapeColumn, "gamma-shape-column", p.ShapeColumn, "parametric: Gamma shape column")
	fs.StringVar(&p.ScaleColumn, "gamma-scale-column", p.ScaleColumn, "parametric: Gamma scale column (ms)")
	fs.StringVar(&p.RequestLengthsCSV, "request-lengths-csv", p.RequestLengthsCSV, "parametric: CSV of input/output lengths drawn jointly (columns: --input-length-column, --output-length-column)")
	fs.Float64Var(&p.WindowSeconds, "parametric-window-seconds", p.WindowSeconds, "parametric: length of one Gamma window of a 2-column file, in seconds")
	fs.StringVar(&p.ExtensionMode, "parametric-extension-mode", p.ExtensionMode, "parametric: past the file's windows: repeat_jitter or model_sample")
	fs.Float64Var(&p.JitterRatio, "parametric-jitter-ratio", p.JitterRatio, "parametric: repeat_jitter multiplies shape and scale by factors uniform in [1−r, 1+r)")
	fs.StringVar(&p.NBJSON, "parametric-nb-json", p.NBJSON, "parametric: NB micro-burst model (nb_mu, nb_alpha): every Gamma event becomes a burst inside 1 ms")
	fs.StringVar(&p.ServeGen, "servegen", p.ServeGen, "parametric: ServeGen clients (DIR of NAME-trace.csv, NAME-dataset.json): their Gamma/Weibull windows and length distributions, composed")
	fs.IntVar(&p.NumClients, "num-clients", p.NumClients, "parametric: with --servegen, compose this many clients chosen with --seed (0: all)")
	fs.BoolVar(&p.ServeGenSkipIdle, "servegen-skip-idle", p.ServeGenSkipIdle, "parametric: with --servegen, leave out the windows where no chosen client is active")
	fs.BoolVar(&p.DisableNBLt10B, "disable-parametric-nb-lt10b", p.DisableNBLt10B, "parametric: no NB micro-bursts for --model-class Dense_lt10B")
}
