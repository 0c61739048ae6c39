package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestTimingOtherAPIsPacing runs anthropic-messages, sglang-generate and
// kserve-generate in every mode — Poisson, replay, parametric, each
// without and with sessions, and an agentic trace's replay — against the
// built-in server paced exactly (--pace exact: the first token due TTFT
// after the request arrives, each next one ITL later) with its chunk log,
// the server's truth of when each token went out: the median TTFT, TTFO
// (after the thinking tokens) and ITL of the records are within 1 ms of
// the truth's, and the usage the records hold is the server's: its
// prompt, completion, reasoning and tool-call counts summed over the run.
// (An agentic trace's replay idles through its think times: those run
// side by side.)
func TestTimingOtherAPIsPacing(t *testing.T) {
	// Within 1 ms of the server: the long suite runs it without the race
	// detector.
	testenv.SkipUnderRace(t)
	const ttft, itl = 20 * time.Millisecond, 4 * time.Millisecond // the chunk log times what the server did
	modes := []string{"poisson", "replay-fineserve", "parametric-class-nb"}
	for _, backend := range []string{"anthropic-messages", "sglang-generate", "kserve-generate"} {
		for _, mode := range append(slices.Clone(modes), "replay-agentic") {
			for _, turns := range []string{"1", "3"} {
				if mode == "replay-agentic" && turns != "1" {
					continue // the trace's conversations are the sessions
				}
				t.Run(fmt.Sprintf("%s/%s/turns%s", backend, mode, turns), func(t *testing.T) {
					if mode == "replay-agentic" {
						t.Parallel()
					}
					var chunks bytes.Buffer
					log := mockserver.NewChunkLog(&chunks, time.Hour)
					cfg := mockserver.Config{Models: []string{"mock-model"}, TTFT: ttft, ITL: itl, Pace: mockserver.PaceExact, Seed: 9, Chunks: log}
					args := append(slices.Clone(workloadArgs[mode]), "--backend", backend, "--seed", "3", "--warmup-requests", "0", "--quiet",
						"--request-id-prefix", "r-")
					if mode != "replay-agentic" {
						args = append(args, "--turns", turns)
					}
					if mode == "poisson" || mode == "parametric-class-nb" {
						args = append(args, "--random-input-len", "24", "--random-output-len", "6")
					}
					switch backend {
					case "anthropic-messages":
						cfg.Reasoning = mockserver.ReasoningConfig{Tokens: mockserver.LengthDist{Min: 2, Max: 2}}
						cfg.Tools = mockserver.ToolConfig{CallShare: 0.5}
						args = append(args, "--tools", "testdata/tools.json", "--tool-result-len", "4", "--reasoning-effort", "low")
					case "kserve-generate":
						args = append(args, "--extra-request-body", `{"return_num_input_tokens":true,"return_num_output_tokens":true}`)
					}
					srv, port, stop, err := mockserver.ServeNew(cfg)
					if err != nil {
						t.Fatal(err)
					}
					r := mustRunTool(t, mockTarget(port, args...)...)
					stop()
					if err := log.Close(); err != nil {
						t.Fatal(err)
					}
					truth, err := mockserver.ReadChunkLog(&chunks)
					if err != nil {
						t.Fatal(err)
					}
					checkAPIPacing(t, srv.Stats(), truth, readRecords(t, r.path("results.jsonl")), backend)
				})
			}
		}
	}
}

