package main

import (
	"html"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// tableFigures reads the console table a run printed: its label/value rows
// ("%-40s value", the label ending in ':') and its other lines (the
// columns of the per-turn, per-conversation and breakdown tables), rules,
// headings and blank lines left out.
func tableFigures(out string) (rows [][2]string, lines []string) {
	for l := range strings.Lines(out) {
		l = strings.TrimRight(l, "\n")
		t := strings.TrimSpace(l)
		if t == "" || strings.Trim(t, "=-! ") == "" || len(t) > 4 && strings.Trim(t[:2], "=-!") == "" {
			continue // blank, a rule or a heading
		}
		if len(l) > 41 && l[40] == ' ' && strings.HasSuffix(strings.TrimRight(l[:40], " "), ":") {
			rows = append(rows, [2]string{strings.TrimSuffix(strings.TrimRight(l[:40], " "), ":"), strings.TrimSpace(l[41:])})
			continue
		}
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return rows, lines
}

// TestReportShowsEveryTableFigure: for runs with reasoning, tool calls, a
// response format, a pooling batch (rerank), image generation, sessions
// and agentic conversations, every figure the console table prints — each
// label with its value, each line of its column tables — is on the run's
// HTML report. (The report had no TTFO, reasoning, tool-call or
// structured-output figure, no sessions' or conversations' table.)
func TestReportShowsEveryTableFigure(t *testing.T) {
	tools := testenv.WriteFile(t, "tools.json", weatherTools)
	chat := []string{"--backend", "openai-chat", "--prompt-format", "text", "--random-output-len", "16"}
	cases := []struct {
		name string
		mock mockserver.Config
		args []string
		want []string // table labels the case is for
	}{
		{"reasoning", mockserver.Config{TTFT: 2 * time.Millisecond, ITL: 500 * time.Microsecond,
			Reasoning: mockserver.ReasoningConfig{Tokens: mockserver.LengthDist{Min: 6, Max: 6}, Field: "reasoning"}},
			chat, []string{"Mean TTFO (ms)", "Reasoning share of output (%)"}},
		{"tools", mockserver.Config{Seed: 3, Tools: mockserver.ToolConfig{CallShare: 0.5, InvalidShare: 0.25}},
			append(chat, "--tools", tools, "--tool-choice", "required"), []string{"Tool calls", "Arguments that parse as JSON (%)"}},
		{"response-format", mockserver.Config{}, append(chat, "--response-format", "json_object"), []string{"Valid against the format (%)"}},
		{"rerank", mockserver.Config{MaxModelLen: 4096}, []string{"--backend", "vllm-rerank", "--batch-size", "4", "--random-input-len", "40"},
			[]string{"Mean batch size", "Prompt tokens vs target, mean |err|"}},
		{"images", mockserver.Config{}, []string{"--backend", "openai-images"}, []string{"Total generated images"}},
		{"sessions", mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 12}},
			[]string{"--turns", "3", "--think-time", "1ms", "--turn-input-len", "uniform:3:9"}, []string{"Sessions started", "Turns sent / planned"}},
		{"agentic", mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 12}},
			[]string{"--mode", "replay", "--trace", agenticSamples + "bailian.jsonl", "--time-scale", "1000", "--max-think-time", "2ms", "--max-model-len", "200000"},
			[]string{"Conversations", "Median tool time per conv. (s)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, port := mocktest.Start(t, tc.mock)
			page := filepath.Join(t.TempDir(), "report.html")
			r := mustRunTool(t, append(append(baseArgs(port, 6), tc.args...), "--report-html", page)...)
			checkTableOnPage(t, r.stdout, page, tc.want)
			// fineserve-gen report, from the run's files: its table and
			// its page agree the same way.
			again := filepath.Join(t.TempDir(), "again.html")
			out, _ := mustRun(t, "report", r.path("results.jsonl"), "--summary", r.path("summary.json"), "-o", again)
			checkTableOnPage(t, out, again, nil)
		})
	}
}

// checkTableOnPage fails t unless every row and line of the console table out is on
// the HTML page at path, and the table has every label of want.
func checkTableOnPage(t *testing.T, out, path string, want []string) {
	t.Helper()
	doc := html.UnescapeString(string(testenv.ReadFile(t, path)))
	rows, lines := tableFigures(out)
	labels := map[string]bool{}
	for _, row := range rows {
		labels[row[0]] = true
		if cell := "<td>" + row[0] + "</td><td>" + row[1] + "</td>"; !strings.Contains(doc, cell) {
			t.Errorf("the report lacks the table's %q = %q", row[0], row[1])
		}
	}
	for _, l := range lines {
		if !strings.Contains(doc, l) {
			t.Errorf("the report lacks the table's line %q", l)
		}
	}
	// TTFO, a reasoning benchmark's headline, has its own CDF.
	if hasTTFO := labels["Mean TTFO (ms)"]; hasTTFO != strings.Contains(doc, `<figure id="plot-ttfo_cdf"><svg`) {
		t.Errorf("TTFO CDF plotted: %v, want %v", !hasTTFO, hasTTFO)
	}
	for _, l := range want {
		if !labels[l] {
			t.Errorf("the table has no %q row: the case does not test what it is for\n%s", l, out)
		}
	}
}
