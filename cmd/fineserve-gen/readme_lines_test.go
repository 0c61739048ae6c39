package main

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

// fineServeREADMELines are the command lines of FineServe's README
// (github.com/hihiztc1/FineServe, Readme.md), each written there after
// `python Generator.py`, as printed there. TestFineServeREADMELines runs
// each unchanged but for what substitute says.
var fineServeREADMELines = []struct{ name, line string }{
	{"poisson", `--backend vllm --host 127.0.0.1 --port 8000 --mode poisson --request-rate 50 --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"replay", `--backend vllm --host 127.0.0.1 --port 8000 --mode replay --request-trace-csv "datasets/replay/Dense_10to30B.csv" --time-scale 1.0 --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer"`},
	{"replay columns", `--backend vllm --host 127.0.0.1 --port 8000 --mode replay --request-trace-csv "datasets/replay/Dense_10to30B.csv" --time-scale 1.0 --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --timestamp-column timestamp --input-length-column input_length --output-length-column output_length`},
	{"parametric model class", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --model-class Dense_lt10B --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"parametric gamma file", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --gamma-params-csv "datasets/Parametric/gamma/Dense_lt10B_gamma_5min.csv" --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"parametric repeat_jitter", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --model-class Dense_lt10B --parametric-extension-mode repeat_jitter --parametric-jitter-ratio 0.10 --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"parametric model_sample", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --model-class Dense_10to30B --parametric-extension-mode model_sample --parametric-window-seconds 300 --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"parametric NB file", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --model-class Dense_lt10B --parametric-nb-json "datasets/Parametric/nb/Dense_lt10B_nb.json" --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
	{"parametric NB disabled", `--backend vllm --host 127.0.0.1 --port 8000 --mode parametric --model-class Dense_lt10B --disable-parametric-nb-lt10b --dataset-path "/path/to/dataset.json" --model "/path/to/model" --tokenizer "/path/to/tokenizer" --num-prompts 1000`},
}

// shellFields splits a command line as a shell would (shellSplit, which
// the README's examples use too).
func shellFields(t *testing.T, line string) []string {
	t.Helper()
	words, _ := shellSplit(t, 0, line)
	return words
}

// readmeFixtures maps the README's file paths to the files the test uses:
// its own parametric files are this repository's datasets/ (FineServe's,
// unchanged); its replay trace, which is not bundled, becomes the first 200
// rows of FineServe's Dense_30to100B trace (same format).
var readmeFixtures = map[string]string{
	"datasets/replay/Dense_10to30B.csv":                    "testdata/fineserve_Dense_30to100B_head200.csv",
	"datasets/Parametric/gamma/Dense_lt10B_gamma_5min.csv": "../../datasets/Parametric/gamma/Dense_lt10B_gamma_5min.csv",
	"datasets/Parametric/nb/Dense_lt10B_nb.json":           "../../datasets/Parametric/nb/Dense_lt10B_nb.json",
	"/path/to/tokenizer":                                   "testdata/tokenizer.json",
}

// substitute changes only what the brief of these tests allows: file paths
// (fixtures), the port (the mock's), a lower --num-prompts (a replay line
// without one gets one) and a higher --time-scale, so each line runs in
// about a second.
func substitute(t *testing.T, args []string, port int, dataset string) []string {
	t.Helper()
	out := slices.Clone(args)
	hasScale, hasCount := false, false
	for i := 0; i+1 < len(out); i++ {
		v := &out[i+1]
		switch out[i] {
		case "--port":
			*v = strconv.Itoa(port)
		case "--dataset-path":
			*v = dataset
		case "--request-trace-csv", "--gamma-params-csv", "--parametric-nb-json", "--tokenizer":
			f, ok := readmeFixtures[*v]
			if !ok {
				t.Fatalf("no fixture for %s %s", out[i], *v)
			}
			*v = f
		case "--num-prompts":
			*v, hasCount = "40", true
		case "--time-scale":
			*v, hasScale = "1000", true
		}
	}
	if !hasCount {
		out = append(out, "--num-prompts", "40")
	}
	if !hasScale {
		out = append(out, "--time-scale", "100")
	}
	return out
}

// readmeTokenizer is the fixture of FineServe's --tokenizer.
func readmeTokenizer(t *testing.T) *tokenizer.Tokenizer {
	tk, err := tokenizer.Load(readmeFixtures["/path/to/tokenizer"])
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestFineServeREADMELines runs every command line of FineServe's README
// against the built-in server serving the README's model name, with each
// ShareGPT format: exit 0, every scheduled request completed, and the
// model and prompt sizes are the ones the line asks for.
func TestFineServeREADMELines(t *testing.T) {
	for _, line := range fineServeREADMELines {
		for _, format := range []string{"sharegpt", "sharegpt_pre"} {
			t.Run(line.name+"/"+format, func(t *testing.T) {
				var mu sync.Mutex
				var models []string
				// The server counts in the line's tokenizer, as the run sizes.
				srv, port := mocktest.Start(t, mockserver.Config{Models: []string{"/path/to/model"}, Tokenizer: readmeTokenizer(t), OnRequest: func(path string, body []byte) {
					var b struct{ Model string }
					if json.Unmarshal(body, &b) == nil {
						mu.Lock()
						models = append(models, b.Model)
						mu.Unlock()
					}
				}})
				args := substitute(t, shellFields(t, line.line), port, "testdata/"+format+".json")
				if format == "sharegpt_pre" {
					args = append(args, "--dataset-name", "sharegpt_pre") // FineServe's flag, which the README leaves at its default
				}
				r := mustRunTool(t, append(args, "--seed", "1", "--quiet")...)
				s := r.summary(t)
				if s.Scheduled == 0 || s.Completed != s.Scheduled || s.Failed != 0 || s.Model != "/path/to/model" {
					t.Errorf("scheduled %d completed %d failed %d model %q", s.Scheduled, s.Completed, s.Failed, s.Model)
				}
				recs := readRecords(t, r.path("results.jsonl"))
				if int64(len(recs)) != s.Scheduled {
					t.Errorf("%d records for %d scheduled", len(recs), s.Scheduled)
				}
				for _, rec := range recs {
					if rec.PromptTokens < 0 {
						t.Errorf("record %d: no prompt tokens, target %d", rec.Index, rec.InputLen)
						break
					}
					if rec.PromptTokens != rec.InputLen {
						t.Errorf("record %d: prompt tokens %d, target %d", rec.Index, rec.PromptTokens, rec.InputLen)
						break
					}
				}
				// The server saw the warm-up and every request, each for the
				// README's model.
				if got := srv.Stats().Requests; got != s.Scheduled+1 {
					t.Errorf("server saw %d requests, want %d and the warm-up", got, s.Scheduled)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, m := range models {
					if m != "/path/to/model" {
						t.Fatalf("a request named model %q", m)
					}
				}
			})
		}
	}
}

// readmeBundled are the bundled files the README's FineServe block names in
// place of FineServe's placeholders, so that the block runs as pasted.
var readmeBundled = map[string]string{
	`"/path/to/dataset.json"`: `"cmd/fineserve-gen/testdata/sharegpt.json"`,
	`"/path/to/tokenizer"`:    `"cmd/fineserve-gen/testdata/tokenizer.json"`,
}

// TestREADMEFineServeSection: this repository's README says how to run
// FineServe's first command line against the built-in server; its block
// holds that line unchanged but for the port (a second server's) and the
// two placeholder paths, which name bundled files (so the block runs as
// pasted), and the server started as the block says serves it: every
// request completes. Only the port (a free one), the dataset (a fixture)
// and the number of prompts change.
func TestREADMEFineServeSection(t *testing.T) {
	readme := string(testenv.ReadFile(t, "../../README.md"))
	i := strings.Index(readme, "**FineServe's command line**")
	if i < 0 {
		t.Fatal("README: no paragraph \"FineServe's command line\"")
	}
	block := readme[i:]
	block = block[strings.Index(block, "```sh\n")+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var mockLine, runLine string
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "bin/fineserve-gen mock-server "):
			mockLine = strings.TrimSuffix(strings.TrimPrefix(line, "bin/fineserve-gen mock-server "), " &")
		case strings.HasPrefix(line, "bin/fineserve-gen "):
			runLine = strings.TrimPrefix(line, "bin/fineserve-gen ")
		}
	}
	asFineServe := strings.Replace(runLine, "--port 8001", "--port 8000", 1)
	for placeholder, bundled := range readmeBundled {
		asFineServe = strings.Replace(asFineServe, bundled, placeholder, 1)
	}
	if asFineServe != fineServeREADMELines[0].line {
		t.Fatalf("README's FineServe line\n%s\nis not FineServe's first line but for the port and the bundled files\n%s", runLine, fineServeREADMELines[0].line)
	}
	mockArgs := shellFields(t, mockLine)
	for j := 0; j+1 < len(mockArgs); j++ {
		switch mockArgs[j] {
		case "--port":
			mockArgs[j+1] = "0"
		case "--tokenizer":
			if "\""+mockArgs[j+1]+"\"" != readmeBundled[`"/path/to/tokenizer"`] {
				t.Fatalf("the README's server counts in %s, its run in %s", mockArgs[j+1], readmeBundled[`"/path/to/tokenizer"`])
			}
			mockArgs[j+1] = readmeFixtures["/path/to/tokenizer"]
		}
	}
	m := startMockCommand(t, mockArgs...)
	args := substitute(t, shellFields(t, fineServeREADMELines[0].line), m.port, "testdata/sharegpt.json")
	s := mustRunTool(t, append(args, "--seed", "1", "--quiet")...).summary(t)
	if s.Scheduled != 40 || s.Completed != s.Scheduled || s.Model != "/path/to/model" {
		t.Errorf("scheduled %d completed %d model %q", s.Scheduled, s.Completed, s.Model)
	}
}
