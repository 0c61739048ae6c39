package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

// punctDataset is a ShareGPT file whose prompts have punctuation, so that
// a tokenizer's count differs from the word count.
const punctDataset = `[
 {"conversations": [{"from": "human", "value": "Hello, world! Don't panic: it's only a test..."}, {"from": "gpt", "value": "Sure, I won't panic."}]},
 {"conversations": [{"from": "human", "value": "The quick brown fox (a fox!) jumps over the lazy dog; twice."}, {"from": "gpt", "value": "Ok, noted."}]},
 {"conversations": [{"from": "human", "value": "What's 2+2? And 3*3? Answer: briefly, please."}, {"from": "gpt", "value": "4 and 9."}]}
]`

// writeTokenizer writes a byte-level BPE tokenizer.json trained on text,
// in a directory of its own, and returns the directory.
func writeTokenizer(t testing.TB, text string, merges int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), testenv.TrainBPE(text, merges), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// --tokenizer sizes ShareGPT prompts in its tokens: the built-in server
// counting in the same tokenizer sees exactly the scheduled lengths, for
// completions and chat, and the lengths are not the word counts. Without
// it the lengths are words and the summary says so; --tokenize-via-server
// takes the server's counts.
func TestTokenizerSizesDatasetPrompts(t *testing.T) {
	tokDir := writeTokenizer(t, punctDataset, 80)
	tk, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "sharegpt.json")
	os.WriteFile(data, []byte(punctDataset), 0o644)
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, Tokenizer: tk})
	_, wordPort := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}})
	run := func(port int, more ...string) ([]resultRecord, string) {
		args := append(mockTarget(port, "--num-prompts", "6", "--request-rate", "inf", "--seed", "1", "--warmup-requests", "0",
			"--dataset-name", "sharegpt", "--dataset-path", data, "--quiet"), more...)
		r := mustRunTool(t, args...)
		return readRecords(t, r.path("results.jsonl")), r.summary(t).PromptUnits
	}
	words, units := run(wordPort)
	if units != "words" {
		t.Errorf("without --tokenizer: prompt_units %q, want words", units)
	}
	for _, backend := range []string{"vllm", "openai-chat"} {
		recs, units := run(port, "--backend", backend, "--tokenizer", tokDir)
		if units != "tokenizer" {
			t.Errorf("%s: prompt_units %q, want tokenizer", backend, units)
		}
		differ := 0
		for i, r := range recs {
			if r.PromptTokens != r.InputLen {
				t.Errorf("%s: record %d: the server counted %d tokens for input_len %d", backend, i, r.PromptTokens, r.InputLen)
			}
			if r.InputLen != words[i].InputLen {
				differ++
			}
		}
		if differ == 0 || len(recs) != 6 {
			t.Errorf("%s: %d records, %d sized differently than in words: want 6, all", backend, len(recs), differ)
		}
	}
	// The server's /tokenize (the built-in one counting in the tokenizer).
	recs, units := run(port, "--tokenize-via-server")
	if units != "server" {
		t.Errorf("--tokenize-via-server: prompt_units %q, want server", units)
	}
	for i, r := range recs {
		if r.PromptTokens != r.InputLen || r.InputLen == words[i].InputLen {
			t.Errorf("--tokenize-via-server: record %d: input_len %d, server %d, words %d", i, r.InputLen, r.PromptTokens, words[i].InputLen)
		}
	}
}

// Synthetic text prompts and a --prompt-suffix-free random run are cut in
// the tokenizer's tokens too.
func TestTokenizerSizesSyntheticText(t *testing.T) {
	tokDir := writeTokenizer(t, punctDataset, 40)
	tk, _ := tokenizer.Load(tokDir)
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, Tokenizer: tk})
	for _, backend := range []string{"vllm", "openai-chat"} {
		r := mustRunTool(t, append(baseArgs(port, 5), "--backend", backend, "--prompt-format", "text", "--random-input-len", "50", "--random-range-ratio", "0.5", "--tokenizer", tokDir)...)
		for i, rec := range readRecords(t, r.path("results.jsonl")) {
			if rec.PromptTokens != rec.InputLen {
				t.Errorf("%s: record %d: server %d tokens, input_len %d", backend, i, rec.PromptTokens, rec.InputLen)
			}
		}
		if u := r.summary(t).PromptUnits; u != "tokenizer" {
			t.Errorf("%s: prompt_units %q", backend, u)
		}
	}
}

