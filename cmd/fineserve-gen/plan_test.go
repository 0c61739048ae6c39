package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/plan"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/sweep"
)

func TestPointFromSweep(t *testing.T) {
	k := 0.25
	step := func(v float64, verdict sweep.Verdict, ttft float64) sweep.Step {
		st := sweep.Step{Value: v, Verdict: verdict, Summary: &metrics.Summary{Burstiness: &k}}
		st.Figures.TTFT.P50, st.Figures.TPOT.P50 = ttft, 5
		return st
	}
	r := &sweep.Result{Variable: sweep.Rate, Capacity: &sweep.Answer{Value: 40, Rate: 38.5},
		Steps: []sweep.Step{step(20, sweep.Pass, 21), step(40, sweep.Pass, 30), step(80, sweep.Fail, 90)}}
	p, ttft, tpot, err := pointFromSweep(r, "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.CV != 2 || p.Rate != 38.5 || ttft != 21 || tpot != 5 || p.Source != "s.json" {
		t.Errorf("point %+v, TTFT %g, TPOT %g", p, ttft, tpot)
	}
	r.Variable = sweep.TimeScale
	if _, _, _, err := pointFromSweep(r, "s.json"); err == nil || !strings.Contains(err.Error(), "rate sweeps") {
		t.Errorf("time-scale sweep: %v", err)
	}
	r.Variable = sweep.Rate
	// A backend without tokens holds a replica for its E2E.
	for i := range r.Steps {
		r.Steps[i].Figures.TTFT.P50, r.Steps[i].Figures.TPOT.P50, r.Steps[i].Figures.E2E.P50 = 0, 0, 12
	}
	if _, ttft, tpot, err := pointFromSweep(r, "s.json"); err != nil || ttft != 12 || tpot != 0 {
		t.Errorf("no tokens: TTFT %g, TPOT %g, %v: want the E2E, 12 and 0", ttft, tpot, err)
	}
	for i := range r.Steps {
		r.Steps[i].Figures.E2E.P50 = 0
	}
	if _, _, _, err := pointFromSweep(r, "s.json"); err == nil || !strings.Contains(err.Error(), "no latency figures") {
		t.Errorf("no figures: %v (a replica would look idle all day)", err)
	}
	r.Capacity = nil
	if _, _, _, err := pointFromSweep(r, "s.json"); err == nil || !strings.Contains(err.Error(), "no step met") {
		t.Errorf("no capacity: %v", err)
	}
}

// planSweepFile writes a one-step rate sweep of the given capacity at CV
// 1/√k, as `fineserve-gen sweep --sweep-json` writes one.
func planSweepFile(t *testing.T, name string, rate, k float64) string {
	return testenv.WriteFile(t, name, fmt.Sprintf(`{"variable":"rate","tolerance":0.05,"capacity":{"value":%g,"rate":%g,"step":1},"line":"",`+
		`"steps":[{"step":1,"value":%g,"verdict":"pass","figures":{"ttft_ms":{"p50":20},"tpot_ms":{"p50":5},"e2e_ms":{"p50":100}},"summary":{"burstiness":%g}}]}`,
		rate, rate, rate, k))
}

