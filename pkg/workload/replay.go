package workload

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/agentic"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// ReplayOptions configures --mode replay.
type ReplayOptions struct {
	TracePath          string // --request-trace-csv / --trace
	TraceFormat        string // "" detects from the extension and header
	TimestampColumn    string
	InputLengthColumn  string
	OutputLengthColumn string
	ModelColumn        string
	TimestampUnit      string // s, ms, us, ns, datetime; "" per format
	Strict             bool
	// KeepFailed keeps rows the trace marks as failed (BurstGPT).
	KeepFailed bool
	// MinOutputLen replaces output lengths of 0.
	MinOutputLen int
	// TargetRate, when > 0, sets the time scale from the slice's mean rate.
	TargetRate float64
	// TraceStart and TraceDuration select a slice of the trace, in trace
	// time; TraceBusiest starts it at the busiest window of TraceDuration.
	TraceStart, TraceDuration time.Duration
	TraceBusiest              bool
	// Scene keeps the rows of one scene_id (Alibaba text-to-image trace).
	Scene string
	// Images of multimodal rows (Azure LMM): size in pixels and the prompt
	// tokens one image counts for (0: derived from the size).
	ImageWidth, ImageHeight int
	TokensPerImage          int
}

// DefaultReplayOptions returns FineServe's replay defaults.
func DefaultReplayOptions() ReplayOptions {
	return ReplayOptions{MinOutputLen: 1, ImageWidth: 512, ImageHeight: 512}
}

// imageOptions is how image requests are built.
func (r *ReplayOptions) imageOptions() prompt.ImageOptions {
	tpi := r.TokensPerImage
	if tpi <= 0 {
		tpi = prompt.DefaultTokensPerImage(r.ImageWidth, r.ImageHeight)
	}
	return prompt.ImageOptions{Width: r.ImageWidth, Height: r.ImageHeight, TokensPerImage: tpi}
}

// validate returns every problem of the replay options.
func (r *ReplayOptions) validate(c *Config) error {
	var errs []error
	if r.TracePath == "" {
		errs = append(errs, errors.New("--mode replay needs --request-trace-csv FILE (alias --trace)"))
	}
	if r.MinOutputLen < 1 {
		errs = append(errs, fmt.Errorf("--min-output-len %d: want ≥ 1", r.MinOutputLen))
	}
	if r.TargetRate < 0 {
		errs = append(errs, fmt.Errorf("--target-rate %g: want > 0", r.TargetRate))
	}
	if r.TargetRate > 0 && c.TimeScale != 1 {
		errs = append(errs, errors.New("--target-rate sets the time scale: give it or --time-scale, not both"))
	}
	if r.TraceBusiest && r.TraceDuration <= 0 {
		errs = append(errs, errors.New("--trace-start busiest needs --trace-duration (e.g. 1h)"))
	}
	if err := (prompt.ImageOptions{Width: r.ImageWidth, Height: r.ImageHeight, TokensPerImage: max(r.TokensPerImage, 0)}).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--image-size: %w", err))
	}
	if r.TokensPerImage < 0 {
		errs = append(errs, fmt.Errorf("--tokens-per-image %d: want ≥ 0 (0: derived from --image-size)", r.TokensPerImage))
	}
	if _, ok := agentic.ParseFormat(r.TraceFormat); ok {
		// an agentic trace: agenticSchedule checks its options
	} else if _, err := replay.ParseFormat(r.TraceFormat); err != nil {
		errs = append(errs, fmt.Errorf("--trace-format: %w", err))
	}
	if _, err := replay.ParseUnit(r.TimestampUnit); err != nil {
		errs = append(errs, fmt.Errorf("--timestamp-unit: %w", err))
	}
	return errors.Join(errs...)
}

// ReplayInfo is the summary's "replay" entry: what was read and replayed.
type ReplayInfo = metrics.ReplayInfo

