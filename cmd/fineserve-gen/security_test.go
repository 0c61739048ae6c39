package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/secret"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// leakKey is the key the leak test hands the tool; nothing it writes may
// hold it, or its first leakPrefix characters.
const (
	leakKey    = "sk-fsg-CANARY-7f3a9c1e5b2d4f60a8e1c3b5d7f9"
	leakPrefix = 8
)

// echoServer answers the models list, and fails every generation request
// in a way that sends the request's headers and body back: in HTTP error
// bodies (plain and JSON, with the key where messages are cut), in a 200
// stream's invalid JSON, and in an error object inside a stream.
type echoServer struct {
	n, authorized atomic.Int64
	models        int // status of /v1/models
}

func (e *echoServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization")
	if auth == "Bearer "+leakKey {
		e.authorized.Add(1)
	}
	var hdr strings.Builder
	r.Header.Write(&hdr)
	if r.URL.Path == "/v1/models" {
		if e.models != 0 && e.models != 200 {
			w.WriteHeader(e.models)
			fmt.Fprintf(w, `{"error":{"message":"bad credentials %s"}}`, auth)
			return
		}
		io.WriteString(w, `{"object":"list","data":[{"id":"mock-model","object":"model"}]}`)
		return
	}
	switch e.n.Add(1) % 6 {
	case 0:
		w.WriteHeader(401)
		fmt.Fprintf(w, `{"error":{"message":"invalid key %s for body %q"}}`, auth, body)
	case 1: // the key across the 512-byte cut of messages
		w.WriteHeader(400)
		io.WriteString(w, strings.Repeat("x", 497)+hdr.String())
	case 2: // the key across the 200-byte cut of a bad chunk
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {%s%s\n\n", strings.Repeat("y", 185), auth)
	case 3:
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"error\":{\"message\":\"denied: %s\",\"code\":503}}\n\n", auth)
	case 4:
		w.WriteHeader(500)
		w.Write(body)
	case 5:
		w.WriteHeader(503)
		fmt.Fprintf(w, "%s\n%s", hdr.String(), body)
	}
}

// checkNoKey fails if text holds the key or its start.
func checkNoKey(t *testing.T, what, text string) {
	t.Helper()
	if i := strings.Index(text, leakKey[:leakPrefix]); i >= 0 {
		t.Errorf("%s holds the API key: …%s…", what, text[max(0, i-40):min(len(text), i+60)])
	}
}

// TestAPIKeyNeverLeaks runs the tool with a distinctive key against a
// server that echoes the key back in every error it can, and checks every
// output: stdout, stderr, the results, the summary, the output file and
// the schedule.
func TestAPIKeyNeverLeaks(t *testing.T) {
	for _, source := range []string{"env", "file"} {
		t.Run(source, func(t *testing.T) {
			echo := &echoServer{}
			hs := httptest.NewServer(echo)
			defer hs.Close()
			dir := t.TempDir()
			args := []string{"--base-url", hs.URL, "--num-prompts", "60", "--request-rate", "inf",
				"--random-input-len", "8", "--random-output-len", "2", "--seed", "1", "--warmup-requests", "0",
				"--output-file", filepath.Join(dir, "out.jsonl"), "--schedule-out", filepath.Join(dir, "schedule.csv"),
				// The key in a request member: echoed in bodies, and on
				// the command line the summary records.
				"--extra-request-body", `{"user": "` + leakKey + `"}`,
			}
			if source == "env" {
				t.Setenv("OPENAI_API_KEY", leakKey)
			} else {
				t.Setenv("OPENAI_API_KEY", "")
				keyFile := filepath.Join(dir, "key")
				os.WriteFile(keyFile, []byte(leakKey+"\n"), 0o600)
				args = append(args, "--api-key-file", keyFile)
			}
			r := runTool(t, args...)
			if r.code != exitBudget {
				t.Errorf("exit %d, want %d (every request failed)\n%s", r.code, exitBudget, r.stderr)
			}
			if echo.authorized.Load() < 60 {
				t.Fatalf("the key was sent with %d requests, want every one", echo.authorized.Load())
			}
			checkNoKey(t, "stdout", r.stdout)
			checkNoKey(t, "stderr", r.stderr)
			files, _ := filepath.Glob(filepath.Join(r.dir, "*"))
			files = append(files, filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "schedule.csv"))
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Errorf("%s: %v", f, err)
					continue
				}
				checkNoKey(t, filepath.Base(f), string(b))
			}
			s := r.summary(t)
			if !strings.Contains(s.Command, "[redacted]") || len(s.ErrorsByClass) < 3 {
				t.Errorf("command %q, errors by class %v: want the redacted key in the command and several classes", s.Command, s.ErrorsByClass)
			}
			recs := readRecords(t, r.path("results.jsonl"))
			redacted := 0
			for _, rec := range recs {
				if strings.Contains(rec.Error, "[redacted]") {
					redacted++
				}
			}
			if redacted < 40 {
				t.Errorf("%d of %d records say [redacted]: the echo did not reach the messages", redacted, len(recs))
			}
		})
	}
	t.Run("failed model list and warm-up", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", leakKey)
		for _, tc := range []struct {
			models int
			extra  []string
		}{
			{401, nil}, // no --model: the list fails
			{200, []string{"--model", "m", "--warmup-requests", "6"}}, // every warm-up request fails
		} {
			echo := &echoServer{models: tc.models}
			hs := httptest.NewServer(echo)
			r := runTool(t, append([]string{"--base-url", hs.URL, "--num-prompts", "3"}, tc.extra...)...)
			hs.Close()
			if r.code != exitFailure {
				t.Errorf("exit %d, want %d\n%s", r.code, exitFailure, r.stderr)
			}
			checkNoKey(t, "stderr", r.stderr)
			checkNoKey(t, "stdout", r.stdout)
			if tc.models == 401 && !strings.Contains(r.stderr, "[redacted]") {
				t.Errorf("stderr does not show the echoed (redacted) key:\n%s", r.stderr)
			}
		}
	})
}

