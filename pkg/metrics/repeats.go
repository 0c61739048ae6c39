package metrics

// RepeatsSummary is the summary's repeats section (--repeat,
// docs/EXPERIMENTS.md): each headline figure over the runs as a mean and
// the half-width of its confidence interval, with every run's value, and
// the runs themselves.
type RepeatsSummary struct {
	// Runs is the number of runs made; Requested is --repeat.
	Runs      int `json:"runs"`
	Requested int `json:"requested"`
	// Confidence is the intervals' level (0.95); WideShare the share of
	// the mean beyond which an interval's half-width is marked wide.
	Confidence float64 `json:"confidence"`
	WideShare  float64 `json:"wide_share"`
	// UntilConverged is --until-converged (FIGURE:PCT) and Converged
	// whether the runs stopped because its interval was narrow enough.
	UntilConverged string `json:"until_converged,omitempty"`
	Converged      *bool  `json:"converged,omitempty"`
	// Figures are the intervals, by the summary's key of the figure.
	Figures map[string]RepeatFigure `json:"figures"`
	// PerRun describes each run, in order.
	PerRun []RepeatRun `json:"per_run"`
}

// RepeatFigure is one figure over the runs.
type RepeatFigure struct {
	Mean      float64 `json:"mean"`
	HalfWidth float64 `json:"half_width"`
	N         int     `json:"n"`
	// Wide: HalfWidth > WideShare × |Mean|.
	Wide   bool      `json:"wide,omitempty"`
	Values []float64 `json:"values"`
}

// RepeatRun is one run of a repeated run: its seed, and its own summary's
// file (SummaryPath) or, with no --summary-json, the summary itself.
type RepeatRun struct {
	Seed        uint64   `json:"seed"`
	SummaryPath string   `json:"summary,omitempty"`
	Summary     *Summary `json:"summary_json,omitempty"`
}

// KeyThresholds holds the --threshold verdicts ([]ThresholdVerdict).
const KeyThresholds = "thresholds"

// ThresholdVerdict is one --threshold judged on the run (docs/EXPERIMENTS.md):
// the summary's thresholds section, so that a pipeline reading the summary
// sees what the exit code said and why.
type ThresholdVerdict struct {
	// Threshold is the option as given (p99_ttft_ms<=300@upper); Key the
	// figure judged and On its bound with --repeat (mean, upper, lower).
	Threshold string `json:"threshold"`
	Key       string `json:"key"`
	On        string `json:"on"`
	// Value is the figure judged, null when the run has no such figure
	// (a breach: it cannot be shown to hold).
	Value *float64 `json:"value"`
	Pass  bool     `json:"pass"`
}
