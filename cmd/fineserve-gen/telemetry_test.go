package main

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/otlprecv"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
)

// TestOTLPRun: a run with --otlp-endpoint, --otlp-traces and --otlp-sample
// sends a collector the spans of the requests the share chooses by index
// — each with the record's model and X-Request-Id — and the run's metrics,
// each export with the --otlp-header given, whose value is never printed.
func TestOTLPRun(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}})
	rcv := otlprecv.Start()
	defer rcv.Close()
	const secretValue = "Bearer otlp-s3cret"
	r := mustRunTool(t, append(baseArgs(port, 60), "--request-id-prefix", "x-", "--otlp-endpoint", rcv.URL(), "--otlp-traces",
		"--otlp-sample", "0.5", "--otlp-header", "Authorization="+secretValue)...)
	recs := readRecords(t, r.path("results.jsonl"))
	want := map[int64]resultRecord{}
	for _, rec := range recs {
		if otlpexport.Keep(rec.Index, 0.5) {
			want[rec.Index] = rec
		}
	}
	spans := rcv.Spans()
	if len(recs) != 60 || len(spans) != len(want) || len(want) < 15 || len(want) > 45 {
		t.Fatalf("%d spans arrived for %d records, want the %d sampled", len(spans), len(recs), len(want))
	}
	for _, sp := range spans {
		a := otlprecv.Attrs(sp)
		i := a[otlpexport.AttrIndex].GetIntValue()
		rec, ok := want[i]
		if !ok {
			t.Errorf("span of request %d: not sampled", i)
			continue
		}
		id := a[otlpexport.AttrRequestID].GetArrayValue().GetValues()
		if len(id) != 1 || id[0].GetStringValue() != rec.RequestID || rec.RequestID == "" ||
			a[otlpexport.AttrRequestModel].GetStringValue() != rec.Model || a[otlpexport.AttrOperation].GetStringValue() != "text_completion" ||
			a[otlpexport.AttrServerAddr].GetStringValue() != "127.0.0.1" || a[otlpexport.AttrOutputTokens].GetIntValue() != int64(rec.CompletionTokens) {
			t.Errorf("span of request %d: attributes %v, record %+v", i, a, rec.Request)
		}
	}
	for _, m := range []string{"fineserve_gen_requests", "fineserve_gen_ttft_seconds", "fineserve_gen_send_lag_seconds"} {
		if !rcv.Metrics()[m] {
			t.Errorf("metric %s did not arrive: %v", m, rcv.Metrics())
		}
	}
	hs := rcv.Headers()
	if len(hs) == 0 {
		t.Fatal("no export arrived")
	}
	for _, h := range hs {
		if h.Get("Authorization") != secretValue {
			t.Errorf("an export without the header: %v", h)
		}
	}
	sum, _ := os.ReadFile(r.path("summary.json"))
	if strings.Contains(r.stderr+r.stdout+string(sum), "otlp-s3cret") {
		t.Error("the header's value was printed or written")
	}
	if o := r.summary(t).OTLP; o == nil || o.Spans != int64(len(want)) || o.SampledOut != int64(len(recs)-len(want)) || o.Dropped != 0 || o.FailedExports != 0 || !o.Traces {
		t.Errorf("the summary's otlp section %+v: want %d spans, %d sampled out", o, len(want), len(recs)-len(want))
	}
}

