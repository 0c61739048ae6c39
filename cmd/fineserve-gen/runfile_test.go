package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
	"github.com/fineserve-gen/fineserve-gen/pkg/runfile"
)

// TestRunFileSameAsFlags: a run from a run file and the same run from
// flags build byte-identical schedules and the same summary but for times
// (sameSummary says what is left out, and why); the summary records the
// settings given, where each came from and the effective settings (every
// flag, as config expand prints them), its report shows them, and
// --config SUMMARY repeats the run; credentials in a URL are not recorded.
func TestRunFileSameAsFlags(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	base := "http://user:s3cret@127.0.0.1:" + strconv.Itoa(port)
	file := testenv.WriteFile(t, "exp.yaml", `# a short chat benchmark
backend: openai-chat
seed: 11
workload:
  request-rate: 200
  num-prompts: 24
  random-input-len: 40
  random-output-len: 6
requests:
  extra-request-body: {top_k: 5}
  warmup-requests: 0
target:
  base-url: [`+base+`]
  model: mock-model
`)
	flags := []string{"--backend", "openai-chat", "--seed", "11", "--request-rate", "200", "--num-prompts", "24", "--random-input-len", "40",
		"--random-output-len", "6", "--extra-request-body", `{"top_k":5}`, "--warmup-requests", "0", "--base-url", base, "--model", "mock-model"}
	sched := func(name string) string { return filepath.Join(dir, name) }
	fromFile := mustRunTool(t, "run", "--config", file, "--schedule-out", sched("file.csv"), "--report-html", sched("file.html"))
	fromFlags := mustRunTool(t, append(flags, "--schedule-out", sched("flags.csv"), "--report-html", sched("flags.html"))...)
	if a, b := testenv.ReadFile(t, sched("file.csv")), testenv.ReadFile(t, sched("flags.csv")); !bytes.Equal(a, b) || len(a) == 0 {
		t.Fatalf("schedules differ:\n%s\n---\n%s", a, b)
	}
	sf, sg := fromFile.summary(t), fromFlags.summary(t)
	if sf.Completed != 24 {
		t.Errorf("%d completed, want 24", sf.Completed)
	}
	sameSummary(t, fromFile, fromFlags)
	raw := testenv.ReadFile(t, fromFile.path("summary.json"))
	if bytes.Contains(raw, []byte("s3cret")) {
		t.Fatal("the summary holds the URL's password")
	}
	if sf.Settings["backend"] != "openai-chat" || sf.Settings["num-prompts"] != "24" || sf.Settings["extra-request-body"] != `{"top_k":5}` {
		t.Errorf("recorded settings %v", sf.Settings)
	}
	// The settings given, and the effective ones, are the same whether
	// from the file or the command line, but for the outputs' paths,
	// which are each run's own.
	outputs := []string{"schedule-out", "report-html", "summary-json", "results-jsonl"}
	withoutOutputs := func(m map[string]any) map[string]any {
		m = maps.Clone(m)
		for _, k := range outputs {
			delete(m, k)
		}
		return m
	}
	if a, b := withoutOutputs(sf.Settings), withoutOutputs(sg.Settings); !reflect.DeepEqual(a, b) {
		t.Errorf("settings given differ:\n%v\n%v", a, b)
	}
	if a, b := withoutOutputs(sf.EffectiveSettings), withoutOutputs(sg.EffectiveSettings); !reflect.DeepEqual(a, b) || len(a) < 100 {
		t.Errorf("effective settings differ (%d, %d):\n%v\n%v", len(a), len(b), a, b)
	}
	// Where each came from: the file's keys, the command line's outputs.
	wantFromFile := []string{"backend", "base-url", "extra-request-body", "model", "num-prompts", "random-input-len", "random-output-len", "request-rate", "seed", "warmup-requests"}
	if sf.SettingsFile != file || !slices.Equal(sf.FileSettings, wantFromFile) || sg.SettingsFile != "" || sg.FileSettings != nil {
		t.Errorf("from the file: %q %q; from flags: %q %q", sf.SettingsFile, sf.FileSettings, sg.SettingsFile, sg.FileSettings)
	}
	// The effective settings are config expand's of the file (the run's
	// outputs and the URL, its credentials hidden, aside).
	expanded, _ := mustRun(t, "config", "expand", file)
	var want map[string]any
	if err := yaml.Unmarshal([]byte(expanded), &want); err != nil {
		t.Fatal(err)
	}
	got := withoutOutputs(sf.EffectiveSettings)
	delete(got, "base-url")
	delete(got, "disable-tqdm") // the test's runs are given it
	want = withoutOutputs(want)
	delete(want, "base-url")
	delete(want, "disable-tqdm")
	if !reflect.DeepEqual(got, want) {
		for k, v := range want {
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("effective %s = %#v, config expand %#v", k, got[k], v)
			}
		}
	}
	if sf.EffectiveSettings["disable-tqdm"] != true || sf.EffectiveSettings["max-concurrency"] != "0" || sf.EffectiveSettings["burstiness"] != "1" {
		t.Errorf("effective settings lack a given or a default: %v", sf.EffectiveSettings)
	}
	// The report shows them: given first, each with where it came from.
	page := string(testenv.ReadFile(t, sched("file.html")))
	for _, w := range []string{`<details id="settings">`, "(run file " + file + ")", "num-prompts = 24</td><td>" + file,
		"schedule-out = " + sched("file.csv") + "</td><td>command line", "burstiness = 1</td><td>default"} {
		if !strings.Contains(page, w) {
			t.Errorf("the report's settings lack %q", w)
		}
	}
	// The summary repeats the run (its outputs given anew), but its URL
	// lost its credentials: the server does not check them.
	again := mustRunTool(t, "run", "--config", fromFile.path("summary.json"), "--schedule-out", sched("again.csv"))
	if !bytes.Equal(testenv.ReadFile(t, sched("again.csv")), testenv.ReadFile(t, sched("file.csv"))) {
		t.Error("the run repeated from its summary has another schedule")
	}
	if s := again.summary(t); s.Completed != 24 || s.ScheduleHash != sf.ScheduleHash {
		t.Errorf("repeat: %d completed, hash %s (want %s)", s.Completed, s.ScheduleHash, sf.ScheduleHash)
	}
	if got := srv.Stats().Completed; got != 72 {
		t.Errorf("the server completed %d requests, want 3 × 24", got)
	}
}