func TestTokenizerBadInput(t *testing.T) {
	dir := t.TempDir()
	wordLevel := filepath.Join(dir, "wordlevel.json")
	os.WriteFile(wordLevel, []byte(`{"model": {"type": "WordLevel", "vocab": {"a": 0}}}`), 0o644)
	broken := filepath.Join(dir, "broken.json")
	os.WriteFile(broken, []byte(`{"model": `), 0o644)
	args := func(more ...string) []string {
		return append([]string{"--dry-run", "--num-prompts", "2", "--seed", "1"}, more...)
	}
	wantUsage(t, args("--tokenizer", wordLevel), "--tokenizer", wordLevel, `unsupported: model type "WordLevel"`)
	wantUsage(t, args("--tokenizer", broken), "--tokenizer", broken, "not a tokenizer.json")
	wantUsage(t, args("--tokenizer", filepath.Join(dir, "missing")), "--tokenizer", "missing")
	wantUsage(t, args("--tokenizer", dir), "a directory without a tokenizer.json")
	wantUsage(t, args("--tokenize-via-server", "--dataset-path", "testdata/sharegpt.json"), "--tokenize-via-server", "--dry-run")
	wantUsage(t, args("--tokenize-via-server"), "--tokenize-via-server", "give a dataset")
	wantUsage(t, args("--tokenize-via-server", "--tokenizer", wordLevel, "--dataset-path", "testdata/sharegpt.json"), "choose one")
	// mock-server refuses one too.
	code, _, errb := runCmd("mock-server", "--port", "0", "--tokenizer", wordLevel)
	if code != exitUsage || !strings.Contains(errb, "WordLevel") {
		t.Errorf("mock-server --tokenizer %s: exit %d, %q", wordLevel, code, errb)
	}
}

// SentencePiece tokenizers (a BPE with byte fallback behind Llama 2's
// Prepend and Replace normalizers, a Unigram) size dataset and synthetic
// text prompts end to end: the prompts sent are cut in the text itself
// (spaces, not the normalizer's "▁", which the server would count again),
// so the built-in server counting in the same file sees exactly each
// input_len.
func TestTokenizerSentencePiece(t *testing.T) {
	data := filepath.Join(t.TempDir(), "sharegpt.json")
	os.WriteFile(data, []byte(punctDataset), 0o644)
	for _, name := range []string{"spm_bpe", "unigram_fallback"} {
		path := filepath.Join("..", "..", "pkg", "tokenizer", "testdata", name+".json")
		tk, err := tokenizer.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, Tokenizer: tk})
		for _, more := range [][]string{
			{"--backend", "openai-chat", "--dataset-name", "sharegpt", "--dataset-path", data},
			{"--backend", "vllm", "--prompt-format", "text", "--random-input-len", "60", "--random-range-ratio", "0.5"},
		} {
			args := append(mockTarget(port, "--num-prompts", "6", "--request-rate", "inf", "--seed", "1", "--warmup-requests", "0",
				"--quiet", "--tokenizer", path), more...)
			r := mustRunTool(t, args...)
			recs := readRecords(t, r.path("results.jsonl"))
			if len(recs) != 6 {
				t.Errorf("%s %v: %d records, want 6", name, more, len(recs))
			}
			for i, rec := range recs {
				if rec.PromptTokens != rec.InputLen || rec.InputLen == 0 {
					t.Errorf("%s %v: record %d: the server counted %d tokens for input_len %d", name, more, i, rec.PromptTokens, rec.InputLen)
				}
			}
			if u := r.summary(t).PromptUnits; u != "tokenizer" {
				t.Errorf("%s %v: prompt_units %q", name, more, u)
			}
		}
	}
}