// checkAPIPacing checks a run's records against the server's chunk log
// and counts.
func checkAPIPacing(t *testing.T, st mockserver.Stats, truth []mockserver.ChunkRecord, recs []resultRecord, backend string) {
	t.Helper()
	byID := map[string]mockserver.ChunkRecord{}
	for _, c := range truth {
		byID[c.RequestID] = c
	}
	ms := func(ns int64) float64 { return inMS(time.Duration(ns)) }
	var ttfts, ttfos, itls []float64
	var prompt, completion, reasoning, calls int64
	for _, r := range recs {
		if r.ErrorClass != "" {
			t.Fatalf("record %d turn %d: %s %s", r.Index, r.Turn, r.ErrorClass, r.Error)
		}
		c, ok := byID[r.RequestID]
		itl := r.itlMS()
		if r.FirstToken == 0 || r.PromptTokens < 0 || !ok || len(itl) != len(c.GapsNS) {
			t.Fatalf("record %d turn %d (%q): ttft %v, prompt tokens %v, %d gaps; the server's log %v: %+v", r.Index, r.Turn, r.RequestID, r.TTFT(), r.PromptTokens, len(itl), ok, c)
		}
		ttfts = append(ttfts, math.Abs(inMS(r.TTFT())-ms(c.TTFTNS())))
		if r.has("ttfo_ms") && r.FirstOutput != 0 {
			at := c.TTFTNS()
			for _, g := range c.GapsNS[:r.ReasoningTokens] {
				at += g
			}
			ttfos = append(ttfos, math.Abs(inMS(r.TTFO())-ms(at)))
		}
		for i, g := range itl {
			itls = append(itls, math.Abs(g-ms(c.GapsNS[i])))
		}
		prompt += int64(r.PromptTokens)
		completion += int64(r.CompletionTokens)
		reasoning += int64(r.ReasoningTokens)
		calls += int64(r.ToolCalls)
	}
	if int64(len(recs)) != st.Completed || len(recs) == 0 {
		t.Fatalf("%d records, the server completed %d", len(recs), st.Completed)
	}
	median := func(xs []float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		xs = slices.Clone(xs)
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	for _, c := range []struct {
		name string
		off  []float64
	}{{"TTFT", ttfts}, {"ITL", itls}, {"TTFO", ttfos}} {
		if c.name == "TTFO" && backend != "anthropic-messages" {
			continue
		}
		if m := median(c.off); !(m <= 1) {
			t.Errorf("%s: median %.3f ms off the server's chunk log (%d samples), want within 1 ms", c.name, m, len(c.off))
		}
	}
	if prompt != st.PromptTokens || completion != st.GenerationTokens {
		t.Errorf("records: prompt %d completion %d tokens; the server: %d, %d", prompt, completion, st.PromptTokens, st.GenerationTokens)
	}
	if reasoning != st.Model.ReasoningTokens || calls != st.Model.ToolCalls {
		t.Errorf("records: %d reasoning tokens, %d tool calls; the server: %d, %d", reasoning, calls, st.Model.ReasoningTokens, st.Model.ToolCalls)
	}
	if backend == "anthropic-messages" && (reasoning == 0 || calls == 0) {
		t.Errorf("anthropic-messages: %d reasoning tokens, %d tool calls: want both", reasoning, calls)
	}
	t.Logf("%d records: median |off| TTFT %.3f ms, TTFO %.3f ms, ITL %.3f ms; %d prompt, %d completion, %d reasoning tokens, %d tool calls",
		len(recs), median(ttfts), median(ttfos), median(itls), prompt, completion, reasoning, calls)
}

// TestAnthropicWholeThinking: with --disable-stream a Messages answer's
// thinking block is counted as its reasoning tokens (Anthropic's usage
// does not count it apart): the records' reasoning tokens are the
// server's (its thinking tokens are a word each), summed over the run,
// and the summary's total_reasoning_tokens and reasoning_requests are
// theirs.
func TestAnthropicWholeThinking(t *testing.T) {
	cfg := mockserver.Config{Models: []string{"mock-model"}, TTFT: time.Millisecond, ITL: time.Millisecond, Seed: 4,
		Reasoning: mockserver.ReasoningConfig{Tokens: mockserver.LengthDist{Min: 1, Max: 4}}}
	srv, port, stop, err := mockserver.ServeNew(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	r := mustRunTool(t, append(baseArgs(port, 12), "--backend", "anthropic-messages", "--disable-stream", "--reasoning-effort", "low",
		"--random-output-len", "6")...)
	recs := readRecords(t, r.path("results.jsonl"))
	var reasoning, completion, with int64
	for _, rec := range recs {
		if !rec.OK() || rec.ReasoningTokens < 1 || rec.ReasoningTokens > 4 || !rec.has("reasoning_tokens") {
			t.Errorf("record %d: %s %s, %d reasoning tokens (the server's draw: 1 to 4)", rec.Index, rec.ErrorClass, rec.Error, rec.ReasoningTokens)
		}
		reasoning += int64(rec.ReasoningTokens)
		completion += int64(rec.CompletionTokens)
		if rec.ReasoningTokens > 0 {
			with++
		}
	}
	st := srv.Stats()
	if len(recs) != 12 || reasoning != st.Model.ReasoningTokens || completion != st.GenerationTokens {
		t.Errorf("%d records: %d reasoning, %d output tokens; the server: %d, %d", len(recs), reasoning, completion, st.Model.ReasoningTokens, st.GenerationTokens)
	}
	if a := r.summary(t).Answers; a == nil || a.ReasoningTokens != reasoning || a.ReasoningRequests != with {
		t.Errorf("summary answers %+v; the records: %d reasoning tokens in %d requests", a, reasoning, with)
	}
}
