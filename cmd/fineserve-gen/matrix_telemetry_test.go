package main

// The combination matrix's telemetry dimension (dTelemetry): what the
// servers serve, the flags, and what the run must have exported and
// summarised.

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/otlprecv"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
)

// matrixOTLPSample is the share of requests whose span a case exports.
const matrixOTLPSample = 0.5

// matrixOperation is the spans' gen_ai.operation.name by backend: the
// GenAI conventions' name for completions (and SGLang's and KServe's
// generate), chat (and Responses and Messages) and embeddings, else the
// endpoint's last path part.
var matrixOperation = map[string]string{
	"vllm": "text_completion", "openai": "text_completion", "openai-chat": "chat", "openai-responses": "chat",
	"openai-images": "generations", "openai-embeddings": "embeddings", "vllm-pooling": "pooling", "vllm-rerank": "rerank",
	"vllm-score": "score", "openai-transcriptions": "transcriptions", "anthropic-messages": "chat",
	"sglang-generate": "text_completion", "kserve-generate": "text_completion",
}

// matrixSpecK and matrixSpecAccept are the servers' draft model.
const (
	matrixSpecK      = 2
	matrixSpecAccept = 0.6
	matrixGPUs       = 2
)

// telemetryServer gives the case's servers GPU telemetry and a draft
// model (gpu-spec).
func telemetryServer(c matrixCase, cfg *mockserver.Config) {
	if c.v(dTelemetry) == "gpu-spec" {
		cfg.GPUs = matrixGPUs
		cfg.SpecDecode = mockserver.SpecDecodeConfig{K: matrixSpecK, Accept: matrixSpecAccept}
	}
}

// caseTelemetry is a case's collector (otlp) and the flags that use it or
// the servers' telemetry.
type caseTelemetry struct {
	rcv  *otlprecv.Receiver
	args []string
	// gpuURLs counts the exporters given, live the live ones.
	gpuURLs, live int
}

func startCaseTelemetry(t *testing.T, c matrixCase, ports []int) *caseTelemetry {
	tel := &caseTelemetry{}
	switch c.v(dTelemetry) {
	case "otlp", "otlp-dry-run":
		tel.rcv = otlprecv.Start()
		t.Cleanup(tel.rcv.Close)
		tel.args = []string{"--otlp-endpoint", tel.rcv.URL(), "--otlp-traces", "--otlp-sample", strconv.FormatFloat(matrixOTLPSample, 'g', -1, 64)}
	case "gpu-spec":
		for i, p := range ports {
			tel.args = append(tel.args, "--gpu-metrics-url", urlOf(p)+mockserver.GPUMetricsPath)
			tel.gpuURLs++
			if !(i == 1 && c.v(dEndpoints) == "two-dead") {
				tel.live++
			}
		}
		tel.args = append(tel.args, "--scrape-server-metrics", "--server-metrics-interval", "50ms")
	}
	return tel
}

// checkDry: a dry run exports nothing (otlp-dry-run: the collector's flags
// given to it).
func (tel *caseTelemetry) checkDry(fail func(string, ...any)) {
	if tel.rcv != nil && (len(tel.rcv.Spans()) > 0 || len(tel.rcv.Headers()) > 0) {
		fail("a dry run exported %d span(s) and %d request(s) to the collector", len(tel.rcv.Spans()), len(tel.rcv.Headers()))
	}
}

