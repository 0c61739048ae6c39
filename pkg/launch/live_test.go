package launch

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
	"github.com/fineserve-gen/fineserve-gen/pkg/workload"
)

var liveLineRE = regexp.MustCompile(`(?m)^\[\d\d:\d\d–\d\d:\d\d\] offered [\d.]+/s achieved [\d.]+/s in flight \d+ errors \d+ \| `)

// TestLiveOutputWindowsReportAndMetrics runs 1.5 s of Poisson traffic
// against the mock with a live line every 250 ms and windows of 500 ms:
// stderr (not a terminal) gets plain live lines and no bar; the summary
// holds the windows, whose offered and finished counts add up to the run's,
// with the server's figures; the HTML report is written; and the
// generator's /metrics, scraped while the run goes on, parses with the
// official parser.
func TestLiveOutputWindowsReportAndMetrics(t *testing.T) {
	port := startMock(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: 2 * time.Millisecond})
	dir := t.TempDir()
	o := testOptions(port)
	o.Quiet = false
	o.RequestRate, o.Duration = 80, 1500*time.Millisecond
	o.RandomInputLen, o.RandomOutputLen = 32, 8
	o.Observe.ReportInterval, o.Observe.Window = 250*time.Millisecond, 500*time.Millisecond
	o.Observe.ServerMetricsInterval = 50 * time.Millisecond
	o.Observe.MetricsAddr = "127.0.0.1:0"
	o.Observe.ReportHTML = filepath.Join(dir, "report.html")
	o.SummaryJSON = filepath.Join(dir, "summary.json")
	var errb testenv.SyncBuffer
	var out bytes.Buffer
	type ran struct {
		sum *metrics.Summary
		err error
	}
	// The run announces its metrics address on stderr: the writer says
	// when, so the test scrapes as soon as it is served.
	urlRE := regexp.MustCompile(`metrics: serving (http://\S+/metrics)`)
	announced := make(chan string, 1)
	announce := &announceWriter{w: &errb, re: urlRE, found: announced}
	res := make(chan ran, 1)
	go func() {
		sum, err := Run(context.Background(), o, runner.IO{Out: &out, Err: announce})
		res <- ran{sum, err}
	}()

	// Scrape the generator's own metrics while the run goes on.
	var url string
	select {
	case url = <-announced:
	case r := <-res:
		t.Fatalf("the run ended before its metrics were scraped: %v\n%s", r.err, errb.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("no metrics address announced:\n%s", errb.String())
	}
	var scraped map[string]float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		scraped = scrapeGenerator(t, url)
		if scraped["fineserve_gen_requests_total"] > 0 {
			break
		}
	}
	if scraped["fineserve_gen_requests_total"] == 0 || scraped["fineserve_gen_ttft_seconds"] == 0 {
		t.Errorf("no request counted on /metrics during the run: %v", scraped)
	}
	r := <-res
	if r.err != nil {
		t.Fatalf("run: %v\n%s", r.err, errb.String())
	}
	sum := r.sum
	stderr := errb.String()
	if strings.Contains(stderr, "\r") {
		t.Error("a carriage return on a stream that is not a terminal")
	}
	if n := len(liveLineRE.FindAllString(stderr, -1)); n < 5 {
		t.Errorf("%d live lines, want ≥ 5 (every 250 ms over ≥ 1.5 s):\n%s", n, stderr)
	}
	if _, err := http.Get(url); err == nil {
		t.Error("the metrics endpoint still serves after the run")
	}

	var ws []metrics.WindowStats
	if ok, err := testenv.SectionOf(t, sum, metrics.KeyWindows, &ws); !ok || err != nil {
		t.Fatalf("no windows in the summary (%v)", err)
	}
	var offered, finished int64
	withServer := 0
	for _, w := range ws {
		offered += w.Offered
		finished += w.Completed + w.Failed
		if w.Server != nil && w.Server.Samples > 0 {
			withServer++
		}
	}
	if offered != sum.Scheduled || finished != sum.Completed+sum.Failed || len(ws) < 3 {
		t.Errorf("%d windows: offered %d finished %d; the run scheduled %d and finished %d", len(ws), offered, finished, sum.Scheduled, sum.Completed+sum.Failed)
	}
	if withServer < len(ws)-1 {
		t.Errorf("server figures in %d of %d windows", withServer, len(ws))
	}
	var server struct {
		Available bool    `json:"available"`
		Samples   int64   `json:"samples"`
		Running   float64 `json:"running_mean"`
	}
	if ok, _ := testenv.SectionOf(t, sum, "server_metrics", &server); !ok || !server.Available || server.Samples < 10 {
		t.Errorf("server metrics %+v", server)
	}
	// The summary file has the same windows.
	b := testenv.ReadFile(t, o.SummaryJSON)
	var file map[string]json.RawMessage
	json.Unmarshal(b, &file)
	for _, k := range []string{"windows", "window_seconds", "client_saturated", "latency_cdfs", "length_histograms", "server_metrics"} {
		if _, ok := file[k]; !ok {
			t.Errorf("summary file lacks %s", k)
		}
	}
	html := testenv.ReadFile(t, o.Observe.ReportHTML)
	if n := strings.Count(string(html), `<svg class="plot"`); n < 10 {
		t.Errorf("the report has %d plots, want ≥ 10", n)
	}
}