func TestSafeArgs(t *testing.T) {
	got := safeArgs([]string{
		"--base-url", "https://user:hunter2@example.test:8443/x", "--base-url=http://u:pw@h/", "--extra-request-body",
		`{"k":"sk-secret-123456"}`, "--model", "sk-secret-1", "--prompt-suffix", "sk-se", "--port", "8000",
	}, secret.New("sk-secret-123456"))
	want := []string{
		"--base-url", "https://xxxxx:xxxxx@example.test:8443/x", "--base-url=http://xxxxx:xxxxx@h/", "--extra-request-body",
		`{"k":"[redacted]"}`, "--model", "[redacted]", "--prompt-suffix", "sk-se", "--port", "8000",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("safeArgs:\n got %q\nwant %q", got, want)
	}
}

func TestKeyWithControlCharactersIsRejected(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("sk-one\nsk-two\n"), 0o600)
	r := runTool(t, "--api-key-file", keyFile, "--port", "1")
	if r.code != exitUsage || !strings.Contains(r.stderr, "control character") || strings.Contains(r.stderr, "sk-one") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestTLSVerification: certificates are verified by default; --insecure
// skips it, with a warning.
func TestTLSVerification(t *testing.T) {
	srv := mocktest.New(t, mockserver.Config{})
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshakes
	hs.StartTLS()
	defer hs.Close()
	args := []string{"--base-url", hs.URL, "--model", "mock-model", "--num-prompts", "5", "--random-input-len", "4", "--random-output-len", "2"}
	r := runTool(t, args...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "certificate") || !strings.Contains(r.stderr, "connect") {
		t.Errorf("default: exit %d, want %d with a certificate error\n%s", r.code, exitFailure, r.stderr)
	}
	r = runTool(t, append(args, "--insecure")...)
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: --insecure") {
		t.Errorf("--insecure: exit %d, want %d with a warning\n%s", r.code, exitOK, r.stderr)
	}
}

// TestMockServerBindsLoopback: without --host the mock listens on
// 127.0.0.1 only; bad --fault values are usage errors.
func TestMockServerBindsLoopback(t *testing.T) {
	m := startMockCommand(t, "--fault", "http_503:0.5")
	m.stop(t)
	if out := m.stderr.String(); !strings.Contains(out, "on http://127.0.0.1:") || !strings.Contains(out, "http_503:0.5") || strings.Contains(out, "reachable") {
		t.Errorf("stderr:\n%s", out)
	}
	var errb strings.Builder
	code := mockServerCommand(context.Background(), []string{"--port", "0", "--fault", "boom", "--fault", "reset:2", "--fault", "stall:0.7", "--fault", "endless:0.7"}, io.Discard, &errb)
	for _, want := range []string{"unknown kind", "reset:2", "add up to 1.4"} {
		if code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("exit %d, stderr does not say %q:\n%s", code, want, errb.String())
		}
	}
}

