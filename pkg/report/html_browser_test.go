package report

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

var screenshotOut = flag.String("screenshot", "", "also save the browser test's screenshot to this file")

// chromium returns the path of a Chromium or Chrome binary, or "".
func chromium() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// needChromium returns the browser for a test. Without one the test skips,
// except in CI (CI=true), where .ci/run installs Debian's chromium and a
// missing browser is a failure: a browser test that silently never runs
// checks nothing.
func needChromium(t *testing.T) string {
	t.Helper()
	bin := chromium()
	ci := os.Getenv("CI") == "true"
	switch {
	case bin == "" && ci:
		t.Fatal("CI=true and no chromium binary (chromium, chromium-browser, google-chrome or $CHROMIUM): .ci/run installs Debian's chromium; see its output")
	case bin == "":
		t.Skip("no chromium binary (chromium, chromium-browser, google-chrome or $CHROMIUM): the browser test needs one (apt-get install chromium); the structural tests still run")
	case testing.Short() && !ci:
		t.Skip("-short: no browser")
	}
	return bin
}

// cdp is a minimal client of the Chrome DevTools Protocol over one page's
// websocket: commands with replies, and every event kept.
type cdp struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	id      int
	replies map[int]chan json.RawMessage
	events  []cdpEvent
	notify  chan string
}

type cdpEvent struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func dialCDP(url string) (*cdp, error) {
	ws, err := websocket.Dial(url, "", "http://127.0.0.1")
	if err != nil {
		return nil, err
	}
	ws.MaxPayloadBytes = 256 << 20
	c := &cdp{ws: ws, replies: map[int]chan json.RawMessage{}, notify: make(chan string, 1024)}
	go c.read()
	return c, nil
}

