package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/fineserve-gen/fineserve-gen/pkg/prefix"
)

// isPrefixFormat reports whether --trace-format names a prefix trace.
func isPrefixFormat(s string) bool {
	f, err := prefix.ParseFormat(s)
	return err == nil && f != ""
}

// parseCacheBlocks parses --cache-blocks: sizes ≥ 1, comma-separated.
func parseCacheBlocks(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	return parseSizes(s, 1<<30, "--cache-blocks %q: want cache sizes in blocks ≥ 1, e.g. 1000 or 1000,10000")
}

// readPrefix streams the prefix trace at path through fn, in time order
// (prefix.Reorder's window), and writes the skipped records' warning to
// stderr.
func readPrefix(ctx context.Context, path string, opt prefix.Options, stderr io.Writer, fn func(*prefix.Request) error) (*prefix.Info, error) {
	rc, err := prefix.Open(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	n := 0
	ro := prefix.NewReorder(0, func(q *prefix.Request) error {
		// A signal stops the reading (checked every 1024 requests).
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fn(q)
	})
	info, err := prefix.Read(rc, path, opt, ro.Add)
	if err == nil {
		err = ro.Flush()
	}
	if err != nil {
		return info, err
	}
	if w := info.Skips.Warning(); w != "" {
		fmt.Fprintf(stderr, "warning: trace %s: %s\n", path, w)
	}
	if info.OutOfOrder > 0 {
		late := ""
		if ro.Late > 0 {
			late = fmt.Sprintf("; %d of them more than %d requests late, taken where they came", ro.Late, prefix.DefaultReorderWindow)
		}
		fmt.Fprintf(stderr, "warning: trace %s: %d request(s) earlier than the one before them: put in time order%s\n", path, info.OutOfOrder, late)
	}
	return info, nil
}

// prefixAnalysis is analyze's report for a prefix trace.
type prefixAnalysis struct {
	Trace         string `json:"trace"`
	Format        string `json:"format"`
	Conversations int    `json:"conversations,omitempty"`
	SkippedRows   int    `json:"skipped_records,omitempty"`
	prefix.Report
}

// analyzePrefix runs analyze on a prefix trace.
func analyzePrefix(ctx context.Context, path string, opt prefix.Options, cacheBlocks []int, maxDistinct int, jsonOut string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fineserve-gen analyze: %v\n", err)
		return exitUsage
	}
	an := prefix.NewAnalyzer(0, cacheBlocks, maxDistinct)
	info, err := readPrefix(ctx, path, opt, stderr, an.Add)
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "fineserve-gen analyze: interrupted while reading %s: nothing written\n", path)
		return exitInterrupted
	}
	var tooMany prefix.ErrTooManyBlocks
	if errors.As(err, &tooMany) {
		fmt.Fprintf(stderr, "fineserve-gen analyze: %s: %v\n", path, err)
		return exitFailure
	}
	if err != nil {
		return fail(err)
	}
	a := prefixAnalysis{Trace: path, Format: string(info.Format), SkippedRows: info.Skips.Count, Report: an.Report()}
	if info.Format != prefix.Mooncake {
		a.Conversations = info.Conversations
	}
	if err := a.writeTable(stdout); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen analyze: %v\n", err)
		return exitFailure
	}
	if jsonOut != "" {
		b, _ := json.MarshalIndent(a, "", "  ")
		b = append(b, '\n')
		var werr error
		if jsonOut == "-" {
			_, werr = stdout.Write(b)
		} else {
			werr = os.WriteFile(jsonOut, b, 0o644)
		}
		if werr != nil {
			fmt.Fprintf(stderr, "fineserve-gen analyze: --json: %v\n", werr)
			return exitFailure
		}
	}
	return exitOK
}

