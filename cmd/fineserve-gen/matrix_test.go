package main

// The combination matrix: the real command, in process, against the
// built-in server, over every dimension a run has. docs/TESTING.md says how
// to run one case and how to add a dimension.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/prompt"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

// dimension is one axis of the matrix: named values, each adding flags.
type dimension struct {
	name   string
	values []string
}

// The dimensions, in the order of a case's name. The first three (workload,
// backend, prompt source) are crossed in full where valid; every pair of
// values of any two dimensions appears in at least one case.
const (
	dWorkload = iota
	dBackend
	dSource
	dWarmup
	dConcurrency
	dRetries
	dShard
	dStartAt
	dModelMap
	dStream
	dEOS
	dDuration
	dDryRun
	dScheduleOut
	dSummary
	dHTML
	dMetrics
	dTarget
	dPrefix
	dLengths
	dTurns
	dCancel
	dEndpoints
	dAnswer
	dUnits
	dMedia
	dConns
	dExperiment
	dExport
	dTelemetry
	dSettings
)

var matrixDims = []dimension{
	dWorkload: {"workload", []string{"poisson", "poisson-bursty", "poisson-inf",
		"replay-fineserve", "replay-azure2023", "replay-azure-lmm", "replay-mooncake", "replay-burstgpt",
		"replay-alibaba-lora", "replay-generic", "parametric-class-nb", "parametric-gamma", "parametric-servegen", "replay-agentic"}},
	dBackend: {"backend", []string{"vllm", "openai", "openai-chat", "openai-responses", "openai-images",
		"openai-embeddings", "vllm-pooling", "vllm-rerank", "vllm-score", "openai-transcriptions",
		"anthropic-messages", "sglang-generate", "kserve-generate"}},
	dSource:      {"source", []string{"random-ids", "trace-ids", "text", "sharegpt", "sharegpt_pre", "hash-ids", "images"}},
	dWarmup:      {"warmup", []string{"0", "1", "3"}},
	dConcurrency: {"concurrency", []string{"open", "max2", "max2-ramp"}},
	dRetries:     {"retries", []string{"none", "retry-503"}},
	dShard:       {"shard", []string{"whole", "shard1of2"}},
	dStartAt:     {"start", []string{"now", "start-at"}},
	dModelMap:    {"models", []string{"model", "map-hash"}},
	dStream:      {"stream", []string{"stream", "no-stream"}},
	dEOS:         {"eos", []string{"ignore-eos", "eos"}},
	dDuration:    {"duration", []string{"count", "duration"}},
	dDryRun:      {"dry", []string{"send", "dry-run"}},
	dScheduleOut: {"schedule", []string{"no-schedule", "schedule-out"}},
	dSummary:     {"summary", []string{"summary-json", "output-file", "output-stdout"}},
	dHTML:        {"html", []string{"no-html", "html"}},
	dMetrics:     {"metrics", []string{"no-metrics", "metrics"}},
	dTarget:      {"target", []string{"flat", "stages"}},
	dPrefix:      {"prefix", []string{"no-prefix", "prefix"}},
	dLengths:     {"lengths", []string{"lengths-flags", "lengths-mix"}},
	dTurns:       {"turns", []string{"1", "3", "multi-turn"}},
	dCancel:      {"cancel", []string{"no-cancel", "cancel"}},
	// endpoints: one --host/--port, or two in-process servers as two
	// --base-url dealt round-robin, least-inflight or by session, or one
	// server and a closed loopback port (round-robin).
	dEndpoints: {"endpoints", []string{"one", "two-rr", "two-least", "two-session", "two-dead"}},
	// answer: what requests ask of the answer — nothing; reasoning (the
	// server reasons first, --reasoning-effort, --chat-template-kwargs,
	// sessions send the reasoning back); tools (--tools with tool_choice
	// auto, answered by a tool call half the time; sessions send tool
	// results back); a response format (--response-format json_object,
	// every answer checked); a Responses session chained by
	// previous_response_id (--responses-chain; one endpoint, or several
	// with --balance session: a response is kept where it was made); or
	// nothing of a server that sends chat content as content parts
	// (mock-server --content-parts: every answer must still be read).
	dAnswer: {"answer", []string{"plain", "reasoning", "tools", "format", "chain", "parts"}},
	// units: text prompts sized in words (the default), or in a
	// tokenizer.json's tokens (--tokenizer; the built-in server counts in
	// the same tokenizer).
	dUnits: {"units", []string{"words", "tokenizer"}},
	// media: none; two JPEG images in every request
	// (--images-per-request); or a WAV clip (--audio-seconds). The
	// built-in server counts them by their size and length.
	dMedia: {"media", []string{"no-media", "images", "audio"}},
	// conns: connections dialled on first use, without or with their
	// HTTP phases timed (--http-phases), or opened before the first send
	// (--prewarm-connections 64: more than any case's requests, so none
	// dials; auto), with the phases timed; "phases" and "prewarm-auto"
	// send every request's X-Request-Id too (--request-id-prefix m-).
	dConns: {"conns", []string{"dial", "phases", "prewarm", "prewarm-auto"}},
	// experiment: one run; a threshold that holds (--threshold, its
	// verdict line); a steady-state window (--steady-state auto); or the
	// case run again with --repeat 2 (its outputs per run and the
	// repeated run's: checkCaseRepeat).
	dExperiment: {"experiment", []string{"once", "threshold", "steady", "repeat2"}},
	// export: the outputs other tools read — none; the records as Parquet
	// (--results-parquet); the llm-d Benchmark Report as YAML; both, the
	// report as JSON (matrix_exports_test.go checks them); or both given
	// to a dry run, which writes neither. The values that write run with
	// traffic only (validCase), so each meets every backend sending.
	dExport: {"export", []string{"no-export", "parquet", "benchmark-report", "both-json", "both-dry-run"}},
	// telemetry: none; an OpenTelemetry collector (--otlp-endpoint
	// --otlp-traces --otlp-sample 0.5); GPU telemetry and speculative
	// decoding (the servers' DCGM-like endpoint and draft model,
	// --gpu-metrics-url and the server's spec-decode counters); or the
	// collector given to a dry run, which exports nothing —
	// matrix_telemetry_test.go. As with exports, otlp and gpu-spec run
	// with traffic only.
	dTelemetry: {"telemetry", []string{"no-telemetry", "otlp", "gpu-spec", "otlp-dry-run"}},
	// settings: the case's flags on the command line, or every one of them
	// written into a run file read with --config (matrix_runfile_test.go).
	dSettings: {"settings", []string{"flags", "run-file"}},
}

// is reports whether row (a partial row: testenv.Free where unset) has
// one of names in dimension d; an unset dimension is "maybe" (true).
func is(row []int, d int, names ...string) bool {
	if row[d] == testenv.Free {
		return true
	}
	return slices.Contains(names, matrixDims[d].values[row[d]])
}

// set reports whether dimension d of row has a value.
func set(row []int, d int) bool { return row[d] != testenv.Free }

var (
	// batchBackends send --batch-size inputs a request (the pooling
	// APIs); idsBackends take token-id prompts; noTalk have no
	// conversation (sessions).
	batchBackends = []string{"openai-embeddings", "vllm-pooling", "vllm-rerank", "vllm-score"}
	idsBackends   = []string{"vllm", "openai", "openai-embeddings", "vllm-pooling", "sglang-generate"}
	// nativeBackends speak another API than OpenAI's: no image inputs.
	nativeBackends = []string{"anthropic-messages", "sglang-generate", "kserve-generate"}
	noTalk         = append([]string{"openai-images", "openai-transcriptions"}, batchBackends...)
	imageTraces    = []string{"replay-azure-lmm", "replay-alibaba-lora"}
	textTraces     = []string{"replay-fineserve", "replay-azure2023", "replay-burstgpt", "replay-generic"}
	syntheticModes = []string{"poisson", "poisson-bursty", "poisson-inf", "parametric-class-nb", "parametric-gamma", "parametric-servegen"}
)

