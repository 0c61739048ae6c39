package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestReasoningAgainstMock: against a server streaming 8 reasoning tokens
// before the answer, under each of vLLM's field names and with or without
// usage's reasoning_tokens, TTFT is the first reasoning token's and TTFO
// the first answer token's — 8 ITLs later — and every request's reasoning
// tokens are counted once. (Before delta.reasoning was read, TTFT was the
// TTFO and the reasoning chunks were not tokens.)
func TestReasoningAgainstMock(t *testing.T) {
	const ttft, itl, reasoning = 20 * time.Millisecond, 5 * time.Millisecond, 8
	for _, tc := range []struct {
		field   string
		noUsage bool
	}{{"reasoning", false}, {"reasoning_content", false}, {"both", false}, {"reasoning", true}} {
		t.Run(tc.field+map[bool]string{true: "-no-usage-details"}[tc.noUsage], func(t *testing.T) {
			_, port := mocktest.Start(t, mockserver.Config{TTFT: ttft, ITL: itl,
				Reasoning: mockserver.ReasoningConfig{Tokens: mockserver.LengthDist{Min: reasoning, Max: reasoning}, Field: tc.field, NoUsageDetails: tc.noUsage}})
			args := append(baseArgs(port, 10), "--backend", "openai-chat", "--prompt-format", "text", "--random-output-len", "16")
			r := mustRunTool(t, args...)
			s := r.summary(t)
			if s.Answers == nil || s.Answers.ReasoningRequests != 10 || s.Answers.ReasoningTokens != 10*reasoning || s.Answers.ReasoningShare != 0.5 {
				t.Fatalf("answers %+v, want 10 requests with %d reasoning tokens each, half the output", s.Answers, reasoning)
			}
			// The TTFO is 8 ITLs (40 ms) after the TTFT. When the reasoning
			// is not read the two are the same instant; on a busy machine a
			// late first chunk lets the server's paced chunks catch up, so
			// a request's gap can be shorter than 40 ms but never zero, and
			// the mean keeps a quarter of it.
			gap := s.TTFO.Mean - s.TTFT.Mean
			if gap < 10 || gap > 400 || s.TTFT.Mean < 20 {
				t.Errorf("mean TTFT %.1f ms, TTFO %.1f ms: want TTFT ≥ 20 and TTFO about 40 ms later", s.TTFT.Mean, s.TTFO.Mean)
			}
			for i, rec := range readRecords(t, r.path("results.jsonl")) {
				if rec.ReasoningTokens != reasoning || rec.FirstOutput == 0 || rec.FirstToken == 0 || rec.TTFO() <= rec.TTFT() {
					t.Errorf("record %d: reasoning tokens %d, ttft %v, ttfo %v", i, rec.ReasoningTokens, rec.TTFT(), rec.TTFO())
				}
			}
			if !strings.Contains(r.stdout, "Mean TTFO (ms):") || !strings.Contains(r.stdout, "Reasoning share of output (%):") {
				t.Errorf("the table lacks the reasoning figures:\n%s", r.stdout)
			}
		})
	}
}

// weatherTools is a tools file with one function.
const weatherTools = `[{"type":"function","function":{"name":"get_weather","description":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}]`

// TestToolCallsAgainstMock: the tool calls counted, and those whose
// arguments do not parse, equal the server's own counts one for one — with
// tool_choice required (every answer a call) and auto (a seeded share).
func TestToolCallsAgainstMock(t *testing.T) {
	tools := testenv.WriteFile(t, "tools.json", weatherTools)
	for _, choice := range []string{"required", "auto"} {
		t.Run(choice, func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{Seed: 3, Tools: mockserver.ToolConfig{CallShare: 0.5, InvalidShare: 0.25}})
			args := append(baseArgs(port, 40), "--backend", "openai-chat", "--prompt-format", "text", "--random-output-len", "24",
				"--tools", tools, "--tool-choice", choice)
			r := mustRunTool(t, args...)
			s, m := r.summary(t), srv.Stats().Model
			if m.ToolCalls == 0 || m.InvalidToolCalls == 0 {
				t.Fatalf("the server made %d calls, %d invalid: the test needs both", m.ToolCalls, m.InvalidToolCalls)
			}
			a := s.Answers
			if a == nil || a.ToolCalls != m.ToolCalls || a.ToolRequests != m.ToolCalls || a.ToolArgsValidShare == nil ||
				*a.ToolArgsValidShare != float64(m.ToolCalls-m.InvalidToolCalls)/float64(m.ToolCalls) {
				t.Fatalf("answers %+v; the server: %d calls, %d invalid", a, m.ToolCalls, m.InvalidToolCalls)
			}
			if choice == "required" && a.ToolCallShare != 1 {
				t.Errorf("tool_choice required: share %g, want 1", a.ToolCallShare)
			}
			if s.ToolTTFT.Empty() || s.TTFO.Empty() {
				t.Errorf("no time to first tool call (%+v) or TTFO (%+v)", s.ToolTTFT, s.TTFO)
			}
			invalid := 0
			for _, rec := range readRecords(t, r.path("results.jsonl")) {
				invalid += rec.ToolArgsInvalid
			}
			if int64(invalid) != m.InvalidToolCalls {
				t.Errorf("records: %d invalid calls, the server %d", invalid, m.InvalidToolCalls)
			}
		})
	}
}