// sameSummary fails unless the summaries of a and b are the same but for
// what a run's times decide and what says how each was asked for. Left
// out: the keys the golden files blank (volatileKey, transientKey: every
// latency, throughput, duration, in-flight and queue figure, the windows'
// latencies, started_at, the server's metrics — clock and scheduling, not
// settings); command, settings and effective_settings (the command lines
// differ by design, and the settings hold each run's own output paths:
// the test compares the settings apart); settings_file and file_settings
// (where the settings came from: the file, or not). Each run's folder is
// written as DIR.
func sameSummary(t *testing.T, a, b *toolRun) {
	t.Helper()
	norm := func(r *toolRun) []byte {
		raw := bytes.ReplaceAll(testenv.ReadFile(t, r.path("summary.json")), []byte(r.dir), []byte("DIR"))
		n, err := normalizeJSON(raw, "")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(n, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"command", "settings", "effective_settings", "settings_file", "file_settings"} {
			delete(m, k)
		}
		out, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if x, y := norm(a), norm(b); !bytes.Equal(x, y) || len(x) < 1000 {
		t.Errorf("the summaries differ but for times:\n%s", firstDifference(x, y))
	}
}

// TestRunFileErrorsBeforeSending: a run file with an unknown key, a wrong
// type or a bad value fails with its line numbers, exit 2, and nothing is
// sent; config validate says the same, and says a good file is valid.
func TestRunFileErrorsBeforeSending(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	bad := testenv.WriteFile(t, "bad.yaml", "port: "+strconv.Itoa(port)+"\nhost: 127.0.0.1\nworkload:\n  reqest-rate: 5\n  num-prompts: many\nmax-concurrency: -3\n")
	want := []string{"bad.yaml:4: unknown key \"reqest-rate\" in section workload (did you mean request-rate?)",
		"bad.yaml:5: num-prompts \"many\": want a value of type int64", "bad.yaml:6: max-concurrency -3: want ≥ 1"}
	wantUsage(t, []string{"run", "--config", bad}, want...)
	wantUsage(t, []string{"config", "validate", bad}, want...)
	wantUsage(t, []string{"run", "--config", filepath.Join(dir, "missing.yaml")}, "--config", "missing.yaml")
	if n := srv.Stats().Requests; n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
	good := testenv.WriteFile(t, "good.json", `{"backend": "openai-chat", "workload": {"request-rate": 5, "num-prompts": 10}}`)
	out, _ := mustRun(t, "config", "validate", good)
	if !strings.Contains(out, "valid for run (3 settings; nothing was sent)") {
		t.Errorf("validate: %q", out)
	}
	// A sweep's own flags are keys of a file for a sweep, not of a run's.
	sweep := testenv.WriteFile(t, "sweep.yaml", "sweep:\n  sweep-values: [10, 20]\n  step-duration: 5s\n")
	mustRun(t, "config", "validate", "--for", "sweep", sweep)
	wantUsage(t, []string{"config", "validate", sweep}, `sweep.yaml:2: unknown key "sweep-values"`)
	wantUsage(t, []string{"config", "validate", "--for", "soak", sweep}, `--for "soak"`)
	wantUsage(t, []string{"config", "check", sweep}, "want validate FILE or expand FILE")
}

// TestRunFileValidationLines: a value the flag takes but the option
// checks refuse (a bad value alone, or against the other settings) is an
// error at its key's line in the file, YAML or JSON, for run, sweep and
// plan, before anything is sent; the same value given on the command line
// (which overrides the file's) keeps its message without a line.
func TestRunFileValidationLines(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{})
	p := strconv.Itoa(port)
	// Every bad setting is on its own line: line n of the YAML file and
	// of the JSON one alike.
	runBad := [][2]string{
		{"max-concurrency", "-3"}, {"backend", `"nosuch"`}, {"mode", `"bogus"`}, {"num-prompts", "-5"},
		{"random-input-len", "-1"}, {"steady-state", `"50:10"`}, {"threshold", `"p99_ttf_ms<=3"`}, {"repeat", "0"},
	}
	runWant := []string{`max-concurrency -3: want ≥ 1`, `backend "nosuch": want vllm`, `mode "bogus": want poisson`,
		`num-prompts -5: want 1 to`, `random-input-len -1: want a number of tokens`, `steady-state "50:10": want off, auto`,
		`threshold "p99_ttf_ms<=3": "p99_ttf_ms" is not a summary key`, `repeat 0: want 1 to`}
	// sweep and plan: the run's checks, and their own.
	stepBad := [][2]string{{"max-concurrency", "-3"}, {"num-prompts", "-5"}, {"random-input-len", "-1"}, {"burstiness", "0"}}
	stepWant := []string{`max-concurrency -3: want ≥ 1`, `num-prompts -5: want 1 to`, `random-input-len -1: want a number of tokens`, `burstiness 0: want a finite number > 0`}
	for _, c := range []struct {
		cmd  string
		bad  [][2]string
		want []string
	}{
		{"run", runBad, runWant},
		{"sweep", stepBad, stepWant},
		{"sweep", [][2]string{{"sweep-min", "-1"}, {"threshold", `"p99_ttft_ms<=3"`}}, []string{"sweep-min -1: want > 0", "threshold: --repeat, --until-converged, --threshold and --repeats-csv go with fineserve-gen run, not sweep"}},
		{"plan", stepBad, stepWant},
		{"plan", [][2]string{{"plan-window", `"0s"`}, {"repeat", "3"}}, []string{"plan-window 0s: want > 0", "repeat: --repeat, --until-converged, --threshold and --repeats-csv go with fineserve-gen run, not plan"}},
	} {
		yaml := "host: 127.0.0.1\nport: " + p + "\n"
		json := "{\"host\": \"127.0.0.1\",\n\"port\": " + p
		for _, kv := range c.bad {
			yaml += kv[0] + ": " + kv[1] + "\n"
			json += ",\n\"" + kv[0] + "\": " + kv[1]
		}
		json += "}\n"
		for _, f := range []struct{ name, text string }{{"exp.yaml", yaml}, {"exp.json", json}} {
			t.Run(c.cmd+"/"+f.name+"/"+c.bad[0][0], func(t *testing.T) {
				path := testenv.WriteFile(t, f.name, f.text)
				var want []string
				for i, w := range c.want {
					want = append(want, fmt.Sprintf("%s:%d: %s", path, i+3, w))
				}
				wantUsage(t, []string{c.cmd, "--config", path}, want...)
				if c.cmd == "run" {
					wantUsage(t, []string{"config", "validate", path}, want...)
				} else {
					wantUsage(t, []string{"config", "validate", "--for", c.cmd, path}, want...)
				}
				// The command line's value: its message as ever, no line.
				flag, value := c.bad[0][0], strings.Trim(c.bad[0][1], `"`)
				code, _, errb := runCmd(c.cmd, "--config", path, "--"+flag, value)
				if code != exitUsage || !strings.Contains(errb, "--"+flag+" "+value) || strings.Contains(errb, fmt.Sprintf("%s:3:", path)) {
					t.Errorf("--%s %s on the command line: exit %d\n%s", flag, value, code, errb)
				}
			})
		}
	}
	if n := srv.Stats().Requests; n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// TestConfigExpandRoundTrip: for run, sweep and plan, config expand writes
// every flag, and reads back through --config to the same settings (every
// flag's default included), the same file again.
func TestConfigExpandRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := testenv.WriteFile(t, "exp.yaml", "backend: openai-chat\nrequest-rate: 3\nbase-url: [http://127.0.0.1:1]\ngoodput: ttft:500 tpot:50\n")
	for _, cmd := range []string{"run", "sweep", "plan"} {
		t.Run(cmd, func(t *testing.T) {
			one, _ := mustRun(t, "config", "expand", "--for", cmd, file)
			expanded := filepath.Join(dir, cmd+".yaml")
			if err := os.WriteFile(expanded, []byte(one), 0o644); err != nil {
				t.Fatal(err)
			}
			two, _ := mustRun(t, "config", "expand", "--for", cmd, expanded)
			if one != two {
				t.Fatalf("not a fixed point:\n%s", firstDifference([]byte(one), []byte(two)))
			}
			o := options.Defaults()
			var prof profiles
			fs, _ := runFlags(&o, &prof)
			if extra := commandFlags[cmd]; extra != nil {
				extra(fs)
			}
			n := 0
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Hidden || f.Name == runfile.FlagName {
					return
				}
				n++
				if !strings.Contains(one, "\n"+f.Name+": ") {
					t.Errorf("expanded settings lack --%s", f.Name)
				}
			})
			if n < 100 || (cmd != "run" && !strings.Contains(one, "\nsweep-min: ")) {
				t.Errorf("%d flags expanded; %s's own flags missing?", n, cmd)
			}
			if !strings.Contains(one, "\ngoodput: \"ttft:500,tpot:50\"") {
				t.Errorf("goodput not as given:\n%s", one)
			}
		})
	}
}