// writeTable prints a prefix trace's analysis.
func (a *prefixAnalysis) writeTable(w io.Writer) error {
	var b strings.Builder
	r := &a.Report
	fmt.Fprintf(&b, "Prefix reuse: %s (%s, %d-token blocks)\n", a.Trace, a.Format, r.BlockSize)
	conv := ""
	if a.Conversations > 0 {
		conv = fmt.Sprintf(" in %d conversations", a.Conversations)
		if a.Conversations == 1 {
			conv = " in 1 conversation"
		}
	}
	fmt.Fprintf(&b, "%d requests%s over %.1f s; %d blocks, %d distinct\n", r.Requests, conv, r.SpanS, r.Blocks, r.Distinct)
	fmt.Fprintf(&b, "infinite cache: %.2f%% of blocks already seen (%.2f%% of prompt tokens)\n", 100*r.InfiniteHitRate, 100*r.TokenHitRate)
	fmt.Fprintf(&b, "unique prefixes %d; prefix reuse ratio %.2f%% (distinct blocks used by more than one request)\n\n", r.UniquePrefixes, 100*r.PrefixReuseRatio)
	fmt.Fprintf(&b, "%-16s %9s %9s %9s %9s %9s %9s %9s %11s\n", "", "min", "p25", "median", "p75", "p90", "p99", "max", "mean")
	row := func(name string, q prefix.Quantiles, scale float64) {
		fmt.Fprintf(&b, "%-16s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f %11.1f\n", name, q.Min*scale, q.P25*scale, q.P50*scale, q.P75*scale, q.P90*scale, q.P99*scale, q.Max*scale, q.Mean*scale)
	}
	row("ISL (tokens)", r.ISL, 1)
	row("OSL (tokens)", r.OSL, 1)
	row("context", r.Context, 1)
	row("hit/request (%)", r.RequestHitRate, 100)
	t := r.Tree
	fmt.Fprintf(&b, "\nPrefix tree: %d nodes (%d roots), %d leaves; depth max %d, mean leaf %.1f; %d internal nodes, branching mean %.2f, max %d\n",
		t.Nodes, t.Roots, t.Leaves, t.MaxDepth, t.MeanLeafDepth, t.Internal, t.MeanBranching, t.MaxBranching)
	if len(r.LRU) > 0 {
		fmt.Fprintf(&b, "\nLRU prefix cache of C blocks, in request order (a block hits when it and the blocks before it are resident):\n")
		fmt.Fprintf(&b, "%12s %14s %12s %10s %12s\n", "blocks", "tokens", "hits", "hit rate", "evictions")
		for _, c := range r.LRU {
			fmt.Fprintf(&b, "%12d %14d %12d %9.2f%% %12d\n", c.Blocks, c.Tokens, c.Hits, 100*c.HitRate, c.Evicted)
		}
		fmt.Fprintf(&b, "%12s %14s %12d %9.2f%%  (infinite)\n", "∞", "", r.InfiniteHits, 100*r.InfiniteHitRate)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// synthesizeCommand is "fineserve-gen synthesize TRACE -o OUT": a scaled
// copy of a prefix trace that keeps its prefix tree's shape (AIPerf's
// synthesize-trace knobs), written as a Mooncake trace that --mode replay
// reads.
func synthesizeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return untilSignal(ctx, stderr, "synthesize", func() int { return synthesize(ctx, args, stdout, stderr) })
}

func synthesize(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("synthesize")
	out := fs.StringP("output", "o", "", "the trace to write (- for standard output)")
	cfg := prefix.SynthConfig{}
	fs.Float64Var(&cfg.Speedup, "speedup", 1, "divide every timestamp by this (2: twice the rate, half the span)")
	fs.Float64Var(&cfg.PrefixLenMultiplier, "prefix-len-multiplier", 1, "stretch the shared prefixes (blocks more than one request uses): a shared run of L blocks becomes ⌊L·m⌋")
	fs.IntVar(&cfg.PrefixRootMultiplier, "prefix-root-multiplier", 1, "spread the requests over N independent copies of the prefix tree (each request's copy drawn with --seed)")
	fs.Float64Var(&cfg.PromptLenMultiplier, "prompt-len-multiplier", 1, "scale each request's unique tokens (those after its shared prefix)")
	fs.Float64Var(&cfg.OutputLenMultiplier, "output-len-multiplier", 1, "scale each request's output tokens")
	fs.IntVar(&cfg.MaxISL, "max-isl", 0, "cap the input tokens (0: no cap)")
	fs.IntVar(&cfg.MaxOSL, "max-osl", 0, "cap the output tokens (0: no cap)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "random seed (--prefix-root-multiplier's choice of copy)")
	fs.IntVar(&cfg.OutBlockSize, "block-size", 0, "tokens a block of the written trace, a multiple of the trace's (default: 512 for mooncake, the trace's for bailian)")
	outFormat := fs.String("output-format", "mooncake", "the written trace's format: mooncake (--mode replay --trace-format mooncake reads it) or bailian (a Bailian trace's own format, its chat ids, parents, turns and types kept)")
	format := fs.String("trace-format", "", "mooncake, bailian or weka (default: detected)")
	strict := fs.Bool("strict", false, "fail on unusable records instead of skipping and counting them")
	maxDistinct := fs.Int("max-distinct-blocks", prefix.DefaultMaxDistinct, "the most distinct blocks kept in memory; a trace with more is refused")
	fail := func(errs ...error) int { return usageFail(stderr, "synthesize", errs...) }
	if code, done := parseSubcommand(fs, args, "synthesize", "Usage: fineserve-gen synthesize TRACE -o OUT [flags]\n\n"+
		"Writes a scaled copy of a prefix trace (Mooncake, Bailian or WEKA hash ids) as a Mooncake trace\n"+
		"(timestamp ms, input_length, output_length, hash_ids of --block-size tokens) that --mode replay\n"+
		"reads, or a Bailian trace as a Bailian one (--output-format bailian). The prefix tree keeps its\n"+
		"shape: shared blocks stay shared, unique ones unique. Two passes over the file: the first counts\n"+
		"which blocks are shared.\n", stdout, stderr); done {
		return code
	}
	var errs []error
	if fs.NArg() != 1 {
		errs = append(errs, errors.New("want exactly one trace file: fineserve-gen synthesize TRACE -o OUT [flags]"))
	}
	if *out == "" {
		errs = append(errs, errors.New("-o/--output: the trace to write"))
	}
	pf, err := prefix.ParseFormat(*format)
	if err != nil {
		errs = append(errs, fmt.Errorf("--trace-format: %w", err))
	}
	if *maxDistinct < 1 {
		errs = append(errs, fmt.Errorf("--max-distinct-blocks %d: want ≥ 1", *maxDistinct))
	}
	switch *outFormat {
	case "mooncake", "bailian":
	default:
		errs = append(errs, fmt.Errorf("--output-format %q: want mooncake or bailian", *outFormat))
	}
	cfg.InBlockSize, cfg.OutBlockSize = 1, max(cfg.OutBlockSize, 1) // checked against the trace's below
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if !fs.Changed("block-size") {
		cfg.OutBlockSize = 0
	}
	if len(errs) > 0 {
		return fail(errs...)
	}
	path := fs.Arg(0)
	if in, err := os.Stat(path); err == nil {
		if o, err := os.Stat(*out); err == nil && os.SameFile(in, o) {
			return fail(fmt.Errorf("-o %s: the trace itself (it is read twice): write elsewhere", *out))
		}
	}
	opt := prefix.Options{Format: pf, Strict: *strict}
	// Pass 1: which blocks are shared, and the trace's own figures.
	uses := prefix.NewAnalyzer(0, nil, *maxDistinct)
	first, last := math.Inf(1), math.Inf(-1)
	info, err := readPrefix(ctx, path, opt, stderr, func(q *prefix.Request) error {
		first, last = min(first, q.T), max(last, q.T)
		return uses.Add(q)
	})
	if ctx.Err() != nil {
		fmt.Fprintf(stderr, "fineserve-gen synthesize: interrupted while reading %s (first pass): nothing written\n", path)
		return exitInterrupted
	}
	if err != nil {
		var tooMany prefix.ErrTooManyBlocks
		if errors.As(err, &tooMany) {
			fmt.Fprintf(stderr, "fineserve-gen synthesize: %s: %v\n", path, err)
			return exitFailure
		}
		return fail(err)
	}
	cfg.InBlockSize = info.BlockSize
	if *outFormat == "bailian" && info.Format != prefix.Bailian {
		return fail(fmt.Errorf("--output-format bailian: %s is a %s trace; its requests have no chat ids (write mooncake)", path, info.Format))
	}
	if cfg.OutBlockSize == 0 {
		cfg.OutBlockSize = 512
		if *outFormat == "bailian" {
			cfg.OutBlockSize = info.BlockSize
		}
	}
	if err := cfg.Validate(); err != nil {
		return fail(fmt.Errorf("%s: %w", path, err))
	}
	if first <= last {
		if err := cfg.CheckSpeedup(first, last); err != nil {
			return fail(fmt.Errorf("%s: %w", path, err))
		}
	}
	// Pass 2: rewrite.
	var w io.Writer = stdout
	var f *os.File
	if *out != "-" {
		if f, err = os.Create(*out); err != nil {
			return fail(err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	syn := prefix.NewSynthesizer(cfg, uses)
	after := prefix.NewAnalyzer(cfg.OutBlockSize, nil, 0)
	var buf []byte
	n := 0
	opt.Format = info.Format
	_, err = readPrefix(ctx, path, opt, io.Discard, func(q *prefix.Request) error {
		o := syn.Rewrite(q)
		if n == 0 {
			first = o.T
		}
		last = o.T
		n++
		if *outFormat == "bailian" {
			buf = prefix.AppendBailian(buf[:0], o)
		} else {
			buf = prefix.AppendMooncake(buf[:0], o)
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		return after.Add(&prefix.Request{T: o.T, In: o.In, Out: o.Out, Blocks: o.Blocks})
	})
	if ctx.Err() != nil {
		if f == nil {
			fmt.Fprintln(stderr, "fineserve-gen synthesize: interrupted: the trace written is cut short")
			return exitInterrupted
		}
		f.Close()
		os.Remove(*out) // a part of the trace is not a trace
		fmt.Fprintf(stderr, "fineserve-gen synthesize: interrupted while writing %s: removed\n", *out)
		return exitInterrupted
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && f != nil {
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen synthesize: %v\n", err)
		return exitFailure
	}
	before, now := uses.Report(), after.Report()
	fmt.Fprintf(stderr, "synthesize: %d requests (%s, %d-token blocks) → %s (%s, %d-token blocks): span %.1f s → %.1f s; infinite-cache hit rate %.2f%% → %.2f%%; distinct blocks %d → %d; mean ISL %.0f → %.0f, OSL %.0f → %.0f\n",
		before.Requests, info.Format, info.BlockSize, *out, *outFormat, cfg.OutBlockSize, before.SpanS, last-first, 100*before.InfiniteHitRate, 100*now.InfiniteHitRate,
		before.Distinct, now.Distinct, before.ISL.Mean, now.ISL.Mean, before.OSL.Mean, now.OSL.Mean)
	return exitOK
}