// TestStructuredOutputAgainstMock: answers checked against a JSON Schema
// (and json_object) fail exactly as often as the server made them invalid.
func TestStructuredOutputAgainstMock(t *testing.T) {
	schema := testenv.WriteFile(t, "weather.json", `{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"]}`)
	for _, format := range []string{"json_schema:" + schema, "json_object"} {
		t.Run(strings.SplitN(format, ":", 2)[0], func(t *testing.T) {
			srv, port := mocktest.Start(t, mockserver.Config{Seed: 5, Structured: mockserver.StructuredConfig{InvalidShare: 0.3}})
			args := append(baseArgs(port, 40), "--backend", "openai-chat", "--prompt-format", "text", "--random-output-len", "32",
				"--response-format", format)
			r := mustRunTool(t, args...)
			s, m := r.summary(t), srv.Stats().Model
			if m.InvalidStructured == 0 || m.Structured != 40 {
				t.Fatalf("the server answered %d formats, %d invalid: the test needs some of each", m.Structured, m.InvalidStructured)
			}
			a := s.Answers
			if a == nil || a.StructuredChecked != 40 || a.StructuredValidShare == nil || *a.StructuredValidShare != float64(40-m.InvalidStructured)/40 {
				t.Fatalf("answers %+v; the server: %d invalid of 40", a, m.InvalidStructured)
			}
		})
	}
}

// TestAnswerOptionsRefused: bad tools and schema files, and options the
// backend cannot send, exit 2 before anything is sent, naming the flag,
// the file and where in it.
func TestAnswerOptionsRefused(t *testing.T) {
	badTools := testenv.WriteFile(t, "tools.json", `[{"type":"function","function":{"name":"ok"}},{"type":"function","function":{"description":"x"}}]`)
	notJSON := testenv.WriteFile(t, "broken.json", "[\n{\"type\": \"function\",\n}")
	badSchema := testenv.WriteFile(t, "weather-format.json", `{"type":"objekt"}`)
	badParams := testenv.WriteFile(t, "params.json", `[{"type":"function","function":{"name":"f","parameters":{"type":"objekt"}}}]`)
	tools := testenv.WriteFile(t, "tools.json", weatherTools)
	base := []string{"--host", "127.0.0.1", "--port", "9", "--num-prompts", "1", "--dry-run"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--backend", "openai-chat", "--tools", badTools}, []string{"--tools " + badTools, "[1].function.name: missing"}},
		{[]string{"--backend", "openai-chat", "--tools", notJSON}, []string{"--tools " + notJSON, "line 3"}},
		{[]string{"--backend", "openai-chat", "--response-format", "json_schema:" + badSchema}, []string{"--response-format json_schema:" + badSchema, `"file://` + badSchema + `#" is not valid`}},
		{[]string{"--backend", "openai-chat", "--tools", badParams}, []string{"[0].function.parameters: ", `"file://` + badParams + `#" is not valid`}},
		{[]string{"--backend", "openai-chat", "--response-format", "yaml"}, []string{"want json_object or json_schema:FILE"}},
		{[]string{"--backend", "vllm", "--tools", tools, "--reasoning-effort", "high"}, []string{"--tools: --backend vllm has no tool calls (use --backend openai-chat", "--reasoning-effort: --backend vllm has no reasoning"}},
		{[]string{"--backend", "openai-chat", "--tools", tools, "--tool-choice", "get_time"}, []string{`--tool-choice "get_time": not a function of --tools`, "get_weather"}},
		{[]string{"--backend", "openai-chat", "--tool-choice", "auto"}, []string{"--tool-choice auto needs --tools FILE"}},
		{[]string{"--backend", "openai-chat", "--reasoning-effort", "extreme"}, []string{`--reasoning-effort "extreme": want one of none`}},
		{[]string{"--backend", "openai-chat", "--chat-template-kwargs", "[1]"}, []string{"--chat-template-kwargs: want a JSON object"}},
		{[]string{"--backend", "anthropic-messages", "--chat-template-kwargs", "{}"}, []string{"--chat-template-kwargs: --backend anthropic-messages sends no chat template arguments (use --backend openai-chat"}},
		{[]string{"--backend", "openai-responses", "--chat-template-kwargs", "{}"}, []string{"--chat-template-kwargs: --backend openai-responses sends no chat template arguments"}},
		{[]string{"--backend", "openai-images", "--response-format", "json_object"}, []string{"--response-format: --backend openai-images has no response format"}},
	} {
		wantUsage(t, append(append([]string{}, base...), tc.args...), tc.want...)
	}
}