// TestPlanEveryWorkload plans each workload of the combination matrix
// (every mode and trace format) from a given curve: each plans its whole
// schedule — the windows hold every scheduled request — or, where a plan
// cannot read it, is refused before anything runs, saying why.
func TestPlanEveryWorkload(t *testing.T) {
	curve := []string{"--sweep-json", planSweepFile(t, "cv1.json", 40, 1), "--sweep-json", planSweepFile(t, "cv2.json", 20, 0.25)}
	refused := map[string]string{"replay-agentic": "sessions"}
	// Every backend's requests plan the same way (its curve is its own).
	for _, b := range matrixDims[dBackend].values {
		t.Run("poisson-"+b, func(t *testing.T) {
			args := append([]string{"plan", "--port", "1", "--backend", b, "--plan-json", filepath.Join(t.TempDir(), "plan.json")}, curve...)
			if out, errb := mustRun(t, append(args, workloadArgs["poisson"]...)...); !strings.Contains(out, "peak: ") {
				t.Errorf("no plan:\n%s\n%s", out, errb)
			}
		})
	}
	for _, w := range matrixDims[dWorkload].values {
		t.Run(w, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "plan.json")
			args := append([]string{"plan", "--host", "127.0.0.1", "--port", "1", "--seed", "2", "--plan-window", "100ms", "--plan-json", out}, curve...)
			args = append(args, workloadArgs[w]...)
			if why, ok := refused[w]; ok {
				wantUsage(t, args, why)
				return
			}
			stdout, stderr := mustRun(t, args...)
			p := testenv.ReadJSON[struct {
				Requests int64 `json:"requests"`
				Windows  []struct {
					Requests int64 `json:"requests"`
					Replicas int   `json:"replicas"`
				} `json:"windows"`
			}](t, out)
			var sum int64
			for _, win := range p.Windows {
				sum += win.Requests
				if win.Requests > 0 && win.Replicas < 1 {
					t.Errorf("a window of %d requests plans %d replicas", win.Requests, win.Replicas)
				}
			}
			if len(p.Windows) == 0 || sum != p.Requests || p.Requests == 0 {
				t.Errorf("%d windows holding %d of %d requests\n%s\n%s", len(p.Windows), sum, p.Requests, stdout, stderr)
			}
		})
	}
}

// planDay is a day of 30 minutes in 6 Gamma windows of 5 minutes (rate
// 1000/(shape·scale ms)): quiet, rising, a bursty peak (CV 2), a smooth
// peak, falling, quiet.
const planDay = `gamma_shape,gamma_scale
1,200
1,40
0.25,70
1,18
4,12.5
1,200
`

// planArgs plans planDay against the built-in server on port, measuring
// the curve at CV 1 and 2 with short steps.
func planArgs(port int, dir string, extra ...string) []string {
	gamma := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(gamma, []byte(planDay), 0o644); err != nil {
		panic(err)
	}
	return append([]string{"plan", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--seed", "3",
		"--mode", "parametric", "--gamma-params-csv", gamma, "--duration", "30m",
		"--random-input-len", "16", "--random-output-len", strconv.Itoa(sweepTokens), "--random-range-ratio", "0",
		"--plan-window", "5m", "--goodput", "e2el:250"}, extra...)
}

// measureArgs are the flags of a plan's measuring sweeps in tests: steps
// of 2 s (a bursty one of 1 s is a handful of bursts), a coarse search, a
// lag limit loose enough for a busy machine, a first step low enough that
// a bursty point passes it on one.
var measureArgs = []string{"--step-duration", "2s", "--sweep-quiet", "0", "--sweep-max-lag", "1000", "--report-interval", "0",
	"--sweep-min", "2.5", "--sweep-max", "80", "--sweep-tolerance", "0.2", "--warmup-requests", "0"}

// planJSON is what the tests read of --plan-json.
type planJSON struct {
	Windows []struct {
		StartS      float64 `json:"start_s"`
		OfferedRate float64 `json:"offered_rate"`
		Burstiness  float64 `json:"burstiness"`
		Replicas    int     `json:"replicas"`
		Utilization float64 `json:"utilization"`
		IdleShare   float64 `json:"idle_share"`
		Capacity    float64 `json:"capacity"`
	} `json:"windows"`
	PeakReplicas       int     `json:"peak_replicas"`
	ReplicaHours       float64 `json:"replica_hours"`
	StaticReplicaHours float64 `json:"static_replica_hours"`
	Curve              struct {
		Points []plan.Point `json:"points"`
	} `json:"capacity_curve"`
	ScaleUp *struct {
		UnderMinutes float64 `json:"under_provisioned_min"`
	} `json:"scale_up"`
	Measurement *struct {
		Seconds      float64      `json:"seconds"`
		Ceiling      float64      `json:"ceiling_rate"`
		Checks       []plan.Check `json:"checks"`
		Sweeps       int          `json:"sweeps"`
		SweepSeconds float64      `json:"sweep_seconds"`
		Notes        []string     `json:"notes"`
	} `json:"measurement"`
}