// validCase is the matrix's validity function. Invalid combinations are
// not generated (TestMatrixInvalidCombinations checks that the ones the
// command can detect are refused with exit 2):
//   - random-ids (--random-* lengths, token ids) only in poisson and
//     parametric modes; trace-ids (the trace's lengths, token ids) only
//     with a text trace; both only with the completions backends (chat and
//     image requests are text);
//   - text and ShareGPT prompts with every text backend and workload but
//     the image and Mooncake traces;
//   - hash-ids (Mooncake's prefix blocks, an agentic trace's) is the
//     Mooncake and agentic traces' only source, and images the image
//     traces' only one;
//   - an agentic trace (its conversations are the sessions) without
//     --turns and without --prefix-len (its prompts are its hash ids);
//   - --backend openai-images only with the diffusion trace (Alibaba
//     GenTD26), which needs it; Azure LMM (images in chat messages) with
//     the other backends;
//   - a --lengths mixture only in poisson and parametric mode with
//     synthetic prompts (random-ids, text): traces and datasets give their
//     own lengths (so not with openai-images either, whose only workload
//     is a trace).
//   - sessions (--turns 3) with every text backend; the dataset's
//     conversations (--multi-turn) with the ShareGPT sources.
//   - reasoning, tools and a response format with the backends that have
//     them (chat and responses); the Responses API without image inputs
//     (chat content parts).
//   - a tokenizer with the text sources (text, ShareGPT) only;
//   - media (--images-per-request, --audio-seconds) with the completions
//     and chat backends.
//   - the pooling backends (embeddings, pooling, rerank, score) with every
//     text source and workload but the image traces, token ids with
//     embeddings and pooling only (a rerank's documents are text); the
//     transcription backend (its audio is synthetic: the prompt source
//     only sizes nothing) with text prompts; neither in sessions.
//   - an export or telemetry value that writes or exports something
//     (parquet, benchmark-report, both-json; otlp, gpu-spec) only in a
//     case that sends, its dry-run value (both-dry-run, otlp-dry-run)
//     only with --dry-run: so every pair of such a value with a backend,
//     a workload… is a run with traffic.
func validCase(r []int) bool {
	w, b, s := set(r, dWorkload), set(r, dBackend), set(r, dSource)
	if !validSendOrDry(r) {
		return false
	}
	if set(r, dExperiment) && is(r, dExperiment, "repeat2") && ((set(r, dDryRun) && is(r, dDryRun, "dry-run")) ||
		(set(r, dStartAt) && is(r, dStartAt, "start-at")) || (set(r, dShard) && is(r, dShard, "shard1of2"))) {
		return false // a repeated run sends (its runs are not one schedule), each run when it comes, from one machine
	}
	if b && is(r, dBackend, nativeBackends...) && ((s && is(r, dSource, "images")) || (w && is(r, dWorkload, imageTraces...)) ||
		(is(r, dBackend, "anthropic-messages") && set(r, dAnswer) && is(r, dAnswer, "format"))) {
		return false // no image inputs; Anthropic's Messages have no response format
	}
	if b && is(r, dBackend, append([]string{"openai-transcriptions"}, batchBackends...)...) && ((s && is(r, dSource, "images")) || (w && is(r, dWorkload, imageTraces...))) {
		return false // no image inputs
	}
	if b && is(r, dBackend, "openai-transcriptions") && s && !is(r, dSource, "text") {
		return false
	}
	if w && is(r, dWorkload, "replay-agentic") && b && is(r, dBackend, noTalk...) {
		return false
	}
	if w && is(r, dWorkload, "replay-agentic") && ((set(r, dTurns) && !is(r, dTurns, "1")) || (set(r, dPrefix) && is(r, dPrefix, "prefix"))) {
		return false
	}
	if set(r, dUnits) && is(r, dUnits, "tokenizer") && ((s && !is(r, dSource, "text", "sharegpt", "sharegpt_pre")) ||
		(w && is(r, dWorkload, append(imageTraces, "replay-mooncake", "replay-agentic")...)) || (b && is(r, dBackend, "openai-images"))) {
		return false // only text prompts are sized in a unit
	}
	if set(r, dMedia) && !is(r, dMedia, "no-media") && ((set(r, dAnswer) && is(r, dAnswer, "chain")) || (w && is(r, dWorkload, "replay-agentic"))) {
		return false // media are chat content parts (a chain is the Responses API's); an agentic trace's steps are its hash ids
	}
	if set(r, dMedia) && !is(r, dMedia, "no-media") {
		if (b && !is(r, dBackend, "vllm", "openai", "openai-chat")) || (w && is(r, dWorkload, "replay-alibaba-lora")) {
			return false // chat content parts
		}
	}
	if set(r, dAnswer) && !is(r, dAnswer, "plain") && b && !is(r, dBackend, "openai-chat", "openai-responses", "anthropic-messages") {
		return false
	}
	if set(r, dAnswer) && is(r, dAnswer, "chain") && ((b && !is(r, dBackend, "openai-responses")) || (set(r, dTurns) && is(r, dTurns, "1")) ||
		(s && is(r, dSource, "images")) || (w && is(r, dWorkload, imageTraces...)) || (set(r, dEndpoints) && !is(r, dEndpoints, "one", "two-session"))) {
		return false // a chain is a Responses session's, kept on the endpoint that holds its responses
	}
	if b && is(r, dBackend, "openai-responses") && ((s && is(r, dSource, "images")) || (w && is(r, dWorkload, append(imageTraces, "replay-mooncake", "replay-agentic")...))) {
		return false // image inputs are chat content parts; hash ids are token ids
	}
	if set(r, dAnswer) && !is(r, dAnswer, "plain") && ((s && is(r, dSource, "random-ids", "trace-ids", "hash-ids")) ||
		(w && is(r, dWorkload, "replay-alibaba-lora", "replay-mooncake", "replay-agentic"))) {
		return false // token ids and image generations: no chat
	}
	if set(r, dLengths) && is(r, dLengths, "lengths-mix") {
		if (w && !is(r, dWorkload, syntheticModes...)) || (s && !is(r, dSource, "random-ids", "text")) || (b && is(r, dBackend, "openai-images")) {
			return false
		}
	}
	if set(r, dTurns) && !is(r, dTurns, "1") && ((b && is(r, dBackend, noTalk...)) || (w && is(r, dWorkload, "replay-alibaba-lora"))) {
		return false // an image generation, a pooling batch, a transcription have no conversation
	}
	if set(r, dTurns) && is(r, dTurns, "multi-turn") && set(r, dLengths) && is(r, dLengths, "lengths-mix") {
		return false // the conversations give their own lengths
	}
	if set(r, dTurns) && is(r, dTurns, "multi-turn") && ((s && !is(r, dSource, "sharegpt", "sharegpt_pre")) ||
		(w && is(r, dWorkload, append(imageTraces, "replay-mooncake", "replay-agentic")...))) {
		return false // the conversations come from a ShareGPT file
	}
	if s && is(r, dSource, "random-ids", "trace-ids", "hash-ids") && b && is(r, dBackend, "openai-responses") {
		return false // token ids: completions only
	}
	if s && is(r, dSource, "random-ids", "trace-ids") && b && !is(r, dBackend, idsBackends...) {
		return false
	}
	if ((s && is(r, dSource, "hash-ids")) || (w && is(r, dWorkload, "replay-mooncake"))) && b && is(r, dBackend, "vllm-rerank", "vllm-score", "openai-transcriptions") {
		return false // hash ids are token ids, the Mooncake trace's only prompts
	}
	if s && w {
		switch {
		case is(r, dSource, "random-ids"):
			return is(r, dWorkload, syntheticModes...)
		case is(r, dSource, "trace-ids"):
			return is(r, dWorkload, textTraces...)
		case is(r, dSource, "hash-ids"):
			if is(r, dWorkload, "replay-agentic") && b && is(r, dBackend, "openai-images") {
				return false // an image generation has no conversation
			}
			return is(r, dWorkload, "replay-mooncake", "replay-agentic")
		case is(r, dSource, "images"):
			if !is(r, dWorkload, imageTraces...) {
				return false
			}
		default: // text, sharegpt, sharegpt_pre
			if is(r, dWorkload, append(imageTraces, "replay-mooncake", "replay-agentic")...) {
				return false
			}
		}
	}
	if b && is(r, dBackend, "openai-images") {
		if (w && !is(r, dWorkload, "replay-alibaba-lora")) || (s && !is(r, dSource, "images")) {
			return false
		}
	}
	if w && is(r, dWorkload, "replay-alibaba-lora") && b && !is(r, dBackend, "openai-images") {
		return false
	}
	return true
}

// validSendOrDry: the values that need traffic, and those that need a dry
// run, are not in one case, nor with the other value of dDryRun (a
// repeated run sends).
func validSendOrDry(r []int) bool {
	needSend := (set(r, dExport) && is(r, dExport, "parquet", "benchmark-report", "both-json")) ||
		(set(r, dTelemetry) && is(r, dTelemetry, "otlp", "gpu-spec")) ||
		(set(r, dExperiment) && is(r, dExperiment, "repeat2"))
	needDry := (set(r, dExport) && is(r, dExport, "both-dry-run")) || (set(r, dTelemetry) && is(r, dTelemetry, "otlp-dry-run"))
	if set(r, dDryRun) {
		needSend = needSend || is(r, dDryRun, "send")
		needDry = needDry || is(r, dDryRun, "dry-run")
	}
	return !(needSend && needDry)
}

// matrixCase is one generated combination.
type matrixCase struct {
	row  []int
	name string
}

func (c matrixCase) v(d int) string { return matrixDims[d].values[c.row[d]] }