// check: with otlp (a case that sends: validCase), the collector received
// the spans of the records the sample chooses (each with its model,
// request id and the backend's operation; none when the sample chooses
// none: a session's turns share their index), and the run's metrics, its
// finished requests among them; the summary's otlp section counts them;
// with gpu-spec, the
// summary has each live server's GPUs and the spec-decode figures; with
// neither, none of these sections.
func (tel *caseTelemetry) check(c matrixCase, sum *metrics.Summary, recs []resultRecord, fail func(string, ...any)) {
	specOf := func() *metrics.SpecDecodeStats {
		if sum.ServerMetrics == nil || sum.ServerMetrics.ServerStats == nil {
			return nil
		}
		return sum.ServerMetrics.SpecDecode
	}
	switch c.v(dTelemetry) {
	case "no-telemetry":
		if sum.OTLP != nil || sum.GPU != nil || specOf() != nil {
			fail("telemetry sections without the options: otlp %+v, gpu %+v, spec decode %+v", sum.OTLP, sum.GPU, specOf())
		}
	case "otlp":
		// A session's turns share its index: sampled together.
		want, n := map[[2]int64]resultRecord{}, 0
		for _, rec := range recs {
			if otlpexport.Keep(rec.Index, matrixOTLPSample) {
				want[[2]int64{rec.Index, int64(rec.Turn)}] = rec
				n++
			}
		}
		wantOp := matrixOperation[c.v(dBackend)]
		spans := tel.rcv.Spans()
		if len(recs) == 0 {
			fail("otlp: no record: the case exports nothing with traffic")
			return
		}
		if len(spans) != n || sum.OTLP == nil || sum.OTLP.Spans != int64(n) || sum.OTLP.Dropped != 0 || sum.OTLP.FailedExports != 0 {
			fail("otlp: %d span(s) arrived, the summary's otlp %+v; want the %d of %d records sampled", len(spans), sum.OTLP, n, len(recs))
			return
		}
		for _, sp := range spans {
			a := otlprecv.Attrs(sp)
			rec, ok := want[[2]int64{a[otlpexport.AttrIndex].GetIntValue(), a[otlpexport.AttrTurn].GetIntValue()}]
			if !ok || a[otlpexport.AttrRequestModel].GetStringValue() != rec.Model {
				fail("otlp: span %v: not a sampled record's, or not its model (%+v)", a, rec.Request)
				return
			}
			if op := a[otlpexport.AttrOperation].GetStringValue(); op != wantOp {
				fail("otlp: span of request %d: %s %q, want %q for --backend %s", rec.Index, otlpexport.AttrOperation, op, wantOp, c.v(dBackend))
			}
			if ids := a[otlpexport.AttrRequestID].GetArrayValue().GetValues(); rec.RequestID != "" && (len(ids) != 1 || ids[0].GetStringValue() != rec.RequestID) {
				fail("otlp: span of request %d: request id %v, want %q", rec.Index, ids, rec.RequestID)
			}
		}
		if m := tel.rcv.Metrics(); !m["fineserve_gen_requests_scheduled"] || !m["fineserve_gen_send_lag_seconds"] ||
			!m["fineserve_gen_requests"] && sum.Completed+sum.Failed > 0 {
			fail("otlp: the run's metrics did not arrive: %v", m)
		}
		if bad := tel.rcv.Refused(); len(bad) > 0 {
			fail("otlp: the collector refused exports: %q", bad)
		}
	case "gpu-spec":
		g := sum.GPU
		if g == nil || !g.Available || g.GPUStats == nil || g.GPUs != matrixGPUs*tel.live || len(g.URLs) != tel.gpuURLs || g.Power == nil || g.Power.EnergyJ < 0 {
			fail("gpu: section %+v, want %d GPUs of %d live exporters with power", g, matrixGPUs*tel.live, tel.live)
			return
		}
		if (tel.live < tel.gpuURLs) != (g.Failures > 0) {
			fail("gpu: %d failed scrapes with %d of %d exporters live", g.Failures, tel.live, tel.gpuURLs)
		}
		sd := specOf()
		if sd == nil {
			fail("no spec-decode figures from servers with a draft model: %+v", sum.ServerMetrics)
			return
		}
		if sd.DraftTokens != matrixSpecK*sd.Drafts || sd.Drafts > 0 && (sd.MeanAcceptanceLength < 1 || sd.MeanAcceptanceLength > 1+matrixSpecK || len(sd.PerPosition) != matrixSpecK) {
			fail("spec decode %+v with %d draft tokens a step", sd, matrixSpecK)
		}
	}
}

// TestMatrixExportsRunWithTraffic checks the plan: every value of the
// export and telemetry dimensions that writes or exports something meets
// every backend in a case that sends (not only in dry runs, which export
// nothing), and in the long form's every case with it sends; the dry-run
// values are dry runs.
func TestMatrixExportsRunWithTraffic(t *testing.T) {
	cases, _ := matrixCases(t)
	type key struct{ dim, value, backend string }
	sent := map[key]bool{}
	for _, c := range cases {
		for _, d := range []int{dExport, dTelemetry} {
			v := c.v(d)
			dry := strings.HasSuffix(v, "-dry-run")
			if dry != (c.v(dDryRun) == "dry-run") && v != "no-export" && v != "no-telemetry" {
				t.Errorf("case %s: %s %s with %s", c.name, matrixDims[d].name, v, c.v(dDryRun))
			}
			if c.v(dDryRun) == "send" {
				sent[key{matrixDims[d].name, v, c.v(dBackend)}] = true
			}
		}
	}
	for _, d := range []int{dExport, dTelemetry} {
		for _, v := range matrixDims[d].values {
			if strings.HasSuffix(v, "-dry-run") || v == "no-export" || v == "no-telemetry" {
				continue
			}
			for _, b := range matrixDims[dBackend].values {
				if !sent[key{matrixDims[d].name, v, b}] {
					t.Errorf("%s %s never runs with traffic for --backend %s", matrixDims[d].name, v, b)
				}
			}
		}
	}
}
