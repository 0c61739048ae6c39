package metrics

import (
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// sampleOf derives r's Sample with no SLO.
func sampleOf(r *record.Request) *Sample {
	s := &Sample{}
	s.From(r, NoSLO)
	return s
}

// withGood marks s as having met the run's SLO.
func withGood(s *Sample) *Sample {
	s.Good = true
	return s
}

// TestSampleFigures: each figure is derived once, and applies only where
// it should.
func TestSampleFigures(t *testing.T) {
	text := ok(7, ms(100), ms(101), ms(111), []time.Duration{ms(111), ms(116), ms(126)}, ms(131), 3)
	text.Model, text.InputLen, text.PromptTokens, text.CachedTokens = "m", 64, 60, 16
	s := sampleOf(text)
	switch {
	case !s.OK || s.Index != 7 || s.Model != "m" || s.Kind != KindText || s.Generation:
		t.Errorf("identity %+v", s)
	case !s.HasLag || s.Lag != ms(1):
		t.Errorf("lag %v (%v)", s.Lag, s.HasLag)
	case !s.HasTTFT || s.TTFT != ms(10) || s.TTFTFromScheduled != ms(11):
		t.Errorf("ttft %v from scheduled %v (%v)", s.TTFT, s.TTFTFromScheduled, s.HasTTFT)
	case !s.HasE2E || s.E2E != ms(30) || s.E2EFromScheduled != ms(31):
		t.Errorf("e2e %v from scheduled %v (%v)", s.E2E, s.E2EFromScheduled, s.HasE2E)
	case !s.HasTPOT || s.TPOT != ms(10): // (30 − 10) / (3 − 1)
		t.Errorf("tpot %v (%v)", s.TPOT, s.HasTPOT)
	case len(s.ITLTimes) != 3 || &s.ITLTimes[0] != &text.TokenTimes[0]:
		t.Errorf("ITL times are not a view of the result's token times")
	case !s.HasPromptError || s.PromptError != 4 || s.CachedTokens != 16:
		t.Errorf("prompt error %d (%v), cached %d", s.PromptError, s.HasPromptError, s.CachedTokens)
	}

	// TTFT per 1k prompt tokens: by the server's count (60), else the
	// target (64); an image generation has none.
	if want := time.Duration(float64(ms(10)) * 1000 / 60); !s.HasTTFTPer1k || s.TTFTPer1kPrompt != want {
		t.Errorf("ttft per 1k prompt tokens %v (%v), want %v", s.TTFTPer1kPrompt, s.HasTTFTPer1k, want)
	}
	text.PromptTokens = -1
	if s := sampleOf(text); s.TTFTPer1kPrompt != ms(10)*1000/64 {
		t.Errorf("ttft per 1k prompt tokens without usage %v, want %v (by the target)", s.TTFTPer1kPrompt, ms(10)*1000/64)
	}

	one := ok(1, 0, 0, ms(5), []time.Duration{ms(5)}, ms(5), 1)
	if s := sampleOf(one); !s.HasTTFT || s.HasTPOT {
		t.Errorf("one output token: ttft %v, tpot %v; want a TTFT and no TPOT", s.HasTTFT, s.HasTPOT)
	}

	gen := ok(2, 0, ms(1), 0, nil, ms(40), 0)
	gen.Generate, gen.Generated, gen.Images = 2, 2, 1
	if s := sampleOf(gen); !s.Generation || s.HasTTFT || s.HasTTFTPer1k || s.HasTPOT || s.ITLTimes != nil || !s.HasE2E || s.Kind != KindImage {
		t.Errorf("image generation: %+v; want end to end only", s)
	}

	unsent := &record.Request{}
	unsent.Reset()
	unsent.Scheduled, unsent.ErrorClass = ms(50), record.ErrCanceled
	if s := sampleOf(unsent); s.OK || s.HasLag || s.HasE2E || s.HasTTFT {
		t.Errorf("a request never sent: %+v; want no figure", s)
	}

	broken := ok(3, ms(10), ms(9), ms(20), []time.Duration{ms(20), ms(25)}, ms(30), 2)
	broken.ErrorClass = record.ErrReset
	if s := sampleOf(broken); s.OK || !s.HasLag || s.Lag != 0 || s.HasE2E || s.HasTTFT || s.ITLTimes != nil || len(s.TokenTimes) != 2 || s.HasPromptError {
		t.Errorf("a failed stream: %+v; want its lag (early: 0) and its observed token times, no latency", s)
	}
}

// TestSampleGood: the SLO verdict is taken on the sample's own figures; a
// figure that does not apply is not checked.
func TestSampleGood(t *testing.T) {
	slo := SLO{TTFT: 20, TPOT: 10, E2EL: 100}
	gen := ok(0, 0, 0, 0, nil, ms(90), 0)
	gen.Generate = 1
	for _, c := range []struct {
		name string
		r    *record.Request
		good bool
	}{
		{"meets all", ok(0, 0, 0, ms(10), []time.Duration{ms(10), ms(20), ms(30)}, ms(30), 3), true},
		{"slow first token", ok(0, 0, 0, ms(21), []time.Duration{ms(21)}, ms(21), 1), false},
		{"slow tokens", ok(0, 0, 0, ms(10), []time.Duration{ms(10), ms(40)}, ms(40), 2), false},
		{"one token: no TPOT", ok(0, 0, 0, ms(10), []time.Duration{ms(10)}, ms(90), 1), true},
		{"image generation: no TTFT", gen, true},
		{"failed", result(1, 1, 1), false},
	} {
		if c.name == "failed" {
			c.r.ErrorClass = record.ErrHTTP5xx
		}
		var s Sample
		s.From(c.r, slo)
		if s.Good != c.good {
			t.Errorf("%s: good %v, want %v", c.name, s.Good, c.good)
		}
		s.From(c.r, NoSLO)
		if s.Good {
			t.Errorf("%s: good without an SLO", c.name)
		}
	}
}

// benchResult is a successful streamed request of 64 tokens.
func benchResult() *record.Request {
	r := &record.Request{}
	r.Reset()
	r.Index, r.Scheduled, r.Sent, r.FirstToken, r.End = 3, time.Second, time.Second+500*time.Microsecond, 2*time.Second, 3*time.Second
	for i := range 64 {
		r.TokenTimes = append(r.TokenTimes, 2*time.Second+time.Duration(i)*time.Millisecond)
	}
	r.InputLen, r.OutputLen, r.PromptTokens, r.CompletionTokens, r.Model = 100, 64, 100, 64, "m"
	return r
}

// benchFanout is a run's consumers, as the runner wires them (without
// Prometheus and the records file, which live in other packages).
func benchFanout(slo SLO) Fanout {
	return Fanout{
		NewCollector(), NewGroups(func(s *Sample) string { return s.Model }), NewWindowAcc(),
		&Goodput{SLO: slo}, NewTimeline(250*time.Millisecond, 256), NewLengths(),
	}
}

// TestSampleFanoutAllocatesNothing: deriving a sample and handing it to
// every consumer allocates nothing per request.
func TestSampleFanoutAllocatesNothing(t *testing.T) {
	r := benchResult()
	slo := SLO{TTFT: 500, TPOT: 50, E2EL: 1e9}
	f := benchFanout(slo)
	var s Sample
	s.From(r, slo)
	f.Add(&s) // the groups' first entry and the timeline's bins
	if n := testing.AllocsPerRun(100, func() {
		s.From(r, slo)
		f.Add(&s)
	}); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}

// BenchmarkSampleFanout: derive one request's Sample and hand it to the
// run's consumers.
func BenchmarkSampleFanout(b *testing.B) {
	r := benchResult()
	slo := SLO{TTFT: 500, TPOT: 50, E2EL: 1e9}
	f := benchFanout(slo)
	var s Sample
	b.ReportAllocs()
	for b.Loop() {
		s.From(r, slo)
		f.Add(&s)
	}
}