// matrixCases generates the cases: first the full product of workload ×
// backend × prompt source where valid (as seeds, their other dimensions
// chosen to cover pairs), then greedy pairwise rows until every allowed
// pair is covered.
func matrixCases(t testing.TB) ([]matrixCase, testenv.Pairwise) {
	sizes := make([]int, len(matrixDims))
	for i, d := range matrixDims {
		sizes[i] = len(d.values)
	}
	var seeds [][]int
	for w := range sizes[dWorkload] {
		for b := range sizes[dBackend] {
			for s := range sizes[dSource] {
				row := make([]int, len(sizes))
				for i := range row {
					row[i] = testenv.Free
				}
				row[dWorkload], row[dBackend], row[dSource] = w, b, s
				if validCase(row) {
					seeds = append(seeds, row)
				}
			}
		}
	}
	seeds = append(seeds, extraSeeds()...)
	p := testenv.Pairwise{Sizes: sizes, Valid: validCase, Seeds: seeds}
	rows, unc := p.Generate()
	if len(unc) > 0 {
		t.Fatalf("the validity function allows pairs no valid case holds: %v", unc)
	}
	cases := make([]matrixCase, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r))
		for d, v := range r {
			parts[d] = matrixDims[d].values[v]
		}
		cases[i] = matrixCase{row: r, name: fmt.Sprintf("%03d_%s", i, strings.Join(parts, ","))}
	}
	return cases, p
}

// knownBugs are cases that fail for a bug found by the matrix and left to
// another part of the project; the case runs, and its failure is logged
// instead of failing the test. Keyed by the part of the case name after
// its number. Remove an entry once its fix is merged.
var knownBugs = map[string]string{}

const replayData = "../../pkg/replay/testdata/"

// The matrix's tokenizer: a byte-level BPE trained on the ShareGPT
// fixtures, the synthetic vocabulary's words and the built-in server's
// answer token (" tok": a session's re-sent answers count as generated),
// with few enough merges that words and tokens differ.
var (
	matrixTokOnce sync.Once
	matrixTokJSON []byte
	matrixTok     *tokenizer.Tokenizer
	matrixTokErr  error
)

func matrixTokenizerJSON() ([]byte, *tokenizer.Tokenizer, error) {
	matrixTokOnce.Do(func() {
		var corpus strings.Builder
		for _, f := range []string{"testdata/sharegpt.json", "testdata/sharegpt_pre.json", "testdata/sharegpt_multiturn.json"} {
			b, err := os.ReadFile(f)
			if err != nil {
				matrixTokErr = err
				return
			}
			corpus.Write(b)
		}
		corpus.WriteString(strings.Repeat("tok tok tok ", 200))
		matrixTokJSON = testenv.TrainBPE(corpus.String(), 120)
		matrixTok, matrixTokErr = tokenizer.Parse("matrix tokenizer", matrixTokJSON)
	})
	return matrixTokJSON, matrixTok, matrixTokErr
}

