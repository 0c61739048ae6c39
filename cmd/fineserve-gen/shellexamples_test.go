package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/otlprecv"
)

// The runner of the ```sh examples of the README (TestREADMEExamples) and
// of docs/ (TestDocsExamples): a page's fenced blocks, its shell blocks
// split into commands, each command bounded (exampleRunner.args) and run
// in process (dispatch) against built-in servers started as the blocks
// start them.

// toolNames are the ways an example calls the tool: installed on the PATH,
// or built by make build.
var toolNames = []string{"fineserve-gen", "bin/fineserve-gen", "./bin/fineserve-gen"}

// notRunMarker, as the first line of a ```sh block of docs/, says that the
// block is not run and why (it needs docker, a cluster, a real GPU server,
// a file the repository does not hold…).
const notRunMarker = "# not run: "

// shellCommand is one command line of a ```sh block: its words as a shell
// splits them, and the page line it starts on.
type shellCommand struct {
	line       int
	args       []string
	background bool   // ends with &
	stdout     string // > FILE: standard output goes to FILE
	heredoc    string // cat > FILE <<EOF: the text FILE gets
	comment    string // what follows the # that ends the line
	// tool: the tool's name is in a command's place somewhere on the line
	// (first, or after ; && || | & do then); unsupported, when not empty,
	// says why the line is not one simple command the runner can run.
	tool        bool
	unsupported string
}

// fencedBlock is one ``` block of a page.
type fencedBlock struct {
	line   int
	lang   string   // the fence's info string: sh, yaml, json, text, or none
	lines  []string // its text, the fence's indentation removed
	notRun string   // a ```sh block's reason after notRunMarker
	cmds   []shellCommand
}

// holdsTool reports whether a command of the block calls the tool.
func (b fencedBlock) holdsTool() bool {
	return slices.ContainsFunc(b.cmds, func(c shellCommand) bool { return c.tool })
}

// fileName is the file a ```yaml block names on its first line (`# exp.yaml`,
// `# exp.yaml: what it is`, `# exp.yaml — what it is`), or "".
func (b fencedBlock) fileName() string {
	if b.lang != "yaml" || len(b.lines) == 0 {
		return ""
	}
	f := strings.Fields(b.lines[0])
	if len(f) < 2 || f[0] != "#" {
		return ""
	}
	name := strings.TrimSuffix(f[1], ":")
	if strings.Contains(name, "/") || !strings.HasSuffix(name, ".yaml") {
		return ""
	}
	return name
}

// fencedBlocks returns a page's ``` blocks (indented ones too, as in a
// list); a ```sh block is split into commands: a backslash at the end of a
// line continues the command, a # that starts a word begins a comment,
// single and double quotes group, and `cat > FILE <<EOF` takes the lines
// up to EOF.
func fencedBlocks(t *testing.T, page, text string) []fencedBlock {
	t.Helper()
	var blocks []fencedBlock
	var cur *fencedBlock
	indent := ""
	for n, line := range strings.Split(text, "\n") {
		n++
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			indent = line[:len(line)-len(trimmed)]
			blocks = append(blocks, fencedBlock{line: n, lang: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))})
			cur = &blocks[len(blocks)-1]
		case cur != nil && trimmed == "```":
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimPrefix(line, indent))
		}
	}
	if cur != nil {
		t.Fatalf("%s line %d: a ``` block is not closed", page, cur.line)
	}
	for i := range blocks {
		if b := &blocks[i]; b.lang == "sh" {
			b.cmds = shellCommands(t, page, b.line+1, b.lines)
			if len(b.lines) > 0 {
				if why, ok := strings.CutPrefix(b.lines[0], notRunMarker); ok {
					b.notRun = why
				}
			}
		}
	}
	return blocks
}