func (c *cdp) read() {
	for {
		var msg struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := websocket.JSON.Receive(c.ws, &msg); err != nil {
			close(c.notify)
			return
		}
		c.mu.Lock()
		if msg.ID != 0 {
			if ch := c.replies[msg.ID]; ch != nil {
				if msg.Error != nil {
					ch <- json.RawMessage(`{"cdpError":` + string(msg.Error) + `}`)
				} else {
					ch <- msg.Result
				}
			}
		} else {
			c.events = append(c.events, cdpEvent{msg.Method, msg.Params})
			select {
			case c.notify <- msg.Method:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// call sends a command and decodes its result into out (may be nil).
func (c *cdp) call(method string, params any, out any) error {
	c.mu.Lock()
	c.id++
	id := c.id
	ch := make(chan json.RawMessage, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	if err := websocket.JSON.Send(c.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case res := <-ch:
		if strings.HasPrefix(string(res), `{"cdpError"`) {
			return fmt.Errorf("%s: %s", method, res)
		}
		if out != nil {
			return json.Unmarshal(res, out)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: no reply", method)
	}
}

// waitEvent waits for an event of the given method.
func (c *cdp) waitEvent(method string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		for _, e := range c.events {
			if e.Method == method {
				c.mu.Unlock()
				return nil
			}
		}
		c.mu.Unlock()
		select {
		case _, ok := <-c.notify:
			if !ok {
				return fmt.Errorf("connection closed waiting for %s", method)
			}
		case <-deadline:
			return fmt.Errorf("no %s within %v", method, timeout)
		}
	}
}

// startChromium starts a headless browser with a DevTools port and returns
// the websocket address of a new blank page.
func startChromium(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir="+dir, "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
		"--remote-allow-origins=http://127.0.0.1", "--window-size=1400,1000", "--hide-scrollbars", "about:blank")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The browser writes its DevTools port to the profile directory.
	var port string
	for deadline := time.Now().Add(30 * time.Second); port == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if lines := strings.Split(string(b), "\n"); len(lines) >= 2 {
				port = strings.TrimSpace(lines[0])
			}
		}
	}
	if port == "" {
		t.Fatalf("%s did not open its DevTools port:\n%s", bin, stderr.String())
	}
	req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:"+port+"/json/new?about:blank", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var target struct {
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&target); err != nil || target.WebSocketDebuggerURL == "" {
		t.Fatalf("new page: %v %+v", err, target)
	}
	return target.WebSocketDebuggerURL
}

// browserReport builds the richest report the fixture gives: per-request
// records with a run summary that has windows and server metrics.
func browserReport(t *testing.T) *Data {
	records := loadFixture(t, "ttft:100 tpot:20 e2el:1000")
	s := *records.Summary
	s.LatencyCDFs, s.LengthHistograms, s.Goodput = nil, nil, nil
	s.Backend, s.Mode, s.Seed, s.Command = "vllm", "poisson", 1, `fineserve-gen --request-rate 5 --goodput ttft:100 tpot:20 e2el:1000`
	var ws []metrics.WindowStats
	for i := 0; i < 2; i++ {
		ws = append(ws, metrics.WindowStats{Index: i, Start: float64(i), End: float64(i + 1), Offered: 4, OfferedRate: 4, Completed: 4, AchievedRate: 4,
			Server: &metrics.ServerStats{Samples: 10, RunningMean: 2, KVCacheMean: 0.2, IdleFraction: 0.3}})
	}
	s.Windows, s.WindowSeconds = ws, 1
	s.ServerMetrics = &metrics.ServerSummary{URL: "http://127.0.0.1:8000/metrics", Interval: 2, Available: true,
		ServerStats: &metrics.ServerStats{Samples: 20, RunningMean: 2, KVCacheMean: 0.2, IdleFraction: 0.3}}
	d := Merge(&Data{Summary: &s, Source: "summary.json"}, records)
	// Server samples on the fine series too, so the KV-cache plot is drawn.
	for i := range d.Series {
		d.Series[i].ServerRunning, d.Series[i].ServerWaiting = 2, 0
		d.Series[i].KVCache, d.Series[i].ServerIdle = 0.1*float64(i%5), 0.3
	}
	return d
}

// TestBrowserRendersReport opens a report in headless Chromium: the page
// loads with no console message of level error, no exception and no
// network request, and every plot is laid out with a real size and drawn
// paths. Without Chromium it skips, and fails in CI (needChromium).
func TestBrowserRendersReport(t *testing.T) {
	bin := needChromium(t)
	path := filepath.Join(t.TempDir(), "report.html")
	if err := WriteHTMLFile(path, browserReport(t)); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	c := browse(t, bin, url)
	// Every plot the report should have: laid out, visible, with its data
	// drawn and no text cut off.
	checkPlots(t, c, PlotTTFT, PlotITL, PlotE2E, PlotTPOT, PlotRate, PlotLag,
		PlotInFlight, PlotKVCache, PlotInput, PlotOutput, PlotErrors)
	if n := evalString(t, c, `String(document.querySelectorAll("p.missing").length)`); n != "0" {
		t.Errorf("%s plot(s) missing from the richest report", n)
	}

	// The server's <script> in an error message is text on the page.
	var txt struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	c.call("Runtime.evaluate", map[string]any{"expression": `document.getElementById("error-samples").innerText + "|" + document.scripts.length + "|" + document.title`, "returnByValue": true}, &txt)
	if !strings.Contains(txt.Result.Value, "<script>alert(1)</script>") || !strings.Contains(txt.Result.Value, "|0|") {
		t.Errorf("error samples / scripts / title: %q", txt.Result.Value)
	}

	// A full-page screenshot, kept with the test's artifacts.
	var metricsReply struct {
		CSSContentSize struct{ Width, Height float64 } `json:"cssContentSize"`
	}
	if err := c.call("Page.getLayoutMetrics", nil, &metricsReply); err != nil {
		t.Fatal(err)
	}
	var shot struct {
		Data string `json:"data"`
	}
	h := min(metricsReply.CSSContentSize.Height, 8000)
	if err := c.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": 1400, "height": h, "scale": 1}}, &shot); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || len(png) < 10000 {
		t.Fatalf("screenshot: %d bytes, %v", len(png), err)
	}
	out := filepath.Join(t.ArtifactDir(), "report.png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))
	if *screenshotOut != "" {
		if err := os.WriteFile(*screenshotOut, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Nothing went wrong while the page loaded and rendered.
	for _, p := range c.problems(url) {
		t.Error(p)
	}
}

// evalString evaluates a JavaScript expression of string value in the page.
func evalString(t *testing.T, c *cdp, expr string) string {
	t.Helper()
	var eval struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := c.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &eval); err != nil {
		t.Fatal(err)
	}
	if eval.ExceptionDetails != nil {
		t.Fatalf("evaluating %s: %s", expr, eval.ExceptionDetails)
	}
	return eval.Result.Value
}

// plotsJS measures every plot of the page: its size on screen, its data
// paths (paths in a palette colour at least a sixth of the plot wide or
// high: lines, curves and bars, not legend swatches, axes or grid) and
// the texts that reach outside it (cut off), with their margins in px.
const plotsJS = `JSON.stringify([...document.querySelectorAll("svg[data-plot]")].map(s => {
	const palette = new Set(%s);
	const r = s.getBoundingClientRect();
	const data = [...s.querySelectorAll("path")].filter(p => {
		const st = getComputedStyle(p);
		if (!palette.has(st.stroke) && !palette.has(st.fill)) return false;
		const b = p.getBoundingClientRect();
		return b.width > r.width / 6 || b.height > r.height / 6;
	}).length;
	const cut = [...s.querySelectorAll("text")].filter(x => {
		const b = x.getBoundingClientRect();
		return b.left < r.left - 4 || b.right > r.right + 4 || b.top < r.top - 4 || b.bottom > r.bottom + 4; // a text's box is its font's whole line, taller than its glyphs
	}).map(x => { const b = x.getBoundingClientRect(); return x.textContent + " [" + [b.left - r.left, r.right - b.right, b.top - r.top, r.bottom - b.bottom].map(v => v.toFixed(1)).join(" ") + "]"; });
	return {name: s.dataset.plot, w: r.width, h: r.height, data: data, texts: s.querySelectorAll("text").length, cut: cut};
}))`

// checkPlots asserts the page has exactly the named plots, each laid out
// with a real size, its data drawn, and no text cut off.
func checkPlots(t *testing.T, c *cdp, names ...string) {
	t.Helper()
	var colours []string
	for _, p := range palette {
		colours = append(colours, fmt.Sprintf("rgb(%d, %d, %d)", p.R, p.G, p.B))
	}
	js, _ := json.Marshal(colours)
	var plots []struct {
		Name  string
		W, H  float64
		Data  int
		Texts int
		Cut   []string
	}
	out := evalString(t, c, fmt.Sprintf(plotsJS, js))
	if err := json.Unmarshal([]byte(out), &plots); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, p := range plots {
		if !want[p.Name] {
			t.Errorf("unexpected plot %q", p.Name)
			continue
		}
		delete(want, p.Name)
		if p.W < 200 || p.H < 100 || p.Data < 1 || p.Texts < 3 {
			t.Errorf("plot %s rendered %.0f×%.0f px with %d data paths and %d texts", p.Name, p.W, p.H, p.Data, p.Texts)
		}
		if len(p.Cut) > 0 {
			t.Errorf("plot %s: text cut off at its edge: %q", p.Name, p.Cut)
		}
	}
	for name := range want {
		t.Errorf("plot %s not rendered", name)
	}
	t.Logf("%d plots rendered", len(plots))
}

// TestBrowserRendersComparison opens a comparison of two runs, one with a
// long name, in headless Chromium: every plot is drawn with no text cut
// off, the name is shown whole, and nothing goes wrong on the page.
func TestBrowserRendersComparison(t *testing.T) {
	bin := needChromium(t)
	a, b := browserReport(t), browserReport(t)
	a.Label = "baseline"
	b.Label = "vllm-0.6.3-llama-3.1-8b-instruct-tp1-max-num-seqs-256-chunked-prefill-on-request-rate-20-2026-11-25.json"
	// A long command, to wrap; a client that fell behind.
	bs := *b.Summary
	bs.Command = "fineserve-gen --backend vllm --base-url http://10.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct " +
		"--mode replay --request-trace-csv /data/traces/Dense_30to100B.csv --time-scale 10 --max-concurrency 256 " +
		"--goodput ttft:500 tpot:50 e2el:2000 --seed -1 --summary-json /results/run-2026-11-25/summary.json " +
		"--results-jsonl /results/run-2026-11-25/results.jsonl --report-html /results/run-2026-11-25/report.html"
	bs.Saturation = &metrics.Saturation{Saturated: true, Reason: "window 1: send lag p90 5.00 ms > 1.00 ms"}
	b.Summary = &bs
	path := filepath.Join(t.TempDir(), "compare.html")
	var out strings.Builder
	if err := WriteCompareHTML(&out, []*Data{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	url := "file://" + path
	c := browse(t, bin, url)
	checkPlots(t, c, PlotRunRates, PlotTTFT, PlotITL, PlotE2E, PlotTPOT, PlotRate)
	if got := evalString(t, c, `document.getElementById("rates").innerText`); !strings.Contains(got, b.Label) {
		t.Errorf("the rates table does not show %q whole: %q", b.Label, got)
	}
	// The long command wraps over lines, never inside a flag with its
	// values: each piece lies on one line.
	var pieces, lines int
	if got := evalString(t, c, `(() => {
		const args = [...document.querySelectorAll("#runs td.cmdline")].pop().querySelectorAll(".arg");
		const tops = new Set([...args].map(a => Math.round(a.getBoundingClientRect().top)));
		const split = [...args].filter(a => a.getClientRects().length != 1 || a.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(a).lineHeight || 16));
		return args.length + " pieces on " + tops.size + " lines, split: " + split.map(a => a.textContent).join(" | ");
	})()`); !strings.HasSuffix(got, "split: ") {
		t.Errorf("the command's pieces: %s (want none split over lines)", got)
	} else if fmt.Sscanf(got, "%d pieces on %d lines", &pieces, &lines); pieces != 13 || lines < 2 {
		t.Errorf("the command's pieces: %s (want 13 on several lines)", got)
	}
	if got := evalString(t, c, `String([...document.querySelectorAll(".client-saturated")].map(e => e.offsetHeight > 0 && e.innerText).join(";"))`); !strings.Contains(got, "[2] "+b.Label+": the client fell behind its schedule") {
		t.Errorf("the saturated run is not flagged visibly: %q", got)
	}
	for _, p := range c.problems(url) {
		t.Error(p)
	}
}

// browse opens url in a new headless browser and waits for it to load.
func browse(t *testing.T, bin, url string) *cdp {
	t.Helper()
	c, err := dialCDP(startChromium(t, bin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.ws.Close() })
	for _, m := range []string{"Runtime.enable", "Log.enable", "Network.enable", "Page.enable"} {
		if err := c.call(m, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.waitEvent("Page.loadEventFired", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// problems lists what went wrong on the page: exceptions, console and
// browser log messages of level warning or error, and requests for
// anything but the page itself.
func (c *cdp) problems(url string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, e := range c.events {
		switch e.Method {
		case "Runtime.exceptionThrown":
			out = append(out, fmt.Sprintf("exception: %s", e.Params))
		case "Runtime.consoleAPICalled":
			var p struct{ Type string }
			json.Unmarshal(e.Params, &p)
			if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
				out = append(out, fmt.Sprintf("console %s: %s", p.Type, e.Params))
			}
		case "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Text, URL string }
			}
			json.Unmarshal(e.Params, &p)
			if p.Entry.Level == "error" || p.Entry.Level == "warning" {
				out = append(out, fmt.Sprintf("browser log %s: %s (%s)", p.Entry.Level, p.Entry.Text, p.Entry.URL))
			}
		case "Network.requestWillBeSent":
			var p struct {
				Request struct{ URL string }
			}
			json.Unmarshal(e.Params, &p)
			if p.Request.URL != url && !strings.HasPrefix(p.Request.URL, "data:") {
				out = append(out, fmt.Sprintf("the page fetched %s", p.Request.URL))
			}
		}
	}
	return out
}

// TestBrowserHarnessSeesProblems: the checks above would see a page that
// throws, logs an error or fetches something.
func TestBrowserHarnessSeesProblems(t *testing.T) {
	bin := needChromium(t)
	path := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(path, []byte(`<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">`+
		`<script>console.error("boom"); undefinedFunction();</script></body></html>`), 0o644)
	url := "file://" + path
	c := browse(t, bin, url)
	got := strings.Join(c.problems(url), "\n")
	for _, want := range []string{"console error", "exception", "fetched http://127.0.0.1:9/x.png"} {
		if !strings.Contains(got, want) {
			t.Errorf("the harness missed %q; it saw:\n%s", want, got)
		}
	}
}
