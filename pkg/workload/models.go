package workload

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/routing"
)

// ModelOptions configures which served model or adapter each request goes
// to (pkg/routing) — in every mode, as a step of the schedule.
type ModelOptions struct {
	// Map is --model-map: a file (YAML or JSON), an inline table
	// "FROM=TO,…", or a strategy: hash, round-robin, zipf:S, keep, default.
	// "" is the default: every request to --model (a schedule CSV keeps its
	// own names).
	Map string
	// Served lists the names hash, round-robin and zipf spread requests
	// over (--served-models a,b,c); it overrides a file's served_models.
	Served []string
}

// parseModelMap resolves --model-map and --served-models into a Map (nil:
// not given). It may read the map file.
func parseModelMap(mo *ModelOptions) (*routing.Map, error) {
	spec := strings.TrimSpace(mo.Map)
	var m *routing.Map
	switch {
	case spec == "":
		if len(mo.Served) > 0 {
			return nil, errors.New("--served-models is used by --model-map hash, round-robin or zipf:S: give one")
		}
		return nil, nil
	case strings.Contains(spec, "="):
		var err error
		if m, err = routing.ParseInline(spec); err != nil {
			return nil, fmt.Errorf("--model-map: %w", err)
		}
	default:
		sm, ok, err := routing.ParseStrategy(spec)
		if err != nil {
			return nil, fmt.Errorf("--model-map: %w", err)
		}
		if ok {
			m = sm
			break
		}
		data, rerr := readFile(spec, "--model-map")
		if rerr != nil {
			return nil, fmt.Errorf("--model-map %q: neither a strategy (hash, round-robin, zipf:S, keep, default), a FROM=TO list nor a readable file: %w", spec, rerr)
		}
		if m, err = routing.ParseFile(spec, data); err != nil {
			return nil, fmt.Errorf("--model-map: %w", err)
		}
	}
	if len(mo.Served) > 0 {
		m.Served = mo.Served
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("--model-map: %w", err)
	}
	return m, nil
}

// Validate checks what can be checked of the model options without
// reading a file.
func (mo *ModelOptions) Validate() error {
	spec := strings.TrimSpace(mo.Map)
	if spec == "" || strings.Contains(spec, "=") {
		_, err := parseModelMap(mo)
		return err
	}
	if _, ok, _ := routing.ParseStrategy(spec); ok {
		_, err := parseModelMap(mo)
		return err
	}
	return nil // a file: read when the schedule is built
}

// routeModels applies the model map to the mode's schedule (before it is
// sharded, so every shard routes alike) and calls for the per-model
// breakdown. w.traceModels lists the names the trace gives.
func routeModels(c *Config, seed uint64, log Logger, w *Workload, s arrival.Schedule) (arrival.Schedule, error) {
	m, err := parseModelMap(&c.Models)
	if err != nil {
		return nil, (err)
	}
	if m == nil {
		m = &routing.Map{Strategy: routing.Default}
		if w.scheduleModels {
			m.Strategy = routing.Keep // an exported schedule already names served models
		}
		if len(w.traceModels) > 0 && !w.scheduleModels {
			log.Infof("models: the trace names %d model(s) (%s); every request goes to --model. --model-map FILE, FROM=TO,…, keep, hash, round-robin or zipf:S (with --served-models) routes them",
				len(w.traceModels), strings.Join(firstN(w.traceModels, 5), ", "))
		}
	} else {
		log.Infof("models: routing %s", m)
		if len(w.traceModels) == 0 && (m.Strategy == routing.Table || m.Strategy == routing.Keep) && !c.mode().Trace {
			log.Warnf("models: --model-map %s: this mode names no model per request; only hash, round-robin and zipf:S spread requests", m.Strategy)
		}
		if un := m.Unmapped(w.traceModels); len(un) > 0 {
			log.Warnf("models: %d trace model(s) are not in the map and go to --model: %s (add \"*\" to the map to choose)", len(un), strings.Join(firstN(un, 5), ", "))
		}
		if m.Strategy == routing.Zipf && len(w.traceModels) > 0 {
			log.Infof("models: zipf draws every request's served name; the trace's own model names are not used")
		}
	}
	if m.Strategy != routing.Default || len(w.traceModels) > 0 || c.images() {
		w.Breakdowns = append(w.Breakdowns, BreakdownModel)
	}
	return m.Apply(s, seed), nil
}

// checkImageTrace rejects sending an image-generation trace to a text
// backend (a dry run may look at it with any backend).
func checkImageTrace(c *Config) error {
	if c.DryRun || c.images() {
		return nil
	}
	return fmt.Errorf("the trace is image-generation load (diffusion): give --backend openai-images (POST /v1/images/generations), not %s", c.API)
}

// describeTasks writes GenTD26's task counts ("TXT_2_IMG 212, …").
func describeTasks(tasks map[string]int) string {
	if len(tasks) == 0 {
		return "every request generates images at /v1/images/generations"
	}
	keys := make([]string, 0, len(tasks))
	for k := range tasks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, tasks[k])
	}
	return "tasks " + strings.Join(parts, ", ") + "; every task is sent as a generation (/v1/images/generations takes no input image)"
}
