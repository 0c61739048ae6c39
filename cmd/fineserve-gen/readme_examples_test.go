package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// readmeCommand is one command line of a README block: its words as a
// shell splits them, and the README line it starts on.
type readmeCommand struct {
	line       int
	args       []string
	background bool // ends with &
}

// readmeBlock is one ```sh block of the README.
type readmeBlock struct {
	line int
	cmds []readmeCommand
}

// readmeShellBlocks returns the README's ```sh blocks, each split into
// commands: a backslash at the end of a line continues the command, a #
// that starts a word begins a comment, single and double quotes group.
func readmeShellBlocks(t *testing.T, readme string) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	var cur *readmeBlock
	var pending strings.Builder
	pendingLine := 0
	for n, line := range strings.Split(readme, "\n") {
		n++
		switch {
		case cur == nil && line == "```sh":
			blocks = append(blocks, readmeBlock{line: n})
			cur = &blocks[len(blocks)-1]
			continue
		case cur != nil && line == "```":
			if pending.Len() > 0 {
				t.Fatalf("README line %d: a command continued past the end of its block", pendingLine)
			}
			cur = nil
			continue
		case cur == nil:
			continue
		}
		if pending.Len() == 0 {
			pendingLine = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(s + " ")
			continue
		}
		pending.WriteString(line)
		words, bg := shellSplit(t, pendingLine, pending.String())
		pending.Reset()
		if len(words) > 0 {
			cur.cmds = append(cur.cmds, readmeCommand{line: pendingLine, args: words, background: bg})
		}
	}
	if cur != nil {
		t.Fatalf("README line %d: a ```sh block is not closed", cur.line)
	}
	return blocks
}

// shellSplit splits one command line as a POSIX shell would for the
// README's lines (no expansions occur in them) and says whether it ends
// with &.
func shellSplit(t *testing.T, at int, s string) (words []string, background bool) {
	t.Helper()
	var w strings.Builder
	in := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '#' && !in:
			goto end
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("README line %d: unbalanced quote", at)
	}
end:
	if in {
		words = append(words, w.String())
	}
	if len(words) > 0 && words[len(words)-1] == "&" {
		words, background = words[:len(words)-1], true
	}
	return words, background
}

// readmeOffline are the subcommands that send nothing: they get no port.
var readmeOffline = []string{"fit", "analyze", "synthesize", "report", "merge", "config"}

// readmeExampleArgs bounds a README command for the test: each path of
// the repository becomes absolute (the commands run in a temporary
// directory, where their outputs land), each port of the README the port
// of the server the block started (a command without one gets the
// quick start's server), --num-prompts at most 20 and --step-duration (or
// --step-max, which a sweep or a plan without either gets) at most 2 s. Nothing else changes but the servers' --ttft-ms and --itl-ms
// (1 ms each), and a sweep's or a plan's --sweep-max-lag (1 s): on a
// machine busy with other tests the client's send lag would end the
// search as the client's limit, which is not what the example shows.
func readmeExampleArgs(root string, args []string, ports map[string]int) ([]string, error) {
	out := slices.Clone(args)
	for i, a := range out {
		out[i] = repoPath(root, a)
	}
	hasTarget := false
	for i := 0; i+1 < len(out); i++ {
		v := &out[i+1]
		switch out[i] {
		case "--port":
			p, ok := ports[*v]
			if !ok {
				return nil, fmt.Errorf("port %s: no server started for it", *v)
			}
			*v, hasTarget = strconv.Itoa(p), true
		case "--base-url":
			hasTarget = true
		case "--num-prompts":
			if n, err := strconv.Atoi(*v); err != nil || n > 20 {
				*v = "20"
			}
		case "--step-duration", "--step-max":
			if d, err := time.ParseDuration(*v); err != nil || d > 2*time.Second {
				*v = "2s"
			}
		}
	}
	if len(out) > 0 && (out[0] == "sweep" || out[0] == "plan") && !slices.Contains(out, "--sweep-max-lag") {
		out = append(out, "--sweep-max-lag", "1000")
	}
	if len(out) > 0 && (out[0] == "sweep" || out[0] == "plan") && !slices.Contains(out, "--step-duration") && !slices.Contains(out, "--step-max") {
		out = append(out, "--step-max", "2s") // steps that end when settled, at most 2 s
	}
	if !hasTarget && (len(out) == 0 || !slices.Contains(readmeOffline, out[0])) {
		p, ok := ports["8000"]
		if !ok {
			return nil, fmt.Errorf("no server on the default port 8000")
		}
		out = append(out, "--port", strconv.Itoa(p))
	}
	return out, nil
}

