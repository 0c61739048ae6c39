package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fineserve-gen/fineserve-gen/internal/exposed"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/pkg/tokenizer"
)

// defaultMockMaxModelLen is the built-in server's default context length,
// a long-context model's (128 Ki tokens).
const defaultMockMaxModelLen = 128 << 10

func mockServerCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("mock-server")
	var cfg mockserver.Config
	host := fs.String("host", "127.0.0.1", "address to bind (loopback unless told otherwise)")
	port := fs.Int("port", 8000, "port to listen on (0: any free port)")
	models := fs.StringSlice("model", []string{"mock-model"}, "served model name(s); the first is the default")
	fs.Var(millisValue(&cfg.TTFT), "ttft-ms", "time to first token, in ms")
	fs.Var(millisValue(&cfg.TTFTJitter), "jitter-ms", "add to every request's time to first token a draw uniform in ±this many ms (from --seed and the request's number): a noisy server")
	fs.Var(millisValue(&cfg.ITL), "itl-ms", "inter-token latency, in ms")
	fs.Float64Var(&cfg.ITLJitter, "itl-jitter", 0, "spread each inter-token gap: ITL × a factor uniform in [1−J, 1+J] per token (mean kept), drawn from --seed, the request's number and the token's; 0: none, at most 1")
	fs.Var(microsValue(&cfg.PrefillPerToken), "prefill-us-per-token", "added to the time to first token per prompt token, in µs")
	fs.IntVar(&cfg.MaxNumSeqs, "max-num-seqs", 0, "requests generating at once; more wait in a queue (0: unbounded)")
	fs.IntVar(&cfg.MaxModelLen, "max-model-len", defaultMockMaxModelLen, "context length: reported as max_model_len at /v1/models; prompt+max_tokens above it get vLLM's 400 (0: no limit, none reported)")
	fs.IntVar(&cfg.EOSMeanTokens, "eos-mean-tokens", 0, "without ignore_eos, stop after a geometric number of tokens of this mean (0: always max_tokens)")
	fs.IntVar(&cfg.TokensPerImage, "tokens-per-image", 0, "prompt tokens counted per image part of a chat message (0: Qwen2-VL's count for the image's size, read from its data: URL, as a run counts its images: 326 at 512x512)")
	fs.Float64Var(&cfg.AudioTokensPerSecond, "audio-tokens-per-second", 0, "prompt tokens counted per second of a chat message's WAV audio part, plus 2 a clip (0: Qwen2-Audio's 25)")
	cfg.Images = mockserver.ImageConfig{Base: mockserver.DefaultImageBase, PerStep: mockserver.DefaultImagePerStep, PerImage: mockserver.DefaultImagePerImage, DefaultSteps: mockserver.DefaultImageSteps}
	fs.Var(millisValue(&cfg.Images.Base), "image-base-ms", "/v1/images/generations: base latency of a request, in ms (plus per step and per image)")
	fs.Var(millisValue(&cfg.Images.PerStep), "image-step-ms", "/v1/images/generations: latency per inference step, in ms")
	fs.Var(millisValue(&cfg.Images.PerImage), "image-per-image-ms", "/v1/images/generations: latency per image generated (n), in ms")
	fs.IntVar(&cfg.Images.DefaultSteps, "image-default-steps", cfg.Images.DefaultSteps, "/v1/images/generations: steps of a request without num_inference_steps")
	tokenizerPath := fs.String("tokenizer", "", "count prompt text in this Hugging Face tokenizer.json's tokens (a file or a directory holding one) instead of in words, as a run's --tokenizer does")
	cfg.Pooling = mockserver.PoolingConfig{Base: mockserver.DefaultPoolingBase, PerToken: mockserver.DefaultPoolingPerToken, Dims: mockserver.DefaultPoolingDims}
	fs.Var(millisValue(&cfg.Pooling.Base), "pooling-base-ms", "/v1/embeddings, /pooling, /score, /rerank: base latency of a request, in ms (plus per prompt token)")
	fs.Var(microsValue(&cfg.Pooling.PerToken), "pooling-us-per-token", "/v1/embeddings, /pooling, /score, /rerank: latency per prompt token of a batch, in µs")
	fs.IntVar(&cfg.Pooling.Dims, "pooling-dims", cfg.Pooling.Dims, "length of the vectors /v1/embeddings and /pooling answer")
	prefixCache := fs.Bool("prefix-cache", false, "count prefix-cache hits (vLLM-like, 16-token blocks) and report them as cached_tokens")
	fs.IntVar(&cfg.PrefixCache.Blocks, "prefix-cache-blocks", mockserver.DefaultPrefixCacheBlocks, "prefix cache capacity in 16-token blocks (least recently used evicted)")
	portFile := fs.String("port-file", "", "write the port listened on to this file once ready")
	cpuProfile := fs.String("cpu-profile", "", "write a CPU profile of the server until it stops")
	arrivalLog := fs.String("arrival-log", "", "write the instant each generation request arrives to this CSV file (seq,arrival_unix_ns), for measuring a client's send lag from the server's side")
	pace := fs.String("pace", "default", "how streamed chunks (completions, chat, the Responses API, Messages, /generate, generate_stream) are timed: default (chunk i at the slot's start + TTFT + i·ITL) or exact (chunk i at the request's arrival + TTFT + i·ITL, absolute, each written and flushed on its own: the truth a client is measured against)")
	chunkLog := fs.String("chunk-log", "", "write each streamed request's arrival (and, on Linux, when the kernel received it), first and last token write and its inter-write gaps to this JSONL file (the server's truth of TTFT and ITL)")
	faults := fs.StringArray("fault", nil, "inject a failure into a share of generation requests: KIND[:RATE], repeatable; kinds: "+
		strings.Join(mockserver.FaultKinds, ", ")+" (RATE: share of requests, default 1)")
	fs.Uint64Var(&cfg.Faults.Seed, "fault-seed", 0, "which requests fault is a function of this seed and the request's arrival number")
	fs.Var(durationValue{&cfg.Faults.Delay}, "fault-delay", "slow_headers: wait this long before the status line (default 5s)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "which requests get which reasoning length, tool call, invalid answer and jitter (--jitter-ms, --itl-jitter) is a function of this seed and the request's arrival number")
	reasoningTokens := fs.String("reasoning-tokens", "0", "answer chat and /v1/responses requests as a reasoning model: each streams N|uniform:A:B reasoning tokens first (paced like the answer: the first at the TTFT, then one every ITL), within max_tokens; 0: no reasoning")
	fs.StringVar(&cfg.Reasoning.Field, "reasoning-field", mockserver.ReasoningFieldReasoning, "the chat delta/message field of the reasoning: reasoning (vLLM ≥ 0.16), reasoning_content (≤ 0.11.0) or both (0.11.1–0.15)")
	usageReasoning := fs.Bool("usage-reasoning-tokens", true, "with --reasoning-tokens, report usage.completion_tokens_details.reasoning_tokens (vLLM since mid-2026; =false for earlier builds)")
	fs.Float64Var(&cfg.Tools.CallShare, "tool-call-share", 0.5, "share of chat requests with tools and tool_choice auto answered with a tool call (required and a named function: all; none: none)")
	fs.Float64Var(&cfg.Tools.InvalidShare, "tool-call-invalid-share", 0, "share of tool calls whose arguments are not valid JSON")
	fs.BoolVar(&cfg.Tools.NoAutoToolChoice, "no-auto-tool-choice", false, "answer tool_choice auto (sent, or implied by tools) with vLLM's 400, as a server without --enable-auto-tool-choice")
	fs.Float64Var(&cfg.Structured.InvalidShare, "schema-invalid-share", 0, "share of response_format json_schema/json_object answers the schema rejects (a required property left out) or that do not parse")
	fs.IntVar(&cfg.GPUs, "gpus", 0, "serve DCGM-like telemetry of this many GPUs at "+mockserver.GPUMetricsPath+": utilisation following the busy slots, power and SM clock following utilisation, memory the KV cache (0: none)")
	fs.IntVar(&cfg.SpecDecode.K, "spec-decode", 0, "emulate speculative decoding with this many draft tokens a step, exporting vLLM's spec-decode counters on /metrics (0: none)")
	fs.Float64Var(&cfg.SpecDecode.Accept, "spec-accept", 0.7, "with --spec-decode, the probability each draft token is accepted (in turn, until the first rejected; seeded by --seed)")
	fs.Int64Var(&cfg.MaxBodyBytes, "max-body-bytes", mockserver.DefaultMaxBodyBytes, "largest request body read; a larger one (or one holding more JSON values than a prompt within --max-model-len can) gets a 400")
	fs.BoolVar(&cfg.ContentParts, "content-parts", false, "send a chat answer's content as an array of content parts ([{\"type\":\"text\",\"text\":…}], in each streamed delta and in a whole message), as servers that answer in several modalities do, not as a string")
	responsesStore := fs.Bool("responses-store", true, "keep /v1/responses answers (store true, the default) for previous_response_id, the least recently used of the last 10,000 (=false: none kept, an unknown id's 404, as vLLM without VLLM_ENABLE_RESPONSES_API_STORE)")
	if err := parseFlags(fs, args); err != nil {
		if err == pflag.ErrHelp {
			fmt.Fprintf(stdout, "Usage: fineserve-gen mock-server [flags]\n\n%s", fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	cfg.Models = *models
	if !*prefixCache {
		cfg.PrefixCache.Blocks = 0
	}
	var errs []error
	if d, err := mockserver.ParseLengthDist(*reasoningTokens); err != nil {
		errs = append(errs, fmt.Errorf("--reasoning-tokens: %w", err))
	} else {
		cfg.Reasoning.Tokens = d
	}
	cfg.Reasoning.NoUsageDetails = !*usageReasoning
	if *responsesStore {
		cfg.ResponseStore = mockserver.DefaultResponseStore
	}
	if err := cfg.Reasoning.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--reasoning-field: %w", err))
	}
	for _, sh := range []struct {
		name string
		f    float64
	}{{"--tool-call-share", cfg.Tools.CallShare}, {"--tool-call-invalid-share", cfg.Tools.InvalidShare}, {"--schema-invalid-share", cfg.Structured.InvalidShare}} {
		if !(sh.f >= 0 && sh.f <= 1) {
			errs = append(errs, fmt.Errorf("%s %g: want a share in [0, 1]", sh.name, sh.f))
		}
	}
	if p, err := mockserver.ParsePace(*pace); err != nil {
		errs = append(errs, fmt.Errorf("--pace: %w", err))
	} else {
		cfg.Pace = p
	}
	for _, spec := range *faults {
		f, err := mockserver.ParseFault(spec)
		if err != nil {
			errs = append(errs, fmt.Errorf("--fault: %w", err))
			continue
		}
		cfg.Faults.Faults = append(cfg.Faults.Faults, f)
	}
	if err := cfg.Faults.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--fault: %w", err))
	}
	if *tokenizerPath != "" {
		if tk, err := tokenizer.Load(*tokenizerPath); err != nil {
			errs = append(errs, fmt.Errorf("--tokenizer: %w", err))
		} else {
			cfg.Tokenizer = tk
		}
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	var arrivals *os.File
	if *arrivalLog != "" {
		f, err := os.Create(*arrivalLog)
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen mock-server: --arrival-log: %v\n", err)
			return exitFailure
		}
		arrivals = f
		cfg.Arrivals = mockserver.NewArrivalLog(f, 0)
	}
	var chunks *os.File
	if *chunkLog != "" {
		f, err := os.Create(*chunkLog)
		if err != nil {
			fmt.Fprintf(stderr, "fineserve-gen mock-server: --chunk-log: %v\n", err)
			if arrivals != nil {
				cfg.Arrivals.Close()
				arrivals.Close()
			}
			return exitFailure
		}
		chunks = f
		cfg.Chunks = mockserver.NewChunkLog(f, 0)
	}
	code := serveMock(ctx, cfg, *host, *port, *portFile, *cpuProfile, stderr)
	if chunks != nil && !closeLog(stderr, "--chunk-log", *chunkLog, "chunk log", cfg.Chunks, chunks) {
		code = max(code, exitFailure)
	}
	if arrivals != nil && !closeLog(stderr, "--arrival-log", *arrivalLog, "arrival log", cfg.Arrivals, arrivals) {
		code = max(code, exitFailure)
	}
	return code
}

// closeLog flushes a log the server wrote (--chunk-log, --arrival-log) and
// closes its file f; it reports a failure of either on stderr, naming the
// flag and path, and returns false.
func closeLog(stderr io.Writer, flag, path, what string, log io.Closer, f *os.File) bool {
	err := log.Close()
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", what, cerr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %s %s: %v\n", flag, path, err)
		return false
	}
	return true
}

