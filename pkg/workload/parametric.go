package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/datasets"
	"github.com/fineserve-gen/fineserve-gen/internal/bounded"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/parametric"
)

// ParametricOptions configures --mode parametric (FineServe's flags).
type ParametricOptions struct {
	// GammaParamsCSV is a Gamma window file; it overrides the model
	// class's.
	GammaParamsCSV string
	// ModelClass picks the bundled parameters (and NB model for
	// Dense_lt10B, request lengths for Dense_30to100B).
	ModelClass string
	// DataRoot, when set, is where a model class's files are read from
	// instead of the bundled copies: DIR/gamma (or DIR/cv) and DIR/nb.
	DataRoot string
	// Column names of the Gamma window file.
	ShapeColumn, ScaleColumn, WindowStartColumn, WindowEndColumn string
	// RequestLengthsCSV supplies (input, output) length pairs, drawn
	// jointly.
	RequestLengthsCSV string
	// WindowSeconds is the length of a window of a 2-column file.
	WindowSeconds float64
	// ExtensionMode is repeat_jitter or model_sample; JitterRatio is
	// repeat_jitter's r.
	ExtensionMode string
	JitterRatio   float64
	// NBJSON is an NB micro-burst model; DisableNBLt10B turns off the one
	// Dense_lt10B uses by default.
	NBJSON         string
	DisableNBLt10B bool
	// ServeGen, when set, is a directory of ServeGen clients (NAME-trace.csv
	// and NAME-dataset.json) that replaces the Gamma windows: NumClients of
	// them (0: all) chosen with the seed; ServeGenSkipIdle leaves out the
	// windows where none is active (servegen.go).
	ServeGen         string
	NumClients       int
	ServeGenSkipIdle bool
}

// DefaultParametricOptions returns FineServe's parametric defaults.
func DefaultParametricOptions() ParametricOptions {
	c := parametric.DefaultColumns()
	return ParametricOptions{
		ShapeColumn: c.Shape, ScaleColumn: c.Scale, WindowStartColumn: c.WindowStart, WindowEndColumn: c.WindowEnd,
		WindowSeconds: 300, ExtensionMode: "repeat_jitter", JitterRatio: 0.05,
	}
}

// validate returns every problem of the parametric options.
func (p *ParametricOptions) validate() error {
	var errs []error
	if p.ServeGen != "" {
		for flag, set := range map[string]bool{"--model-class": p.ModelClass != "", "--gamma-params-csv": p.GammaParamsCSV != "",
			"--parametric-nb-json": p.NBJSON != "", "--request-lengths-csv": p.RequestLengthsCSV != "", "--parametric-data-root": p.DataRoot != ""} {
			if set {
				errs = append(errs, fmt.Errorf("--servegen and %s: choose one (ServeGen clients bring their own windows and lengths)", flag))
			}
		}
		if p.NumClients < 0 {
			errs = append(errs, fmt.Errorf("--num-clients %d: want ≥ 0 (0: every client)", p.NumClients))
		}
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return errors.Join(errs...)
	}
	if p.NumClients != 0 || p.ServeGenSkipIdle {
		errs = append(errs, errors.New("--num-clients and --servegen-skip-idle: for --servegen DIR"))
	}
	if p.GammaParamsCSV == "" && p.ModelClass == "" {
		errs = append(errs, errors.New("--mode parametric needs --model-class (Dense_lt10B, Dense_10to30B, Dense_30to100B, MoE_gt100B), --gamma-params-csv FILE or --servegen DIR"))
	}
	if p.ModelClass != "" {
		if err := datasets.CheckClass(p.ModelClass); err != nil {
			errs = append(errs, fmt.Errorf("--model-class: %w", err))
		}
	}
	if !(p.WindowSeconds > 0) || p.WindowSeconds > 1e9 {
		errs = append(errs, fmt.Errorf("--parametric-window-seconds %g: want a number of seconds > 0", p.WindowSeconds))
	}
	if _, err := parametric.ParseExtension(p.ExtensionMode); err != nil {
		errs = append(errs, fmt.Errorf("--parametric-extension-mode: %w", err))
	}
	if !(p.JitterRatio >= 0 && p.JitterRatio < 1) {
		errs = append(errs, fmt.Errorf("--parametric-jitter-ratio %g: want 0 ≤ r < 1 (shape and scale are multiplied by factors in [1−r, 1+r))", p.JitterRatio))
	}
	for flag, col := range map[string]string{"--gamma-shape-column": p.ShapeColumn, "--gamma-scale-column": p.ScaleColumn,
		"--window-start-column": p.WindowStartColumn, "--window-end-column": p.WindowEndColumn} {
		if col == "" {
			errs = append(errs, fmt.Errorf("%s: empty column name", flag))
		}
	}
	return errors.Join(errs...)
}