// shellCommands splits the lines of a ```sh block (the first on page line
// first) into commands.
func shellCommands(t *testing.T, page string, first int, lines []string) []shellCommand {
	t.Helper()
	var cmds []shellCommand
	var pending strings.Builder
	pendingLine := 0
	for i := 0; i < len(lines); i++ {
		n, line := first+i, lines[i]
		if pending.Len() == 0 {
			pendingLine = n
		}
		if s, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(s + " ")
			continue
		}
		pending.WriteString(line)
		c, err := parseShellCommand(pending.String())
		pending.Reset()
		if err != nil {
			t.Fatalf("%s line %d: %v", page, pendingLine, err)
		}
		c.line = pendingLine
		if c.heredoc == "\x00" { // cat > FILE <<EOF: the text up to EOF
			end, body := c.comment, []string{}
			c.comment = ""
			for i++; i < len(lines) && lines[i] != end; i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("%s line %d: the here-document has no %s line", page, pendingLine, end)
			}
			c.heredoc = strings.Join(body, "\n") + "\n"
		}
		if len(c.args) > 0 || c.heredoc != "" {
			cmds = append(cmds, c)
		}
	}
	if pending.Len() > 0 {
		t.Fatalf("%s line %d: a command continued past the end of its block", page, pendingLine)
	}
	return cmds
}

// shellToken is a word or, unquoted, an operator (& && ; | || > < << ( )).
type shellToken struct {
	text string
	op   bool
	expn bool // holds an unquoted $ or `: an expansion the runner does not do
}

// shellTokens splits one command line as a POSIX shell would for the
// examples' lines, and returns what follows the # that starts a comment.
func shellTokens(s string) (toks []shellToken, comment string, err error) {
	var w strings.Builder
	in, expn := false, false
	var quote rune
	flush := func() {
		if in {
			toks = append(toks, shellToken{text: w.String(), expn: expn})
		}
		w.Reset()
		in, expn = false, false
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
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
			flush()
			return toks, strings.TrimSpace(string(rs[i+1:])), nil
		case r == ' ' || r == '\t':
			flush()
		case strings.ContainsRune("&;|<>()", r):
			flush()
			op := string(r)
			if i+1 < len(rs) && (r == '&' || r == '|' || r == '<' || r == '>') && rs[i+1] == r {
				op += string(r)
				i++
			}
			toks = append(toks, shellToken{text: op, op: true})
		default:
			if r == '$' || r == '`' {
				expn = true
			}
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, "", fmt.Errorf("unbalanced quote")
	}
	flush()
	return toks, "", nil
}

// parseShellCommand makes one command line a shellCommand: simple words,
// perhaps ending with & or > FILE, or cat > FILE <<EOF (then heredoc is
// "\x00" and comment the end marker, for shellCommands to read the text).
// Anything else is kept with unsupported saying why.
func parseShellCommand(s string) (shellCommand, error) {
	toks, comment, err := shellTokens(s)
	if err != nil {
		return shellCommand{}, err
	}
	c := shellCommand{comment: comment}
	for i, tk := range toks {
		if !tk.op && slices.Contains(toolNames, tk.text) &&
			(i == 0 || toks[i-1].op || slices.Contains([]string{"do", "then", "else"}, toks[i-1].text)) {
			c.tool = true
		}
	}
	word := func(i int) bool { return i < len(toks) && !toks[i].op && !toks[i].expn }
	switch {
	case len(toks) == 5 && toks[0].text == "cat" && toks[1].text == ">" && word(2) && toks[3].text == "<<" && word(4):
		c.args, c.stdout, c.heredoc, c.comment = []string{"cat"}, toks[2].text, "\x00", toks[4].text
		return c, nil
	case len(toks) > 1 && toks[len(toks)-1].op && toks[len(toks)-1].text == "&":
		c.background, toks = true, toks[:len(toks)-1]
	case len(toks) > 2 && toks[len(toks)-2].op && toks[len(toks)-2].text == ">" && word(len(toks)-1):
		c.stdout, toks = toks[len(toks)-1].text, toks[:len(toks)-2]
	}
	for _, tk := range toks {
		switch {
		case tk.op:
			c.unsupported = fmt.Sprintf("the shell's %q", tk.text)
		case tk.expn:
			c.unsupported = fmt.Sprintf("the expansion in %q", tk.text)
		}
		c.args = append(c.args, tk.text)
	}
	return c, nil
}

// shellSplit splits one command line into its words, as a shell would for
// the lines of the READMEs (no operators or expansions occur in them).
func shellSplit(t *testing.T, at int, s string) (words []string, background bool) {
	t.Helper()
	c, err := parseShellCommand(s)
	if err != nil || c.unsupported != "" || c.stdout != "" {
		t.Fatalf("line %d: not a simple command (%v%s): %s", at, err, c.unsupported, s)
	}
	return c.args, c.background
}

// exitCodes are the exit codes a command's comment allows: `# exits 99`,
// `# exit 0 or 3`; 0 when it names none.
var exitCodesRE = regexp.MustCompile(`^exits? (\d+(?: or \d+)*)\b`)

