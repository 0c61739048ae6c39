package main

import (
	"slices"
	"strings"
	"testing"
)

// TestShellExamplesParse checks the runner's reading of a page: what a
// ```sh block's commands are, which blocks run, the not-run marker, the
// exit codes a comment allows, the files a page gives, and the command
// lines that would escape both the runner and the marker.
func TestShellExamplesParse(t *testing.T) {
	page := strings.Join([]string{
		"text",
		"```sh", // 2
		"fineserve-gen mock-server --port 8001 &", // 3
		"bin/fineserve-gen --port 8001 \\",        // 4
		"    --model 'a b' --goodput \"ttft:1\" # exits 0 or 3",
		"mkdir -p out", // 6
		"fineserve-gen config expand x.yaml > full.yaml",
		"cat > t.csv <<'EOF'", // 8
		"ts,in",
		"1,2",
		"EOF",
		"```",
		"```sh", // 13
		"# not run: needs docker",
		"docker run x &",
		"for p in 1 2; do fineserve-gen --port $p & done",
		"```",
		"```sh", // 18
		"go test ./... # no tool here; -bin bin/fineserve-gen is an argument",
		"go run ./x -bin bin/fineserve-gen",
		"```",
		"  ```yaml", // 22
		"  # exp.yaml — a run file",
		"  seed: 1",
		"  ```",
		"```", // 26
		"fineserve-gen --num-prompts 1",
		"fineserve-gen: threshold p99<=3: ok",
		"   fineserve-gen merge s0.json (a diagram)",
		"$ fineserve-gen report r.jsonl",
		"```",
		"```console", // 32
		"$ fineserve-gen --num-prompts 1",
		"```",
	}, "\n")
	blocks := fencedBlocks(t, "page", page)
	if len(blocks) != 6 {
		t.Fatalf("%d blocks, want 6", len(blocks))
	}
	run := blocks[0]
	if run.lang != "sh" || run.notRun != "" || !run.holdsTool() || len(run.cmds) != 5 {
		t.Fatalf("first block: %+v", run)
	}
	want := []shellCommand{
		{line: 3, args: []string{"fineserve-gen", "mock-server", "--port", "8001"}, background: true, tool: true},
		{line: 4, args: []string{"bin/fineserve-gen", "--port", "8001", "--model", "a b", "--goodput", "ttft:1"}, comment: "exits 0 or 3", tool: true},
		{line: 6, args: []string{"mkdir", "-p", "out"}},
		{line: 7, args: []string{"fineserve-gen", "config", "expand", "x.yaml"}, stdout: "full.yaml", tool: true},
		{line: 8, args: []string{"cat"}, stdout: "t.csv", heredoc: "ts,in\n1,2\n"},
	}
	for i, c := range run.cmds {
		w := want[i]
		if c.line != w.line || !slices.Equal(c.args, w.args) || c.background != w.background || c.stdout != w.stdout ||
			c.heredoc != w.heredoc || c.comment != w.comment || c.tool != w.tool || c.unsupported != "" {
			t.Errorf("command %d: %+v, want %+v", i, c, w)
		}
	}
	if got := exitCodes(run.cmds[1].comment); !slices.Equal(got, []int{0, 3}) {
		t.Errorf("exit codes of %q: %v", run.cmds[1].comment, got)
	}
	if got := exitCodes("exits 99 on a regression"); !slices.Equal(got, []int{99}) {
		t.Errorf("exit codes: %v", got)
	}
	if got := exitCodes("the run; exits 99 is not at the start"); !slices.Equal(got, []int{exitOK}) {
		t.Errorf("exit codes: %v", got)
	}

	marked := blocks[1]
	if marked.notRun != "needs docker" || !marked.holdsTool() {
		t.Errorf("marked block: not run %q, holds the tool %v", marked.notRun, marked.holdsTool())
	}
	if c := marked.cmds[1]; !c.tool || c.unsupported == "" {
		t.Errorf("a loop that calls the tool: %+v, want the tool found and the line unsupported", c)
	}
	if blocks[2].holdsTool() {
		t.Errorf("a block of go commands holds the tool: %+v", blocks[2].cmds)
	}
	if name := blocks[3].fileName(); name != "exp.yaml" || blocks[3].lines[1] != "seed: 1" {
		t.Errorf("the yaml block: file %q, lines %q", name, blocks[3].lines)
	}
	if got := toolLinesOutside(blocks[4]); !slices.Equal(got, []int{27, 30}) {
		t.Errorf("tool lines outside ```sh: %v, want [27 30]", got)
	}
	if got := toolLinesOutside(blocks[5]); got != nil {
		t.Errorf("a transcript: %v", got)
	}
	for _, s := range []string{"a | b", "a && b", "x=$(date)", "a; b", "a > b c"} {
		if c, err := parseShellCommand(s); err != nil || c.unsupported == "" {
			t.Errorf("%q: %+v, %v: want it unsupported", s, c, err)
		}
	}
	if _, err := parseShellCommand(`a 'b`); err == nil {
		t.Errorf("an unbalanced quote parsed")
	}
}