func matrixTokenizer(t testing.TB) *tokenizer.Tokenizer {
	_, tk, err := matrixTokenizerJSON()
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// matrixTokenizerPath writes the matrix's tokenizer.json into dir.
func matrixTokenizerPath(dir string) string {
	b, _, _ := matrixTokenizerJSON()
	p := filepath.Join(dir, "tokenizer.json")
	os.WriteFile(p, b, 0o644)
	return p
}

// matrixTokensPerImage is what an image counts for, on both sides.
const matrixTokensPerImage = 16

// matrixBatch is the pooling backends' --batch-size; matrixAudioSeconds
// the transcriptions' --audio-seconds.
const (
	matrixBatch        = 3
	matrixAudioSeconds = 0.5
)

// poolingPrompt is the prompt tokens the built-in server counts for a
// batch of input tokens split over matrixBatch inputs (BatchLens): their
// sum, and for a query (rerank, score) the query again with every
// document.
func poolingPrompt(backend string, input int) int {
	if backend == "vllm-rerank" || backend == "vllm-score" {
		lens := client.BatchLens(input, matrixBatch+1)
		n := (matrixBatch - 1) * lens[0]
		for _, l := range lens {
			n += l
		}
		return n
	}
	n := 0
	for _, l := range client.BatchLens(input, matrixBatch) {
		n += l
	}
	return n
}

// workloadArgs are the flags of each workload: a handful of requests due
// within a fraction of a second.
var workloadArgs = map[string][]string{
	"poisson":             {"--mode", "poisson", "--request-rate", "200", "--num-prompts", "6"},
	"poisson-bursty":      {"--mode", "poisson", "--request-rate", "200", "--burstiness", "0.5", "--num-prompts", "6"},
	"poisson-inf":         {"--mode", "poisson", "--request-rate", "inf", "--num-prompts", "6"},
	"replay-fineserve":    {"--mode", "replay", "--request-trace-csv", "testdata/fineserve_Dense_30to100B_head200.csv", "--time-scale", "1000", "--num-prompts", "6"},
	"replay-azure2023":    {"--mode", "replay", "--trace", replayData + "azure2023_code.csv.gz", "--time-scale", "100", "--num-prompts", "6"},
	"replay-azure-lmm":    {"--mode", "replay", "--trace", replayData + "azure_lmm_2025.csv", "--time-scale", "100", "--image-size", "64x64", "--tokens-per-image", strconv.Itoa(matrixTokensPerImage)},
	"replay-mooncake":     {"--mode", "replay", "--trace", replayData + "mooncake_synthetic_trace.jsonl.gz", "--time-scale", "1000", "--num-prompts", "4"},
	"replay-burstgpt":     {"--mode", "replay", "--trace", replayData + "burstgpt_models.csv", "--time-scale", "1000", "--num-prompts", "6"},
	"replay-alibaba-lora": {"--mode", "replay", "--trace", replayData + "alibaba_lora_head300.csv", "--time-scale", "1000000", "--num-prompts", "5"},
	"replay-generic": {"--mode", "replay", "--trace", "testdata/generic.csv", "--timestamp-column", "created_ms", "--timestamp-unit", "ms",
		"--input-length-column", "prompt_len", "--output-length-column", "gen_len", "--model-column", "model_name", "--time-scale", "20", "--num-prompts", "6"},
	"parametric-class-nb": {"--mode", "parametric", "--model-class", "Dense_lt10B", "--time-scale", "100", "--num-prompts", "8"},
	"parametric-gamma":    {"--mode", "parametric", "--gamma-params-csv", "../../datasets/Parametric/gamma/Dense_10to30B_gamma_5min.csv", "--time-scale", "100", "--num-prompts", "6"},
	// ServeGen clients: 50 req/s together, sped up 10 times.
	"parametric-servegen": {"--mode", "parametric", "--servegen", "testdata/servegen", "--num-clients", "2", "--time-scale", "10", "--num-prompts", "8"},
	// Three conversations of a WEKA trace (3 steps each), Poisson starts,
	// idle gaps capped.
	"replay-agentic": {"--mode", "replay", "--trace", agenticSamples + "weka/trace_0026.json", "--conversations", "3", "--request-rate", "200",
		"--time-scale", "1000", "--max-think-time", "2ms"},
}

var sourceArgs = map[string][]string{
	"random-ids":   {"--random-input-len", "24", "--random-output-len", "4", "--random-range-ratio", "0.5"},
	"trace-ids":    nil,
	"text":         {"--prompt-format", "text", "--random-input-len", "24", "--random-output-len", "4"},
	"sharegpt":     {"--dataset-path", "testdata/sharegpt.json"},
	"sharegpt_pre": {"--dataset-name", "sharegpt_pre", "--dataset-path", "testdata/sharegpt_pre.json"},
	"hash-ids":     nil,
	"images":       nil,
}

// caseRun is what one case's run left.
type caseRun struct {
	code           int
	stdout, stderr string
	dir            string
	scraped        string // the metrics page, read while the run was going
}

func (r *caseRun) path(name string) string { return filepath.Join(r.dir, name) }

// resent reports whether a prompt-size difference d is that of a
// session's later turn re-sending structured answers or tool calls: their
// text is JSON, which the built-in server does not count in words the way
// it counted the tokens it generated (nor does a real server re-tokenize
// them exactly). Such turns are held to a quarter of the target.
func resent(c matrixCase, rec resultRecord, d int) bool {
	return rec.Turn > 1 && (c.v(dAnswer) == "tools" || c.v(dAnswer) == "format") && 4*max(d, -d) <= rec.InputLen
}

// checkCaseAnswers checks the answers' figures against the records: the
// reasoning tokens, tool calls and checked answers of the completed
// requests add up to the summary's, and each answer option shows.
func checkCaseAnswers(c matrixCase, sum *metrics.Summary, recs []resultRecord, fail func(string, ...any)) {
	var reasoning, calls, checked, valid int64
	for _, rec := range recs {
		if c.v(dAnswer) == "parts" && rec.ErrorClass == record.ErrProtocol {
			fail("record %d: content parts not read: %s", rec.Index, rec.Error)
		}
		if !rec.OK() {
			continue
		}
		if c.v(dAnswer) == "parts" && c.v(dStream) == "stream" && rec.CompletionTokens > 1 && rec.FirstToken == 0 {
			fail("record %d: %d completion tokens and no TTFT: the content parts were not read", rec.Index, rec.CompletionTokens)
		}
		reasoning += int64(rec.ReasoningTokens)
		calls += int64(rec.ToolCalls)
		if rec.Structured != metrics.StructuredUnchecked {
			checked++
		}
		if rec.Structured == metrics.StructuredValid {
			valid++
		}
	}
	a := sum.Answers
	if a == nil {
		if !is(c.row, dAnswer, "plain", "chain", "parts") && sum.Completed > 0 && (c.v(dAnswer) != "tools" || calls > 0) {
			fail("no answers figures with %s (%d completed)", c.v(dAnswer), sum.Completed)
		}
		if reasoning+calls+checked > 0 {
			fail("records with reasoning %d, tool calls %d, checked %d, and no answers figures", reasoning, calls, checked)
		}
		return
	}
	if a.ReasoningTokens != reasoning || a.ToolCalls != calls || a.StructuredChecked != checked {
		fail("answers %+v; the records: reasoning %d, tool calls %d, checked %d", a, reasoning, calls, checked)
	}
	switch c.v(dAnswer) {
	case "plain", "chain", "parts": // a chain asks nothing of the answer (its turns failing would fail the run); parts are only the content's form
		fail("answers %+v without an answer option", a)
	case "reasoning":
		if a.ReasoningRequests == 0 || sum.TTFO.Empty() && sum.Completed > a.ReasoningRequests {
			fail("reasoning: %+v, TTFO %+v", a, sum.TTFO)
		}
	case "format":
		if checked != sum.Completed || c.v(dEOS) == "ignore-eos" && valid != checked {
			fail("format: %d checked, %d valid, %d completed (%s)", checked, valid, sum.Completed, c.v(dEOS))
		}
	}
}

// checkCasePhases checks the HTTP phases: with --http-phases every record
// has them (http_reused and http_wait_ms; http_connect_ms exactly when not
// reused) and the summary's http_phases counts the records and their new
// connections; without it none has them and the summary no section. With
// --prewarm-connections 64 no request but those to a closed port dials.
// With --request-id-prefix m- every record has request_id m-INDEX (and
// -TURN for a session's turn), all different, else none has one.
func checkCasePhases(c matrixCase, sum *metrics.Summary, recs []resultRecord, fail func(string, ...any)) {
	timed := c.v(dConns) != "dial"
	ids := c.v(dConns) == "phases" || c.v(dConns) == "prewarm-auto"
	seen := map[string]bool{}
	var n, fresh int64
	for _, rec := range recs {
		if want := client.RequestID("m-", rec.Index, rec.Turn); ids && (rec.RequestID != want || seen[want]) || !ids && rec.RequestID != "" {
			fail("record %d: request_id %q with %s (twice: %v)", rec.Index, rec.RequestID, c.v(dConns), seen[rec.RequestID])
		}
		seen[rec.RequestID] = true
		has := rec.has("http_reused")
		if has != timed || has != rec.has("http_wait_ms") || has && rec.HTTP.Reused == rec.has("http_connect_ms") {
			fail("record %d: http_reused %v, http_connect_ms %v, http_wait_ms %v with %s", rec.Index, has, rec.has("http_connect_ms"), rec.has("http_wait_ms"), c.v(dConns))
			continue
		}
		if !has {
			continue
		}
		n++
		if !rec.HTTP.Reused {
			fresh++
			if c.v(dConns) == "prewarm" && rec.ErrorClass != "connect" {
				fail("record %d: a new connection (connect %v ms) after --prewarm-connections 64", rec.Index, inMS(rec.HTTP.Connect))
			}
		}
	}
	p := sum.HTTPPhases
	switch {
	case !timed || n == 0:
		if p != nil {
			fail("http_phases %+v with %s and %d records timed", p, c.v(dConns), n)
		}
	case p == nil:
		fail("no http_phases with %s and %d records timed", c.v(dConns), n)
	case p.Requests != n || p.NewConnections != fresh || p.Reused != n-fresh:
		fail("http_phases %+v; the records: %d timed, %d on a new connection", p, n, fresh)
	}
}

// caseArgs builds the command line of c against port, writing outputs to
// dir. It also returns the dry run of the same schedule (no outputs).
func caseArgs(c matrixCase, ports []int, dir string) (args, dry []string) {
	common := []string{"--model", "mock-model", "--seed", "7", "--disable-tqdm"}
	if len(ports) == 1 {
		common = append(common, "--host", "127.0.0.1", "--port", strconv.Itoa(ports[0]))
	} else {
		urls := make([]string, len(ports))
		for i, p := range ports {
			urls[i] = urlOf(p)
		}
		bal := map[string]string{"two-least": "least-inflight", "two-session": "session"}[c.v(dEndpoints)]
		if bal == "" {
			bal = "round-robin"
		}
		common = append(common, "--base-url", strings.Join(urls, ","), "--balance", bal)
	}
	sched := append(slices.Clone(workloadArgs[c.v(dWorkload)]), "--backend", c.v(dBackend))
	sched = append(sched, sourceArgs[c.v(dSource)]...)
	switch {
	case slices.Contains(batchBackends, c.v(dBackend)):
		sched = append(sched, "--batch-size", strconv.Itoa(matrixBatch))
	case c.v(dBackend) == "openai-transcriptions":
		sched = append(sched, "--audio-seconds", strconv.FormatFloat(matrixAudioSeconds, 'f', -1, 64))
	case c.v(dBackend) == "kserve-generate": // Triton's counts, asked for
		sched = append(sched, "--extra-request-body", `{"return_num_input_tokens":true,"return_num_output_tokens":true}`)
	}
	if c.v(dShard) == "shard1of2" {
		sched = append(sched, "--shard", "1/2")
	}
	if c.v(dModelMap) == "map-hash" {
		sched = append(sched, "--model-map", "hash", "--served-models", "m-a,m-b")
	}
	if c.v(dDuration) == "duration" {
		sched = append(sched, "--duration", "50ms")
	}
	if c.v(dTarget) == "stages" {
		// Poisson: the rate moves from 100 to 400 req/s over 1 s;
		// replay and parametric: twice the speed.
		if sched[1] == "poisson" {
			if i := slices.Index(sched, "--request-rate"); i >= 0 {
				sched = slices.Delete(sched, i, i+2)
			}
			sched = append(sched, "--stages", "0s:100,1s:400")
		} else {
			sched = append(sched, "--stages", "0s:2,20s:2")
		}
	}
	if c.v(dPrefix) == "prefix" {
		sched = append(sched, "--prefix-len", "10", "--num-prefixes", "2")
	}
	if c.v(dLengths) == "lengths-mix" {
		sched = append(sched, "--lengths", "12,3:1;30±0.2,5:1")
	}
	if c.v(dUnits) == "tokenizer" {
		sched = append(sched, "--tokenizer", matrixTokenizerPath(dir))
	}
	switch c.v(dMedia) {
	case "images":
		sched = append(sched, "--images-per-request", "2", "--image-format", "jpeg", "--image-size", "60x40")
	case "audio":
		sched = append(sched, "--audio-seconds", "0.3")
	}
	if c.v(dCancel) == "cancel" {
		// Half the requests, cut between 1 µs (before any answer) and
		// 3 ms after their send: some are cut, some end first.
		sched = append(sched, "--cancel-share", "0.5", "--cancel-after", "uniform:1us:3ms")
	}
	switch c.v(dTurns) {
	case "3":
		sched = append(sched, "--turns", "3", "--think-time", "exp:5ms", "--turn-input-len", "uniform:4:12")
	case "multi-turn":
		sched = append(sched, "--multi-turn", "--think-time", "exp:5ms")
		if c.v(dSource) == "sharegpt" {
			sched = append(sched, "--dataset-path", "testdata/sharegpt_multiturn.json") // conversations of 2–4 exchanges
		}
	}
	args = append(slices.Clone(common), sched...)
	args = append(args, "--warmup-requests", c.v(dWarmup))
	switch c.v(dAnswer) {
	case "reasoning":
		args = append(args, "--reasoning-effort", "low", "--keep-reasoning-in-history")
		if c.v(dBackend) == "openai-chat" {
			args = append(args, "--chat-template-kwargs", `{"enable_thinking": true}`)
		}
	case "chain":
		args = append(args, "--responses-chain")
	case "tools":
		args = append(args, "--tools", "testdata/tools.json", "--tool-choice", "auto", "--tool-result-len", "4")
	case "format":
		args = append(args, "--response-format", "json_object")
	}
	switch c.v(dConcurrency) {
	case "max2":
		args = append(args, "--max-concurrency", "2")
	case "max2-ramp":
		args = append(args, "--max-concurrency", "2", "--max-concurrency-ramp", "20ms")
	}
	if c.v(dRetries) == "retry-503" {
		args = append(args, "--retries", "3")
	}
	switch c.v(dConns) {
	case "phases":
		args = append(args, "--http-phases", "--request-id-prefix", "m-")
	case "prewarm":
		args = append(args, "--prewarm-connections", "64", "--http-phases")
	case "prewarm-auto":
		args = append(args, "--prewarm-connections", "auto", "--http-phases", "--request-id-prefix", "m-")
	}
	if c.v(dStartAt) == "start-at" {
		args = append(args, "--start-at", time.Now().Add(400*time.Millisecond).Format(time.RFC3339Nano))
	}
	if c.v(dStream) == "no-stream" {
		args = append(args, "--disable-stream")
	}
	if c.v(dEOS) == "eos" {
		args = append(args, "--disable-ignore-eos")
	}
	if c.v(dDryRun) == "dry-run" {
		args = append(args, "--dry-run")
	}
	if c.v(dScheduleOut) == "schedule-out" {
		args = append(args, "--schedule-out", filepath.Join(dir, "schedule.csv"))
	}
	args = append(args, "--results-jsonl", filepath.Join(dir, "results.jsonl"))
	switch c.v(dSummary) {
	case "summary-json":
		args = append(args, "--summary-json", filepath.Join(dir, "summary.json"))
	case "output-file":
		args = append(args, "--output-file", filepath.Join(dir, "summary.jsonl"))
	case "output-stdout":
		args = append(args, "--output-file", "-")
	}
	if c.v(dHTML) == "html" {
		args = append(args, "--report-html", filepath.Join(dir, "report.html"))
	}
	switch c.v(dExperiment) {
	case "threshold":
		args = append(args, "--threshold", "completed>=0")
	case "steady":
		args = append(args, "--steady-state", "auto")
	}
	args = append(args, exportArgs(c, dir)...)
	if c.v(dMetrics) == "metrics" {
		args = append(args, "--metrics-addr", "127.0.0.1:0") // its URL is logged: no --quiet
	} else {
		args = append(args, "--quiet")
	}
	dry = append(slices.Clone(common), sched...)
	dry = append(dry, "--dry-run", "--quiet")
	return args, dry
}

// drySchedule runs args (a dry run) writing the schedule to path, and
// returns its rows by index, its bytes and its columns by name.
func drySchedule(t testing.TB, args []string, path string) (map[int64][]string, []byte, map[string]int) {
	t.Helper()
	mustRun(t, append(slices.Clone(args), "--schedule-out", path)...)
	b := testenv.ReadFile(t, path)
	col, rows := testenv.ReadCSV(t, path)
	bal := ""
	if i := slices.Index(args, "--balance"); i >= 0 {
		bal = args[i+1]
	}
	head := arrival.CSVColumns{Endpoint: bal != "" && bal != "least-inflight", Cancel: slices.Contains(args, "--cancel-share")}.Header()
	if len(col) != len(strings.Split(head, ",")) {
		t.Fatalf("dry run schedule header %v, want %s", col, head)
	}
	byIndex := map[int64][]string{}
	for _, r := range rows {
		i, err := strconv.ParseInt(r[col["index"]], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		byIndex[i] = r
	}
	return byIndex, b, col
}

// TestMatrix runs every generated case in the long suite (make test-long:
// every pair of values of two dimensions) and, in make test, its light
// form: the cases that hold every value of every dimension at least once
// (lightCases). Run one with
// go test -race -run 'TestMatrix/003_' ./cmd/fineserve-gen.
func TestMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("the matrix runs a hundred short benchmarks")
	}
	cases, p := matrixCases(t)
	rows := make([][]int, len(cases))
	for i, c := range cases {
		rows[i] = c.row
	}
	if m := p.Missing(rows); len(m) > 0 {
		t.Fatalf("pairs not covered: %v", m)
	}
	form := "every pair"
	if !testenv.Long() {
		cases, form = lightCases(cases), "every value (the light form; "+testenv.LongEnv+"=1 for every pair)"
	}
	start := time.Now()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runMatrixCase(t, c)
		})
	}
	t.Logf("matrix: %d cases (%d dimensions, %s) in %v", len(cases), len(matrixDims), form, time.Since(start).Round(time.Millisecond))
}

