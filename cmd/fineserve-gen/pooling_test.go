package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/api"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// TestPoolingEndToEnd runs each batching backend from the command line
// against the built-in server: every request sends --batch-size inputs
// (the server answers each once, and counts what the records say), the
// summary has E2E, requests and input tokens per second and the pooling
// section, and no TTFT, TPOT or ITL key at all; the table says so.
func TestPoolingEndToEnd(t *testing.T) {
	for _, row := range []*api.Kind{api.Embeddings, api.Pooling, api.Rerank, api.Score} {
		backend := row.Name
		t.Run(backend, func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{MaxModelLen: 4096})
			r := mustRunTool(t, mockTarget(port, "--backend", backend, "--batch-size", "4", "--num-prompts", "12", "--request-rate", "400",
				"--random-input-len", "40", "--random-range-ratio", "0.5", "--random-output-len", "1", "--seed", "3", "--warmup-requests", "1")...)
			raw := testenv.ReadFile(t, r.path("summary.json"))
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(raw, &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"mean_ttft_ms", "p99_tpot_ms", "mean_itl_ms", "ttft_from_scheduled_mean_ms", "ttft_per_1k_prompt_tokens_mean_ms"} {
				if _, ok := keys[k]; ok {
					t.Errorf("summary has %s: a pooling run has no tokens (absent, not zero)", k)
				}
			}
			sum := r.summary(t)
			if sum.Completed != 12 || sum.Failed != 0 || sum.E2E.Empty() || !(sum.RequestThroughput > 0) || !(sum.InputThroughput > 0) {
				t.Fatalf("completed %d failed %d, E2E %+v, %v req/s, %v in tok/s\n%s", sum.Completed, sum.Failed, sum.E2E, sum.RequestThroughput, sum.InputThroughput, r.stderr)
			}
			p := sum.Pooling
			if p == nil || p.Measure != row.Measure.String() || p.Inputs != 48 || p.Returned != 48 || p.BatchSize != 4 ||
				(p.VectorDims == mockserver.DefaultPoolingDims) != (row.Measure == api.MeasureVectors) {
				t.Errorf("pooling section %+v", p)
			}
			if st := srv.Stats(); st.PooledInputs != 48+4 { // and the warm-up's
				t.Errorf("the server answered %d inputs, want 52", st.PooledInputs)
			}
			var in int64
			for _, rec := range readRecords(t, r.path("results.jsonl")) {
				in += int64(rec.InputLen)
				if rec.FirstToken != 0 || len(rec.itlMS()) > 0 || rec.CompletionTokens != 0 || rec.ErrorClass != "" {
					t.Errorf("record %d: ttft %v, itl %v, completion %d, error %s", rec.Index, rec.TTFT(), rec.itlMS(), rec.CompletionTokens, rec.Error)
				}
				// The server counts what was sent: the inputs' tokens, a
				// query counted with each of its documents.
				want := rec.InputLen
				if row.Measure == api.MeasureScores {
					lens := client.BatchLens(rec.InputLen, 5)
					want = 4*lens[0] + lens[1] + lens[2] + lens[3] + lens[4]
				}
				if rec.PromptTokens != want {
					t.Errorf("record %d: prompt tokens %v, want %d (input_len %d)", rec.Index, rec.PromptTokens, want, rec.InputLen)
				}
			}
			if in != sum.TotalInputTokens {
				t.Errorf("input tokens %d, the records' %d", sum.TotalInputTokens, in)
			}
			if !strings.Contains(r.stdout, "Total "+row.Measure.String()+" returned:") || !strings.Contains(r.stdout, "not applicable: a batch of") || strings.Contains(r.stdout, "Mean TTFT") {
				t.Errorf("table:\n%s", r.stdout)
			}
		})
	}
}