// TestPlanAgainstMock plans a day against the built-in server of known
// capacity (S / (T + (n−1)·I) = 42.1 req/s) with the curve measured as a
// user gets it by default: a probe gives the ceiling (Little's law), so
// the rising and peak windows need at least 1 and 2 replicas; the quiet
// windows' check (can one replica serve them?) passes, so the curve is
// measured at the burstiness those replicas see (planDay's CV 0.5 and 1
// at one replica, its CV-2 peak split two ways: CV ≈ 1.41). The Poisson
// point lies below the ceiling and the bursty one below it; every window
// plans at least its rate over the ceiling and at most its rate over the
// capacity at its own burstiness; the JSON, table and HTML hold the day
// and how long its measurement took; the saved sweeps plan the same day
// again without a server.
func TestPlanAgainstMock(t *testing.T) {
	port := startSweepServer(t)
	dir := t.TempDir()
	out, errb := mustRun(t, append(planArgs(port, dir, "--scale-up-delay", "2m",
		"--plan-json", filepath.Join(dir, "plan.json"), "--report-html", filepath.Join(dir, "plan.html"),
		"--save-sweeps", filepath.Join(dir, "sw")), measureArgs...)...)
	t.Logf("%s\n%s", out, errb)
	p := testenv.ReadJSON[planJSON](t, filepath.Join(dir, "plan.json"))
	pts := p.Curve.Points
	at := func(cv float64) *plan.Point {
		for i := range pts {
			if math.Abs(pts[i].CV-cv) < 0.15*cv {
				return &pts[i]
			}
		}
		t.Fatalf("curve %+v: no point within 15 %% of the day's CV %.1f\n%s", pts, cv, errb)
		return nil
	}
	smooth, poisson, bursty := at(0.5), at(1), at(math.Sqrt2)
	m := p.Measurement
	if m == nil || m.Sweeps != len(pts) || !(m.Seconds >= m.SweepSeconds) || m.SweepSeconds <= 0 {
		t.Fatalf("measurement %+v: want %d sweeps, and their time within the whole", m, len(pts))
	}
	if r := m.Ceiling / analyticCapacity; r < 0.8 || r > 1.3 {
		t.Errorf("ceiling %.1f req/s, %.2f of the analytic %.1f: want 0.8–1.3", m.Ceiling, r, analyticCapacity)
	}
	if len(m.Checks) != 1 || m.Checks[0].Replicas != 1 || m.Checks[0].Fails || m.Checks[0].Rate > 10 {
		t.Errorf("checks %+v: want one, of the windows one replica might serve, passing at the quiet windows' rate", m.Checks)
	}
	if !regexp.MustCompile(`plan: the curve's measurement took [0-9.]+ s: the probe [0-9.]+ s, 1 check step\(s\) [0-9.]+ s, [0-9]+ sweep\(s\) [0-9.]+ s`).MatchString(errb) ||
		!regexp.MustCompile(`plan: CV [0-9.]+: capacity: .* \([0-9]+ steps, [0-9.]+ s\)`).MatchString(errb) {
		t.Errorf("the plan does not say how long its measurement took:\n%s", errb)
	}
	// The burstier points start under the rate where a smoother one failed.
	if !regexp.MustCompile(`sweep: starting at rate [0-9.]+: the first failing rate at CV [0-9.]+ \(a burstier schedule is served no faster\): [0-9.]+ req/s at most`).MatchString(errb) {
		t.Errorf("no point started from the smoother one's bound:\n%s", errb)
	}
	if r := poisson.Rate / analyticCapacity; r < 0.5 || r > 1.05 {
		t.Errorf("capacity at CV 1: %.1f req/s, %.2f of the ceiling %.1f: want 0.5–1.05", poisson.Rate, r, analyticCapacity)
	}
	if bursty.Rate >= poisson.Rate || poisson.Rate > smooth.Rate {
		t.Errorf("capacity at CV 0.5, 1, 2: %.1f, %.1f, %.1f req/s: want it lower for burstier arrivals", smooth.Rate, poisson.Rate, bursty.Rate)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].CV <= pts[i-1].CV || pts[i].Rate > pts[i-1].Rate {
			t.Errorf("curve %+v: want increasing CV, non-increasing capacity", pts)
		}
	}
	if strings.Contains(errb, "measuring at CV") != (pts[0].CV < smooth.CV) {
		t.Errorf("curve from CV %.2f, the day's smoothest point %.2f; the second step's line:\n%s", pts[0].CV, smooth.CV, errb)
	}
	// capacityAt is the curve's capacity at cv (linear between points).
	capacityAt := func(cv float64) float64 {
		if cv <= pts[0].CV {
			return pts[0].Rate
		}
		for i := 1; i < len(pts); i++ {
			if cv <= pts[i].CV {
				f := (cv - pts[i-1].CV) / (pts[i].CV - pts[i-1].CV)
				return pts[i-1].Rate + f*(pts[i].Rate-pts[i-1].Rate)
			}
		}
		return pts[len(pts)-1].Rate
	}
	if len(p.Windows) != 6 {
		t.Fatalf("%d windows, want 6", len(p.Windows))
	}
	peak := 0
	for i, w := range p.Windows {
		floor := int(math.Ceil(w.OfferedRate / analyticCapacity))
		ceil := int(math.Ceil(w.OfferedRate / capacityAt(w.Burstiness)))
		if w.Replicas < max(floor, 1) || w.Replicas > max(ceil, 1) {
			t.Errorf("window %d (%.1f req/s, CV %.2f): %d replicas, want %d (rate over the ceiling) to %d (over the capacity at its CV)",
				i, w.OfferedRate, w.Burstiness, w.Replicas, floor, ceil)
		}
		if w.Utilization <= 0 || w.Utilization > 1 || w.IdleShare < 0 || w.IdleShare > 1 {
			t.Errorf("window %d: utilisation %.3f, idle share %.3f: want shares", i, w.Utilization, w.IdleShare)
		}
		peak = max(peak, w.Replicas)
	}
	if p.PeakReplicas != peak || peak < 2 || !(p.ReplicaHours < p.StaticReplicaHours) || math.Abs(p.StaticReplicaHours-float64(peak)*0.5) > 0.01 {
		t.Errorf("peak %d (windows' %d), replica-hours %.3f, static %.3f: want a peak ≥ 2 and fewer replica-hours than %d × 0.5 h", p.PeakReplicas, peak, p.ReplicaHours, p.StaticReplicaHours, peak)
	}
	if p.ScaleUp == nil || p.ScaleUp.UnderMinutes <= 0 {
		t.Errorf("--scale-up-delay 2m: %+v, want minutes under-provisioned on the rise", p.ScaleUp)
	}
	for _, s := range []string{"peak: ", "replica-hours: ", "scale-up delay 2 min"} {
		if !strings.Contains(out, s) {
			t.Errorf("table without %q", s)
		}
	}
	page := testenv.ReadFile(t, filepath.Join(dir, "plan.html"))
	for _, plot := range []string{"plan_rate", "plan_replicas", "plan_curve"} {
		if !bytes.Contains(page, []byte(`data-plot="`+plot+`"`)) {
			t.Errorf("HTML report without its %s plot", plot)
		}
	}
	if !regexp.MustCompile(`id="measured">The curve&#39;s measurement took [0-9.]+ s: the probe`).Match(page) {
		t.Errorf("HTML report without how long the measurement took")
	}
	// The saved sweeps give the same plan with no server.
	again := filepath.Join(dir, "again.json")
	saved, err := filepath.Glob(filepath.Join(dir, "sw-cv*.json"))
	if err != nil || len(saved) != len(pts) {
		t.Fatalf("saved sweeps %v (%v), want one a point of the curve (%d)", saved, err, len(pts))
	}
	args := planArgs(1, dir, "--scale-up-delay", "2m", "--plan-json", again)
	for _, f := range saved {
		args = append(args, "--sweep-json", f)
	}
	mustRun(t, args...)
	q := testenv.ReadJSON[planJSON](t, again)
	for i := range p.Windows {
		if q.Windows[i].Replicas != p.Windows[i].Replicas {
			t.Errorf("window %d: %d replicas from the saved sweeps, %d measured", i, q.Windows[i].Replicas, p.Windows[i].Replicas)
		}
	}
}

