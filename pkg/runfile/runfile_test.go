package runfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// strictValue is a flag whose default text cannot be set back (as some of
// the command's are): a run file that writes the default must still read.
type strictValue struct{ s *string }

func (v strictValue) String() string { return *v.s }
func (v strictValue) Type() string   { return "strict" }
func (v strictValue) Set(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	*v.s = s
	return nil
}

// settings is a small flag set of every kind of flag a command has.
type settings struct {
	backend, body, strict string
	rate                  float64
	n                     int64
	stream                bool
	timeout               time.Duration
	urls                  []string
	values                []float64
}

func newSet() (*pflag.FlagSet, *settings) {
	s := &settings{}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String(FlagName, "", "run file")
	fs.StringVar(&s.backend, "backend", "vllm", "API kind")
	fs.StringVar(&s.body, "extra-request-body", "", "JSON")
	fs.Var(strictValue{&s.strict}, "strict", "a value whose default cannot be set")
	fs.Float64Var(&s.rate, "request-rate", 1, "rate")
	fs.Int64Var(&s.n, "num-prompts", 100, "count")
	fs.BoolVar(&s.stream, "disable-stream", false, "switch")
	fs.Float64("burstiness", 1, "shape")
	fs.DurationVar(&s.timeout, "request-timeout", time.Hour, "timeout")
	fs.StringArrayVar(&s.urls, "base-url", nil, "urls")
	fs.Float64SliceVar(&s.values, "sweep-values", nil, "loads")
	return fs, s
}

func suggest(name string) string {
	if name == "reqest-rate" {
		return "request-rate"
	}
	return ""
}

// TestApply: keys at the top and in sections set their flags, lists and
// mappings included; the command line's flags hold over the file's; what
// is given is what Settings reports.
func TestApply(t *testing.T) {
	fs, s := newSet()
	if err := fs.Parse([]string{"--num-prompts", "7"}); err != nil {
		t.Fatal(err)
	}
	file := `
backend: openai-chat
workload:
  request-rate: 2.5
  num-prompts: 1000        # the command line's 7 holds
target:
  base-url: [http://a:1, "http://b:2,with-comma"]
extra-request-body: {top_k: 5}
disable-stream: true
request-timeout: 90s
sweep-values: [10, 20.5]
`
	if _, err := ApplyBytes(fs, "exp.yaml", []byte(file), suggest); err != nil {
		t.Fatal(err)
	}
	want := settings{backend: "openai-chat", body: `{"top_k":5}`, rate: 2.5, n: 7, stream: true, timeout: 90 * time.Second,
		urls: []string{"http://a:1", "http://b:2,with-comma"}, values: []float64{10, 20.5}}
	if fmt.Sprint(*s) != fmt.Sprint(want) {
		t.Errorf("settings %+v\nwant     %+v", *s, want)
	}
	got := Settings(fs, nil, func(v string) string { return strings.ReplaceAll(v, "http://b", "http://HIDDEN") })
	if len(got) != 8 || got["num-prompts"] != "7" || got["disable-stream"] != true ||
		!slices.Equal(got["base-url"].([]string), []string{"http://a:1", "http://HIDDEN:2,with-comma"}) {
		t.Errorf("Settings = %v", got)
	}
	if _, ok := got[FlagName]; ok {
		t.Error("Settings records the run file's own flag")
	}
}