// TestTranscriptionEndToEnd: openai-transcriptions from the command line,
// streamed and not: each request's input is its --audio-seconds, 50
// tokens a second as the server counts them, and the server answers its
// output length; a stream has TTFT and
// ITL, a whole answer its words as tokens.
func TestTranscriptionEndToEnd(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{ITL: time.Millisecond})
			args := mockTarget(port, "--backend", api.Transcriptions.Name, "--audio-seconds", "2.5", "--num-prompts", "6", "--request-rate", "300",
				"--random-input-len", "8", "--random-output-len", "5", "--seed", "2", "--warmup-requests", "0")
			if !stream {
				args = append(args, "--disable-stream")
			}
			r := mustRunTool(t, args...)
			sum := r.summary(t)
			if sum.Completed != 6 || sum.Pooling != nil || sum.TotalInputTokens != 6*125 || sum.TTFT.Empty() || (stream && sum.ITL.Empty()) {
				t.Fatalf("completed %d, pooling %+v, TTFT %+v, ITL %+v\n%s", sum.Completed, sum.Pooling, sum.TTFT, sum.ITL, r.stderr)
			}
			for _, rec := range readRecords(t, r.path("results.jsonl")) {
				if rec.CompletionTokens != rec.OutputLen || rec.FirstToken == 0 || rec.InputLen != 125 || (stream && rec.PromptTokens < 0) || (rec.PromptTokens >= 0 && rec.PromptTokens != 125) {
					t.Errorf("record %d: completion %d of %d, ttft %v, prompt %v (want 125: 2.5 s)", rec.Index, rec.CompletionTokens, rec.OutputLen, rec.TTFT(), rec.PromptTokens)
				}
			}
			if st := srv.Stats(); st.AudioSeconds != 6*2.5 {
				t.Errorf("the server transcribed %v s, want 15", st.AudioSeconds)
			}
		})
	}
}