// parametricSchedule builds the schedule of --mode parametric.
func parametricSchedule(c *Config, seed uint64, log Logger) (arrival.Schedule, error) {
	p := &c.Parametric
	if err := p.validate(); err != nil {
		return nil, (err)
	}
	if p.ServeGen != "" {
		return servegenSchedule(c, seed, log)
	}
	ext, _ := parametric.ParseExtension(p.ExtensionMode)
	table, err := p.gammaTable()
	if err != nil {
		return nil, (err)
	}
	window := time.Duration(math.Round(p.WindowSeconds * 1e9))
	plan, err := parametric.NewPlan(parametric.PlanConfig{Table: table, Window: window, Extension: ext, JitterRatio: p.JitterRatio})
	if err != nil {
		return nil, (fmt.Errorf("%s: %w", table.Name, err))
	}
	nb, nbName, err := p.nbModel()
	if err != nil {
		return nil, (err)
	}
	pc := parametric.Config{Plan: plan, NB: nb, Duration: c.Duration, TimeScale: c.TimeScale, Seed: seed}
	if c.NumPromptsSet {
		pc.Count = c.NumPrompts
	}

	// Say what the run is made of.
	pass := time.Duration(plan.PassEnd() * 1e9)
	var reqs float64 // requests one pass implies
	var i int
	for w := range plan.Windows(seed) {
		if i == plan.Rows() {
			break
		}
		reqs += (w.End - w.Start) / w.MeanGap()
		i++
	}
	shape := "windows of " + window.String()
	if table.Bounds {
		shape = "windows with explicit bounds"
	}
	log.Infof("parametric: %s: %d %s, %v a pass, mean %.4g req/s", table.Name, plan.Rows(), shape, pass, reqs/plan.PassEnd())
	if nb != nil {
		log.Infof("parametric: NB micro-bursts from %s: nb_mu %.4g, nb_alpha %.4g, mean burst E[K] %.4f (event gaps stretched by it)", nbName, nb.Mu, nb.Alpha, nb.Mean())
	} else if p.ModelClass == "Dense_lt10B" && p.DisableNBLt10B {
		log.Infof("parametric: NB micro-bursts off (--disable-parametric-nb-lt10b)")
	}
	scaled := func(d time.Duration) string {
		if c.TimeScale == 1 {
			return d.String()
		}
		return fmt.Sprintf("%v of parameters, %v at --time-scale %g", d, time.Duration(float64(d)/c.TimeScale).Round(time.Millisecond), c.TimeScale)
	}
	switch {
	case pc.Count == 0 && pc.Duration == 0:
		log.Infof("parametric: one pass over the windows (%s); --duration or --num-prompts run longer or shorter", scaled(pass))
	default:
		what := []string{}
		if pc.Count > 0 {
			what = append(what, fmt.Sprintf("%d requests", pc.Count))
		}
		if pc.Duration > 0 {
			what = append(what, pc.Duration.String())
		}
		msg := "parametric: up to " + strings.Join(what, " or ")
		if len(what) > 1 {
			msg += ", whichever comes first"
		}
		if pc.Duration > 0 && float64(pc.Duration)*c.TimeScale > float64(pass) || pc.Count > 0 && pc.Duration == 0 {
			msg += fmt.Sprintf("; past the file's %v, windows continue by %s", pass, ext)
			if ext == parametric.RepeatJitter {
				msg += fmt.Sprintf(" (r = %g)", p.JitterRatio)
			}
		}
		log.Infof("%s", msg)
	}
	if pc.Lengths, err = p.lengths(c, log); err != nil {
		return nil, err
	}
	if err := pc.Validate(); err != nil {
		return nil, (err)
	}
	return parametric.Schedule(pc), nil
}

// gammaTable reads the Gamma window file: --gamma-params-csv, else the
// model class's from --parametric-data-root, else the bundled one.
func (p *ParametricOptions) gammaTable() (*parametric.Table, error) {
	cols := parametric.Columns{Shape: p.ShapeColumn, Scale: p.ScaleColumn, WindowStart: p.WindowStartColumn, WindowEnd: p.WindowEndColumn}
	root := ""
	if p.GammaParamsCSV == "" && p.DataRoot != "" {
		root = filepath.Join(p.DataRoot, filepath.FromSlash(datasets.GammaPath(p.ModelClass)))
		if _, serr := os.Stat(root); serr != nil {
			// FineServe's repository keeps these files in cv/.
			if alt := filepath.Join(p.DataRoot, "cv", p.ModelClass+"_gamma_5min.csv"); fileExists(alt) {
				root = alt
			}
		}
	}
	data, name, err := parametricInput(p.GammaParamsCSV, "--gamma-params-csv", root, func() ([]byte, string, error) {
		return datasets.Gamma(p.ModelClass)
	})
	if err != nil {
		return nil, err
	}
	return parametric.ReadGammaCSV(bytes.NewReader(data), name, cols)
}