// replaySchedule builds the schedule of --mode replay, and registers the
// replay's summary entry and, for traces with images, the per-kind
// breakdown.
func replaySchedule(c *Config, seed uint64, log Logger, w *Workload) (arrival.Schedule, error) {
	r := &c.Replay
	if f, ok := c.agenticFormat(); ok {
		return agenticSchedule(c, f, log, w)
	}
	if err := r.validate(c); err != nil {
		return nil, (err)
	}
	format, _ := replay.ParseFormat(r.TraceFormat)
	limit, from := c.tokenLimit()
	unit, _ := replay.ParseUnit(r.TimestampUnit)
	tr, err := replay.Load(r.TracePath, replay.Options{
		Format: format, Unit: unit,
		TimestampColumn: r.TimestampColumn, InputColumn: r.InputLengthColumn,
		OutputColumn: r.OutputLengthColumn, ModelColumn: r.ModelColumn,
		Strict: r.Strict, KeepFailed: r.KeepFailed, MinOutputLen: r.MinOutputLen,
		Scene: r.Scene, TokenLimit: limit, TokenLimitFrom: from,
		Keep: keepRows(c),
	})
	if err != nil {
		return nil, (err)
	}
	if rate := tr.MeanRate(); rate > 0 {
		log.Infof("trace %s: %s format, %d usable of %d rows over %s (mean %.3f req/s)",
			r.TracePath, tr.Format, tr.Usable(), tr.Rows, tr.Span().Round(time.Millisecond), rate)
	} else {
		log.Infof("trace %s: %s format, %d usable of %d rows, all at one time", r.TracePath, tr.Format, tr.Usable(), tr.Rows)
	}
	if msg := implausibleUnit(tr, r.TimestampUnit != ""); msg != "" {
		log.Warnf("trace %s: %s", r.TracePath, msg)
	}
	if tr.Stopped > 0 {
		log.Infof("trace %s: read to line %d: the rows this replay uses are held and the trace is in time order so far (the rest of the file is not read)", r.TracePath, tr.Stopped)
	}
	if tr.Detected != "" {
		log.Infof("trace %s: %s", r.TracePath, tr.Detected)
	}
	for _, wn := range tr.Skipped.Warnings() {
		log.Warnf("trace %s: %s", r.TracePath, wn)
	}
	plan := replay.Plan{
		TimeScale: c.TimeScale, TargetRate: r.TargetRate,
		Start: r.TraceStart, Span: r.TraceDuration, Busiest: r.TraceBusiest,
		Duration: c.Duration,
	}
	if r.TargetRate > 0 {
		plan.TimeScale = 0
	}
	if c.NumPromptsSet {
		plan.Count = c.NumPrompts
	}
	sl, err := tr.Resolve(plan)
	if err != nil {
		return nil, (fmt.Errorf("replay: %w", err))
	}
	if r.TraceBusiest {
		log.Infof("replay: busiest %s of the trace starts at %s", r.TraceDuration, sl.Start)
	}
	if r.TargetRate > 0 {
		log.Infof("replay: --target-rate %g req/s: time scale %.6g (the slice's mean rate is %.4g req/s)", r.TargetRate, sl.TimeScale, sl.SliceRate)
	}
	if sl.Len() == 0 {
		return nil, (fmt.Errorf("replay: no row of %s falls in the selected slice (trace span %s)", r.TracePath, tr.Span()))
	}
	s := tr.Schedule(sl)

	// Lengths the trace does not give come from --random-input-len and
	// --random-output-len (or the dataset). Image generations have no
	// output tokens.
	if needOut := !tr.HasOutput && !tr.HasGenerations(); !tr.HasInput || needOut {
		lengths, err := lengthSource(c, w.Dataset, log)
		if err != nil {
			return nil, err
		}
		log.Infof("replay: the trace gives no %s: drawn as in poisson mode (--random-input-len/--random-output-len)", missingLengths(tr))
		s = fillLengths(s, lengths, seed, !tr.HasInput, needOut)
	}
	if tr.HasModels() {
		w.traceModels = tr.Models()
		w.scheduleModels = tr.Format == replay.ScheduleCSV
	}
	if tr.HasGenerations() {
		if err := checkImageTrace(c); err != nil {
			return nil, (err)
		}
		log.Infof("replay: image-generation trace: %s", describeTasks(tr.Tasks))
	}

	info := ReplayInfo{
		Trace: r.TracePath, Format: string(tr.Format), RowsRead: tr.Rows, RowsUsable: tr.Usable(),
		Skipped: tr.Skipped, TimeScale: sl.TimeScale, TargetRate: r.TargetRate,
		TraceStartS: sl.Start.Seconds(), TraceDuration: r.TraceDuration.Seconds(),
		Replayed: sl.Len(), TraceRate: sl.SliceRate, Tasks: tr.Tasks,
	}
	if tr.HasImages() {
		img := r.imageOptions()
		images, clamped := 0, 0
		for i := sl.First; i < sl.End; i++ {
			if n := tr.Images(i); n > 0 {
				images++
				if tr.InputTokens(i) <= n*img.TokensPerImage {
					clamped++
				}
			}
		}
		info.ImageTextClamped = clamped
		prompt.PrepareImages(img)
		if images > 0 {
			hint := "Qwen2-VL's count for the size, as the built-in server counts them"
			if img.TokensPerImage != prompt.DefaultTokensPerImage(img.Width, img.Height) {
				hint = fmt.Sprintf("run the built-in server with --tokens-per-image %d", img.TokensPerImage)
			}
			log.Infof("replay: %d of %d requests carry images (%dx%d, %d prompt tokens each: %s); they go to /v1/chat/completions",
				images, sl.Len(), img.Width, img.Height, img.TokensPerImage, hint)
		}
		if clamped > 0 {
			log.Warnf("replay: %d image request(s) have a context no larger than their images (%d tokens each): their text is 1 token", clamped, img.TokensPerImage)
		}
		w.Breakdowns = append(w.Breakdowns, BreakdownKind)
	}
	w.Replay = &info
	return s, nil
}