// TestGPUAndSpecDecodeRun: against the mock's DCGM-like telemetry (2
// GPUs) and its draft model (2 tokens, each accepted with p = 0.5), the
// summary's gpu section has power and energy per output token over the
// run and per window, server_metrics has the acceptance rate and length
// (the truncated geometric's: 1 + p + p² = 1.75), and the table and the
// report show them.
func TestGPUAndSpecDecodeRun(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}, GPUs: 2, MaxNumSeqs: 8, TTFT: 20 * time.Millisecond, ITL: 2 * time.Millisecond,
		SpecDecode: mockserver.SpecDecodeConfig{K: 2, Accept: 0.5}, Seed: 3})
	url := urlOf(port)
	args := append(mockTarget(port, "--num-prompts", "80", "--request-rate", "400", "--random-input-len", "8", "--random-output-len", "64",
		"--seed", "1", "--warmup-requests", "0"), "--gpu-metrics-url", url+mockserver.GPUMetricsPath,
		"--server-metrics-interval", "20ms", "--window-seconds", "0.1")
	dir := t.TempDir()
	args = append(args, "--report-html", dir+"/report.html")
	r := mustRunTool(t, args...)
	s := r.summary(t)
	g := s.GPU
	if g == nil || !g.Available || g.GPUStats == nil || g.GPUs != 2 || len(g.Devices) != 2 || g.Power == nil {
		t.Fatalf("gpu section %+v", g)
	}
	// Power follows utilisation from 75 W a GPU idle to 700 W busy.
	if g.UtilMax != 100 || g.Power.MaxW != 1400 || g.Power.MeanW < 150 || g.Power.EnergyJ <= 0 {
		t.Errorf("gpu util max %v, power %+v", g.UtilMax, g.Power)
	}
	if want := g.Power.EnergyJ / float64(s.TotalOutputTokens); s.TotalOutputTokens == 0 || math.Abs(g.Power.JoulesPerOutputToken-want) > 1e-9*want {
		t.Errorf("joules per output token %v, want %v / %d", g.Power.JoulesPerOutputToken, g.Power.EnergyJ, s.TotalOutputTokens)
	}
	windowEnergy, gpuWindows := 0.0, 0
	for _, w := range s.Windows {
		if w.GPU != nil && w.GPU.Power != nil {
			gpuWindows++
			windowEnergy += w.GPU.Power.EnergyJ
			if w.OutputTokens > 0 && w.GPU.Power.JoulesPerOutputToken == 0 {
				t.Errorf("window %d: %d output tokens, no joules per token", w.Index, w.OutputTokens)
			}
		}
	}
	// The windows split the run's energy (a cut splits the reading held
	// across it).
	if gpuWindows < 2 || math.Abs(windowEnergy-g.Power.EnergyJ) > 1e-6*g.Power.EnergyJ {
		t.Errorf("%d windows with GPU figures, their energy %v, the run's %v", gpuWindows, windowEnergy, g.Power.EnergyJ)
	}
	sd := s.ServerMetrics.SpecDecode
	if s.ServerMetrics == nil || s.ServerMetrics.ServerStats == nil || sd == nil {
		t.Fatalf("no spec decode figures: %+v", s.ServerMetrics)
	}
	// 80 requests of 63 decode tokens: about 2,900 drafts; the rate's
	// standard deviation is well under 2 points.
	if sd.DraftTokens != 2*sd.Drafts || math.Abs(sd.MeanAcceptanceLength-1.75) > 0.06 || math.Abs(sd.AcceptanceRate-0.375) > 0.03 || len(sd.PerPosition) != 2 {
		t.Errorf("spec decode %+v: want length 1.75, rate 0.375", sd)
	}
	for _, want := range []string{"GPU Telemetry", "GPU energy per output token (J):", "Spec decode acceptance rate (%):", "Spec decode mean acceptance length:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table has no %q:\n%s", want, r.stdout)
		}
	}
	html := string(testenv.ReadFile(t, dir+"/report.html"))
	for _, want := range []string{`id="gpu"`, `id="spec-decode"`, `id="gpu-spec-windows"`, "GPU energy per output token"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report has no %s", want)
		}
	}
}

func TestTelemetryUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-sample", "1.5"}, "--otlp-sample 1.5"},
		{[]string{"--otlp-traces"}, "need --otlp-endpoint"},
		{[]string{"--otlp-endpoint", "localhost:4318"}, "--otlp-endpoint"},
		{[]string{"--otlp-endpoint", "http://127.0.0.1:4318", "--otlp-header", "novalue"}, "KEY=VALUE"},
		{[]string{"--gpu-metrics-url", "ftp://u:pw1234@host/metrics"}, "--gpu-metrics-url"},
	} {
		wantUsage(t, append([]string{"--port", "1", "--dry-run"}, tc.args...), tc.says)
		if _, _, errb := runCmd(append([]string{"--port", "1", "--dry-run"}, tc.args...)...); strings.Contains(errb, "pw1234") {
			t.Errorf("%v: a password printed: %s", tc.args, errb)
		}
	}
}

// TestOTLPCollectorDown: a collector that does not answer is a warning
// and counted failed exports, never a failure of the run; the endpoint's
// credentials are printed nowhere.
func TestOTLPCollectorDown(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{Models: []string{"mock-model"}})
	dead := "http://user:pw-otlp-9@127.0.0.1:" + strconv.Itoa(closedPort(t))
	r := mustRunTool(t, append(baseArgs(port, 20), "--otlp-endpoint", dead, "--otlp-traces")...)
	o := r.summary(t).OTLP
	if o == nil || o.FailedExports == 0 || o.LastError == "" || o.Spans != 20 {
		t.Errorf("otlp section %+v: want failed exports counted", o)
	}
	if !strings.Contains(r.stderr, "failed export") {
		t.Errorf("no warning:\n%s", r.stderr)
	}
	sum, _ := os.ReadFile(r.path("summary.json"))
	if strings.Contains(r.stderr+r.stdout+string(sum), "pw-otlp-9") {
		t.Error("the endpoint's password was printed or written")
	}
}