// TestExamples: every run file in examples/ is valid, and runs against the
// built-in server as written, made short on the command line (which wins
// over the file) and with its outputs in a temporary directory.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the examples against a server")
	}
	shorter := map[string][]string{
		"vllm-bench.yaml":           {"--num-prompts", "12", "--request-rate", "400", "--random-input-len", "64", "--random-output-len", "4"},
		"fineserve-parametric.yaml": {"--duration", "2s"},
		"agentic-replay.yaml":       {"--trace", filepath.Join("..", "..", "pkg", "agentic", "testdata", "weka", "trace_0026.json"), "--time-scale", "100"},
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if len(files) != len(shorter) {
		t.Fatalf("examples %v: want a test row for each of %d", files, len(shorter))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			mustRun(t, "config", "validate", file)
			_, port := mocktest.Start(t, mockserver.Config{PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 14}})
			dir := t.TempDir()
			args := append([]string{"run", "--config", file, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--disable-tqdm",
				"--summary-json", filepath.Join(dir, "s.json"), "--results-jsonl", filepath.Join(dir, "r.jsonl"), "--report-html", filepath.Join(dir, "r.html")},
				shorter[name]...)
			mustRun(t, args...)
			s := testenv.ReadJSON[metrics.Summary](t, filepath.Join(dir, "s.json"))
			if s.Completed == 0 || s.Failed != 0 || s.Settings["seed"] == nil {
				t.Errorf("%s: %d completed, %d failed, settings %v", name, s.Completed, s.Failed, s.Settings)
			}
		})
	}
}

