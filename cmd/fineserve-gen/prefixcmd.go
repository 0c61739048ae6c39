package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
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
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 || n > 1<<30 {
			return nil, fmt.Errorf("--cache-blocks %q: want cache sizes in blocks ≥ 1, e.g. 1000 or 1000,10000", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// readPrefix streams the prefix trace at path through fn and writes the
// skipped records' warning to stderr.
func readPrefix(path string, opt prefix.Options, stderr io.Writer, fn func(*prefix.Request) error) (*prefix.Info, error) {
	rc, err := prefix.Open(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	info, err := prefix.Read(rc, path, opt, fn)
	if err != nil {
		return info, err
	}
	if w := info.Skips.Warning(); w != "" {
		fmt.Fprintf(stderr, "warning: trace %s: %s\n", path, w)
	}
	if info.OutOfOrder > 0 {
		fmt.Fprintf(stderr, "warning: trace %s: %d request(s) earlier than the one before them: analyzed in file order\n", path, info.OutOfOrder)
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
func analyzePrefix(path string, opt prefix.Options, cacheBlocks []int, maxDistinct int, jsonOut string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "fineserve-gen analyze: %v\n", err)
		return exitUsage
	}
	an := prefix.NewAnalyzer(0, cacheBlocks, maxDistinct)
	info, err := readPrefix(path, opt, stderr, an.Add)
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