// repoPath makes a relative path of the repository (a/b, or after a
// prefix such as json_schema:) absolute; any other word is returned as is.
func repoPath(root, a string) string {
	exists := func(p string) bool {
		if !strings.Contains(p, "/") || filepath.IsAbs(p) {
			return false
		}
		_, err := os.Stat(filepath.Join(root, p))
		return err == nil
	}
	if exists(a) {
		return filepath.Join(root, a)
	}
	if i := strings.LastIndexByte(a, ':'); i >= 0 && exists(a[i+1:]) {
		return a[:i+1] + filepath.Join(root, a[i+1:])
	}
	return a
}

// TestREADMEExamples runs every command of every ```sh block of the
// README, in order, in one temporary directory, against built-in servers
// started as the blocks start them: the quick start's server (port 8000)
// serves the whole README, a server a later block starts serves that block
// and stops at its end. `make` lines and `kill` lines are left out (make
// demo and make test are checked by running them). Each command must exit
// 0. Only ports, paths, --num-prompts and --step-duration change (see
// readmeExampleArgs).
func TestREADMEExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(testenv.ReadFile(t, "../../README.md"))
	blocks := readmeShellBlocks(t, readme)
	if len(blocks) < 8 {
		t.Fatalf("README: %d ```sh blocks, want the quick start and the examples", len(blocks))
	}
	checkREADMEShape(t, readme, blocks[0])
	t.Chdir(t.TempDir())
	ports := map[string]int{}
	ran := map[string]bool{}
	for _, b := range blocks {
		var blockMocks []*mockCommand
		for _, c := range b.cmds {
			switch c.args[0] {
			case "make", "kill":
				continue
			case "bin/fineserve-gen":
			default:
				t.Fatalf("README line %d: %q is not a fineserve-gen command (runnable blocks hold only those)", c.line, c.args[0])
			}
			args := c.args[1:]
			if len(args) > 0 && args[0] == "mock-server" {
				if !c.background {
					t.Fatalf("README line %d: the server is not started in the background", c.line)
				}
				mockArgs, port := []string{}, "8000"
				for i := 1; i < len(args); i++ {
					if args[i] == "--port" && i+1 < len(args) {
						port = args[i+1]
						i++
						continue
					}
					if (args[i] == "--itl-ms" || args[i] == "--ttft-ms") && i+1 < len(args) {
						// The latencies are shortened, so the examples with long
						// answers take a second, not ten.
						mockArgs = append(mockArgs, args[i], "1")
						i++
						continue
					}
					mockArgs = append(mockArgs, repoPath(root, args[i]))
				}
				m := startMockCommand(t, mockArgs...)
				ports[port] = m.port
				if port != "8000" {
					blockMocks = append(blockMocks, m)
				}
				continue
			}
			run, err := readmeExampleArgs(root, args, ports)
			if err != nil {
				t.Fatalf("README line %d: %v", c.line, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			var out, errb bytes.Buffer
			began := time.Now()
			code := dispatch(ctx, run, &out, &errb)
			cancel()
			t.Logf("README line %d: exit %d in %v: %s", c.line, code, time.Since(began).Round(time.Millisecond), strings.Join(args, " "))
			if code != exitOK {
				t.Errorf("README line %d: %s\nexit %d\n%s", c.line, strings.Join(run, " "), code, errb.String())
			}
			mode := args[0]
			for i, a := range args {
				if (a == "--mode" || a == "--backend") && i+1 < len(args) {
					ran[args[i+1]] = true
				}
				ran[a] = true
			}
			ran[mode] = true
		}
		for _, m := range blockMocks {
			m.stop(t)
		}
	}
	// One example per mode and per API family, as the README promises.
	for _, want := range []string{"poisson", "replay", "parametric", "sweep", "plan", "analyze", "synthesize", "fit", "merge", "report",
		"vllm", "openai", "openai-chat", "openai-responses", "openai-embeddings", "vllm-rerank", "vllm-score", "openai-images", "openai-transcriptions",
		"--turns", "--tools", "--response-format", "--reasoning-effort", "--burstiness", "--request-trace-csv", "--trace", "--shard", "--config"} {
		if !ran[want] {
			t.Errorf("README: no runnable example of %s", want)
		}
	}
}

// checkREADMEShape: the README stays a newcomer's page — at most 250
// lines, the two make targets in its first block, and a link to every page
// of docs/.
func checkREADMEShape(t *testing.T, readme string, first readmeBlock) {
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