// keepRows says which rows of the trace the replay can use, so that only
// those are held (replay.Keep): the earliest --num-prompts of a replay
// from the start, and the rows before --trace-start plus --trace-duration
// or, from the start, before --duration at the time scale. --trace-start
// busiest and --target-rate need the whole trace.
func keepRows(c *Config) replay.Keep {
	r := &c.Replay
	var k replay.Keep
	if r.TraceBusiest {
		return k
	}
	before := func(d time.Duration) {
		if d > 0 && (k.Before == 0 || d < k.Before) {
			k.Before = d
		}
	}
	if r.TraceDuration > 0 && r.TraceStart <= math.MaxInt64-r.TraceDuration {
		before(r.TraceStart + r.TraceDuration)
	}
	if r.TraceStart == 0 && r.TargetRate == 0 {
		if c.NumPromptsSet && c.NumPrompts <= arrival.MaxRequests {
			k.Count = int(c.NumPrompts)
		}
		if c.Duration > 0 && c.TimeScale > 0 {
			before(arrival.Divide(c.Duration, 1/c.TimeScale))
		}
	}
	return k
}

func missingLengths(tr *replay.Trace) string {
	switch {
	case !tr.HasInput && !tr.HasOutput:
		return "input or output lengths"
	case !tr.HasInput:
		return "input lengths"
	}
	return "output lengths"
}

func firstN(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(s[:n:n], "…")
}

// fillLengths draws the lengths a trace lacks, deterministically from seed.
func fillLengths(s arrival.Schedule, l arrival.Lengths, seed uint64, in, out bool) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		rng := arrival.Rand(seed, arrival.StreamLengths)
		for a := range s {
			i, o := l.Draw(rng, a.Index)
			if in {
				a.InputTokens = i
			}
			if out {
				a.OutputTokens = o
			}
			if !yield(a) {
				return
			}
		}
	}
}

// implausibleUnit says when a trace's times, read in the unit its format
// assumes (not given, not inferred from the values), give a rate no
// deployment sees — more than 10,000 requests a second, or fewer than one
// an hour — over ten rows or more: the times are likely in another unit
// (a FineServe CSV whose --timestamp-column holds seconds, read as µs).
func implausibleUnit(tr *replay.Trace, given bool) string {
	if given || tr.Format == replay.GenericCSV || tr.Format == replay.GenericJSONL || tr.Unit == replay.DateTime || tr.Usable() < 10 {
		return ""
	}
	rate := tr.MeanRate()
	if rate == 0 || rate <= 10000 && rate >= 1.0/3600 {
		return ""
	}
	return fmt.Sprintf("%d rows over %s (mean %.4g req/s): the %s format reads its times in %s; if this trace's are in another unit, give --timestamp-unit s, ms, us or ns",
		tr.Usable(), tr.Span(), rate, tr.Format, tr.Unit)
}
