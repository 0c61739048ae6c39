package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/internal/termsafe"
	"github.com/fineserve-gen/fineserve-gen/pkg/locality"
	"github.com/fineserve-gen/fineserve-gen/pkg/prefix"
	"github.com/fineserve-gen/fineserve-gen/pkg/replay"
)

// analyzeCommand is "fineserve-gen analyze TRACE": how many adapter (or
// model) loads a cache of N slots needs for the trace's request order,
// overall and per instance — to choose vLLM's --max-loras before a run.
// For a prefix trace (Mooncake, Bailian, WEKA hash ids) it reports the
// prefix reuse instead: hit rates of an infinite cache and of LRU caches of
// --cache-blocks blocks, lengths and the prefix tree (prefixcmd.go).
func analyzeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return untilSignal(ctx, stderr, "analyze", func() int { return analyze(ctx, args, stdout, stderr) })
}

// untilSignal returns f's exit code, or exitInterrupted once ctx is done
// (the first SIGINT or SIGTERM): f is given a second to stop by itself
// and say so, then left behind as the process exits.
func untilSignal(ctx context.Context, stderr io.Writer, name string, f func() int) int {
	code := make(chan int, 1)
	safe.Go(func() { code <- f() })
	select {
	case c := <-code:
		return c
	case <-ctx.Done():
	}
	select {
	case c := <-code:
		return c
	case <-time.After(time.Second):
		fmt.Fprintf(stderr, "fineserve-gen %s: interrupted: nothing written\n", name)
		return exitInterrupted
	}
}