// lightCases is the matrix's light form: the cases, in order, that hold a
// value of some dimension no case before them holds — every value of every
// dimension at least once, with the case numbers of the full matrix.
func lightCases(cases []matrixCase) []matrixCase {
	seen := make([]map[int]bool, len(matrixDims))
	for d := range seen {
		seen[d] = map[int]bool{}
	}
	var out []matrixCase
	for _, c := range cases {
		fresh := false
		for d, v := range c.row {
			if !seen[d][v] {
				seen[d][v], fresh = true, true
			}
		}
		if fresh {
			out = append(out, c)
		}
	}
	return out
}

// TestMatrixLightFormHoldsEveryValue: the light form of the matrix (make
// test) still runs every value of every dimension.
func TestMatrixLightFormHoldsEveryValue(t *testing.T) {
	cases, _ := matrixCases(t)
	light := lightCases(cases)
	for d, dim := range matrixDims {
		for v, name := range dim.values {
			if !slices.ContainsFunc(light, func(c matrixCase) bool { return c.row[d] == v }) {
				t.Errorf("dimension %s: value %s in no case of the light form", dim.name, name)
			}
		}
	}
	t.Logf("light form: %d of %d cases", len(light), len(cases))
}

// runMatrixCase runs c and checks everything it can: a bug listed in
// knownBugs turns its failures into log lines.
func runMatrixCase(t *testing.T, c matrixCase) {
	key := c.name[strings.Index(c.name, "_")+1:]
	if why, ok := knownBugs[key]; ok {
		rec := &recorder{TB: t}
		done := make(chan struct{})
		go func() { // a Fatal of the recorder ends this goroutine only
			defer close(done)
			checkMatrixCase(rec, t, c)
		}()
		<-done
		if rec.failed {
			t.Logf("known bug (%s); the case failed as expected:\n%s", why, rec.log.String())
		} else {
			t.Errorf("known bug (%s) no longer shows: remove its knownBugs entry", why)
		}
		return
	}
	checkMatrixCase(t, t, c)
}

// recorder collects a case's failures instead of reporting them.
type recorder struct {
	testing.TB
	failed bool
	log    strings.Builder
}

func (r *recorder) Errorf(format string, a ...any) {
	r.failed = true
	fmt.Fprintf(&r.log, format+"\n", a...)
}

func (r *recorder) Error(a ...any) { r.Errorf("%s", fmt.Sprint(a...)) }
func (r *recorder) Fatal(a ...any) { r.Fatalf("%s", fmt.Sprint(a...)) }
func (r *recorder) Fail()          { r.failed = true }
func (r *recorder) FailNow()       { r.failed = true; runtime.Goexit() }
func (r *recorder) Failed() bool   { return r.failed }

func (r *recorder) Fatalf(format string, a ...any) {
	r.Errorf(format, a...)
	runtime.Goexit()
}