// serveMock serves cfg until ctx is done and returns the exit code.
func serveMock(ctx context.Context, cfg mockserver.Config, host string, port int, portFile, cpuProfile string, stderr io.Writer) int {
	srv, err := mockserver.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitFailure
	}
	addr := ln.Addr().(*net.TCPAddr)
	exposed.Warn(stderr, "mock-server --host "+host, addr)
	if portFile != "" {
		if err := os.WriteFile(portFile, []byte(strconv.Itoa(addr.Port)+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
			return exitFailure
		}
	}
	fmt.Fprintf(stderr, "mock-server: serving %s on http://%s (ttft %v, itl %v, max-num-seqs %d)\n",
		strings.Join(cfg.Models, ","), addr, cfg.TTFT, cfg.ITL, cfg.MaxNumSeqs)
	if len(cfg.Faults.Faults) > 0 {
		fmt.Fprintf(stderr, "mock-server: injecting faults %v\n", cfg.Faults)
	}
	if cfg.Reasoning.Tokens.Max > 0 {
		fmt.Fprintf(stderr, "mock-server: reasoning model: %v reasoning tokens per chat request, in %q\n", cfg.Reasoning.Tokens, cfg.Reasoning.Field)
	}
	stopProfiles, err := startProfiles(profiles{cpu: cpuProfile})
	if err != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", err)
		return exitUsage
	}
	serr := srv.Serve(ctx, ln)
	perr := stopProfiles()
	if perr != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", perr)
	}
	if serr != nil {
		fmt.Fprintf(stderr, "fineserve-gen mock-server: %v\n", serr)
		return exitFailure
	}
	st := srv.Stats()
	fmt.Fprintf(stderr, "mock-server: stopped after %v: %d requests, %d completed\n", st.Up.Round(time.Millisecond), st.Requests, st.Completed)
	if m := st.Model; m != (mockserver.ModelStats{}) {
		fmt.Fprintf(stderr, "mock-server: %d reasoning tokens; %d tool calls (%d with arguments not JSON); %d structured answers (%d invalid)\n",
			m.ReasoningTokens, m.ToolCalls, m.InvalidToolCalls, m.Structured, m.InvalidStructured)
	}
	if st.PooledInputs > 0 || st.AudioSeconds > 0 {
		fmt.Fprintf(stderr, "mock-server: %d pooling inputs answered; %.1f s of audio transcribed\n", st.PooledInputs, st.AudioSeconds)
	}
	if pc := srv.PrefixCacheStats(); pc.Requests > 0 {
		fmt.Fprintf(stderr, "mock-server: prefix cache: %d of %d prompt tokens cached (%d blocks held, %d evicted)\n", pc.CachedTokens, pc.PromptTokens, pc.Blocks, pc.Evicted)
	}
	if perr != nil {
		return exitFailure
	}
	return exitOK
}