func analyze(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("analyze")
	slotsArg := fs.String("adapter-cache", "8", "cache sizes to simulate, in adapters (slots): N or N,M,… (vLLM's --max-loras)")
	policyArg := fs.String("policy", "lru,lfu", "eviction policies: lru, lfu, opt (Belady's optimum), comma-separated")
	keyArg := fs.String("key", "auto", "what a cache holds: adapters (the trace's LoRAs), model (its model column) or auto (adapters when the trace names them)")
	perInstance := fs.Bool("per-instance", true, "also simulate one cache per instance (groupId, ip) when the trace has them")
	top := fs.Int("top", 10, "instances listed in the table (the busiest; the JSON lists every one)")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file (- for standard output)")
	cacheArg := fs.String("cache-blocks", "", "prefix traces: LRU prefix-cache sizes to simulate, in the trace's blocks: C or C,D,… (the infinite cache is always reported)")
	maxDistinct := fs.Int("max-distinct-blocks", prefix.DefaultMaxDistinct, "prefix traces: the most distinct blocks kept in memory (about 60 bytes each); a trace with more is refused")
	tf := addTraceFlags(fs)
	fs.StringVar(&tf.ro.ModelColumn, "model-column", "", "model column (default per format)")
	fs.StringVar(&tf.ro.Scene, "scene", "", "keep the rows of this scene_id (Alibaba text-to-image trace)")
	fs.BoolVar(&tf.ro.KeepFailed, "keep-failed", false, "keep rows the trace marks as failed")
	fail := func(errs ...error) int { return usageFail(stderr, "analyze", errs...) }
	if code, done := parseSubcommand(fs, args, "analyze", "Usage: fineserve-gen analyze TRACE [flags]\n\n"+
		"Replays the trace's request order (no clock, nothing sent) through caches of N adapter slots\n"+
		"and counts the loads each needs: one cache for the whole trace, and one per instance.\n"+
		"A request needs every adapter it names resident (the model itself with --key model).\n\n"+
		"A prefix trace (Mooncake, Bailian or WEKA hash_ids; detected, or --trace-format mooncake|bailian|weka)\n"+
		"is analyzed for prefix reuse instead: requests, the infinite-cache hit rate (blocks already seen, in time\n"+
		"order), unique prefixes, prefix-reuse ratio, ISL/OSL/context quantiles, the prefix tree, and the hit rate\n"+
		"of an LRU prefix cache of each --cache-blocks size. The file is streamed.\n", stdout, stderr); done {
		return code
	}
	var errs []error
	if fs.NArg() != 1 {
		errs = append(errs, errors.New("want exactly one trace file: fineserve-gen analyze TRACE [flags]"))
	}
	cacheBlocks, err := parseCacheBlocks(*cacheArg)
	if err != nil {
		errs = append(errs, err)
	}
	if *maxDistinct < 1 {
		errs = append(errs, fmt.Errorf("--max-distinct-blocks %d: want ≥ 1", *maxDistinct))
	}
	if len(errs) == 0 && (isPrefixFormat(tf.format) || tf.format == "" && prefix.Sniff(fs.Arg(0))) {
		for _, name := range []string{"adapter-cache", "policy", "key", "per-instance", "top", "model-column", "scene", "keep-failed", "timestamp-column", "timestamp-unit"} {
			if fs.Changed(name) {
				errs = append(errs, fmt.Errorf("--%s: not for a prefix trace (%s reads hash ids)", name, fs.Arg(0)))
			}
		}
		if len(errs) > 0 {
			return fail(errs...)
		}
		pf, _ := prefix.ParseFormat(tf.format)
		return analyzePrefix(ctx, fs.Arg(0), prefix.Options{Format: pf, Strict: tf.ro.Strict}, cacheBlocks, *maxDistinct, *jsonOut, stdout, stderr)
	}
	if len(cacheBlocks) > 0 {
		errs = append(errs, errors.New("--cache-blocks: for prefix traces (Mooncake, Bailian, WEKA hash ids); adapter caches take --adapter-cache"))
	}
	slots, err := parseSlots(*slotsArg)
	if err != nil {
		errs = append(errs, err)
	}
	var policies []locality.Policy
	for _, p := range strings.Split(*policyArg, ",") {
		pol, err := locality.ParsePolicy(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("--policy: %w", err))
			continue
		}
		policies = append(policies, pol)
	}
	switch *keyArg {
	case "auto", "adapters", "model":
	default:
		errs = append(errs, fmt.Errorf("--key %q: want adapters, model or auto", *keyArg))
	}
	if *top < 0 {
		errs = append(errs, fmt.Errorf("--top %d: want ≥ 0", *top))
	}
	errs = append(errs, tf.check()...)
	if len(errs) > 0 {
		return fail(errs...)
	}
	tr, err := tf.load(fs.Arg(0), stderr)
	if err != nil {
		return fail(err)
	}
	key := *keyArg
	if key == "auto" {
		key = "model"
		if tr.HasAdapterNames() {
			key = "adapters"
		}
	}
	switch {
	case key == "adapters" && !tr.HasAdapterNames():
		if tr.HasGenerations() {
			return fail(fmt.Errorf("%s: the %s format counts each request's LoRAs without naming them: analyze its models (checkpoints) with --key model", fs.Arg(0), tr.Format))
		}
		return fail(fmt.Errorf("%s: the trace names no adapters: use --key model (with --model-column for a generic trace)", fs.Arg(0)))
	case key == "model" && !tr.HasModels():
		return fail(fmt.Errorf("%s: the trace names no model per request: give --model-column", fs.Arg(0)))
	}
	a := buildAnalysis(tr, key, slots, policies, *perInstance && tr.HasInstances())
	a.Trace = fs.Arg(0)
	if err := a.writeTable(stdout, *top); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen analyze: %s\n", termsafe.Lines(err.Error()))
		return exitFailure
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(a, "", "  ")
		b = append(b, '\n')
		var werr error
		if *jsonOut == "-" {
			_, werr = stdout.Write(b)
		} else {
			werr = os.WriteFile(*jsonOut, b, 0o644)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "fineserve-gen analyze: --json: %v\n", werr)
			return exitFailure
		}
	}
	return exitOK
}

// parseSlots parses --adapter-cache: sizes ≥ 1, comma-separated.
func parseSlots(s string) ([]int, error) {
	return parseSizes(s, 1<<20, "--adapter-cache %q: want cache sizes ≥ 1, e.g. 8 or 4,8,16")
}