// scrapeGenerator returns each family's total: the sum of its counters and
// gauges, or the sample count of its histograms.
func scrapeGenerator(t *testing.T, url string) map[string]float64 {
	t.Helper()
	fams := testenv.ScrapeMetrics(t, url)
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			switch {
			case m.Counter != nil:
				out[name] += m.Counter.GetValue()
			case m.Gauge != nil:
				out[name] += m.Gauge.GetValue()
			case m.Histogram != nil:
				out[name] += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

// TestProgressBarOnATerminal: on a terminal a bar is redrawn with carriage
// returns above which live lines are printed; --disable-tqdm removes the
// bar only.
func TestProgressBarOnATerminal(t *testing.T) {
	port := startMock(t, mockserver.Config{TTFT: 2 * time.Millisecond, ITL: time.Millisecond})
	for _, disable := range []bool{false, true} {
		o := testOptions(port)
		o.Quiet, o.DisableProgress = false, disable
		o.RequestRate, o.NumPrompts, o.NumPromptsSet = 50, 40, true
		o.RandomInputLen, o.RandomOutputLen = 16, 4
		o.Observe.ReportInterval = 200 * time.Millisecond
		var errb testenv.SyncBuffer
		if _, err := Run(context.Background(), o, runner.IO{Out: &bytes.Buffer{}, Err: &errb, Terminal: true}); err != nil {
			t.Fatal(err)
		}
		s := errb.String()
		bar := strings.Contains(s, "\r\033[K[") && strings.Contains(s, "] 40/40 100% in flight")
		if bar == disable {
			t.Errorf("--disable-tqdm %v: bar drawn %v:\n%q", disable, bar, s)
		}
		if n := len(regexp.MustCompile(`\[\d\d:\d\d–\d\d:\d\d\] offered`).FindAllString(s, -1)); n < 3 {
			t.Errorf("--disable-tqdm %v: %d live lines, want ≥ 3", disable, n)
		}
	}
}

// TestTimingServerIdleFraction runs four bursts of five requests, one
// burst a second, against the mock; each request runs 300 ms (100 ms to the
// first token, then 20 tokens 10 ms apart), so the server is busy 0.3 s of
// every second and idle during the 0.7 s gaps. Scraping its /metrics every
// 10 ms, the run's idle fraction must match what the server itself
// measured (its busy time, mockserver.Stats) within 5 % (absolute), and
// what the gaps imply (1 − 4 × 0.3 s / the time observed) within 10 %; each
// of the first three windows, which hold a burst each, is idle 0.7 of its
// second within 0.2 (5× a quiet machine's 0.04: a busy one delays a burst's
// timers by tens of ms and moves its start across a boundary).
func TestTimingServerIdleFraction(t *testing.T) {
	testenv.SkipUnderRace(t)
	srv, port := mocktest.Start(t, mockserver.Config{TTFT: 100 * time.Millisecond, ITL: 10 * time.Millisecond})
	o := testOptions(port)
	o.RandomInputLen, o.RandomOutputLen = 16, 21
	o.Observe.ServerMetricsInterval = 10 * time.Millisecond
	o.Observe.Window = time.Second
	bursts := func(yield func(arrival.Arrival) bool) {
		for b := 0; b < 4; b++ {
			for k := 0; k < 5; k++ {
				a := arrival.Arrival{Index: int64(5*b + k), At: time.Duration(b) * time.Second, InputTokens: 16, OutputTokens: 21}
				a.Burst = a.Index
				if !yield(a) {
					return
				}
			}
		}
	}
	wl := &workload.Workload{Schedule: bursts, Stats: arrival.Summarize(bursts), First: arrival.Arrival{InputTokens: 16, OutputTokens: 21}}
	busy0 := srv.Stats().Busy
	var out, errb bytes.Buffer
	j := &job{Options: o}
	pool, err := j.newPool()
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	stdio := runner.IO{Out: &out, Err: &errb}
	cfg, err := j.runConfig(1, wl, stdio, runner.NewLogger(&errb, true))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runner.Run(context.Background(), cfg, wl, pool, stdio)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errb.String())
	}
	if sum.Completed != 20 {
		t.Fatalf("completed %d of 20", sum.Completed)
	}
	var server struct {
		Samples  int64   `json:"samples"`
		Idle     float64 `json:"idle_fraction"`
		Observed float64 `json:"observed_s"`
		Running  float64 `json:"running_max"`
	}
	if ok, err := testenv.SectionOf(t, sum, "server_metrics", &server); !ok || err != nil {
		t.Fatalf("no server metrics (%v)", err)
	}
	implied := 1 - 4*0.3/server.Observed
	measured := 1 - (srv.Stats().Busy-busy0).Seconds()/server.Observed
	t.Logf("idle fraction %.3f over %.3f s (%d samples); the gaps imply %.3f; the mock measured %.3f", server.Idle, server.Observed, server.Samples, implied, measured)
	if math.Abs(server.Idle-measured) > 0.05 || math.Abs(server.Idle-implied) > 0.1 {
		t.Errorf("idle fraction %.3f: the server measured %.3f (±0.05), the gaps imply %.3f (±0.1)", server.Idle, measured, implied)
	}
	if server.Observed < 3.2 || server.Observed > 4 || server.Running != 5 || server.Samples < 200 {
		t.Errorf("observed %.2f s with %d samples, running max %v", server.Observed, server.Samples, server.Running)
	}
	// Per window: each second holds one burst, busy 0.3 s of it.
	var ws []metrics.WindowStats
	testenv.SectionOf(t, sum, metrics.KeyWindows, &ws)
	for _, w := range ws[:3] {
		if w.Server == nil || math.Abs(w.Server.IdleFraction-0.7) > 0.2 {
			t.Errorf("window %d: server %+v, want idle 0.7 ± 0.2", w.Index, w.Server)
		}
	}
}

// announceWriter writes to w and sends re's first submatch on found the
// first time what was written holds it.
type announceWriter struct {
	w     *testenv.SyncBuffer
	re    *regexp.Regexp
	found chan<- string
	mu    sync.Mutex
	done  bool
}

func (a *announceWriter) Write(p []byte) (int, error) {
	n, err := a.w.Write(p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.done {
		if m := a.re.FindStringSubmatch(a.w.String()); m != nil {
			a.done = true
			a.found <- m[1]
		}
	}
	return n, err
}
