package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestHTMLSettings: the report shows the run's settings in a collapsed
// section, one "name = value" a row with where it came from — those given
// first (the run file's, the command line's), then the rest of the
// effective settings at their defaults — read from the summary as written
// (JSON lists and switches included), every value escaped; a summary with
// no settings has no section.
func TestHTMLSettings(t *testing.T) {
	s := sampleSummary()
	s.Settings = map[string]any{"backend": "openai-chat", "num-prompts": "24", "base-url": []string{"http://a:1", "http://b:2"},
		"disable-stream": true, "extra-request-body": `{"x":"</td><script>"}`}
	s.SettingsFile, s.FileSettings = "exp.yaml", []string{"backend", "base-url", "extra-request-body"}
	s.EffectiveSettings = map[string]any{"backend": "openai-chat", "num-prompts": "24", "base-url": []string{"http://a:1", "http://b:2"},
		"disable-stream": true, "extra-request-body": `{"x":"</td><script>"}`, "seed": "-1", "apply-chat-template": false}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	p := parseHTML(t, summaryPage(t, b))
	p.checkSafe(t)
	var details *html.Node
	p.each(func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == "settings" {
			details = n
		}
	})
	if details == nil || details.Data != "details" {
		t.Fatalf("no collapsible settings section: %v", details)
	}
	if _, open := attr(details, "open"); open {
		t.Error("the settings section is open: it is to be collapsed")
	}
	var rows [][]string
	parsedPage{details}.each(func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "tr" {
			return
		}
		var cells []string
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.Data == "td" {
				var b strings.Builder
				parsedPage{c}.each(func(x *html.Node) {
					if x.Type == html.TextNode {
						b.WriteString(x.Data)
					}
				})
				cells = append(cells, b.String())
			}
		}
		if len(cells) > 0 {
			rows = append(rows, cells)
		}
	})
	want := [][]string{
		{"backend = openai-chat", "exp.yaml"},
		{"base-url = [http://a:1, http://b:2]", "exp.yaml"},
		{"disable-stream = true", "command line"},
		{`extra-request-body = {"x":"</td><script>"}`, "exp.yaml"},
		{"num-prompts = 24", "command line"},
		{"apply-chat-template = false", "default"},
		{"seed = -1", "default"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %q, want %q", rows, want)
	}
	for i := range want {
		if rows[i][0] != want[i][0] || rows[i][1] != want[i][1] {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	if sum := p.text("settings"); !strings.Contains(sum, "Settings: 5 given (run file exp.yaml), the others at their defaults") {
		t.Errorf("the section's summary line: %q", sum)
	}
	// An older summary: the settings given alone; none at all: no section.
	s.EffectiveSettings, s.SettingsFile, s.FileSettings = nil, "", nil
	b, _ = json.Marshal(s)
	if text := parseHTML(t, summaryPage(t, b)).text("settings"); !strings.Contains(text, "Settings: 5 given") || strings.Contains(text, "default") {
		t.Errorf("settings given alone: %q", text)
	}
	s.Settings = nil
	b, _ = json.Marshal(s)
	if page := summaryPage(t, b); bytes.Contains(page, []byte(`id="settings"`)) {
		t.Error("a summary without settings has a settings section")
	}
}