// nbModel returns the NB model: --parametric-nb-json, else Dense_lt10B's
// (from the data root or bundled) unless disabled; nil for none.
func (p *ParametricOptions) nbModel() (*parametric.NB, string, error) {
	lt10 := p.ModelClass == "Dense_lt10B" && !p.DisableNBLt10B
	if p.NBJSON == "" && !lt10 {
		return nil, "", nil
	}
	root := ""
	if p.NBJSON == "" && p.DataRoot != "" {
		root = filepath.Join(p.DataRoot, filepath.FromSlash(datasets.NBPath(p.ModelClass)))
	}
	data, name, err := parametricInput(p.NBJSON, "--parametric-nb-json", root, func() ([]byte, string, error) {
		data, name, _ := datasets.NB(p.ModelClass)
		return data, name, nil
	})
	if err != nil {
		return nil, "", err
	}
	nb, err := parametric.ReadNBJSON(bytes.NewReader(data), name)
	if err != nil {
		return nil, "", err
	}
	return &nb, name, nil
}

// parametricInput reads one of parametric mode's input files: the one its
// flag gives (given), else the model class's file under
// --parametric-data-root (root; "" without a data root), else the bundled
// copy. It returns the data and the name it was read under.
func parametricInput(given, flag, root string, bundled func() ([]byte, string, error)) ([]byte, string, error) {
	switch {
	case given != "":
		data, err := readFile(given, flag)
		return data, given, err
	case root != "":
		data, err := readFile(root, "--parametric-data-root")
		return data, root, err
	default:
		return bundled()
	}
}

// lengths picks the request sizes: --request-lengths-csv, else the model
// class's bundled lengths, else --random-input-len/--random-output-len.
func (p *ParametricOptions) lengths(c *Config, log Logger) (arrival.Lengths, error) {
	if c.mixture != nil {
		if p.RequestLengthsCSV != "" {
			return nil, errors.New("--lengths and --request-lengths-csv: choose one")
		}
		log.Infof("parametric: request sizes from --lengths %s", c.mixture)
		return c.mixture, nil
	}
	var data []byte
	var name string
	switch {
	case p.RequestLengthsCSV != "":
		var err error
		name = p.RequestLengthsCSV
		if data, err = readFile(name, "--request-lengths-csv"); err != nil {
			return nil, (err)
		}
	case p.ModelClass != "":
		var ok bool
		if data, name, ok = datasets.Lengths(p.ModelClass); !ok {
			data = nil
		}
	}
	if data == nil {
		u, err := lengthSource(c, nil, log)
		if err != nil {
			return nil, err
		}
		why := ""
		if p.ModelClass != "" {
			why = fmt.Sprintf(" (%s has no bundled lengths; --request-lengths-csv supplies some)", p.ModelClass)
		}
		log.Infof("parametric: request sizes from --random-input-len %d --random-output-len %d --random-range-ratio %g%s",
			c.RandomInputLen, c.RandomOutputLen, c.RandomRangeRatio, why)
		return u, nil
	}
	lp, err := parametric.ReadLengthPairs(bytes.NewReader(data), name, c.Replay.InputLengthColumn, c.Replay.OutputLengthColumn)
	if err != nil {
		return nil, (err)
	}
	if lp.Skipped > 0 {
		log.Warnf("%s: skipped %d rows without two lengths ≥ 1 (first at lines %v)", name, lp.Skipped, lp.SkippedLines)
	}
	pairs, err := limitPairs(c, log, name, lp.Pairs)
	if err != nil {
		return nil, err
	}
	log.Infof("parametric: request sizes drawn jointly from %d (input, output) pairs of %s", len(pairs), name)
	return arrival.PairLengths{Pairs: pairs}, nil
}

// maxInputFile bounds the small input files read whole (Gamma and length
// CSVs, NB JSON, model maps): a larger one is an error, not a read of
// gigabytes.
const maxInputFile = 256 << 20

// readFile reads a named input file, at most maxInputFile bytes.
func readFile(name, flag string) ([]byte, error) {
	data, err := bounded.ReadFile(name, maxInputFile)
	var tl *bounded.TooLarge
	switch {
	case errors.As(err, &tl):
		return nil, fmt.Errorf("%s %s: %w, the limit of this input", flag, name, err)
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("%s: %w", flag, err)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", flag, name, err)
	}
	return data, nil
}

func fileExists(name string) bool {
	st, err := os.Stat(name)
	return err == nil && st.Mode().IsRegular()
}
