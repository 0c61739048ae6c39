package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestREADMEExamples runs every command of every ```sh block of the
// README, in order, in one temporary directory, against built-in servers
// started as the blocks start them: the quick start's server (port 8000)
// serves the whole README, a server a later block starts serves that block
// and stops at its end. `make` lines and `kill` lines are left out (make
// demo and make test are checked by running them). Each command must exit
// 0. Only ports, paths, --num-prompts and --step-duration change (see
// exampleRunner.args). The runner is TestDocsExamples' too.
func TestREADMEExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(testenv.ReadFile(t, "../../README.md"))
	blocks := fencedBlocks(t, "README", readme)
	var sh []fencedBlock
	for _, b := range blocks {
		if b.lang == "sh" {
			sh = append(sh, b)
		}
	}
	if len(sh) < 8 {
		t.Fatalf("README: %d ```sh blocks, want the quick start and the examples", len(sh))
	}
	checkREADMEShape(t, readme, sh[0])
	t.Chdir(t.TempDir())
	r := newExampleRunner(t, root, "README", false)
	r.runPage(blocks)
	r.stop()
	ran := map[string]bool{}
	for _, args := range r.ran {
		for i, a := range args {
			if (a == "--mode" || a == "--backend") && i+1 < len(args) {
				ran[args[i+1]] = true
			}
			ran[a] = true
		}
	}
	// One example per mode and per API family, as the README promises.
	for _, want := range []string{"poisson", "replay", "parametric", "sweep", "plan", "analyze", "synthesize", "fit", "merge", "report",
		"vllm", "openai", "openai-chat", "openai-responses", "openai-embeddings", "vllm-rerank", "vllm-score", "openai-images", "openai-transcriptions",
		"anthropic-messages", "sglang-generate", "kserve-generate",
		"--turns", "--tools", "--response-format", "--reasoning-effort", "--burstiness", "--request-trace-csv", "--trace", "--shard", "--config"} {
		if !ran[want] {
			t.Errorf("README: no runnable example of %s", want)
		}
	}
}

// checkREADMEShape: the README stays a newcomer's page — at most 250
// lines, the two make targets in its first block, and a link to every page
// of docs/.
func checkREADMEShape(t *testing.T, readme string, first fencedBlock) {
	t.Helper()
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README: %d lines, want at most 250 (details go to docs/)", n)
	}
	var targets []string
	for _, c := range first.cmds {
		if c.args[0] == "make" && len(c.args) > 1 {
			targets = append(targets, c.args[1])
		}
	}
	if !slices.Equal(targets, []string{"demo", "test"}) {
		t.Errorf("README's first block runs make %v, want make demo and make test", targets)
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs/: %v", err)
	}
	for _, p := range pages {
		if link := "](docs/" + filepath.Base(p) + ")"; !strings.Contains(readme, link) {
			t.Errorf("README: no link to docs/%s in its table of the docs", filepath.Base(p))
		}
	}
}