// TestRunFileSeries: a list under a flag that takes one value makes a
// series of runs, one a value, each with its own outputs, then their
// comparison (table and page); config validate and run check every run of
// it (run before the first sends), a bad value at the series' line; sweep
// and plan refuse it.
func TestRunFileSeries(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	file := testenv.WriteFile(t, "series.yaml", "seed: 3\nwarmup-requests: 0\nnum-prompts: 10\nrandom-input-len: 16\nrandom-output-len: 4\n"+
		"model: mock-model\nmax-concurrency: [1, 4]\n")
	out, errb := mustRun(t, "run", "--config", file, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--disable-tqdm",
		"--summary-json", filepath.Join(dir, "s.json"), "--report-html", filepath.Join(dir, "r.html"),
		"--results-parquet", filepath.Join(dir, "p.parquet"), "--benchmark-report", filepath.Join(dir, "br.yaml"))
	if !strings.Contains(errb, "series: run 1 of 2: --max-concurrency 1") || !strings.Contains(errb, "series: run 2 of 2: --max-concurrency 4") {
		t.Errorf("stderr lacks the runs:\n%s", errb)
	}
	for _, v := range []string{"1", "4"} {
		s := testenv.ReadJSON[metrics.Summary](t, filepath.Join(dir, "s.max-concurrency-"+v+".json"))
		if s.Completed != 10 || s.MaxConcurrency == nil || strconv.Itoa(*s.MaxConcurrency) != v || s.Settings["max-concurrency"] != v {
			t.Errorf("run of %s: %d completed, max concurrency %v, settings %v", v, s.Completed, s.MaxConcurrency, s.Settings)
		}
		testenv.ReadFile(t, filepath.Join(dir, "r.max-concurrency-"+v+".html"))
		testenv.ReadFile(t, filepath.Join(dir, "p.max-concurrency-"+v+".parquet"))
		br := readBenchmarkReport(t, filepath.Join(dir, "br.max-concurrency-"+v+".yaml"))
		if c := br["scenario"].(map[string]any)["load"].(map[string]any)["standardized"].(map[string]any)["concurrency"]; strconv.FormatFloat(c.(float64), 'f', -1, 64) != v {
			t.Errorf("run of %s: the benchmark report's concurrency is %v", v, c)
		}
	}
	if !strings.Contains(out, "Series of 2 runs over --max-concurrency") || !strings.Contains(out, "max-concurrency=1") || !strings.Contains(out, "max-concurrency=4") {
		t.Errorf("no comparison table:\n%s", out)
	}
	if page := string(testenv.ReadFile(t, filepath.Join(dir, "r.html"))); !strings.Contains(page, "max-concurrency=4") {
		t.Error("the comparison page does not name the runs")
	}
	if got := srv.Stats().Completed; got != 20 {
		t.Errorf("the server completed %d requests, want 2 × 10", got)
	}
	msg, _ := mustRun(t, "config", "validate", file)
	if !strings.Contains(msg, "a series of 2 runs over --max-concurrency") {
		t.Errorf("validate: %q", msg)
	}
	bad := testenv.WriteFile(t, "bad.yaml", "seed: 3\nnum-prompts: 10\nmax-concurrency: [2, -1]\n")
	wantUsage(t, []string{"config", "validate", bad}, "bad.yaml:3: the run of --max-concurrency -1: max-concurrency -1: want ≥ 1")
	// run checks every run of the series before the first sends.
	wantUsage(t, []string{"run", "--config", bad, "--host", "127.0.0.1", "--port", strconv.Itoa(port)}, "bad.yaml:3: the run of --max-concurrency -1: max-concurrency -1: want ≥ 1")
	if got := srv.Stats().Requests; got != 20 {
		t.Errorf("the server saw %d requests, want the 2 × 10 of the good series alone", got)
	}
	wantUsage(t, []string{"sweep", "--config", file}, "line 7: a list of max-concurrency values is a series of runs, which fineserve-gen run makes")
}

func TestSeriesPath(t *testing.T) {
	for _, c := range []struct{ path, flag, value, want string }{
		{"out/summary.json", "request-rate", "20", "out/summary.request-rate-20.json"},
		{"records", "model", "org/m:7b", "records.model-org_m_7b"},
		{"a.b/r.html", "base-url", "http://x:1", "a.b/r.base-url-http___x_1.html"},
	} {
		if got := seriesPath(c.path, c.flag, c.value); got != c.want {
			t.Errorf("seriesPath(%q, %q, %q) = %q, want %q", c.path, c.flag, c.value, got, c.want)
		}
	}
}