func exitCodes(comment string) []int {
	m := exitCodesRE.FindStringSubmatch(comment)
	if m == nil {
		return []int{exitOK}
	}
	var codes []int
	for _, f := range strings.Split(m[1], " or ") {
		n, _ := strconv.Atoi(f)
		codes = append(codes, n)
	}
	return codes
}

// offlineCommands are the subcommands that send nothing: they get no port.
var offlineCommands = []string{"fit", "analyze", "synthesize", "report", "merge", "config", "compare"}

// exampleRunner runs the ```sh blocks of one page, in order, in one
// directory (the test's current one), so a later example reads what an
// earlier one wrote.
type exampleRunner struct {
	t    *testing.T
	root string // the repository
	page string // README, docs/X.md: for messages
	// docs: the rules of docs/ (TestDocsExamples) — a ```sh block without
	// the tool is not run, one with the not-run marker neither, the default
	// server on port 8000 is started when a command needs it, ```yaml
	// blocks that name their file are written, and a sending run has at
	// most 20 requests and 3 repeats even when it does not say. Without
	// it (the README), every ```sh block runs.
	docs bool
	// skip says why the quick suite leaves a block to the long one, or ""
	// (TestDocsExamples' longExamples).
	skip func(b fencedBlock) string

	ports     map[string]int // the page's port → the port of its server
	main      *mockCommand   // the server of port 8000: the page's
	blockMock []*mockCommand // the servers a block started on other ports
	blockPort []string
	receivers []*otlprecv.Receiver // started for --otlp-endpoint
	// ran holds the tool commands run (the words after the tool's name,
	// as written).
	ran [][]string
}

func newExampleRunner(t *testing.T, root, page string, docs bool) *exampleRunner {
	return &exampleRunner{t: t, root: root, page: page, docs: docs, ports: map[string]int{}}
}

// runPage runs a page's blocks: its ```sh blocks, and (docs) writes the
// ```yaml blocks that name their file.
func (r *exampleRunner) runPage(blocks []fencedBlock) {
	t := r.t
	t.Helper()
	for _, b := range blocks {
		switch {
		case r.docs && b.fileName() != "":
			r.writeFile(b.line, b.fileName(), strings.Join(b.lines[1:], "\n")+"\n")
		case b.lang == "sh":
			r.runBlock(b)
		default:
			r.checkNotShell(b)
		}
	}
}

// checkNotShell fails the test when a block other than ```sh or ```console
// holds a command line of the tool (a line that starts with the tool's
// name, or with "$ " and its name, then a subcommand or a flag): it would
// escape both the runner and the not-run marker. A ```console block is a
// transcript — each command after "$ ", then what it printed — and is
// not run: its output is a real run's.
func (r *exampleRunner) checkNotShell(b fencedBlock) {
	for _, n := range toolLinesOutside(b) {
		r.t.Errorf("%s line %d: a command line of the tool in a ```%s block: put it in a ```sh block, run or marked %q, or a transcript in a ```console block",
			r.page, n, b.lang, notRunMarker+"why")
	}
}

// toolLinesOutside returns the page lines of a block other than ```sh or
// ```console that hold a command line of the tool.
func toolLinesOutside(b fencedBlock) []int {
	var lines []int
	if b.lang == "sh" || b.lang == "console" {
		return nil
	}
	for i, line := range b.lines {
		f := strings.Fields(strings.TrimPrefix(line, "$ "))
		if len(f) < 2 || !slices.Contains(toolNames, f[0]) || strings.HasPrefix(line, " ") {
			continue
		}
		if _, sub := subcommands[f[1]]; sub || strings.HasPrefix(f[1], "-") || f[1] == "run" {
			lines = append(lines, b.line+1+i)
		}
	}
	return lines
}

// runBlock runs one ```sh block, or says why it does not.
func (r *exampleRunner) runBlock(b fencedBlock) {
	t := r.t
	t.Helper()
	switch {
	case r.docs && b.notRun != "":
		t.Logf("%s line %d: not run: %s", r.page, b.line, b.notRun)
		return
	case r.docs && !b.holdsTool():
		t.Logf("%s line %d: not run: no command of the tool", r.page, b.line)
		return
	case r.skip != nil && r.skip(b) != "":
		t.Logf("%s line %d: left to another suite: %s", r.page, b.line, r.skip(b))
		return
	case !r.docs && b.notRun != "":
		t.Fatalf("%s line %d: every ```sh block of %s runs: a block that cannot is not a ```sh block", r.page, b.line, r.page)
	}
	for _, c := range b.cmds {
		r.runCommand(c)
	}
	for _, m := range r.blockMock {
		m.stop(t)
	}
	for _, p := range r.blockPort {
		delete(r.ports, p)
	}
	r.blockMock, r.blockPort = nil, nil
}