// parseSizes parses comma-separated cache sizes from 1 to most; a bad one
// is the error format says (with s).
func parseSizes(s string, most int, format string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > most {
			return nil, fmt.Errorf(format, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// analysis is the analyze report: the trace, what was cached, and the
// simulated loads.
type analysis struct {
	Trace       string `json:"trace"`
	Format      string `json:"format"`
	Key         string `json:"key"`
	InstanceKey string `json:"instance_key,omitempty"`
	locality.Report
	InstanceList []instanceJSON `json:"instances,omitempty"`
}

type instanceJSON struct {
	Name string `json:"instance"`
	locality.InstanceReport
}

// instanceKeys name the instance column of each format.
var instanceKeys = map[replay.Format]string{replay.AlibabaLoRA: "groupId", replay.AlibabaT2I: "ip"}

// buildAnalysis turns the trace into requests (in its time order, file
// order for equal times) and simulates the caches.
func buildAnalysis(tr *replay.Trace, key string, slots []int, policies []locality.Policy, perInstance bool) *analysis {
	reqs := make([]locality.Request, tr.Len())
	for i := range reqs {
		r := locality.Request{Instance: tr.InstanceID(i)}
		if key == "adapters" {
			r.Items = tr.LoRAIDs(i)
		} else {
			id := tr.ModelID(i)
			r.Items = []uint32{id}
		}
		reqs[i] = r
	}
	rep := locality.Analyze(reqs, len(tr.Instances()), slots, policies, perInstance)
	a := &analysis{Format: string(tr.Format), Key: key, Report: rep}
	if perInstance {
		a.InstanceKey = instanceKeys[tr.Format]
		if a.InstanceKey == "" {
			a.InstanceKey = "instance"
		}
		names := tr.Instances()
		for _, ir := range rep.Instances {
			a.InstanceList = append(a.InstanceList, instanceJSON{Name: names[ir.Instance], InstanceReport: ir})
		}
		// Busiest first (then by name), for the table and the JSON alike.
		sort.SliceStable(a.InstanceList, func(i, j int) bool {
			x, y := a.InstanceList[i], a.InstanceList[j]
			if x.Requests != y.Requests {
				return x.Requests > y.Requests
			}
			return x.Name < y.Name
		})
	}
	return a
}

// writeTable prints the report.
func (a *analysis) writeTable(w io.Writer, top int) error {
	var b strings.Builder
	what := "adapter"
	if a.Key == "model" {
		what = "model"
	}
	fmt.Fprintf(&b, "Adapter locality: %s (%s)\n", a.Trace, a.Format)
	fmt.Fprintf(&b, "%d requests, %d %s uses, %d distinct %ss (the cold loads no cache avoids)\n\n", a.Requests, a.Accesses, what, a.Distinct, what)
	fmt.Fprintf(&b, "One cache for the whole trace, in request order:\n")
	fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s\n", "slots", "policy", "loads", "hits", "hit ratio")
	for _, r := range a.Overall {
		fmt.Fprintf(&b, "%8d  %-6s %10d %10d %9.2f%%\n", r.Slots, r.Policy, r.Loads, r.Hits, 100*r.HitRatio)
	}
	if len(a.InstanceList) > 0 {
		fmt.Fprintf(&b, "\nOne cache per %s (%d instances; the sum, then the %d busiest):\n", a.InstanceKey, len(a.InstanceList), min(top, len(a.InstanceList)))
		fmt.Fprintf(&b, "%8s  %-6s %10s %10s %10s\n", "slots", "policy", "loads", "hits", "hit ratio")
		for _, r := range a.InstanceTotal {
			fmt.Fprintf(&b, "%8d  %-6s %10d %10d %9.2f%%\n", r.Slots, r.Policy, r.Loads, r.Hits, 100*r.HitRatio)
		}
		if top > 0 {
			width := len(a.InstanceKey)
			for _, in := range a.InstanceList[:min(top, len(a.InstanceList))] {
				width = max(width, min(len(in.Name), 40))
			}
			fmt.Fprintf(&b, "\n%-*s %9s %9s", width, a.InstanceKey, "requests", "distinct")
			for _, r := range a.Overall {
				fmt.Fprintf(&b, " %9s", fmt.Sprintf("%s/%d", r.Policy, r.Slots))
			}
			b.WriteString("  (loads)\n")
			for _, in := range a.InstanceList[:min(top, len(a.InstanceList))] {
				fmt.Fprintf(&b, "%-*s %9d %9d", width, termsafe.String(in.Name), in.Requests, in.Distinct) // the trace's text
				for _, r := range in.Runs {
					fmt.Fprintf(&b, " %9d", r.Loads)
				}
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
