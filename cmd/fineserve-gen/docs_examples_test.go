package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestDocsExamples runs the examples of every page of docs/, a subtest a
// page, with TestREADMEExamples' runner (exampleRunner): each page in a
// temporary directory of its own, its ```sh blocks in order.
//
// What runs: a ```sh block that calls the tool (fineserve-gen,
// bin/fineserve-gen or ./bin/fineserve-gen in a command's place). Its
// lines must be commands of the tool, `make` and `kill` lines (left out),
// `mkdir -p DIR` and `cat > FILE <<EOF` (done); a command may end with
// `> FILE`. A block that calls the tool but cannot run — it needs docker,
// a cluster, a real GPU server, a download, a shell loop, or it is a
// command's synopsis — starts with the line `# not run: WHY`; a ```sh
// block that does not call the tool (go test, npm, kubectl) is not run; a
// ```console block is a transcript (commands after "$ ", then their
// output), not run; a command line of the tool in any other block fails
// the test, so no example escapes unmarked. A ```yaml block whose first
// line names its file (`# exp.yaml`) is written to that file for the
// commands after it.
//
// Each command must exit 0, or a code its comment names (`# exits 99`,
// `# exit 0 or 3`). The page's port 8000 is its default server (the
// built-in one, started by the test if no block starts one first),
// serving the page until a block starts another on it; a server on
// another port serves its block. An --otlp-endpoint on a loopback port no
// server holds gets the project's OTLP receiver (internal/otlprecv) in
// place of the collector the example assumes, and must receive spans. The
// bounds are the README's (ports, paths, 1 ms latencies, --num-prompts at
// most 20, steps of at most 2 s) and a few more (exampleRunner.args).
//
// The quick suite leaves the blocks of longExamples to the long one
// (make test-long, FINESERVE_GEN_TEST_LONG=1), which runs only those: CI
// runs both, one after the other.
func TestDocsExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/: %v", err)
	}
	texts := map[string]string{}
	for _, p := range pages {
		texts[filepath.Base(p)] = string(testenv.ReadFile(t, p))
	}
	long := func(page string, b fencedBlock) string {
		for _, l := range longExamples {
			if l.page == page && b.lang == "sh" && strings.Contains(strings.Join(b.lines, "\n"), l.holds) {
				return l.why
			}
		}
		return ""
	}
	for _, l := range longExamples { // an entry names a block
		if !slices.ContainsFunc(fencedBlocks(t, l.page, texts[l.page]), func(b fencedBlock) bool { return long(l.page, b) == l.why }) {
			t.Errorf("longExamples: no ```sh block of docs/%s holds %q", l.page, l.holds)
		}
	}
	for _, p := range pages {
		page := filepath.Base(p)
		t.Run(page, func(t *testing.T) {
			blocks := fencedBlocks(t, "docs/"+page, texts[page])
			t.Chdir(t.TempDir())
			r := newExampleRunner(t, root, "docs/"+page, true)
			// The quick suite runs all but the long blocks, the long one
			// (run after it: .ci/run) only those.
			r.skip = func(b fencedBlock) string { return long(page, b) }
			if testenv.Long() {
				r.skip = func(b fencedBlock) string {
					if long(page, b) == "" {
						return "the quick suite's (make test)"
					}
					return ""
				}
			}
			defer r.stop()
			r.runPage(blocks)
		})
	}
}

// longExamples are the blocks the quick suite (make test) leaves to the
// long one: each is named by its page and a piece of its text, with the
// time it takes under the race detector on 2 busy cores. An entry that
// names no block fails the test.
var longExamples = []struct{ page, holds, why string }{
	{"AGENTS.md", "weka/trace_0277.json --port 8000", "three agentic replays, prompts of tens of thousands of tokens: 53 s"},
	{"CAPACITY.md", "--jitter-ms 10 --itl-jitter 0.5", "a sweep: 9 s"},
	{"CAPACITY.md", "--goodput ttft:100 e2el:250 --sweep-json sweep.json", "a sweep: 8 s"},
	{"CAPACITY.md", "--save-sweeps day-sw", "a plan that measures three sweeps: 50 s"},
	{"EXPERIMENTS.md", "--sweep-values 5,10,20 --sweep-json sweep.json", "two runs, a sweep and a plan from it: 12 s"},
	{"EXPERIMENTS.md", "--prefill-us-per-token 14", "two repeated runs: 17 s"},
	{"GUIDE.md", "--turns 5 --think-time exp:1s", "20 sessions of 5 turns: 17 s"},
	{"GUIDE.md", "weka/trace_0277.json --time-scale 10", "agentic replays: 25 s"},
	{"GUIDE.md", "--goodput ttft:100 e2el:250 --sweep-json sweep.json", "a sweep: 8 s"},
	{"GUIDE.md", "--plan-burstiness 1,2,3.4", "a plan that measures three sweeps: 78 s"},
	{"GUIDE.md", "--served-models sql,chat,code", "replays of the sample traces: 23 s"},
	{"REPLAY.md", "mooncake_synthetic_trace.jsonl.gz --target-rate 5", "replays of the sample traces: 17 s"},
	{"SESSIONS.md", "--multi-turn --think-time lognormal:5s:0.8", "sessions with 5 s think times: 31 s"},
	{"SESSIONS.md", "--turns 5 --think-time exp:1s", "20 sessions of 5 turns: 19 s"},
}