// TestNoAutoToolChoice: a server without automatic tool choice refuses
// every request with tools; the failure says what to do, and
// --tool-choice required goes through.
func TestNoAutoToolChoice(t *testing.T) {
	tools := testenv.WriteFile(t, "tools.json", weatherTools)
	_, port := mocktest.Start(t, mockserver.Config{Tools: mockserver.ToolConfig{NoAutoToolChoice: true}})
	args := append(baseArgs(port, 4), "--backend", "openai-chat", "--prompt-format", "text", "--tools", tools)
	r := runTool(t, args...)
	s := r.summary(t)
	if s.Failed != 4 || len(s.ErrorSamples) == 0 || !strings.Contains(s.ErrorSamples[0].Message, "--enable-auto-tool-choice --tool-call-parser NAME, or send --tool-choice required") {
		t.Fatalf("exit %d, failed %d, errors %+v", r.code, s.Failed, s.ErrorSamples)
	}
	s = mustRunTool(t, append(args, "--tool-choice", "required")...).summary(t)
	if s.Completed != 4 || s.Answers == nil || s.Answers.ToolCalls != 4 {
		t.Errorf("tool_choice required: completed %d, answers %+v", s.Completed, s.Answers)
	}
}

// TestContentPartsAgainstMock: against a server that sends a chat
// answer's content as content parts ([{"type":"text","text":…}]), in each
// streamed delta or in a whole message, every request is read: each
// streamed one has its TTFT and ITL (before content parts were read, every
// request "succeeded" with TTFT and ITL n/a), and a whole one succeeds.
func TestContentPartsAgainstMock(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, TTFT: 2 * time.Millisecond, ITL: time.Millisecond, ContentParts: true})
	r := mustRunTool(t, append(baseArgs(port, 6), "--backend", "openai-chat", "--random-output-len", "5")...)
	s := r.summary(t)
	if s.Completed != 6 || s.Failed != 0 || s.TTFT.Empty() || s.ITL.Empty() {
		t.Errorf("streamed: completed %d failed %d %v, TTFT empty %v, ITL empty %v; want 6 read and timed\n%s",
			s.Completed, s.Failed, s.ErrorsByClass, s.TTFT.Empty(), s.ITL.Empty(), r.stderr)
	}
	for i, rec := range readRecords(t, r.path("results.jsonl")) {
		if rec.FirstToken == 0 {
			t.Errorf("record %d has no TTFT", i)
		}
	}
	r = mustRunTool(t, append(baseArgs(port, 4), "--backend", "openai-chat", "--disable-stream")...)
	if s := r.summary(t); s.Completed != 4 || s.Failed != 0 {
		t.Errorf("whole: completed %d failed %d %v\n%s", s.Completed, s.Failed, s.ErrorsByClass, r.stderr)
	}
}

// TestSchemaCheckBounded: answers nested 9,000 deep checked against a
// self-referring schema ({"properties":{"x":{"$ref":"#"}}}) are invalid
// without being checked, with a warning saying why; the check took 718 MB
// an answer (the validator's memory grows with size times depth). An
// answer within the bounds is still checked.
func TestSchemaCheckBounded(t *testing.T) {
	schema := testenv.WriteFile(t, "self.json", `{"type":"object","properties":{"x":{"$ref":"#"}}}`)
	// Invalid at the bottom: the validator's errors carry every level's
	// path (656 MB for one such answer).
	deep := strings.Repeat(`{"x":`, 9000) + "1" + strings.Repeat("}", 9000)
	shallow := strings.Repeat(`{"x":`, 20) + "{}" + strings.Repeat("}", 20)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"id":"m","max_model_len":4096}]}`)
			return
		}
		io.Copy(io.Discard, r.Body)
		text := deep
		if n.Add(1) == 1 {
			text = shallow
		}
		content, _ := json.Marshal(text)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", content)
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := runTool(t, "--base-url", srv.URL, "--backend", "openai-chat", "--prompt-format", "text", "--num-prompts", "5", "--request-rate", "100",
		"--seed", "1", "--random-input-len", "8", "--random-output-len", "4", "--warmup-requests", "0", "--disable-tqdm",
		"--max-concurrency", "1", "--response-format", "json_schema:"+schema, "--summary-json", filepath.Join(t.TempDir(), "s.json"))
	runtime.ReadMemStats(&after)
	s := r.summary(t)
	a := s.Answers
	if a == nil || a.StructuredChecked != 5 || a.StructuredValidShare == nil || *a.StructuredValidShare != 0.2 {
		t.Fatalf("exit %d, answers %+v\n%s", r.code, a, r.stderr)
	}
	if want := "4 answer(s) counted invalid without being checked; first: an answer nested more than 128 deep"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 300 {
		t.Errorf("the run allocated %d MB for 5 answers of at most 54 KB", mb)
	}
}
