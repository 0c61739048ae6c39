package mockserver

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/gputelemetry"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestGPUTelemetry: with GPUs the mock serves DCGM's gauges for each,
// which the GPU scraper's parser reads; utilisation follows the busy slots
// and power follows utilisation. Without, there is no such path.
func TestGPUTelemetry(t *testing.T) {
	s, err := New(Config{Models: []string{"m"}, GPUs: 2, MaxNumSeqs: 4})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	read := func() []gputelemetry.Reading {
		code, body := get(t, srv.URL+GPUMetricsPath)
		if code != 200 {
			t.Fatalf("%s: %d", GPUMetricsPath, code)
		}
		rd, err := gputelemetry.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return rd
	}
	rd := read()
	if len(rd) != 2 || rd[1].ID != "1" || rd[0].UUID == "" {
		t.Fatalf("readings %+v", rd)
	}
	if v := rd[0].Values; v[0] != 0 || v[2] != gpuIdleW {
		t.Errorf("idle GPU: %v, want util 0 and %g W", v, gpuIdleW)
	}
	// Two of four slots busy: 50 %, power half-way.
	for range 2 {
		if !s.acquire(context.Background()) {
			t.Fatal("no slot")
		}
	}
	rd = read()
	if v := rd[1].Values; v[0] != 50 || v[2] != (gpuIdleW+gpuMaxW)/2 {
		t.Errorf("half-busy GPU: %v, want util 50 and %g W", v, (gpuIdleW+gpuMaxW)/2)
	}
	s.release()
	s.release()

	plain, _ := New(Config{Models: []string{"m"}})
	srv2 := httptest.NewServer(plain.Handler())
	defer srv2.Close()
	if code, _ := get(t, srv2.URL+GPUMetricsPath); code != http.StatusNotFound {
		t.Errorf("without GPUs: %s answers %d, want 404", GPUMetricsPath, code)
	}
}

// TestSpecDecodeCounters: the mock's drafts are accepted at the share
// asked for (seeded: within a tolerance of 3 standard deviations), the
// mean acceptance length is what a truncated geometric number of accepted
// tokens gives, and the servermetrics parser reads the counters back.
func TestSpecDecodeCounters(t *testing.T) {
	const k, p = 3, 0.6
	s, err := New(Config{Models: []string{"m"}, SpecDecode: SpecDecodeConfig{K: k, Accept: p}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for id := range int64(400) {
		s.countSpec(id, 100)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	_, body := get(t, srv.URL+"/metrics")
	smp, err := servermetrics.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if smp.SpecDraftTokens != k*smp.SpecDrafts || len(smp.SpecPerPos) != k {
		t.Fatalf("sample %+v", smp)
	}
	// Accepted per draft: p + p² + p³ (each position reached only when the
	// ones before it were accepted).
	wantLen := 1 + p + p*p + p*p*p
	gotLen := 1 + smp.SpecAccepted/smp.SpecDrafts
	if math.Abs(gotLen-wantLen) > 0.05 {
		t.Errorf("mean acceptance length %.3f, want %.3f ± 0.05", gotLen, wantLen)
	}
	if pos0 := smp.SpecPerPos[0] / smp.SpecDrafts; math.Abs(pos0-p) > 3*math.Sqrt(p*(1-p)/smp.SpecDrafts) {
		t.Errorf("position 0 accepted in %.3f of drafts, want %.2f", pos0, p)
	}
	// Every request's 99 tokens after the first are made by its steps.
	if made := smp.SpecDrafts + smp.SpecAccepted; made < 400*99 || made > 400*(99+k) {
		t.Errorf("%v tokens made by the steps, want about %d", made, 400*99)
	}
	// Without spec decode: no counters.
	plain, _ := New(Config{Models: []string{"m"}})
	srv2 := httptest.NewServer(plain.Handler())
	defer srv2.Close()
	if _, body := get(t, srv2.URL+"/metrics"); strings.Contains(body, "spec_decode") {
		t.Error("spec-decode counters without --spec-decode")
	}
}
