package workload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/parametric"
)

// servegenSchedule builds --mode parametric's schedule from ServeGen
// clients (--servegen DIR, --num-clients K): a new source of parametric
// windows, with the mode's load semantics (--time-scale speeds it up,
// --duration and --num-prompts cut or extend it).
func servegenSchedule(c *Config, seed uint64, log Logger) (arrival.Schedule, error) {
	p := &c.Parametric
	clients, err := readServeGenDir(p.ServeGen)
	if err != nil {
		return nil, err
	}
	chosen, err := parametric.ChooseServeGenClients(clients, p.NumClients, seed)
	if err != nil {
		return nil, fmt.Errorf("--servegen %s: %w", p.ServeGen, err)
	}
	sc := parametric.ServeGenConfig{Clients: chosen, SkipIdle: p.ServeGenSkipIdle, Duration: c.Duration, TimeScale: c.TimeScale, Seed: seed}
	if c.NumPromptsSet {
		sc.Count = c.NumPrompts
	}
	if c.mixture != nil {
		sc.Lengths = c.mixture
	}
	limit, from := c.tokenLimit()
	sc.MaxTokens = limit
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("--servegen %s: %w", p.ServeGen, err)
	}
	names := make([]string, len(chosen))
	var rate float64
	for i, cl := range chosen {
		names[i] = cl.Name
		rate += cl.MeanRate()
	}
	how := "all"
	if p.NumClients > 0 && p.NumClients < len(clients) {
		how = fmt.Sprintf("%d chosen with the seed", p.NumClients)
	}
	log.Infof("parametric: ServeGen %s: %d of %d clients (%s): %s", p.ServeGen, len(chosen), len(clients), how, strings.Join(names, ", "))
	start, pass := sc.FirstActive()
	idle := "idle windows kept (--servegen-skip-idle leaves them out)"
	if p.ServeGenSkipIdle {
		idle = "idle windows left out"
	}
	log.Infof("parametric: ServeGen windows from the first active one (%g s into the clients' traces): %v a pass, %s; clients' mean rate %.4g req/s over their traces",
		start, time.Duration(pass*1e9).Round(time.Second), idle, rate)
	if sc.Lengths != nil {
		log.Infof("parametric: request sizes from --lengths %s", c.mixture)
	} else {
		log.Infof("parametric: request sizes from the clients' datasets (each window's input and output distributions; a draw above the token limit %d (%s) is clamped to it)", limit, from)
	}
	if sc.Count == 0 && sc.Duration == 0 {
		log.Infof("parametric: one pass over the windows; --duration or --num-prompts run longer (the windows repeat) or shorter")
	}
	return parametric.ServeGenSchedule(sc), nil
}

// readServeGenDir reads every client of a ServeGen directory: each
// NAME-trace.csv with its NAME-dataset.json (ServeGen's data/CATEGORY/MODEL
// layout, chunk-ID-…; or files renamed with a prefix).
func readServeGenDir(dir string) ([]*parametric.ServeGenClient, error) {
	traces, err := filepath.Glob(filepath.Join(dir, "*-trace.csv"))
	if err != nil {
		return nil, fmt.Errorf("--servegen %s: %w", dir, err)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("--servegen %s: not a directory", dir)
	}
	if len(traces) == 0 {
		return nil, fmt.Errorf("--servegen %s: no client files (NAME-trace.csv with NAME-dataset.json)", dir)
	}
	sort.Strings(traces)
	var clients []*parametric.ServeGenClient
	var errs []error
	for _, tr := range traces {
		name := strings.TrimSuffix(filepath.Base(tr), "-trace.csv")
		ds := filepath.Join(dir, name+"-dataset.json")
		tdata, err := readFile(tr, "--servegen")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ddata, err := readFile(ds, "--servegen")
		if err != nil {
			errs = append(errs, fmt.Errorf("client %s: %w", name, err))
			continue
		}
		cl, err := parametric.ReadServeGenClient(name, bytes.NewReader(tdata), tr, bytes.NewReader(ddata), ds)
		if err != nil {
			errs = append(errs, fmt.Errorf("--servegen: %w", err))
			continue
		}
		clients = append(clients, cl)
	}
	return clients, errors.Join(errs...)
}