// checkMatrixCase runs c: t reports failures, tt owns temporary
// directories and cleanups.
func checkMatrixCase(t testing.TB, tt *testing.T, c matrixCase) {
	cfg := mockserver.Config{Models: []string{"mock-model", "m-a", "m-b"}, EOSMeanTokens: 3}
	if c.v(dWorkload) == "replay-azure-lmm" {
		cfg.TokensPerImage = matrixTokensPerImage // else Qwen2-VL's count of the image's size, as the client's
	}
	if c.v(dUnits) == "tokenizer" {
		cfg.Tokenizer = matrixTokenizer(t)
	}
	switch c.v(dAnswer) {
	case "reasoning":
		cfg.Reasoning = mockserver.ReasoningConfig{Tokens: mockserver.LengthDist{Min: 1, Max: 2}}
	case "tools":
		cfg.Tools = mockserver.ToolConfig{CallShare: 0.5}
	case "chain":
		cfg.ResponseStore = mockserver.DefaultResponseStore
	case "parts":
		cfg.ContentParts = true
	}
	if c.v(dRetries) == "retry-503" {
		cfg.Faults = mockserver.FaultConfig{Seed: 5, Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP503, Rate: 0.25}}}
	}
	telemetryServer(c, &cfg)
	var stderr testenv.SyncBuffer
	r := &caseRun{dir: tt.TempDir()}
	var scrapeOnce sync.Mutex
	scrape := func() {
		// While the run goes (its first measured request reached the
		// server), read the generator's metrics page once.
		if c.v(dMetrics) != "metrics" {
			return
		}
		scrapeOnce.Lock()
		defer scrapeOnce.Unlock()
		if r.scraped != "" {
			return
		}
		_, url, ok := strings.Cut(stderr.String(), "metrics: serving ")
		if !ok {
			return // the warm-up
		}
		url, _, _ = strings.Cut(url, "\n")
		resp, err := http.Get(url)
		if err != nil {
			r.scraped = "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r.scraped = string(b)
	}
	// The case's servers: one, two, or one and a closed port (nil).
	ep := startCaseEndpoints(tt, c, cfg, scrape)
	ports := ep.ports
	args, dryArgs := caseArgs(c, ports, r.dir)

	// The schedule facts, from a dry run of the same schedule flags (and,
	// for a shard, of the whole schedule: the summary's hash is its).
	dryRows, dryCSV, dryCol := drySchedule(t, dryArgs, filepath.Join(r.dir, "dry.csv"))
	wholeCSV := dryCSV
	if c.v(dShard) != "whole" {
		_, wholeCSV, _ = drySchedule(t, slices.DeleteFunc(slices.Clone(dryArgs), func(s string) bool { return s == "--shard" || s == "1/2" }), filepath.Join(r.dir, "whole.csv"))
	}

	if c.v(dStartAt) == "start-at" {
		args, _ = caseArgs(c, ports, r.dir) // --start-at counts from now, not from before the dry runs
	}
	tel := startCaseTelemetry(tt, c, ports)
	args = append(args, tel.args...)
	runArgs := args // the checks below that run again (another shard) take the flags
	if c.v(dSettings) == "run-file" {
		runArgs = runFileArgs(t, args, r.path("run.yaml"))
	}
	var stdout bytes.Buffer
	r.code = dispatch(context.Background(), runArgs, &stdout, &stderr)
	r.stdout, r.stderr = stdout.String(), stderr.String()
	fail := func(format string, a ...any) {
		t.Errorf("%s\nargs: %q\nstderr:\n%s", fmt.Sprintf(format, a...), args, r.stderr)
	}

	if c.v(dScheduleOut) == "schedule-out" {
		b, err := os.ReadFile(r.path("schedule.csv"))
		if err != nil {
			fail("--schedule-out: %v", err)
		} else if !bytes.Equal(b, dryCSV) {
			fail("--schedule-out differs from the dry run's schedule")
		} else if first, _, _ := strings.Cut(string(b), "\n"); first != (arrival.CSVColumns{Endpoint: endpointColumn(c), Cancel: c.v(dCancel) == "cancel"}).Header() {
			fail("--schedule-out header %q with %s, %s", first, c.v(dCancel), c.v(dEndpoints))
		}
	}
	if c.v(dDryRun) == "dry-run" {
		if r.code != exitOK {
			fail("dry run: exit %d", r.code)
		}
		if n := ep.requests(); n != 0 {
			fail("a dry run sent %d requests", n)
		}
		for _, f := range []string{"results.jsonl", "summary.json", "summary.jsonl", "report.html", "results.parquet", "benchmark-report.yaml", "benchmark-report.json"} {
			if _, err := os.Stat(r.path(f)); err == nil {
				fail("a dry run wrote %s", f)
			}
		}
		tel.checkDry(fail)
		return
	}

	sum := readCaseSummary(t, c, r, fail)
	switch {
	case sum == nil:
		return
	case r.code == exitBudget && sum.Failed > 0 && (c.v(dRetries) == "retry-503" || c.v(dEndpoints) == "two-dead"):
		// Retries ran out for a request, or a request went to the dead
		// endpoint: a failure, judged by the budget.
	case r.code != exitOK:
		fail("exit %d, want 0", r.code)
		return
	}
	// Schedule facts against the dry run.
	agentic := c.v(dWorkload) == "replay-agentic" // a conversation is a session
	sessions := c.v(dTurns) != "1" || agentic
	requests := sum.Scheduled // one request per arrival, or the turns sent
	if sessions {
		ss := sum.Sessions
		if ss == nil || ss.Started != sum.Scheduled || ss.TurnsSent < ss.Started || ss.TurnsSent > 4*ss.Started ||
			ss.Completed+ss.EndedError+ss.EndedLength+ss.EndedInterrupt+ss.EndedCancelled != ss.Started ||
			len(sum.PerTurn) == 0 && ss.EndedCancelled < ss.Started || ss.EndedCancelled > sum.Cancelled {
			fail("sessions section %+v for %d arrivals, per_turn %+v", ss, sum.Scheduled, sum.PerTurn)
			return
		}
		requests = ss.TurnsSent
		if ag := sum.Agents; agentic && (ag == nil || ag.Conversations != ss.Started || ag.Requests != ss.TurnsSent ||
			ag.Requests != sum.Completed+sum.Failed+sum.Cancelled || ag.CompletionS.Max <= 0) {
			fail("agents section %+v, sessions %+v", ag, ss)
		}
	} else if sum.Sessions != nil || sum.PerTurn != nil {
		fail("a run without sessions has a sessions section")
	}
	if sum.Scheduled != int64(len(dryRows)) || sum.NotSent != 0 || sum.Completed+sum.Failed+sum.Cancelled != requests {
		fail("scheduled %d (dry run %d), completed %d + failed %d + cancelled %d, not sent %d, requests %d", sum.Scheduled, len(dryRows), sum.Completed, sum.Failed, sum.Cancelled, sum.NotSent, requests)
	}
	// Cancellation: only requests planned to be cut are cancelled, none
	// without --cancel-share; a cancelled request is no error.
	planned := int64(0)
	for _, row := range dryRows {
		if c.v(dCancel) == "cancel" && mustFloat(t, row[dryCol[arrival.CancelColumn]]) > 0 {
			planned++
		}
	}
	if c.v(dCancel) == "no-cancel" && (sum.Cancelled != 0 || sum.CancelledFirstToken != 0) ||
		!sessions && sum.Cancelled > planned || sum.CancelledFirstToken > sum.Cancelled || sum.ErrorsByClass["canceled"] != 0 {
		fail("cancelled %d (%d after a first token) with %s, %d planned; errors %v", sum.Cancelled, sum.CancelledFirstToken, c.v(dCancel), planned, sum.ErrorsByClass)
	}
	last := 0.0
	for _, row := range dryRows {
		last = math.Max(last, mustFloat(t, row[1]))
	}
	if math.Abs(sum.ScheduleSpan-last) > 1e-6 {
		fail("schedule span %v s, dry run %v s", sum.ScheduleSpan, last)
	}
	h := sha256.Sum256(wholeCSV)
	if got := sum.ScheduleHash; got != "sha256:"+hex.EncodeToString(h[:]) {
		fail("schedule hash %q, dry run sha256:%x", got, h)
	}
	if c.v(dConcurrency) != "open" && sum.MaxInFlight > 2 {
		fail("max in flight %d with --max-concurrency 2", sum.MaxInFlight)
	}
	if c.v(dStartAt) == "start-at" && sum.StartAt == "" {
		fail("no start_at in the summary of a --start-at run")
	}

	// Records: one per finished request, each as scheduled.
	recs := readRecords(t, r.path("results.jsonl"))
	tel.check(c, sum, recs, fail)
	if int64(len(recs)) != sum.Completed+sum.Failed+sum.Cancelled {
		fail("%d records, %d completed + %d failed + %d cancelled", len(recs), sum.Completed, sum.Failed, sum.Cancelled)
	}
	var cancelled int64
	seen := map[int64]bool{}
	turnSeen := map[[2]int64]bool{}
	var inTokens, outTokens, retries, images int64
	textual := sessions || c.v(dBackend) == "openai-chat" || !is(c.row, dSource, "random-ids", "trace-ids", "hash-ids")
	for _, rec := range recs {
		row, ok := dryRows[rec.Index]
		turn := [2]int64{rec.Index, int64(rec.Turn)}
		if !ok || turnSeen[turn] || (sessions && (rec.Turn < 1 || rec.Turn > 4)) || (!sessions && rec.Turn != 0) {
			fail("record index %d turn %d: not in the schedule, or twice", rec.Index, rec.Turn)
			return
		}
		seen[rec.Index], turnSeen[turn] = true, true
		retries += int64(rec.Retries)
		if want := mustInt(t, row[5]); rec.Images != want && c.v(dBackend) != "openai-images" {
			fail("record %d: %d images, schedule %d", rec.Index, rec.Images, want)
		}
		// A session's later turns are due after the previous answer, and
		// carry its history: their prompt size is checked against the
		// server's count below.
		if rec.Turn <= 1 && math.Abs(rec.Scheduled.Seconds()-mustFloat(t, row[1])) > 1e-6 {
			fail("record %d scheduled at %v s, schedule says %s", rec.Index, rec.Scheduled.Seconds(), row[1])
		}
		if want := mustInt(t, row[2]); c.v(dBackend) == "openai-transcriptions" {
			if rec.InputLen != client.AudioTokens(matrixAudioSeconds) { // the audio is the input
				fail("record %d input_len %d, want the audio's %d tokens", rec.Index, rec.InputLen, client.AudioTokens(matrixAudioSeconds))
			}
		} else if rec.Turn <= 1 && rec.InputLen != want && c.v(dBackend) != "openai-images" {
			fail("record %d input_len %d, schedule %d", rec.Index, rec.InputLen, want)
		}
		wantModel := row[4]
		if wantModel == "" {
			wantModel = "mock-model"
		}
		if rec.Model != wantModel {
			fail("record %d model %q, schedule %q", rec.Index, rec.Model, wantModel)
		}
		if c.v(dModelMap) == "map-hash" && rec.Model != "m-a" && rec.Model != "m-b" {
			fail("record %d model %q with --model-map hash over m-a,m-b", rec.Index, rec.Model)
		}
		if c.v(dCancel) == "cancel" && rec.Turn <= 1 && math.Abs(inMS(rec.CancelAfter)-1000*mustFloat(t, row[dryCol[arrival.CancelColumn]])) > 1e-3 ||
			c.v(dCancel) == "no-cancel" && rec.CancelAfter != 0 {
			fail("record %d: cancel_after_ms %v, schedule %v", rec.Index, inMS(rec.CancelAfter), row)
		}
		if rec.has("outcome") {
			if !rec.Cancelled || rec.CancelAfter <= 0 || rec.ErrorClass != "" {
				fail("record %d: outcome %v, cancel_after_ms %v, error_class %q", rec.Index, rec.json.Get("outcome"), inMS(rec.CancelAfter), rec.ErrorClass)
			}
			cancelled++
			continue
		}
		if dead := ep.dead(rec.Endpoint); rec.ErrorClass != "" || dead {
			if dead && rec.ErrorClass != "connect" || !dead && (c.v(dRetries) != "retry-503" || rec.ErrorClass != "http_5xx") {
				fail("record %d failed (endpoint %v): %s %s", rec.Index, rec.Endpoint, rec.ErrorClass, rec.Error)
			}
			continue
		}
		if rec.Status != 200 {
			fail("record %d status %d without an error", rec.Index, rec.Status)
		}
		images += int64(rec.Images) // the summary counts the completed requests' input images
		// Prompt sizes: token-id prompts are exact; text prompts are sized
		// in words, which the built-in server counts as one token each, so
		// they are exact against it too (images count --tokens-per-image
		// each, on top of the text, also exact). Image generations report
		// no usage.
		if rec.Sent < rec.Scheduled-time.Microsecond {
			fail("record %d sent at %v s, before its time %v s", rec.Index, rec.Sent.Seconds(), rec.Scheduled.Seconds())
		}
		if c.v(dBackend) == "openai-images" {
			continue
		}
		pooling := slices.Contains(batchBackends, c.v(dBackend))
		// Output: exactly the length asked for with ignore_eos; at most it
		// (and at least one token) when the server may stop early; none
		// for a pooling batch (and no first token either: no TTFT).
		if pooling {
			if rec.CompletionTokens != 0 || rec.FirstToken != 0 {
				fail("record %d: a pooling batch with %d completion tokens, ttft %v", rec.Index, rec.CompletionTokens, rec.TTFT())
			}
		} else if agentic && rec.Turn > 1 {
			// A conversation's later step asks for the trace's output.
			if rec.CompletionTokens != rec.OutputLen && (c.v(dEOS) == "ignore-eos" || rec.CompletionTokens > rec.OutputLen || rec.CompletionTokens < 1) {
				fail("record %d step %d: %d completion tokens, output_len %d (%s)", rec.Index, rec.Turn, rec.CompletionTokens, rec.OutputLen, c.v(dEOS))
			}
		} else if c.v(dTurns) == "multi-turn" && rec.Turn > 1 {
			// A conversation's later turn asks for its reply's length.
			if rec.CompletionTokens < 1 || rec.CompletionTokens > rec.OutputLen {
				fail("record %d turn %d: %d completion tokens, output_len %d", rec.Index, rec.Turn, rec.CompletionTokens, rec.OutputLen)
			}
		} else if want := mustInt(t, row[3]); rec.CompletionTokens != want && (c.v(dEOS) == "ignore-eos" && rec.ToolCalls == 0 || rec.CompletionTokens > want || rec.CompletionTokens < 1) {
			// (An answer that is a tool call ends with the call.)
			fail("record %d: %d completion tokens, output_len %d (%s)", rec.Index, rec.CompletionTokens, want, c.v(dEOS))
		}
		outTokens += int64(rec.CompletionTokens)
		inTokens += int64(rec.InputLen) // the summary's input tokens are the targets (the server's count equals them, below)
		// The server's count: a pooling batch's inputs (a query again with
		// each document), else the target — a transcription's is its
		// audio's tokens, 50 a second on both sides (only a stream's usage
		// counts them).
		want := rec.InputLen
		switch {
		case pooling:
			want = poolingPrompt(c.v(dBackend), rec.InputLen)
		}
		if rec.PromptTokens < 0 {
			if c.v(dBackend) != "openai-transcriptions" || c.v(dStream) == "stream" {
				fail("record %d: no prompt_tokens from the server", rec.Index)
			}
		} else if d := rec.PromptTokens - want; d != 0 && !resent(c, rec, d) {
			fail("record %d: prompt tokens %d, target %d (text prompt: %v)", rec.Index, rec.PromptTokens, want, textual)
		}
	}
	if cancelled != sum.Cancelled {
		fail("%d records say cancelled, the summary %d", cancelled, sum.Cancelled)
	}
	checkCaseAnswers(c, sum, recs, fail)
	checkCasePooling(c, sum, recs, fail)
	checkCasePhases(c, sum, recs, fail)
	if c.v(dBackend) != "openai-images" && (sum.TotalInputTokens != inTokens || sum.TotalOutputTokens != outTokens) {
		fail("summary tokens in %d out %d; the records' sums %d, %d", sum.TotalInputTokens, sum.TotalOutputTokens, inTokens, outTokens)
	}
	// The built-in server counts every answer's output (usage, meta_info,
	// the num_output_tokens asked for) but a whole transcription's, whose
	// words the client counts: the summary says whose count it was.
	if whole := c.v(dBackend) == "openai-transcriptions" && c.v(dStream) != "stream"; whole != (len(sum.OutputTokensFrom) > 0) && sum.Completed > 0 {
		fail("output tokens counted by the client: %v (%d completed; a whole transcription: %v)", sum.OutputTokensFrom, sum.Completed, whole)
	}
	if sum.Retries != retries || sum.Images != images {
		fail("summary retries %d images %d; the records' sums %d, %d", sum.Retries, sum.Images, retries, images)
	}
	if sum.Backend != c.v(dBackend) || sum.Mode != workloadArgs[c.v(dWorkload)][1] {
		fail("summary backend %q mode %q", sum.Backend, sum.Mode)
	}
	// The unit text prompts were sized in.
	if want := map[bool]string{true: "tokenizer", false: "words"}[c.v(dUnits) == "tokenizer"]; is(c.row, dSource, "text", "sharegpt", "sharegpt_pre") && sum.PromptUnits != want {
		fail("summary prompt_units %q, want %q", sum.PromptUnits, want)
	}
	if c.v(dShard) == "shard1of2" {
		for i := range seen {
			if i%2 != 1 {
				fail("shard 1/2 sent index %d", i)
			}
		}
	}
	// Each server saw each request sent to it once per attempt, plus the
	// warm-up (each live endpoint's own); the dead endpoint none.
	checkCaseServers(t, c, ep, sum, recs, fail)
	checkCaseEndpoints(t, c, ep, r, sum, recs, dryRows, dryCol, fail)

	if c.v(dHTML) == "html" {
		b, err := os.ReadFile(r.path("report.html"))
		if err != nil || !bytes.Contains(b, []byte("<svg")) {
			fail("--report-html: %v, %d bytes, svg %v", err, len(b), bytes.Contains(b, []byte("<svg")))
		}
		if has := bytes.Contains(b, []byte(`data-plot="agent_lanes"`)); has != (c.v(dWorkload) == "replay-agentic" && sum.Completed > 0) {
			fail("--report-html: agentic swim-lanes %v with %s", has, c.v(dWorkload))
		}
		if has := bytes.Contains(b, []byte(`<table id="http-phases">`)); has != (sum.HTTPPhases != nil) {
			fail("--report-html: HTTP phases table %v, the summary's http_phases %v (%s)", has, sum.HTTPPhases != nil, c.v(dConns))
		}
		// Several endpoints: a table listing every one, by URL.
		if has := bytes.Contains(b, []byte(`<table id="endpoints">`)); has != (len(ports) > 1) {
			fail("--report-html: endpoints table %v with %s", has, c.v(dEndpoints))
		}
		for i, p := range ports {
			if len(ports) > 1 && !bytes.Contains(b, []byte(urlOf(p))) {
				fail("--report-html does not list endpoint %d", i)
			}
		}
	}
	checkCaseExports(t, c, r, sum, fail)
	if c.v(dMetrics) == "metrics" && (!strings.Contains(r.scraped, "fineserve_gen_requests_in_flight") || !strings.Contains(r.scraped, "fineserve_gen_requests_cancelled_total")) {
		fail("--metrics-addr: no metrics page read during the run: %.200q", r.scraped)
	}
	// The windows count the cancelled requests the summary counts.
	var winCut int64
	for _, w := range sum.Windows {
		winCut += w.Cancelled
	}
	if len(sum.Windows) > 0 && winCut != sum.Cancelled {
		fail("windows count %d cancelled, the summary %d", winCut, sum.Cancelled)
	}
	// Load control: each option's summary section, and its effect on the
	// schedule.
	if got := sum.TargetRate != nil; got != (c.v(dTarget) == "stages") {
		fail("target_rate %+v with %s", sum.TargetRate, c.v(dTarget))
	}
	if sum.SharedPrefix == nil && c.v(dPrefix) == "prefix" || sum.SharedPrefix != nil && c.v(dPrefix) == "no-prefix" {
		fail("shared_prefix %+v with %s", sum.SharedPrefix, c.v(dPrefix))
	}
	if c.v(dLengths) == "lengths-mix" {
		var n int64
		for _, e := range sum.LengthMix {
			n += e.Scheduled
		}
		if len(sum.LengthMix) != 2 || n == 0 {
			fail("length_mix %+v", sum.LengthMix)
		}
		// Media come on top of a mode's lengths: their tokens are off.
		media := map[string]int{"images": 2 * prompt.DefaultTokensPerImage(60, 40), "audio": prompt.AudioTokens(0.3, 0)}[c.v(dMedia)]
		for _, row := range dryRows {
			if in := mustInt(t, row[2]) - media; in != 12 && (in < 24 || in > 36) {
				fail("--lengths: input_len %d outside the mixture", in)
			}
		}
	} else if sum.LengthMix != nil {
		fail("length_mix without --lengths")
	}
	checkCaseShardMerge(t, c, args, r, sum, int64(bytes.Count(wholeCSV, []byte("\n"))-1), fail)
	checkCaseExperiment(t, c, ports, r, sum, dryCSV, fail)
}