// TestSecretsNeverLeak plants a distinct secret in every place a user can
// give one — the API key ($OPENAI_API_KEY or --api-key-file), the user and
// password of --base-url and --server-metrics-url, and of the proxies of
// the environment — and greps every output of a full run for each: stdout,
// stderr, the summary, the records, the HTML report, the output file, the
// schedule and a scrape of --metrics-addr. The server fails its /metrics
// (the warning names the URL) and closes some connections unanswered (the
// HTTP client's error names the URL, user and all).
func TestSecretsNeverLeak(t *testing.T) {
	const (
		envKey      = "sk-envkey-Q7w9e2r4t6y8u0"
		fileKey     = "sk-filekey-Z1x3c5v7b9n2m4"
		baseUser    = "fsgBaseUser1x"
		basePass    = "fsgBasePass1y"
		metricsUser = "fsgMetricsUser2x"
		metricsPass = "fsgMetricsPass2y"
	)
	proxies := map[string]string{
		"HTTP_PROXY":  "fsgProxyUser3x:fsgProxyPass3y",
		"HTTPS_PROXY": "fsgProxyUser4x:fsgProxyPass4y",
		"ALL_PROXY":   "fsgProxyUser5x:fsgProxyPass5y",
	}
	secrets := []string{envKey, fileKey, baseUser, basePass, metricsUser, metricsPass}
	for _, lc := range []string{"http_proxy", "https_proxy", "all_proxy"} {
		t.Setenv(lc, "")
	}
	for k, cred := range proxies {
		// Loopback targets are never proxied, so the run is not disturbed.
		t.Setenv(k, "http://"+cred+"@127.0.0.1:9")
		u, p, _ := strings.Cut(cred, ":")
		secrets = append(secrets, u, p)
	}
	t.Setenv("OPENAI_API_KEY", envKey)

	srv := mocktest.New(t, mockserver.Config{ITL: 5 * time.Millisecond,
		Faults: mockserver.FaultConfig{Seed: 3, Faults: []mockserver.Fault{{Kind: mockserver.FaultRefuse, Rate: 0.2}}}})
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.Error(w, "metrics are down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	hostPort := strings.TrimPrefix(hs.URL, "http://")

	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{"env key, metrics at the base URL", nil},
		{"key file, metrics URL", []string{"--api-key-file", "KEYFILE",
			"--server-metrics-url", "http://" + metricsUser + ":" + metricsPass + "@" + hostPort + "/metrics"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			keyFile := filepath.Join(dir, "key")
			os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600)
			out := func(name string) string { return filepath.Join(dir, name) }
			args := []string{"--base-url", "http://" + baseUser + ":" + basePass + "@" + hostPort,
				"--model", "mock-model", "--num-prompts", "60", "--request-rate", "20",
				"--random-input-len", "8", "--random-output-len", "8", "--seed", "1", "--warmup-requests", "0",
				"--max-error-rate", "1", "--scrape-server-metrics", "--server-metrics-interval", "200ms",
				"--metrics-addr", "127.0.0.1:0", "--disable-tqdm",
				"--results-jsonl", out("results.jsonl"), "--summary-json", out("summary.json"),
				"--report-html", out("report.html"), "--output-file", out("out.jsonl"), "--schedule-out", out("schedule.csv"),
			}
			for _, a := range tc.extra {
				if a == "KEYFILE" {
					a = keyFile
				}
				args = append(args, a)
			}
			stdout, stderr := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
			before := srv.Stats().Completed
			done := make(chan int, 1)
			go func() { done <- dispatch(context.Background(), args, stdout, stderr) }()
			// Scrape the generator's metrics mid-run (the run lasts about
			// 3 s; 10 answered requests take about 0.5 s).
			var promURL string
			waitFor(t, 30*time.Second, "the metrics endpoint", func() bool {
				_, rest, ok := strings.Cut(stderr.String(), "metrics: serving ")
				promURL, _, _ = strings.Cut(rest, "\n")
				return ok && strings.HasSuffix(promURL, "/metrics")
			})
			waitFor(t, 30*time.Second, "10 answered requests", func() bool { return srv.Stats().Completed >= before+10 })
			resp, err := http.Get(promURL)
			if err != nil {
				t.Fatalf("scrape %s: %v", promURL, err)
			}
			prom, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !regexp.MustCompile(`(?m)^fineserve_gen_e2e_latency_seconds_count [1-9]`).Match(prom) {
				t.Errorf("the scrape holds no request:\n%s", prom)
			}
			code := <-done
			if code != exitOK {
				t.Errorf("exit %d\n%s", code, stderr.String())
			}
			if strings.Contains(stderr.String(), "reachable from other machines") {
				t.Errorf("--metrics-addr 127.0.0.1:0 is warned about:\n%s", stderr.String())
			}
			outputs := map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "prometheus": string(prom)}
			for _, f := range []string{"results.jsonl", "summary.json", "report.html", "out.jsonl", "schedule.csv"} {
				b, err := os.ReadFile(out(f))
				if err != nil {
					t.Errorf("%s: %v", f, err)
				}
				outputs[f] = string(b)
			}
			for what, text := range outputs {
				for _, s := range secrets {
					if i := strings.Index(text, s); i >= 0 {
						t.Errorf("%s holds the secret %q: …%s…", what, s, text[max(0, i-60):min(len(text), i+40)])
					}
				}
			}
			// The places the secrets were hidden from are there.
			sum := outputs["summary.json"]
			if !strings.Contains(outputs["stderr"], "xxxxx:xxxxx@"+hostPort+"/metrics") || !strings.Contains(sum, `"url": "http://xxxxx:xxxxx@`+hostPort+`/metrics"`) ||
				!strings.Contains(outputs["results.jsonl"], "xxxxx:xxxxx@"+hostPort) || !strings.Contains(sum, "--base-url http://xxxxx:xxxxx@"+hostPort) {
				t.Errorf("want the redacted URLs in the metrics warning, the summary's server_metrics.url and command, and the records\nstderr:\n%s\nsummary:\n%s", outputs["stderr"], sum)
			}
		})
	}
}
