package servermetrics

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// specExposition is a vLLM server with speculative decoding (k = 2): its
// counters as prometheus_client writes them, with _total.
func specExposition(drafts, draftTokens, accepted, pos0, pos1 float64) string {
	return fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1.0
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} %g
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} %g
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} %g
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} %g
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="1"} %g
`, drafts, draftTokens, accepted, pos0, pos1)
}

func TestParseSpecDecode(t *testing.T) {
	s, err := Parse(strings.NewReader(specExposition(10, 20, 15, 9, 6)))
	if err != nil {
		t.Fatal(err)
	}
	if s.SpecDrafts != 10 || s.SpecDraftTokens != 20 || s.SpecAccepted != 15 || len(s.SpecPerPos) != 2 || s.SpecPerPos[0] != 9 || s.SpecPerPos[1] != 6 {
		t.Errorf("parsed %+v", s)
	}
	// Without the suffix (an exposition that names the counter as it is
	// declared), and a position label out of bounds, left out.
	s, err = Parse(strings.NewReader("vllm:spec_decode_num_drafts 4\nvllm:spec_decode_num_draft_tokens 8\nvllm:spec_decode_num_accepted_tokens 2\n" +
		`vllm:spec_decode_num_accepted_tokens_per_pos{position="99999"} 1` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.SpecDrafts != 4 || s.SpecDraftTokens != 8 || s.SpecAccepted != 2 || s.SpecPerPos != nil {
		t.Errorf("parsed %+v", s)
	}
	// A server without speculative decoding: nothing.
	s, _ = Parse(strings.NewReader(exposition(t, "vllm_v1.prom")))
	if !math.IsNaN(s.SpecDrafts) || s.SpecPerPos != nil {
		t.Errorf("no spec decode: %+v", s)
	}
	var tot totals
	tot.add(0, s)
	tot.add(time.Second, s)
	if st := tot.Stats(); st.SpecDecode != nil {
		t.Errorf("no spec decode: stats %+v", st.SpecDecode)
	}
}

// specServer serves spec-decode counters the test sets.
func specServer() *testenv.Figures {
	return testenv.NewFigures(5, func(c []float64) string { return specExposition(c[0], c[1], c[2], c[3], c[4]) })
}

// TestScraperSpecDecodeWindows: each window's acceptance rate and length
// come from the counters' increases within it (not their totals since the
// server started), and the run's from the increases over the run; a
// restarted server's counters count from 0.
func TestScraperSpecDecodeWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := specServer()
		f.Set(100, 200, 150, 90, 60) // before the run: not counted
		s := Start(Config{URL: "http://vllm/metrics", Interval: time.Second, Epoch: time.Now(),
			Client: testenv.InProcessClient(f)})
		time.Sleep(500 * time.Millisecond)
		f.Set(110, 220, 160, 9+90, 1+60) // +10 drafts, +20 draft tokens, +10 accepted
		time.Sleep(time.Second)
		w := s.Window(1500 * time.Millisecond)
		if w == nil || w.SpecDecode == nil {
			t.Fatalf("first window %+v: want spec decode figures", w)
		}
		if sd := w.SpecDecode; sd.Drafts != 10 || sd.AcceptanceRate != 0.5 || sd.MeanAcceptanceLength != 2 || len(sd.PerPosition) != 2 || sd.PerPosition[0] != 0.9 || sd.PerPosition[1] != 0.1 {
			t.Errorf("first window %+v: want 10 drafts, rate 0.5, length 2, per position [0.9 0.1]", sd)
		}
		f.Set(10, 20, 20, 10, 10) // a restart: 10 drafts, all accepted
		time.Sleep(time.Second)
		w = s.Window(2500 * time.Millisecond)
		if sd := w.SpecDecode; sd == nil || sd.Drafts != 10 || sd.AcceptanceRate != 1 || sd.MeanAcceptanceLength != 3 || sd.PerPosition[0] != 1 || sd.PerPosition[1] != 1 {
			t.Errorf("second window %+v: want 10 drafts, all accepted", sd)
		}
		res := s.Stop()
		if sd := res.SpecDecode; sd == nil || sd.Drafts != 20 || sd.DraftTokens != 40 || sd.AcceptedTokens != 30 || sd.AcceptanceRate != 0.75 || sd.MeanAcceptanceLength != 2.5 {
			t.Errorf("run %+v: want 20 drafts, 40 draft tokens, 30 accepted", sd)
		}
	})
}