// runCommand runs one command of a runnable block.
func (r *exampleRunner) runCommand(c shellCommand) {
	t := r.t
	t.Helper()
	if c.unsupported != "" {
		t.Fatalf("%s line %d: %s: a runnable block holds simple commands only (or it starts with %q)",
			r.page, c.line, c.unsupported, notRunMarker+"why")
	}
	switch c.args[0] {
	case "make", "kill": // make demo and make test are checked by running them
		return
	case "mkdir":
		if len(c.args) < 3 || c.args[1] != "-p" {
			t.Fatalf("%s line %d: mkdir without -p", r.page, c.line)
		}
		for _, d := range c.args[2:] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return
	case "cat":
		if c.heredoc == "" {
			t.Fatalf("%s line %d: cat is run only as cat > FILE <<EOF", r.page, c.line)
		}
		r.writeFile(c.line, c.stdout, c.heredoc)
		return
	}
	if !slices.Contains(toolNames, c.args[0]) {
		t.Fatalf("%s line %d: %q is not a fineserve-gen command (a runnable block holds only those, make, kill, mkdir -p and cat > FILE <<EOF; or it starts with %q)",
			r.page, c.line, c.args[0], notRunMarker+"why")
	}
	args := c.args[1:]
	if len(args) > 0 && args[0] == "mock-server" {
		r.startServer(c, args[1:])
		return
	}
	if c.background {
		t.Fatalf("%s line %d: only a server is started in the background", r.page, c.line)
	}
	run, err := r.args(args)
	if err != nil {
		t.Fatalf("%s line %d: %v", r.page, c.line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	var out, errb bytes.Buffer
	began := time.Now()
	code := dispatch(ctx, run, &out, &errb)
	cancel()
	t.Logf("%s line %d: exit %d in %v: %s", r.page, c.line, code, time.Since(began).Round(time.Millisecond), strings.Join(args, " "))
	if want := exitCodes(c.comment); !slices.Contains(want, code) {
		t.Errorf("%s line %d: %s\nexit %d, want %v\n%s", r.page, c.line, strings.Join(run, " "), code, want, errb.String())
	}
	if c.stdout != "" {
		if err := os.WriteFile(c.stdout, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.ran = append(r.ran, args)
}

// startServer starts `mock-server args` as the block's line c says: on a
// free port standing for the page's (--port, 8000 without one), with
// --ttft-ms and --itl-ms of 1 ms, so the examples with long answers take
// a second, not ten. The server of port 8000 serves the page until another
// takes its place; a server on another port serves its block.
func (r *exampleRunner) startServer(c shellCommand, args []string) {
	t := r.t
	t.Helper()
	if !c.background {
		t.Fatalf("%s line %d: the server is not started in the background", r.page, c.line)
	}
	mockArgs, port := []string{}, "8000"
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--port" && i+1 < len(args):
			port = args[i+1]
			i++
		case (args[i] == "--itl-ms" || args[i] == "--ttft-ms") && i+1 < len(args):
			mockArgs = append(mockArgs, args[i], "1")
			i++
		default:
			mockArgs = append(mockArgs, repoPath(r.root, args[i]))
		}
	}
	if _, taken := r.ports[port]; taken && port != "8000" {
		t.Fatalf("%s line %d: port %s has a server already", r.page, c.line, port)
	}
	if port != "8000" {
		m := startMockCommand(t, mockArgs...)
		t.Logf("%s line %d: mock-server on port %d for %s: %s", r.page, c.line, m.port, port, strings.Join(args, " "))
		r.ports[port] = m.port
		r.blockMock, r.blockPort = append(r.blockMock, m), append(r.blockPort, port)
		return
	}
	if r.main != nil {
		// The new server takes the old one's port, as it would the page's:
		// a file written for the old one (a run file, a summary) still
		// reaches the page's server.
		r.main.stop(t)
		mockArgs = append(mockArgs, "--port", strconv.Itoa(r.main.port))
	}
	r.main = startMockCommand(t, mockArgs...)
	r.ports[port] = r.main.port
	t.Logf("%s line %d: mock-server on port %d for %s: %s", r.page, c.line, r.main.port, port, strings.Join(args, " "))
}

// port returns the port of the server standing for the page's port p:
// (docs) port 8000 without one gets the default server.
func (r *exampleRunner) port(p string) (int, error) {
	if n, ok := r.ports[p]; ok {
		return n, nil
	}
	if p != "8000" || !r.docs {
		return 0, fmt.Errorf("port %s: no server started for it", p)
	}
	m := startMockCommand(r.t, "--ttft-ms", "1", "--itl-ms", "1")
	r.t.Logf("%s: the default mock-server on port %d for 8000", r.page, m.port)
	r.main, r.ports[p] = m, m.port
	return m.port, nil
}

// loopbackURL matches the address of a loopback URL: its port is the
// page's.
var loopbackURL = regexp.MustCompile(`(//(?:127\.0\.0\.1|localhost)):(\d+)`)

// urls replaces the port of each loopback URL in s by its server's;
// otlp: a port without a server gets an OTLP receiver (internal/otlprecv),
// as the collector the example assumes.
func (r *exampleRunner) urls(s string, otlp bool) (string, error) {
	var err error
	out := loopbackURL.ReplaceAllStringFunc(s, func(u string) string {
		m := loopbackURL.FindStringSubmatch(u)
		if _, ok := r.ports[m[2]]; !ok && otlp {
			rcv := otlprecv.Start()
			r.t.Cleanup(rcv.Close)
			r.receivers = append(r.receivers, rcv)
			n, _ := strconv.Atoi(rcv.URL()[strings.LastIndexByte(rcv.URL(), ':')+1:])
			r.ports[m[2]] = n
			r.t.Logf("%s: an OTLP receiver on port %d for %s", r.page, n, m[2])
		}
		p, e := r.port(m[2])
		if e != nil {
			err = e
		}
		return m[1] + ":" + strconv.Itoa(p)
	})
	return out, err
}

// anyURL matches a URL's scheme and host.
var anyURL = regexp.MustCompile(`https?://([^/:,\s\]'"]+)`)

// loopbackOnly returns an error when s holds a URL of a host other than
// 127.0.0.1 or localhost: an example that runs sends only to the servers
// the test starts.
func loopbackOnly(s string) error {
	for _, m := range anyURL.FindAllStringSubmatch(s, -1) {
		if m[1] != "127.0.0.1" && m[1] != "localhost" {
			return fmt.Errorf("%s: an example that runs sends only to the servers the test starts (or its block is marked %q)", m[0], notRunMarker+"why")
		}
	}
	return nil
}

// numPromptsRE and stepRE find a run file's num-prompts and its steps'
// lengths.
var (
	numPromptsRE = regexp.MustCompile(`(?m)^(\s*num-prompts:\s*)(\d+)\s*$`)
	stepRE       = regexp.MustCompile(`(?m)^(\s*(?:step-duration|step-max):\s*)(\S+)\s*$`)
)

// writeFile writes a file the page gives (a ```yaml block, or cat <<EOF)
// with the bounds of the command line: its loopback URLs the servers'
// ports, num-prompts at most 20, step-duration and step-max at most 2 s.
func (r *exampleRunner) writeFile(line int, name, text string) {
	t := r.t
	t.Helper()
	text, err := r.urls(text, false)
	if err == nil {
		err = loopbackOnly(text)
	}
	if err != nil {
		t.Fatalf("%s line %d: %s: %v", r.page, line, name, err)
	}
	text = numPromptsRE.ReplaceAllStringFunc(text, func(s string) string {
		m := numPromptsRE.FindStringSubmatch(s)
		if n, _ := strconv.Atoi(m[2]); n > 20 {
			return m[1] + "20"
		}
		return s
	})
	text = stepRE.ReplaceAllStringFunc(text, func(s string) string {
		m := stepRE.FindStringSubmatch(s)
		if d, err := time.ParseDuration(m[2]); err != nil || d > 2*time.Second {
			return m[1] + "2s"
		}
		return s
	})
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// args bounds a command for the test: each path of the repository becomes
// absolute (the commands run in a temporary directory, where their outputs
// land), each port of the page the port of the server started for it (a
// URL's too; a command without one gets the server of port 8000),
// --num-prompts at most 20 and --step-duration (or --step-max, which a
// sweep or a plan without either gets) at most 2 s. Nothing else changes
// but the servers' --ttft-ms and --itl-ms (1 ms each), and a sweep's or a
// plan's --sweep-max-lag (1 s): on a machine busy with other tests the
// client's send lag would end the search as the client's limit, which is
// not what the example shows. With the docs' rules, a run that sends
// (not a sweep, a plan or a dry run) has --num-prompts 20 when it gives
// none, --repeat at most 3, and a replay's agentic conversations at most
// 4 (--conversations) with idle gaps (--max-think-time) of at most 100 ms.
func (r *exampleRunner) args(args []string) ([]string, error) {
	out := slices.Clone(args)
	for i, a := range out {
		out[i] = repoPath(r.root, a)
	}
	hasTarget := false
	for i := 0; i+1 < len(out); i++ {
		v := &out[i+1]
		switch out[i] {
		case "--port":
			p, err := r.port(*v)
			if err != nil {
				return nil, err
			}
			*v, hasTarget = strconv.Itoa(p), true
		case "--host":
			if *v != "127.0.0.1" && *v != "localhost" {
				return nil, fmt.Errorf("--host %s: an example that runs sends only to the servers the test starts", *v)
			}
		case "--base-url", "--gpu-metrics-url", "--otlp-endpoint":
			u, err := r.urls(*v, out[i] == "--otlp-endpoint")
			if err != nil {
				return nil, err
			}
			if err := loopbackOnly(u); err != nil {
				return nil, fmt.Errorf("%s: %w", out[i], err)
			}
			*v = u
			hasTarget = hasTarget || out[i] == "--base-url"
		case "--num-prompts":
			if n, err := strconv.Atoi(*v); err != nil || n > 20 {
				*v = "20"
			}
		case "--conversations":
			if n, err := strconv.Atoi(*v); r.docs && (err != nil || n > 4) {
				*v = "4"
			}
		case "--max-think-time":
			if d, err := time.ParseDuration(*v); r.docs && (err != nil || d > 100*time.Millisecond) {
				*v = "100ms"
			}
		case "--repeat":
			if n, err := strconv.Atoi(*v); r.docs && (err != nil || n > 3) {
				*v = "3"
			}
		case "--step-duration", "--step-max":
			if d, err := time.ParseDuration(*v); err != nil || d > 2*time.Second {
				*v = "2s"
			}
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	sub := out[0]
	if sub == "sweep" || sub == "plan" {
		if !slices.Contains(out, "--sweep-max-lag") {
			out = append(out, "--sweep-max-lag", "1000")
		}
		// A run file's steps are bounded in it (writeFile).
		if !slices.Contains(out, "--step-duration") && !slices.Contains(out, "--step-max") && !slices.Contains(out, "--config") {
			out = append(out, "--step-max", "2s") // steps that end when settled, at most 2 s
		}
	}
	if slices.Contains(offlineCommands, sub) {
		return out, nil
	}
	sends := (sub == "run" || strings.HasPrefix(sub, "-")) && !slices.Contains(out, "--dry-run")
	if r.docs && sends && !slices.Contains(out, "--num-prompts") {
		out = append(out, "--num-prompts", "20")
	}
	if r.docs && sends && slices.Contains(out, "replay") && !slices.Contains(out, "--max-think-time") {
		out = append(out, "--max-think-time", "100ms") // an agentic replay's tool and think times
	}
	if !hasTarget {
		p, err := r.port("8000")
		if err != nil {
			return nil, fmt.Errorf("no server on the default port 8000")
		}
		out = append(out, "--port", strconv.Itoa(p))
	}
	return out, nil
}

// stop stops the page's servers (the test's end would, but a page's
// subtest should not leave them to the next page), and fails the test
// when an OTLP receiver it started got no span: the example exports what
// it says it does.
func (r *exampleRunner) stop() {
	for _, rcv := range r.receivers {
		if len(rcv.Spans()) == 0 {
			r.t.Errorf("%s: no span reached the OTLP receiver in the collector's place (refused: %v)", r.page, rcv.Refused())
		}
	}
	for _, m := range r.blockMock {
		m.stop(r.t)
	}
	if r.main != nil {
		r.main.stop(r.t)
	}
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
