package main

import (
	"strconv"
	"sync"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// Synthetic media in every request, in each mode: the built-in server
// counts the images by their size and the clip by its length, so its
// prompt_tokens are the scheduled input lengths exactly; the summary
// counts the images.
func TestMediaInEveryMode(t *testing.T) {
	var mu sync.Mutex
	var bodies []int
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, OnRequest: func(path string, body []byte) {
		if path == "/v1/chat/completions" {
			mu.Lock()
			bodies = append(bodies, len(body))
			mu.Unlock()
		}
	}})
	modes := map[string][]string{
		"poisson": {"--random-input-len", "2000"},
		"replay":  {"--mode", "replay", "--trace", "testdata/fineserve_Dense_30to100B_head200.csv", "--time-scale", "1000", "--min-output-len", "2"},
		"dataset": {"--dataset-path", "testdata/sharegpt.json", "--sharegpt-output-len", "3"},
	}
	for name, mode := range modes {
		for _, media := range [][]string{
			{"--images-per-request", "2", "--image-size", "100x60"},
			{"--images-per-request", "1", "--image-format", "jpeg", "--audio-seconds", "0.5"},
			{"--audio-seconds", "1"},
		} {
			for _, backend := range []string{"vllm", "openai-chat"} {
				args := append(mockTarget(port, "--num-prompts", "4", "--request-rate", "inf", "--random-output-len", "3", "--seed", "2", "--warmup-requests", "1", "--quiet", "--backend", backend), mode...)
				r := mustRunTool(t, append(args, media...)...)
				recs := readRecords(t, r.path("results.jsonl"))
				images := 0
				for i, rec := range recs {
					if rec.PromptTokens != rec.InputLen {
						t.Errorf("%s %v %s: record %d: server %d tokens, input_len %d", name, media, backend, i, rec.PromptTokens, rec.InputLen)
					}
					images += rec.Images
				}
				want := 0
				if media[0] == "--images-per-request" {
					n, _ := strconv.Atoi(media[1])
					want = n * len(recs)
				}
				if s := r.summary(t); len(recs) != 4 || images != want || s.Images != int64(want) {
					t.Errorf("%s %v %s: %d records, %d images, summary %d; want 4 and %d", name, media, backend, len(recs), images, s.Images, want)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) == 0 {
		t.Error("no chat request reached the server")
	}
}

// Same seed and salt, same bytes; media bounds are usage errors.
func TestMediaBounds(t *testing.T) {
	base := []string{"--dry-run", "--num-prompts", "2", "--seed", "1"}
	wantUsage(t, append(base, "--images-per-request", "1", "--image-size", "100000x100000"), "--image-size", "8192")
	wantUsage(t, append(base, "--audio-seconds", "1e6"), "--audio-seconds", "600")
	wantUsage(t, append(base, "--images-per-request", "100"), "--images-per-request 100", "0 to 32")
	wantUsage(t, append(base, "--images-per-request", "1", "--image-format", "gif"), "--image-format", "png or jpeg")
	wantUsage(t, append(base, "--images-per-request", "1", "--backend", "openai-images"), "chat content parts")
	wantUsage(t, append(base, "--audio-seconds", "1", "--backend", "openai-responses"), "chat content parts")
}

// Two runs of the same seed and --prompt-salt send the same bytes.
func TestMediaDeterministic(t *testing.T) {
	var mu sync.Mutex
	var bodies [2][]string
	for k := range bodies {
		_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, OnRequest: func(path string, body []byte) {
			if path == "/v1/chat/completions" {
				mu.Lock()
				bodies[k] = append(bodies[k], string(body))
				mu.Unlock()
			}
		}})
		mustRunTool(t, mockTarget(port, "--num-prompts", "3", "--request-rate", "inf", "--max-concurrency", "1", "--seed", "9", "--prompt-salt", "42",
			"--warmup-requests", "0", "--quiet", "--images-per-request", "1", "--image-format", "jpeg", "--audio-seconds", "0.2")...)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies[0]) != 3 || len(bodies[1]) != 3 {
		t.Fatalf("%d and %d requests", len(bodies[0]), len(bodies[1]))
	}
	for i := range bodies[0] {
		if bodies[0][i] != bodies[1][i] {
			t.Errorf("request %d differs between two runs of the same seed and salt", i)
		}
		if i > 0 && bodies[0][i] == bodies[0][i-1] {
			t.Errorf("requests %d and %d are the same", i-1, i)
		}
	}
}