// TestPlanBadInput: a plan's bad flags and inputs exit 2 before anything is
// sent, naming the flag.
func TestPlanBadInput(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "ts.json")
	if err := os.WriteFile(ts, []byte(`{"variable":"time-scale","tolerance":0.05,"capacity":{"value":2,"rate":30,"step":1},"line":"","steps":[{"step":1,"value":2,"verdict":"pass","figures":{},"summary":{}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--plan-window", "0"}, "--plan-window"},
		// More than plan.MaxWindows windows: refused before any is held
		// (1µs windows took gigabytes), with the least window.
		{[]string{"--plan-window", "1us", "--duration", "30s"}, "--plan-window 1µs: 30s of schedule would be 30000000 windows, more than the most a plan has (131072): want --plan-window ≥ 229µs"},
		{[]string{"--scale-up-delay", "-1m"}, "--scale-up-delay"},
		{[]string{"--scale-down-delay", "-1m"}, "--scale-down-delay"},
		{[]string{"--min-replicas", "-1"}, "--min-replicas"},
		{[]string{"--plan-burstiness", "-1"}, "--plan-burstiness"},
		{[]string{"--sweep-variable", "time-scale"}, "rate sweeps"},
		{[]string{"--dry-run"}, "--dry-run"},
		{[]string{"--balance", "least-inflight"}, "round-robin"},
		{[]string{"--turns", "3"}, "sessions"},
		{[]string{"--multi-turn", "--dataset-path", "testdata/sharegpt.json"}, "sessions"},
		{[]string{"--summary-json", "s.json"}, "--plan-json"},
		{[]string{"--sweep-json", filepath.Join(dir, "missing.json")}, "missing.json"},
		{[]string{"--sweep-json", ts}, "rate sweeps"},
		{[]string{"--sweep-json", ts, "--plan-burstiness", "1"}, "not both"},
	} {
		wantUsage(t, planArgs(1, dir, tc.args...), tc.want)
	}
}

// TestPlanVerify replays the busiest 5 minutes of a day, 30× faster (about
// 550 requests in 10 s at 55 req/s), against the planned replicas of the
// built-in server and one fewer. The curve is given (35 req/s at CV 1
// within e2el ≤ 250 ms, what TestPlanAgainstMock measures: 34–37), so
// only the replay is judged: 2 replicas planned (27.5 req/s each, 65 % of
// the 42.1 req/s ceiling) meet the SLO; 1 (55 req/s, 1.3× its ceiling:
// its queue grows by 13 requests a second) misses it.
func TestPlanVerify(t *testing.T) {
	a, b := startSweepServer(t), startSweepServer(t)
	dir := t.TempDir()
	gamma := filepath.Join(dir, "vday.csv")
	if err := os.WriteFile(gamma, []byte("gamma_shape,gamma_scale\n1,2000\n1,1000\n1,545.5\n1,1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	curve := func(rate float64) string {
		path := filepath.Join(dir, fmt.Sprintf("curve-%g.json", rate))
		body := fmt.Sprintf(`{"variable":"rate","tolerance":0.05,"slo_ms":{"e2el":250},"min_goodput":0.9,"capacity":{"value":%g,"rate":%g,"step":1},"line":"",`+
			`"steps":[{"step":1,"value":%g,"verdict":"pass","figures":{"ttft_ms":{"p50":20,"p99":20},"tpot_ms":{"p50":5,"p99":5}},"summary":{"burstiness":1}}]}`, rate, rate, rate)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	args := func(rate float64, extra ...string) []string {
		return append([]string{"plan", "--base-url", fmt.Sprintf("http://127.0.0.1:%d,http://127.0.0.1:%d", a, b), "--model", "mock-model",
			"--mode", "parametric", "--gamma-params-csv", gamma, "--duration", "20m", "--seed", "1",
			"--random-input-len", "16", "--random-output-len", strconv.Itoa(sweepTokens), "--random-range-ratio", "0",
			"--plan-window", "5m", "--goodput", "e2el:250", "--sweep-json", curve(rate), "--warmup-requests", "0", "--report-interval", "0", "--sweep-max-lag", "1000",
			"--verify", "--verify-span", "5m", "--verify-time-scale", "30"}, extra...)
	}
	type verified struct {
		Verify struct {
			FromS           float64 `json:"from_s"`
			ToS             float64 `json:"to_s"`
			Requests        int64
			Replicas        int
			Target          float64  `json:"planned_attainment"`
			Attainment      float64  `json:"attainment"`
			AttainmentFewer *float64 `json:"attainment_n_minus_1"`
			Holds           bool     `json:"holds"`
		} `json:"verify"`
	}
	out, errb := mustRun(t, args(35, "--plan-json", filepath.Join(dir, "v.json"))...)
	t.Logf("%s%s", out, errb)
	v := testenv.ReadJSON[verified](t, filepath.Join(dir, "v.json")).Verify
	if v.FromS != 600 || v.ToS != 900 || v.Replicas != 2 || v.Requests < 400 || v.Requests > 700 {
		t.Fatalf("verify %+v: want 10:00–15:00 of the day, ~550 requests, 2 replicas", v)
	}
	if !v.Holds || v.Attainment < 0.9*(1-verifyTolerance) || v.AttainmentFewer == nil || *v.AttainmentFewer >= 0.9 {
		t.Errorf("verify %+v (N−1: %v): want ≥ 81 %% with 2 replicas and < 90 %% with 1", v, v.AttainmentFewer)
	}
	if !strings.Contains(out, "verify: with 1, ") || !strings.Contains(out, "missed, as planned") {
		t.Errorf("verify lines missing:\n%s", out)
	}
	// A client that cannot keep the replay's schedule (here: a lag limit of
	// 1 µs) makes the verification inconclusive: exit 1, the plan written.
	code, _, errb := runCmd(args(35, "--sweep-max-lag", "0.001", "--plan-json", filepath.Join(dir, "client.json"))...)
	if code != exitFailure || !strings.Contains(errb, "--verify is inconclusive: the client could not keep its schedule") {
		t.Errorf("lag limit 1 µs: exit %d, want %d saying the client is the limit\n%s", code, exitFailure, errb)
	}
	if _, err := os.Stat(filepath.Join(dir, "client.json")); err != nil {
		t.Errorf("inconclusive verification: the plan is not written: %v", err)
	}
	// A curve of half the capacity plans 4 replicas: more than the two
	// endpoints given, a usage error before anything is sent — and the
	// plan is written all the same.
	wantUsage(t, args(17.5, "--plan-json", filepath.Join(dir, "four.json")), "needs 4 replicas and 2 --base-url")
	if _, err := os.Stat(filepath.Join(dir, "four.json")); err != nil {
		t.Errorf("--verify without enough endpoints: the plan is not written: %v", err)
	}
	wantUsage(t, []string{"plan", "--verify", "--request-rate", "5", "--duration", "1m", "--sweep-json", curve(35)}, "--verify needs --goodput")
}

// TestJudgeFewer: N−1 replicas that miss the SLO confirm the plan; that
// meet it refute it, unless the busiest window asks for less than the
// curve's error more than their capacity — then the run is inconclusive
// and the plan stands.
func TestJudgeFewer(t *testing.T) {
	windows := []plan.Window{
		{OfferedRate: 57, Capacity: 52.1, Replicas: 2}, // 9.4 % over one replica
		{OfferedRate: 40, Capacity: 52.1, Replicas: 1}, // not a window of N
		{OfferedRate: 50, Capacity: 60, Replicas: 2},   // under
	}
	over := overFewer(windows, 2)
	if math.Abs(over-(57/52.1-1)) > 1e-9 {
		t.Fatalf("over %v, want %v", over, 57/52.1-1)
	}
	for _, tc := range []struct {
		name                string
		a, over             float64
		holds, inconclusive bool
		says                string
	}{
		{"missed", 0.734, 0.5, true, false, "missed, as planned"},
		{"met, within the error", 0.912, over, true, true, "inconclusive"},
		{"met, well beyond it", 0.912, 0.3, false, false, "the curve is low"},
		{"met just over the error", 0.95, verifyTolerance, false, false, "more replicas than this stretch needs"},
	} {
		holds, inc, line := judgeFewer(tc.a, 0.9, tc.over, 2)
		if holds != tc.holds || inc != tc.inconclusive || !strings.Contains(line, tc.says) || !strings.Contains(line, "with 1,") {
			t.Errorf("%s: holds %v, inconclusive %v, %q", tc.name, holds, inc, line)
		}
	}
}

// TestPlanScaleDownDelay: a day whose 5-minute windows alternate between
// needing 3 and 2 replicas is planned at 3 all day with the default
// --scale-down-delay (5m): one run of equal replicas in the table, the
// report and the JSON (replica_runs), whose windows keep their own need
// (replicas) beside the count held (replicas_stabilized); with
// --scale-down-delay 0 each window is its own run. A curve whose sweep ran
// on a busy machine says so at the top of the table and the report.
func TestPlanScaleDownDelay(t *testing.T) {
	dir := t.TempDir()
	busy := testenv.WriteFile(t, "busy.json", `{"variable":"rate","tolerance":0.05,"capacity":{"value":10,"rate":10,"step":1},"line":"",`+
		`"steps":[{"step":1,"value":10,"verdict":"pass","figures":{"ttft_ms":{"p50":20},"tpot_ms":{"p50":5},"e2e_ms":{"p50":100}},"summary":{"burstiness":1,"client_machine_busy":true}}]}`)
	type stabilizedJSON struct {
		Windows []struct {
			Replicas   int `json:"replicas"`
			Stabilized int `json:"replicas_stabilized"`
		} `json:"windows"`
		Runs                   []plan.Run `json:"replica_runs"`
		StabilizedReplicaHours float64    `json:"stabilized_replica_hours"`
		ScaleDownDelayS        float64    `json:"scale_down_delay_s"`
	}
	for _, tc := range []struct {
		extra []string
		runs  int
		line  string
	}{
		{nil, 1, "(1 runs of equal replicas over 4 windows of 5 min, a scale-down held 5 min (--scale-down-delay)"},
		{[]string{"--scale-down-delay", "0"}, 4, "(4 runs of equal replicas over 4 windows of 5 min, every window at its own need (--scale-down-delay 0)"},
	} {
		out, page := filepath.Join(dir, fmt.Sprintf("plan%d.json", tc.runs)), filepath.Join(dir, fmt.Sprintf("plan%d.html", tc.runs))
		stdout, errb := mustRun(t, append([]string{"plan", "--host", "127.0.0.1", "--port", "1", "--seed", "2",
			"--stages", "0s:25,5m:25,0s:15,5m:15,0s:25,5m:25,0s:15,5m:15", "--random-input-len", "16", "--random-output-len", "16",
			"--plan-window", "5m", "--sweep-json", busy, "--plan-json", out, "--report-html", page}, tc.extra...)...)
		p := testenv.ReadJSON[stabilizedJSON](t, out)
		if len(p.Windows) != 4 || len(p.Runs) != tc.runs {
			t.Fatalf("%v: %d windows, runs %+v: want 4 windows in %d runs\n%s%s", tc.extra, len(p.Windows), p.Runs, tc.runs, stdout, errb)
		}
		for i, w := range p.Windows {
			held := 3
			if tc.runs == 4 {
				held = w.Replicas
			}
			if w.Replicas != 3-i%2 || w.Stabilized != held {
				t.Errorf("%v: window %d needs %d and holds %d: want %d and %d", tc.extra, i, w.Replicas, w.Stabilized, 3-i%2, held)
			}
		}
		if !strings.Contains(stdout, tc.line) || !strings.Contains(stdout, "note: every step of the curve's sweeps (1) ran on a busy machine") {
			t.Errorf("%v: the table lacks %q or the busy machine:\n%s", tc.extra, tc.line, stdout)
		}
		html := string(testenv.ReadFile(t, page))
		if n := strings.Count(html[strings.Index(html, `<table id="runs">`):strings.Index(html, `<details>`)], "<tr><td>"); n != tc.runs {
			t.Errorf("%v: the report's table of runs has %d rows, want %d", tc.extra, n, tc.runs)
		}
		if !strings.Contains(html, `id="machine-busy">Note: every step of the curve`) {
			t.Errorf("%v: the report does not say the curve's steps ran on a busy machine", tc.extra)
		}
	}
}

// TestPlanNotesShortBurstyPoints: a point of CV ≥ 1.5 measured in steps
// that end when settled comes with a note that it can read high (and how
// to measure it instead); measured in fixed steps, it does not.
func TestPlanNotesShortBurstyPoints(t *testing.T) {
	port := startSweepServer(t)
	dir := t.TempDir()
	search := []string{"--plan-burstiness", "2", "--sweep-quiet", "0", "--sweep-max-lag", "1000", "--report-interval", "0",
		"--sweep-min", "2.5", "--sweep-max", "80", "--sweep-tolerance", "0.25", "--warmup-requests", "0"}
	for _, tc := range []struct {
		steps []string
		note  bool
	}{{[]string{"--step-max", "2s"}, true}, {[]string{"--step-duration", "1s"}, false}} {
		args := append(planArgs(port, dir, "--plan-json", filepath.Join(dir, "p.json"), "--report-html", filepath.Join(dir, "p.html")), search...)
		_, errb := mustRun(t, append(args, tc.steps...)...)
		const note = "the answer at CV 2.00 was measured in steps that end when settled (at most 2s): at CV ≥ 1.5 they can read high"
		if got := strings.Contains(errb, "note: sweep: "+note); got != tc.note {
			t.Errorf("%v: note %v, want %v:\n%s", tc.steps, got, tc.note, errb)
		}
		p := testenv.ReadJSON[planJSON](t, filepath.Join(dir, "p.json"))
		inJSON := p.Measurement != nil && len(p.Measurement.Notes) == 1 && strings.HasPrefix(p.Measurement.Notes[0], note)
		inHTML := bytes.Contains(testenv.ReadFile(t, filepath.Join(dir, "p.html")), []byte(`<p class="note">Note: `+note))
		if inJSON != tc.note || inHTML != tc.note {
			t.Errorf("%v: note in the plan's JSON %v (%+v), HTML %v: want %v", tc.steps, inJSON, p.Measurement, inHTML, tc.note)
		}
	}
}
