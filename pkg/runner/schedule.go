package runner

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
)

// logger writes progress notes and warnings to the error stream.
type logger struct {
	w     io.Writer
	quiet bool
}

func (l *logger) Infof(format string, a ...any) {
	if !l.quiet {
		fmt.Fprintf(l.w, format+"\n", a...)
	}
}

func (l *logger) Warnf(format string, a ...any) {
	fmt.Fprintf(l.w, "warning: "+format+"\n", a...)
}

// workload is what the mode built: the schedule and what prompts need.
type workload struct {
	schedule arrival.Schedule
	dataset  *prompt.Dataset
	// annotate adds to the summary once the run is over: mode-specific
	// breakdowns and notes (replay: the trace's skipped rows, per-kind
	// figures).
	annotate []func(*metrics.Summary, time.Duration) error
	// traceModels are the distinct model names a replayed trace gives, and
	// scheduleModels tells that they are already served names (a schedule
	// CSV): what routing starts from (models.go).
	traceModels    []string
	scheduleModels bool
	// hash is the whole (unsharded) schedule's hash (shard.go).
	hash *scheduleHash
	// groups are the summary's breakdowns by their key (per_model,
	// per_kind), which the merge state also keeps (shard.go); breakdowns
	// lists them in the order they were registered (they see every
	// request's Sample: run.go's fan-out).
	groups     map[string]*metrics.Groups
	breakdowns []*metrics.Groups
}

// breakdown registers a breakdown of the results by group, added to the
// summary under key.
func (w *workload) breakdown(key string, group func(*metrics.Sample) string) {
	g := metrics.NewGroups(group)
	w.breakdowns = append(w.breakdowns, g)
	w.annotate = append(w.annotate, func(sum *metrics.Summary, elapsed time.Duration) error {
		return sum.SetExtra(key, g.Summary(elapsed))
	})
	if w.groups == nil {
		w.groups = map[string]*metrics.Groups{}
	}
	w.groups[key] = g
}

// buildSchedule returns the schedule of o's mode, cut to its length and
// sharded. It reads input files but never the clock.
func buildSchedule(o *Options, seed uint64, log *logger) (*workload, error) {
	w := &workload{}
	ds, err := loadDataset(o, log)
	if err != nil {
		return nil, err
	}
	w.dataset = ds
	var s arrival.Schedule
	switch o.Mode {
	case "poisson":
		s, err = poissonSchedule(o, seed, ds, log)
	case "replay":
		s, err = replaySchedule(o, seed, log, w)
	case "parametric":
		s, err = parametricSchedule(o, seed, log)
	}
	if err != nil {
		return nil, err
	}
	if s, err = routeModels(o, seed, log, w, s); err != nil {
		return nil, err
	}
	w.hash = &scheduleHash{}
	w.schedule = arrival.Shard(w.hash.wrap(s), o.ShardIndex, o.ShardCount)
	return w, nil
}

// loadDataset reads --dataset-path when given.
func loadDataset(o *Options, log *logger) (*prompt.Dataset, error) {
	if o.DatasetPath == "" {
		return nil, nil
	}
	kind := o.DatasetName
	if kind == "" || kind == "random" {
		kind = "sharegpt"
	}
	ds, err := prompt.LoadDataset(o.DatasetPath, kind, 0)
	if err != nil {
		return nil, usage(err)
	}
	if ds.Skipped > 0 {
		log.Warnf("dataset %s: skipped %d entries without a prompt and a reply", o.DatasetPath, ds.Skipped)
	}
	log.Infof("dataset %s: %d prompts", o.DatasetPath, ds.Len())
	return ds, nil
}

// lengthSource picks how a synthetic schedule sizes its requests: the
// dataset's own lengths (sharegpt modes) or --random-* lengths.
func lengthSource(o *Options, ds *prompt.Dataset, log *logger) (arrival.Lengths, error) {
	if ds != nil && o.DatasetName != "random" {
		pairs := ds.Lengths(o.SharegptOutputLen)
		if o.SharegptContextLen > 0 {
			kept := pairs[:0]
			for _, p := range pairs {
				if p[0]+p[1] <= o.SharegptContextLen {
					kept = append(kept, p)
				}
			}
			if len(kept) == 0 {
				return nil, usage(fmt.Errorf("--sharegpt-context-len %d leaves no prompt of the dataset", o.SharegptContextLen))
			}
			pairs = kept
		}
		pairs, err := limitPairs(o, log, "dataset "+o.DatasetPath, pairs)
		if err != nil {
			return nil, err
		}
		return arrival.SequenceLengths{Pairs: pairs}, nil
	}
	u := arrival.UniformLengths{Input: o.RandomInputLen, Output: o.RandomOutputLen, RangeRatio: o.RandomRangeRatio}
	if err := u.Validate(); err != nil {
		return nil, usage(err)
	}
	if err := checkUniform(o, u); err != nil {
		return nil, err
	}
	return u, nil
}

func poissonSchedule(o *Options, seed uint64, ds *prompt.Dataset, log *logger) (arrival.Schedule, error) {
	lengths, err := lengthSource(o, ds, log)
	if err != nil {
		return nil, err
	}
	c := arrival.PoissonConfig{
		Rate: o.RequestRate, Burstiness: o.Burstiness, Seed: seed, Lengths: lengths,
		Duration: o.Duration,
	}
	if o.Duration <= 0 || o.NumPromptsSet {
		c.Count = o.NumPrompts
	}
	if err := c.Validate(); err != nil {
		return nil, usage(err)
	}
	return arrival.Poisson(c), nil
}

// writeSchedule writes --schedule-out.
func writeSchedule(path string, s arrival.Schedule) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := arrival.WriteCSV(f, s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("schedule %s: %w", path, err)
	}
	return n, nil
}
