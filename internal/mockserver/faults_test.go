package mockserver

import (
	"math"
	"strings"
	"testing"
)

func TestParseFault(t *testing.T) {
	for in, want := range map[string]Fault{
		"reset":          {FaultReset, 1},
		"http_503:0.25":  {FaultHTTP503, 0.25},
		" STALL : 1 ":    {FaultStall, 1},
		"endless:1e-3":   {FaultEndless, 0.001},
		"slow_headers:1": {FaultSlowHeaders, 1},
	} {
		got, err := ParseFault(in)
		if err != nil || got != want {
			t.Errorf("ParseFault(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "boom", "reset:0", "reset:1.5", "reset:-1", "reset:x", "reset:", "reset:NaN", ":0.5"} {
		if _, err := ParseFault(in); err == nil {
			t.Errorf("ParseFault(%q) accepted", in)
		}
	}
}

func TestFaultConfigValidate(t *testing.T) {
	ok := FaultConfig{Faults: []Fault{{FaultReset, 0.5}, {FaultStall, 0.5}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("rates adding up to 1: %v", err)
	}
	bad := FaultConfig{Faults: []Fault{{FaultReset, 1}, {FaultStall, 0.5}, {"nope", 0.1}}, Delay: -1}
	err := bad.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"add up to 1.6", "unknown kind", "delay"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := New(Config{Models: []string{"m"}, Faults: bad}); err == nil {
		t.Error("New accepted a bad fault configuration")
	}
}

// TestFaultSelectionIsExactAndSeeded: the requests that fault are a pure
// function of (seed, request number), each kind gets its share, and kinds
// never overlap.
func TestFaultSelectionIsExactAndSeeded(t *testing.T) {
	cfg := FaultConfig{Seed: 7, Faults: []Fault{{FaultHTTP503, 0.2}, {FaultReset, 0.1}}}
	const n = 20000
	count := map[string]int{}
	for i := int64(1); i <= n; i++ {
		k := cfg.FaultFor(i)
		count[k]++
		if k != cfg.FaultFor(i) {
			t.Fatal("not deterministic")
		}
	}
	for kind, share := range map[string]float64{FaultHTTP503: 0.2, FaultReset: 0.1, "": 0.7} {
		// Binomial: 5 standard deviations.
		if got, sd := float64(count[kind]), math.Sqrt(n*share*(1-share)); math.Abs(got-n*share) > 5*sd {
			t.Errorf("%q: %d of %d, want about %.0f", kind, count[kind], n, n*share)
		}
	}
	other := cfg
	other.Seed = 8
	same := 0
	for i := int64(1); i <= 1000; i++ {
		if cfg.FaultFor(i) == other.FaultFor(i) {
			same++
		}
	}
	if same == 1000 {
		t.Error("the seed does not change which requests fault")
	}
	all := FaultConfig{Faults: []Fault{{FaultStall, 1}}}
	for i := int64(1); i <= 1000; i++ {
		if all.FaultFor(i) != FaultStall {
			t.Fatalf("rate 1: request %d not faulted", i)
		}
	}
	if (FaultConfig{}).FaultFor(1) != "" {
		t.Error("no faults configured, yet a fault")
	}
}

// FuzzParseFault: a fault spec is rejected or parses to a known kind and a
// rate in (0, 1].
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"reset", "http_429:0.5", "stall:1", "x:y", ":", "endless:1e-300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, err := ParseFault(s)
		if err != nil {
			return
		}
		if !(fl.Rate > 0 && fl.Rate <= 1) {
			t.Fatalf("%q: rate %v", s, fl.Rate)
		}
		if err := (FaultConfig{Faults: []Fault{fl}}).Validate(); err != nil {
			t.Fatalf("%q parsed to %v, which does not validate: %v", s, fl, err)
		}
	})
}

// FuzzParseRequest: the server's request parser never panics, and what it
// accepts is a request it can serve.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","prompt":[1,2,3],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"prompt":"a b c","max_tokens":2,"min_tokens":2,"ignore_eos":true}`,
		`{"messages":[{"role":"user","content":"hi there"}],"max_completion_tokens":3}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:"}}]}]}`,
		`{"prompt":[[1],[2]]}`, `{"prompt":null}`, `{"messages":[]}`, `{"max_tokens":-1,"prompt":"x"}`,
		`{"prompt":"x","max_tokens":1e30}`, `[`, ``, `{"messages":[{"content":5}]}`,
	} {
		f.Add([]byte(s), strings.Contains(s, "messages"))
	}
	s, err := New(Config{Models: []string{"m"}, TokensPerImage: 10})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, chat bool) {
		req, err := s.parse(body, chat)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if req.maxTokens < 1 || req.minTokens < 0 || req.minTokens > req.maxTokens || req.promptTokens < 0 || req.images < 0 || req.model == "" {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		if out := s.outputTokens(req, 1); out < 1 || out > req.maxTokens {
			t.Fatalf("%d output tokens for max %d", out, req.maxTokens)
		}
	})
}
