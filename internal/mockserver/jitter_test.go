package mockserver

import (
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// The per-token spread keeps the mean, stays within its bounds, is a pure
// function of the seed and differs between seeds; without it the schedule
// is exact.
func TestITLJitterDraws(t *testing.T) {
	mk := func(seed uint64, ij float64) *Server {
		s, err := New(Config{Models: []string{"m"}, TTFT: 20 * time.Millisecond, ITL: 5 * time.Millisecond, ITLJitter: ij, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var t0 time.Time
	exact := mk(1, 0)
	if !exact.tokenDue(t0, 7, 15).Equal(t0.Add(75 * time.Millisecond)) {
		t.Fatalf("no jitter: token 15 due %v", exact.tokenDue(t0, 7, 15).Sub(t0))
	}
	s := mk(1, 0.8)
	const n = 20000
	var sumG, sumG2 float64
	differ := 0
	other := mk(2, 0.8)
	for id := int64(1); id <= n; id++ {
		g := s.gap(id, 3).Seconds() * 1e3
		if g < 1-1e-9 || g > 9+1e-9 {
			t.Fatalf("request %d: gap %.3f ms outside [1, 9]", id, g)
		}
		sumG += g
		sumG2 += g * g
		if id < 5 && s.gap(id, 3) != mk(1, 0.8).gap(id, 3) {
			t.Fatalf("request %d: draws differ for one seed", id)
		}
		if other.gap(id, 3) != s.gap(id, 3) {
			differ++
		}
	}
	meanG := sumG / n
	sdG := math.Sqrt(sumG2/n - meanG*meanG)
	// Uniform on [1, 9]: mean 5, sd 8/√12 = 2.31; the mean's standard
	// error is 0.016 ms, the tolerance about 10 of them.
	if math.Abs(meanG-5) > 0.15 || math.Abs(sdG-8/math.Sqrt(12)) > 0.1 {
		t.Errorf("gap mean %.3f ms sd %.3f, want 5 and 2.31", meanG, sdG)
	}
	if differ < n*9/10 {
		t.Errorf("seeds 1 and 2 drew the same gap for %d of %d requests", n-differ, n)
	}
	// Token k's due time is the sum of its gaps: increasing, mean k·ITL.
	prev := t0
	for k := 1; k <= 15; k++ {
		d := s.tokenDue(t0, 9, k)
		if !d.After(prev) {
			t.Fatalf("token %d due %v, not after token %d's %v", k, d.Sub(t0), k-1, prev.Sub(t0))
		}
		prev = d
	}
}

func TestJitterValidated(t *testing.T) {
	for _, c := range []Config{{ITLJitter: -0.1}, {ITLJitter: 1.5}, {ITLJitter: math.NaN()}} {
		c.Models = []string{"m"}
		if _, err := New(c); err == nil {
			t.Errorf("%+v: accepted", c)
		}
	}
}

// TestJitterEveryAPI: on synctest's fake clock every generation API's
// stream writes its first token at the request's jittered TTFT and each
// further token one jittered gap later: the same draws for every API.
func TestJitterEveryAPI(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"chat", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":6,"ignore_eos":true,"stream":true}`},
		{"completions", "/v1/completions", `{"prompt":"hi","max_tokens":6,"ignore_eos":true,"stream":true}`},
		{"responses", "/v1/responses", `{"input":"hi","max_output_tokens":6,"ignore_eos":true,"stream":true}`},
		{"messages", "/v1/messages", `{"model":"m","max_tokens":6,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"sglang", "/generate", `{"text":"hi","sampling_params":{"max_new_tokens":6,"ignore_eos":true},"stream":true}`},
		{"kserve", "/v2/models/m/generate_stream", `{"text_input":"hi","parameters":{"max_tokens":6,"ignore_eos":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := New(Config{Models: []string{"m"}, TTFT: 50 * time.Millisecond, TTFTJitter: 20 * time.Millisecond,
					ITL: 10 * time.Millisecond, ITLJitter: 0.8, Seed: 5})
				if err != nil {
					t.Fatal(err)
				}
				w := serve(s, tc.path, tc.body)
				const out = 6
				if w.Code != 200 || len(w.at) < out-1 {
					t.Fatalf("status %d, flushes at %v: want 200 and a flush a token", w.Code, w.at)
				}
				// Request 1's tokens: the last out−1 flushes, the last
				// token with the stream's end.
				got := append(w.at[len(w.at)-(out-1):], w.took)
				due := s.ttft(1)
				want := []time.Duration{due}
				for k := 1; k < out; k++ {
					due += s.gap(1, k)
					want = append(want, due)
				}
				if due == 50*time.Millisecond+5*10*time.Millisecond {
					t.Fatal("the draws are the nominal schedule: pick another seed")
				}
				for k := range want {
					if got[k] != want[k] {
						t.Fatalf("token flushes at %v, want %v (TTFT and gaps drawn by --jitter-ms and --itl-jitter)", got, want)
					}
				}
			})
		})
	}
}
