package mockserver

import (
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

func TestImagesEndpoint(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	s, url := start(t, Config{Models: []string{"sd15", "sdxl"}, OnRequest: func(path string, body []byte) {
		mu.Lock()
		bodies = append(bodies, path+" "+string(body))
		mu.Unlock()
	}})
	for _, c := range []struct {
		name, body string
		status     int
		images     int
		url        bool
		tokens     float64
	}{
		{"b64", `{"model":"sdxl","prompt":"a red fox in snow","n":3,"size":"512x512","num_inference_steps":20,"loras":["a"]}`, 200, 3, false, 5},
		{"url", `{"prompt":"two words","response_format":"url"}`, 200, 1, true, 2},
		{"unknown model", `{"model":"nope","prompt":"x"}`, 404, 0, false, 0},
		{"no prompt", `{"model":"sd15"}`, 400, 0, false, 0},
		{"bad n", `{"prompt":"x","n":0}`, 400, 0, false, 0},
		{"bad size", `{"prompt":"x","size":"big"}`, 400, 0, false, 0},
		{"bad format", `{"prompt":"x","response_format":"webp"}`, 400, 0, false, 0},
		{"not json", `{`, 400, 0, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, url, "/v1/images/generations", c.body)
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			if c.status != 200 {
				return
			}
			var resp struct {
				Created int64
				Data    []struct {
					B64 *string `json:"b64_json"`
					URL *string `json:"url"`
				}
				Usage map[string]float64
			}
			if err := json.Unmarshal([]byte(r.body), &resp); err != nil {
				t.Fatal(err)
			}
			if len(resp.Data) != c.images || resp.Created == 0 || resp.Usage["input_tokens"] != c.tokens {
				t.Fatalf("response %s", r.body)
			}
			for _, d := range resp.Data {
				var enc string
				switch {
				case c.url && d.URL != nil:
					enc = (*d.URL)[len("data:image/png;base64,"):]
				case !c.url && d.B64 != nil:
					enc = *d.B64
				default:
					t.Fatalf("entry %+v", d)
				}
				png, err := base64.StdEncoding.DecodeString(enc)
				if err != nil || string(png[1:4]) != "PNG" {
					t.Fatalf("not a PNG: %v", err)
				}
			}
		})
	}
	if n := s.GeneratedImages(); n != 4 {
		t.Errorf("%d images generated, want 4", n)
	}
	if len(bodies) != 8 {
		t.Errorf("OnRequest saw %d requests, want 8", len(bodies))
	}
}

// TestTimingImageLatencyModel: a request takes base + steps × per-step + n ×
// per-image once it has a slot, and with --max-num-seqs 1 three requests
// sent together finish one latency apart.
func TestTimingImageLatencyModel(t *testing.T) {
	testenv.SkipUnderRace(t)
	cfg := Config{MaxNumSeqs: 1, Images: ImageConfig{Base: 20 * time.Millisecond, PerStep: 2 * time.Millisecond, PerImage: 5 * time.Millisecond}}
	_, url := start(t, cfg)
	const body = `{"prompt":"x","n":4,"num_inference_steps":10}` // 20 + 10×2 + 4×5 = 60 ms
	const want = 60 * time.Millisecond
	if r := post(t, url, "/v1/images/generations", body); r.status != 200 || r.elapsed < want || r.elapsed > want+40*time.Millisecond {
		t.Fatalf("one request: status %d in %v, want %v", r.status, r.elapsed, want)
	}
	var wg sync.WaitGroup
	elapsed := make([]time.Duration, 3)
	for i := range elapsed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			elapsed[i] = post(t, url, "/v1/images/generations", body).elapsed
		}()
	}
	wg.Wait()
	slowest := max(elapsed[0], elapsed[1], elapsed[2])
	if slowest < 3*want || slowest > 3*want+80*time.Millisecond {
		t.Fatalf("three requests through one slot: slowest %v, want about %v (%v)", slowest, 3*want, elapsed)
	}
	// Without num_inference_steps the default steps apply (30 here).
	_, url2 := start(t, Config{Images: ImageConfig{PerStep: 2 * time.Millisecond}})
	if r := post(t, url2, "/v1/images/generations", `{"prompt":"x"}`); r.elapsed < 60*time.Millisecond || r.elapsed > 100*time.Millisecond {
		t.Fatalf("default steps: %v, want 60 ms (30 steps × 2 ms)", r.elapsed)
	}
}

// FuzzParseImage: the image request parser never panics, and what it
// accepts is within the limits.
func FuzzParseImage(f *testing.F) {
	for _, s := range []string{
		`{"model":"sdxl","prompt":"a red fox","n":3,"size":"512x512","num_inference_steps":20,"loras":["a"]}`,
		`{"prompt":"x","response_format":"url","size":"auto"}`,
		`{"prompt":"x","n":1e9}`, `[1]`, `{"prompt":7}`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(Config{Models: []string{"m"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := s.parseImage(body)
		if err != nil {
			return
		}
		if req.model == "" || req.n < 1 || req.n > maxImagesPerRequest || req.steps < 1 || req.promptTokens < 0 {
			t.Fatalf("accepted %q as %+v", body, req)
		}
	})
}