// TestApplyErrors: every problem at once, each at its line, an unknown key
// with the flag it is nearest to.
func TestApplyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"yaml", `backend: openai-chat
workload:
  reqest-rate: 2
  num-prompts: lots
request-rate: [1, 2]
burstiness: [3, 4]
foo: 1
workload2: {a: 1}
disable-stream: maybe
backend: vllm
request-timeout:
config: other.yaml
base-url: [[a]]
`, []string{
			`exp:3: unknown key "reqest-rate" in section workload (did you mean request-rate?)`,
			`exp:4: num-prompts "lots": want a value of type int64`,
			`exp:6: burstiness: a second list (the first: request-rate at line 5): a run file makes a series of one setting`,
			`exp:7: unknown key "foo" (keys are flag names; sections: target,`,
			`exp:8: unknown key "workload2"`,
			`exp:9: disable-stream "maybe": `,
			`exp:10: backend given twice (first at line 1)`,
			`exp:11: request-timeout: no value`,
			`exp:12: config: a run file does not name another`,
			`exp:13: base-url: a list of plain values`,
		}},
		{"json", "{\n  \"backend\": \"openai-chat\",\n  \"num-prompts\": \"x\",\n  \"workload\": {\"burstyness\": 1}\n}",
			[]string{`exp:3: num-prompts "x": want a value of type int64`, `exp:4: unknown key "burstyness" in section workload`}},
		{"not a mapping", "- a\n- b\n", []string{"exp:1: want a mapping of flag names to values at the top"}},
		{"empty", "", []string{"empty: want a mapping"}},
		{"section not a mapping", "workload: 3\n", []string{"exp:1: section workload: want a mapping"}},
		{"not yaml", "backend: [", []string{"--config exp: yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, _ := newSet()
			_, err := ApplyBytes(fs, "exp", []byte(tc.file), suggest)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			var fe *Error
			if tc.name == "yaml" && (!errors.As(err, &fe) || fe.Line != 3) {
				t.Errorf("the first problem is not a line's *Error: %#v", err)
			}
		})
	}
}

// TestSummarySettings: a summary is read from its settings alone (its
// figures are not keys).
func TestSummarySettings(t *testing.T) {
	fs, s := newSet()
	sum := `{"backend": "ignored: not under settings", "completed": 40, "mean_ttft_ms": 12.5,
  "settings": {"backend": "openai-chat", "num-prompts": "40", "base-url": ["http://x:1"]}}`
	if _, err := ApplyBytes(fs, "summary.json", []byte(sum), nil); err != nil {
		t.Fatal(err)
	}
	if s.backend != "openai-chat" || s.n != 40 || !slices.Equal(s.urls, []string{"http://x:1"}) {
		t.Errorf("settings %+v", *s)
	}
}