// checkCasePooling checks a pooling run's section against its records:
// matrixBatch inputs and as many vectors or scores for every completed
// request; no token figure at all. Other runs have no pooling section.
func checkCasePooling(c matrixCase, sum *metrics.Summary, recs []resultRecord, fail func(string, ...any)) {
	if !slices.Contains(batchBackends, c.v(dBackend)) {
		if sum.Pooling != nil {
			fail("pooling section %+v with %s", sum.Pooling, c.v(dBackend))
		}
		return
	}
	var completed int64
	for _, rec := range recs {
		if rec.OK() {
			completed++
		}
	}
	p := sum.Pooling
	switch {
	case completed == 0:
		if p != nil {
			fail("pooling section %+v without a completed request", p)
		}
	case p == nil || p.Inputs != matrixBatch*completed || p.Returned != p.Inputs || p.BatchSize != matrixBatch:
		fail("pooling section %+v for %d completed requests of %d inputs", p, completed, matrixBatch)
	}
	if !sum.TTFT.Empty() || !sum.ITL.Empty() || !sum.TPOT.Empty() {
		fail("a pooling run with token figures: TTFT %+v ITL %+v TPOT %+v", sum.TTFT, sum.ITL, sum.TPOT)
	}
}

// readCaseSummary reads the summary from where the case asked for it.
func readCaseSummary(t testing.TB, c matrixCase, r *caseRun, fail func(string, ...any)) *metrics.Summary {
	var b []byte
	switch c.v(dSummary) {
	case "summary-json":
		var err error
		if b, err = os.ReadFile(r.path("summary.json")); err != nil {
			fail("--summary-json: %v", err)
			return nil
		}
	case "output-file", "output-stdout":
		text := r.stdout
		if c.v(dSummary) == "output-file" {
			f, err := os.ReadFile(r.path("summary.jsonl"))
			if err != nil {
				fail("--output-file: %v", err)
				return nil
			}
			text = string(f)
			if n := strings.Count(text, "\n"); n != 1 {
				fail("--output-file has %d lines, want one JSON line", n)
			}
		}
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "{") {
				b = slices.Clone(sc.Bytes())
			}
		}
		if b == nil {
			fail("--output-file %s: no JSON line in:\n%s", c.v(dSummary), text)
			return nil
		}
	}
	var s metrics.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		fail("summary: %v", err)
		return nil
	}
	return &s
}

