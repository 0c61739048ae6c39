package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

func TestJoinGoodputArgs(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"vLLM form", []string{"--goodput", "ttft:500", "tpot:50", "e2el:2000", "--seed", "1"},
			[]string{"--goodput=ttft:500,tpot:50,e2el:2000", "--seed", "1"}},
		{"one pair", []string{"--goodput", "ttft:500"}, []string{"--goodput=ttft:500"}},
		{"with =", []string{"--goodput=ttft:500", "tpot:50"}, []string{"--goodput=ttft:500,tpot:50"}},
		{"comma form untouched", []string{"--goodput", "ttft:500,tpot:50"}, []string{"--goodput=ttft:500,tpot:50"}},
		{"repeated", []string{"--goodput", "ttft:5", "--model", "m", "--goodput", "tpot:1"},
			[]string{"--goodput=ttft:5", "--model", "m", "--goodput=tpot:1"}},
		{"a stray argument ends the list", []string{"--goodput", "ttft:5", "extra"}, []string{"--goodput=ttft:5", "extra"}},
		{"a URL is not a pair", []string{"--goodput", "ttft:5", "http://x:1"}, []string{"--goodput=ttft:5", "http://x:1"}},
		{"missing value left to the parser", []string{"--goodput"}, []string{"--goodput"}},
		{"after --", []string{"--", "--goodput", "ttft:1", "tpot:2"}, []string{"--", "--goodput", "ttft:1", "tpot:2"}},
		{"other flags untouched", []string{"--model", "a:b", "--seed", "1"}, []string{"--model", "a:b", "--seed", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joinGoodputArgs(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("joinGoodputArgs(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestObserveFlags: every flag of watching a run reaches the options,
// --goodput in each of its forms.
func TestObserveFlags(t *testing.T) {
	o := options.Defaults()
	fs, finish := runFlags(&o, &profiles{})
	args := joinGoodputArgs([]string{"--goodput", "ttft:500", "tpot:50", "--goodput", "e2el:2000", "--min-goodput", "0.9",
		"--report-interval", "5s", "--window-seconds", "30", "--report-html", "r.html", "--metrics-addr", "127.0.0.1:9090",
		"--scrape-server-metrics=false", "--server-metrics-interval", "500ms", "--server-metrics-url", "http://h:1/metrics"})
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := finish(); err != nil {
		t.Fatal(err)
	}
	v := o.Observe
	if v.Goodput != (metrics.SLO{TTFT: 500, TPOT: 50, E2EL: 2000}) || v.MinGoodput != 0.9 || v.ReportInterval != 5*time.Second ||
		v.Window != 30*time.Second || v.ReportHTML != "r.html" || v.MetricsAddr != "127.0.0.1:9090" || v.ScrapeServer != "off" ||
		v.ServerMetricsInterval != 500*time.Millisecond || v.ServerMetricsURL != "http://h:1/metrics" {
		t.Errorf("observe options %+v", v)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	d := options.Defaults()
	if d.Observe.ScrapeServer != "auto" || d.Observe.ReportInterval != 10*time.Second || d.Observe.Window != time.Minute || d.Observe.Goodput.Set() {
		t.Errorf("defaults %+v", d.Observe)
	}
	// A bare --scrape-server-metrics turns it on.
	o = options.Defaults()
	fs, _ = runFlags(&o, &profiles{})
	if err := fs.Parse([]string{"--scrape-server-metrics", "--backend", "openai"}); err != nil || o.Observe.ScrapeServer != "on" {
		t.Errorf("bare flag: %v %q", err, o.Observe.ScrapeServer)
	}
}

func TestObserveUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--goodput", "itl:5"}, "unknown metric"},
		{[]string{"--goodput", "ttft:5", "ttft:6"}, "given twice"},
		{[]string{"--min-goodput", "0.5"}, "--min-goodput needs --goodput"},
		{[]string{"--goodput", "ttft:5", "--min-goodput", "1.5"}, "--min-goodput 1.5"},
		{[]string{"--window-seconds", "0"}, "--window-seconds"},
		{[]string{"--scrape-server-metrics=maybe"}, "true or false"},
	} {
		wantUsage(t, append([]string{"--port", "1", "--dry-run"}, tc.args...), tc.says)
	}
}

// TestMinGoodputExitCode: a run whose share of requests meeting the SLOs
// is under --min-goodput exits 3 saying why; meeting it exits 0. The mock
// answers in about 20 ms, so ttft:1 fails every request and ttft:5000
// none.
func TestMinGoodputExitCode(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 20 * time.Millisecond})
	r := runTool(t, append(baseArgs(port, 10), "--goodput", "ttft:1", "tpot:1000", "--min-goodput", "0.5")...)
	if r.code != exitBudget || !strings.Contains(r.stderr, "goodput target missed: 0 of 10 requests met every SLO (ttft:1,tpot:1000), share 0.0000 < --min-goodput 0.5") {
		t.Errorf("exit %d, want %d\n%s", r.code, exitBudget, r.stderr)
	}
	if !strings.Contains(r.stdout, "Request goodput (req/s):") {
		t.Errorf("no goodput section after the table:\n%s", r.stdout)
	}
	s := r.summary(t)
	if s.Goodput == nil || s.Goodput.Share != 0 {
		t.Errorf("goodput %+v", s.Goodput)
	}
	mustRunTool(t, append(baseArgs(port, 10), "--goodput", "ttft:5000", "--min-goodput", "0.5")...)
}

// TestReportCommand builds reports offline from a run's files: from the
// results JSONL (with and without the summary), from the summary alone,
// and a comparison of two runs.
func TestReportCommand(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	a := mustRunTool(t, append(baseArgs(port, 30), "--window-seconds", "0.5")...)
	b := mustRunTool(t, append(baseArgs(port, 30), "--window-seconds", "0.5", "--seed", "2")...)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		says string // in stdout
	}{
		{"records", []string{a.path("results.jsonl"), "--goodput", "ttft:1000", "tpot:100"}, "Serving Benchmark Result"},
		{"records and summary", []string{a.path("results.jsonl"), "--summary", a.path("summary.json")}, "Successful requests:                     30"},
		{"summary", []string{a.path("summary.json")}, "Serving Benchmark Result"},
		{"compare", []string{a.path("summary.json"), b.path("results.jsonl"), "--label", "A", "--label", "B"}, "[2] − [1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".html")
			stdout, _ := mustRun(t, append([]string{"report", "-o", out}, tc.args...)...)
			if !strings.Contains(stdout, tc.says) {
				t.Errorf("stdout lacks %q:\n%s", tc.says, stdout)
			}
			html, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(html), `<svg class="plot"`); n < 5 {
				t.Errorf("%d plots in %s", n, out)
			}
		})
	}
	wantUsage(t, []string{"report"})
	if code, _, _ := runCmd("report", filepath.Join(dir, "missing.jsonl")); code != exitFailure {
		t.Errorf("missing file: exit %d", code)
	}
}