// TestExpandRoundTrip: Expand writes every flag, given or default, and
// reads back to the same settings and the same file — a default that its
// flag cannot set back included.
func TestExpandRoundTrip(t *testing.T) {
	fs, s := newSet()
	if _, err := ApplyBytes(fs, "exp", []byte("backend: openai-chat\nbase-url: [http://a:1]\nstrict: x\nextra-request-body: '{\"a\": \"# not a comment\"}'\n"), nil); err != nil {
		t.Fatal(err)
	}
	var one bytes.Buffer
	if err := Expand(&one, fs, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"backend", "request-rate", "num-prompts", "disable-stream", "request-timeout", "base-url", "sweep-values", "strict"} {
		if !strings.Contains(one.String(), "\n"+name+": ") {
			t.Errorf("expanded file lacks %s:\n%s", name, one.String())
		}
	}
	if strings.Contains(one.String(), FlagName+":") {
		t.Error("the expanded file names a run file")
	}
	fs2, s2 := newSet()
	if _, err := ApplyBytes(fs2, "expanded", one.Bytes(), nil); err != nil {
		t.Fatalf("%v\n%s", err, one.String())
	}
	if fmt.Sprint(*s2) != fmt.Sprint(*s) {
		t.Errorf("read back %+v\nwant      %+v", *s2, *s)
	}
	var two bytes.Buffer
	if err := Expand(&two, fs2, nil, nil); err != nil {
		t.Fatal(err)
	}
	if one.String() != two.String() {
		t.Errorf("expand is not a fixed point:\n%s\n---\n%s", one.String(), two.String())
	}
	// An empty strict value (its default) was not set: not given.
	fs3, _ := newSet()
	if _, err := ApplyBytes(fs3, "defaults", []byte("strict: \"\"\nnum-prompts: \"100\"\n"), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(Settings(fs3, nil, nil)); n != 0 {
		t.Errorf("defaults written out count as %d given settings", n)
	}
}

// TestSeries: a list under a flag that takes one value is the file's
// series of runs (the flag left as it was), read back by Expand; the
// command line's value holds over a series too.
func TestSeries(t *testing.T) {
	fs, s := newSet()
	file, err := ApplyBytes(fs, "exp", []byte("backend: openai-chat\nworkload:\n  request-rate: [5, 10, inf]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	series := file.Series
	if series == nil || series.Flag != "request-rate" || !slices.Equal(series.Values, []string{"5", "10", "inf"}) || series.Line != 3 {
		t.Fatalf("series %+v", series)
	}
	if s.rate != 1 || fs.Changed("request-rate") {
		t.Errorf("the series' flag was set: %v", s.rate)
	}
	var b bytes.Buffer
	if err := Expand(&b, fs, nil, series); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nrequest-rate: [\"5\", \"10\", \"inf\"]\n") {
		t.Errorf("expanded without the series:\n%s", b.String())
	}
	fs2, _ := newSet()
	again, err := ApplyBytes(fs2, "expanded", b.Bytes(), nil)
	if err != nil || again.Series == nil || !slices.Equal(again.Series.Values, series.Values) {
		t.Errorf("read back: %+v, %v", again, err)
	}
	fs3, s3 := newSet()
	if err := fs3.Parse([]string{"--request-rate", "7"}); err != nil {
		t.Fatal(err)
	}
	if f, err := ApplyBytes(fs3, "exp", []byte("request-rate: [5, 10]\n"), nil); err != nil || f.Series != nil || s3.rate != 7 {
		t.Errorf("the command line's --request-rate: series %+v, rate %v, %v", f.Series, s3.rate, err)
	}
	if _, err := ApplyBytes(fs3, "exp", []byte("num-prompts: []\n"), nil); err == nil || !strings.Contains(err.Error(), "an empty list") {
		t.Errorf("empty list: %v", err)
	}
}

// usageError is a wrapper that adds nothing to its problem's message, as
// the command's usage error is.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// TestLocate: a problem found after the file was read that names a flag
// the file set gets the file's line of that flag (YAML and JSON, at the
// top or in a section), its leading "--" dropped when it is about that
// flag alone; one of a flag the
// command line set, one that names no flag and one with a line already
// keep their message; joined problems are located one by one, through a
// wrapper that adds nothing to their message; errors.As still finds what
// a located problem wraps.
func TestLocate(t *testing.T) {
	type bound struct{ error }
	for _, tc := range []struct{ name, file string }{
		{"yaml", "backend: openai-chat\nworkload:\n  num-prompts: 5\n  request-rate: 2\nrequest-timeout: 9s\n"},
		{"json", "{\"backend\": \"openai-chat\",\n \"workload\": {\n  \"num-prompts\": 5,\n  \"request-rate\": 2},\n \"request-timeout\": \"9s\"}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, _ := newSet()
			if err := fs.Parse([]string{"--burstiness", "3", "--request-rate", "4"}); err != nil {
				t.Fatal(err)
			}
			f, err := ApplyBytes(fs, "exp."+tc.name, []byte(tc.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"backend": 1, "num-prompts": 3, "request-timeout": 5}; fmt.Sprint(f.Lines) != fmt.Sprint(want) {
				t.Errorf("lines %v, want %v (the command line's --request-rate is not the file's)", f.Lines, want)
			}
			already := &Error{Path: "exp", Line: 9, Err: errors.New("--backend x: bad")}
			wrapped := bound{fmt.Errorf("--num-prompts 5: want more")}
			err = f.Locate(&usageError{errors.Join(
				wrapped,
				errors.New("--burstiness 3: want less"),
				errors.New("--request-rate 4 for --request-timeout 9s: too many"),
				errors.New("timeouts: --request-timeout-ish is no flag; --num-prompts-x neither"),
				errors.New("--disable-stream and --backend openai-chat: choose one"),
				errors.New("--backend and --num-prompts: choose one"),
				already,
				errors.New("no flag at all"),
			)})
			want := []string{
				"exp." + tc.name + ":3: num-prompts 5: want more",
				"--burstiness 3: want less",
				"exp." + tc.name + ":5: --request-rate 4 for --request-timeout 9s: too many",
				"timeouts: --request-timeout-ish is no flag; --num-prompts-x neither",
				"exp." + tc.name + ":1: --disable-stream and --backend openai-chat: choose one",
				"exp." + tc.name + ":1: --backend and --num-prompts: choose one",
				"exp:9: --backend x: bad",
				"no flag at all",
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
				t.Errorf("located:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			var b bound
			var e *Error
			if !errors.As(err, &b) || !errors.As(err, &e) || e.Line != 3 {
				t.Errorf("errors.As through the located problem: %v %v", b, e)
			}
		})
	}
	var none *File
	if err := errors.New("--backend x"); none.Locate(err) != err {
		t.Error("a nil file changed the problem")
	}
}