func mustFloat(t testing.TB, s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return f
}

func mustInt(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestMatrixCasesCoverThePlan checks the generated plan itself: every
// valid workload × backend × source combination is a case, no case is
// invalid, and the case list is the same on every run (case names are
// stable, so one can be run alone).
func TestMatrixCasesCoverThePlan(t *testing.T) {
	cases, _ := matrixCases(t)
	again, _ := matrixCases(t)
	if len(cases) != len(again) {
		t.Fatal("two generations differ")
	}
	product := map[[3]int]bool{}
	for i, c := range cases {
		if c.name != again[i].name {
			t.Fatalf("case %d: %s, then %s", i, c.name, again[i].name)
		}
		if !validCase(c.row) {
			t.Errorf("invalid case %s", c.name)
		}
		product[[3]int{c.row[dWorkload], c.row[dBackend], c.row[dSource]}] = true
	}
	want := 0
	for w := range matrixDims[dWorkload].values {
		for b := range matrixDims[dBackend].values {
			for s := range matrixDims[dSource].values {
				row := make([]int, len(matrixDims))
				for i := range row {
					row[i] = testenv.Free
				}
				row[dWorkload], row[dBackend], row[dSource] = w, b, s
				if validCase(row) {
					want++
					if !product[[3]int{w, b, s}] {
						t.Errorf("no case for %s × %s × %s", matrixDims[dWorkload].values[w], matrixDims[dBackend].values[b], matrixDims[dSource].values[s])
					}
				}
			}
		}
	}
	// Every workload and every source has at least one valid combination.
	for _, d := range []int{dWorkload, dBackend, dSource} {
		for v, name := range matrixDims[d].values {
			found := false
			for _, c := range cases {
				found = found || c.row[d] == v
			}
			if !found {
				t.Errorf("%s %s appears in no case", matrixDims[d].name, name)
			}
		}
	}
	t.Logf("%d cases, %d of them the valid workload × backend × source product", len(cases), want)
}

// TestMatrixInvalidCombinations: the combinations the matrix leaves out
// that the command can tell are wrong are refused before anything is
// sent, with exit 2 and a message naming the problem.
func TestMatrixInvalidCombinations(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"diffusion trace with a text backend", append(slices.Clone(workloadArgs["replay-alibaba-lora"]), "--backend", "vllm"), "--backend openai-images"},
		{"sharegpt_pre without a file", append(slices.Clone(workloadArgs["poisson"]), "--dataset-name", "sharegpt_pre"), "needs --dataset-path"},
		{"length mixture with a trace", append(slices.Clone(workloadArgs["replay-burstgpt"]), "--lengths", "12,3:1"), "--lengths applies to poisson and parametric mode"},
		{"ServeGen clients with a model class", append(slices.Clone(workloadArgs["parametric-servegen"]), "--model-class", "Dense_lt10B"), "--servegen and --model-class: choose one"},
		{"length mixture with a dataset", append(slices.Clone(workloadArgs["poisson"]), "--dataset-path", "testdata/sharegpt.json", "--lengths", "12,3:1"), "--lengths and --dataset-path: choose one"},
		{"stages with a request rate", append(slices.Clone(workloadArgs["poisson"]), "--stages", "1s:10"), "--stages and --request-rate: choose one"},
		{"tools with completions", append(slices.Clone(workloadArgs["poisson"]), "--backend", "vllm", "--tools", "testdata/tools.json"), "--tools: --backend vllm has no tool calls"},
		{"a response format with image generation", append(slices.Clone(workloadArgs["replay-alibaba-lora"]), "--backend", "openai-images", "--response-format", "json_object"), "--backend openai-images has no response format"},
		{"a chain without a Responses backend", append(slices.Clone(workloadArgs["poisson"]), "--backend", "openai-chat", "--turns", "3", "--responses-chain"), "--responses-chain: --backend openai-chat has no previous_response_id"},
		{"an agentic trace with image generation", append(slices.Clone(workloadArgs["replay-agentic"]), "--backend", "openai-images"), "--backend openai-images has no conversation"},
		{"an agentic trace with --turns", append(slices.Clone(workloadArgs["replay-agentic"]), "--turns", "3"), "an agentic trace's conversations are its sessions"},
		{"an agentic trace with media", append(slices.Clone(workloadArgs["replay-agentic"]), "--images-per-request", "1"), "an agentic trace's prompts are its hash ids"},
		{"a chain without sessions", append(slices.Clone(workloadArgs["poisson"]), "--backend", "openai-responses", "--responses-chain"), "--responses-chain chains a session's turns"},
		{"a batch size with completions", append(slices.Clone(workloadArgs["poisson"]), "--backend", "vllm", "--batch-size", "4"), "--batch-size: --backend vllm sends one prompt a request"},
		{"sessions of embeddings", append(slices.Clone(workloadArgs["poisson"]), "--backend", "openai-embeddings", "--turns", "3"), "--backend openai-embeddings has no conversation"},
		{"tools with rerank", append(slices.Clone(workloadArgs["poisson"]), "--backend", "vllm-rerank", "--tools", "testdata/tools.json"), "--backend vllm-rerank has no tool calls"},
		{"a chain over endpoints dealt round-robin", append(slices.Clone(workloadArgs["poisson"]), "--backend", "openai-responses", "--turns", "2", "--responses-chain",
			"--base-url", "http://127.0.0.1:9,http://127.0.0.1:10"), "--responses-chain with several endpoints needs --balance session"},
		{"media with image generation", append(slices.Clone(workloadArgs["replay-alibaba-lora"]), "--backend", "openai-images", "--images-per-request", "1"), "chat content parts"},
		{"media with the Responses API", append(slices.Clone(workloadArgs["poisson"]), "--backend", "openai-responses", "--audio-seconds", "1"), "chat content parts"},
		{"a huge image", append(slices.Clone(workloadArgs["poisson"]), "--images-per-request", "1", "--image-size", "100000x100000"), "--image-size"},
		{"a tokenizer the command cannot read", append(slices.Clone(workloadArgs["poisson"]), "--tokenizer", "testdata/tools.json"), "--tokenizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{})
			wantUsage(t, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--seed", "1", "--quiet"}, tc.args...), tc.want)
			if n := srv.Stats().Requests; n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}