// TestPoolingBadInput: --batch-size and --audio-seconds out of range, or
// with a backend that has none, exit 2 naming the rows that have them,
// before anything is sent; an answer with the wrong number of embeddings
// fails its request as a protocol error that says so.
func TestPoolingBadInput(t *testing.T) {
	srv, port := mocktest.Start(t, mockserver.Config{})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "openai-embeddings", "--batch-size", "2049"}, "--batch-size 2049: want 1 to 2048"},
		{[]string{"--backend", "vllm-rerank", "--batch-size", "-1"}, "--batch-size -1"},
		{[]string{"--backend", "vllm-score", "--batch-size", "0"}, "--batch-size 0: want 1 to 2048"},
		{[]string{"--backend", "openai-transcriptions", "--audio-seconds", "0"}, "--audio-seconds 0: --backend openai-transcriptions sends the clip as its file: want more than 0"},
		{[]string{"--backend", "vllm", "--batch-size", "8"}, "--batch-size: --backend vllm sends one prompt a request (use --backend openai-embeddings or vllm-pooling or vllm-rerank or vllm-score)"},
		{[]string{"--backend", "openai-transcriptions", "--audio-seconds", "601"}, "--audio-seconds: audio length 601 s: want at most 600 s"},
		{[]string{"--backend", "openai-transcriptions", "--audio-seconds", "-2"}, "--audio-seconds: audio length -2 s: want ≥ 0"},
		{[]string{"--backend", "openai-embeddings", "--audio-seconds", "5", "--batch-size", "4"}, "not openai-embeddings); --audio-seconds alone is also the file of --backend openai-transcriptions"},
	} {
		wantUsage(t, append(baseArgs(port, 2), tc.args...), tc.want)
	}
	// A clip out of range is one problem, said once.
	if _, _, errb := runCmd(append(baseArgs(port, 2), "--backend", "openai-transcriptions", "--audio-seconds", "700")...); strings.Count(errb, "--audio-seconds") != 1 {
		t.Errorf("--audio-seconds 700 with transcriptions: %q, want one problem", errb)
	}
	if n := srv.Stats().Requests; n != 0 {
		t.Errorf("%d requests sent", n)
	}

	// A server answering two embeddings for every batch of three.
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"data":[{"id":"mock-model"}]}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[{"embedding":[1,2]},{"embedding":[3,4]}],"usage":{"prompt_tokens":1}}`)
	}))
	defer wrong.Close()
	u, _ := url.Parse(wrong.URL)
	p, _ := strconv.Atoi(u.Port())
	r := runTool(t, append(baseArgs(p, 3), "--backend", "openai-embeddings", "--batch-size", "3")...)
	if r.code == exitOK || r.code == exitUsage {
		t.Errorf("exit %d, want a run whose every request failed\n%s", r.code, r.stderr)
	}
	recs := readRecords(t, r.path("results.jsonl"))
	for _, rec := range recs {
		if rec.ErrorClass != record.ErrProtocol || !strings.Contains(rec.Error, "the answer holds 2 vectors for the 3 inputs sent") {
			t.Errorf("record %d: %s %q", rec.Index, rec.ErrorClass, rec.Error)
		}
	}
	if len(recs) != 3 {
		t.Errorf("%d records, want 3", len(recs))
	}
}

// TestPoolingDropsTraceImages: a trace's input images go nowhere with a
// pooling backend (its row sends none), so none is counted: the records
// say 0 images and the summary has no input images.
func TestPoolingDropsTraceImages(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{})
	r := mustRunTool(t, mockTarget(port, "--backend", "openai-embeddings", "--batch-size", "2", "--mode", "replay", "--trace", replayData+"azure_lmm_2025.csv",
		"--time-scale", "100", "--num-prompts", "6", "--seed", "1", "--warmup-requests", "0", "--quiet")...)
	sum := r.summary(t)
	if sum.Completed != 6 || sum.Images != 0 || sum.Pooling == nil || sum.Pooling.Inputs != 12 {
		t.Errorf("completed %d, images %d, pooling %+v", sum.Completed, sum.Images, sum.Pooling)
	}
	for _, rec := range readRecords(t, r.path("results.jsonl")) {
		if rec.Images != 0 {
			t.Errorf("record %d: %d images", rec.Index, rec.Images)
		}
	}
}

// TestRerankEndpoints: vLLM's rerank aliases are reached with --endpoint,
// the same API.
func TestRerankEndpoints(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	_, port := mocktest.Start(t, mockserver.Config{OnRequest: func(path string, _ []byte) { mu.Lock(); paths[path]++; mu.Unlock() }})
	for _, ep := range []string{"/v1/rerank", "/v2/rerank"} {
		r := mustRunTool(t, append(baseArgs(port, 3), "--backend", "vllm-rerank", "--batch-size", "5", "--endpoint", ep)...)
		if s := r.summary(t); s.Completed != 3 || s.Pooling == nil || s.Pooling.Returned != 15 {
			t.Errorf("%s: completed %d, pooling %+v", ep, s.Completed, s.Pooling)
		}
	}
	if paths["/v1/rerank"] != 3 || paths["/v2/rerank"] != 3 || paths["/rerank"] != 0 {
		t.Errorf("paths %v", paths)
	}
}

// TestPoolingReport: a pooling run's HTML report draws its E2E and says
// its token plots do not apply.
func TestPoolingReport(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{})
	html := filepath.Join(t.TempDir(), "r.html")
	mustRunTool(t, append(baseArgs(port, 4), "--backend", "vllm-score", "--batch-size", "2", "--report-html", html)...)
	b := string(testenv.ReadFile(t, html))
	if strings.Count(b, "not applicable: scores have no tokens") != 3 || !strings.Contains(b, "<svg") {
		t.Errorf("report: %d token plots said not to apply (want TTFT, ITL, TPOT), svg %v", strings.Count(b, "not applicable: scores have no tokens"), strings.Contains(b, "<svg"))
	}
}
