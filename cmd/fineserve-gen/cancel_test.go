package main

import (
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestCancelUsageErrors: a bad --cancel-share or --cancel-after is exit 2
// with a message naming the flag and the wrong part; one without the other
// names both.
func TestCancelUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cancel-share", "0.5"}, []string{"--cancel-share needs --cancel-after"}},
		{[]string{"--cancel-after", "500ms"}, []string{"--cancel-after 500ms needs --cancel-share"}},
		{[]string{"--cancel-share", "1.5", "--cancel-after", "1s"}, []string{"--cancel-share 1.5: want a share 0 < F ≤ 1"}},
		{[]string{"--cancel-share", "-0.1", "--cancel-after", "1s"}, []string{"--cancel-share -0.1"}},
		{[]string{"--cancel-share", "0.5", "--cancel-after", "uniform:100ms:abc"}, []string{`--cancel-after "uniform:100ms:abc": "abc" is not a duration`}},
		{[]string{"--cancel-share", "0.5", "--cancel-after", "uniform:2s:1s"}, []string{`--cancel-after "uniform:2s:1s"`, "A ≤ B"}},
		{[]string{"--cancel-share", "0.5", "--cancel-after", "0"}, []string{`--cancel-after "0"`, "delay > 0"}},
		{[]string{"--cancel-share", "0.5", "--cancel-after", "exp:-1s"}, []string{`--cancel-after "exp:-1s"`}},
		{[]string{"--cancel-share", "0.5", "--cancel-after", "gamma:1s"}, []string{`--cancel-after "gamma:1s": unknown distribution "gamma"`}},
		{[]string{"--cancel-share", "abc", "--cancel-after", "1s"}, []string{"cancel-share"}},
	} {
		wantUsage(t, append([]string{"run", "--dry-run"}, c.args...), c.want...)
	}
}

// readSchedule returns a schedule CSV's header and rows.
func readSchedule(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	rows := testenv.ReadCSVRows(t, path)
	return rows[0], rows[1:]
}

// TestCancelScheduleEveryMode: in every mode, turning cancellation on adds
// the cancel_after_s column and changes nothing else of the schedule (its
// own random stream); the share of cancelled requests is F within 4σ and
// every cut lies in the --cancel-after range; the same seed gives the same
// cuts.
func TestCancelScheduleEveryMode(t *testing.T) {
	modes := map[string][]string{
		"poisson":    {"--mode", "poisson", "--request-rate", "50", "--num-prompts", "2000"},
		"replay":     {"--mode", "replay", "--request-trace-csv", "testdata/fineserve_Dense_30to100B_head200.csv", "--time-scale", "10"},
		"parametric": {"--mode", "parametric", "--model-class", "Dense_lt10B", "--duration", "40s"},
	}
	const share = 0.3
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			run := func(file string, extra ...string) ([]string, [][]string) {
				path := filepath.Join(dir, file)
				args := append(append([]string{"run", "--dry-run", "--seed", "11", "--schedule-out", path}, mode...), extra...)
				mustRun(t, args...)
				return readSchedule(t, path)
			}
			offHead, off := run("off.csv")
			onHead, on := run("on.csv", "--cancel-share", "0.3", "--cancel-after", "uniform:100ms:2s")
			_, again := run("again.csv", "--cancel-share", "0.3", "--cancel-after", "uniform:100ms:2s")
			if strings.Join(offHead, ",") != "index,time_s,input_len,output_len,model,num_images,burst" ||
				strings.Join(onHead, ",") != strings.Join(offHead, ",")+",cancel_after_s" {
				t.Fatalf("headers %v and %v", offHead, onHead)
			}
			if len(on) != len(off) || len(on) < 150 {
				t.Fatalf("%d rows with cancellation, %d without", len(on), len(off))
			}
			var cut int
			for i := range on {
				if strings.Join(on[i][:7], ",") != strings.Join(off[i], ",") {
					t.Fatalf("row %d: %v with cancellation, %v without", i, on[i], off[i])
				}
				if on[i][7] != again[i][7] {
					t.Fatalf("row %d: cut %s, then %s with the same seed", i, on[i][7], again[i][7])
				}
				v, err := strconv.ParseFloat(on[i][7], 64)
				switch {
				case err != nil:
					t.Fatal(err)
				case v == 0:
				case v < 0.1 || v > 2:
					t.Fatalf("row %d: cut %g s outside uniform:100ms:2s", i, v)
				default:
					cut++
				}
			}
			n := float64(len(on))
			if sd := math.Sqrt(n * share * (1 - share)); math.Abs(float64(cut)-n*share) > 4*sd {
				t.Errorf("%d of %d cancelled, want %.0f ± %.0f", cut, len(on), n*share, 4*sd)
			}
		})
	}
}

// TestCancelFreesSlots is the slot test: the mock holds two generations at
// once (--max-num-seqs 2) and each request's full generation takes 10 s
// (200 tokens, 50 ms apart), so eight requests take at least 40 s
// uncancelled. They arrive about 50 ms apart and every one is cancelled at
// 50 ms: the run ends in a small fraction of that (under 8 s: a 5× margin;
// it takes about half a second), the server saw every client go away, its
// running gauge never passed 2 and its /metrics show it back at 0 within
// 2 s of the run's end (a generation that held its slot would hold it for
// 10 s).
func TestCancelFreesSlots(t *testing.T) {
	const slots, requests = 2, 8
	srv, port := mocktest.Start(t, mockserver.Config{MaxNumSeqs: slots, ITL: 50 * time.Millisecond})
	var peak atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // the running gauge, sampled through the run
		defer close(done)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := srv.Stats().Running; r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	sumPath := filepath.Join(t.TempDir(), "s.json")
	args := []string{"run", "--port", strconv.Itoa(port), "--request-rate", "20", "--seed", "1", "--num-prompts", strconv.Itoa(requests),
		"--random-input-len", "16", "--random-output-len", "200", "--cancel-share", "1", "--cancel-after", "50ms",
		"--warmup-requests", "0", "--summary-json", sumPath, "--quiet", "--disable-tqdm"}
	start := time.Now()
	code, o, e := runCmd(args...)
	elapsed := time.Since(start)
	close(stop)
	<-done
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, e)
	}
	uncancelled := time.Duration(requests/slots) * 200 * 50 * time.Millisecond
	if elapsed > uncancelled/5 {
		t.Errorf("the run took %v: cancelled requests held their slots (uncancelled it takes %v)", elapsed, uncancelled)
	}
	var after mockserver.Stats
	var gauge string
	for deadline := time.Now().Add(2 * time.Second); ; {
		after = srv.Stats()
		gauge = scrapeRunning(t, port)
		if gauge == "0" && after.Waiting == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if gauge != "0" {
		t.Errorf("/metrics: vllm:num_requests_running %s after the run, want 0", gauge)
	}
	t.Logf("slots: running peaked at %d of %d during the run, %d running and %d waiting after it; %d generations aborted, %d completed; run %v (uncancelled %v)",
		peak.Load(), slots, after.Running, after.Waiting, after.Aborted, after.Completed, elapsed.Round(time.Millisecond), uncancelled)
	if after.Running != 0 || after.Waiting != 0 || peak.Load() != slots {
		t.Errorf("running peaked at %d (want %d), %d running and %d waiting after the run (want 0)", peak.Load(), slots, after.Running, after.Waiting)
	}
	if after.Aborted != requests || after.Completed != 0 {
		t.Errorf("the server aborted %d and completed %d generations, want %d aborted", after.Aborted, after.Completed, requests)
	}
	sum := testenv.ReadJSON[cancelSummary](t, sumPath)
	if sum.Cancelled != requests || sum.Completed != 0 || sum.Failed != 0 {
		t.Errorf("summary: %+v, want %d cancelled", sum, requests)
	}
	if !strings.Contains(o, "Cancelled by the client:") {
		t.Errorf("the table has no cancelled line:\n%s", o)
	}
}

// scrapeRunning returns the value of vllm:num_requests_running on the
// mock's /metrics.
func scrapeRunning(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "vllm:num_requests_running{") {
			f := strings.Fields(line)
			return f[len(f)-1]
		}
	}
	t.Fatalf("/metrics has no vllm:num_requests_running:\n%s", body)
	return ""
}

// cancelSummary is the part of a summary the cancellation tests read.
type cancelSummary struct {
	Completed             int64 `json:"completed"`
	Failed                int64 `json:"failed"`
	Cancelled             int64 `json:"cancelled"`
	CancelledFirstToken   int64 `json:"cancelled_first_token"`
	CancelledOutputTokens int64 `json:"cancelled_output_tokens"`
	Sessions              *struct {
		Started        int64 `json:"started"`
		TurnsSent      int64 `json:"turns_sent"`
		EndedCancelled int64 `json:"ended_cancelled"`
	} `json:"sessions"`
}

// TestCancelShardsMergeAndRecords: two shards of a run that cancels half
// its requests (each stream would take 2 s, the cuts come at 20–80 ms)
// against the mock: each shard's summary counts its cancelled requests
// apart from failures, its records say "outcome": "cancelled" for exactly
// those and `report` reads them back to the same count; the merge of the
// shards sums them exactly; and with sessions a cancelled turn ends its
// session.
func TestCancelShardsMergeAndRecords(t *testing.T) {
	_, port := mocktest.Start(t, mockserver.Config{ITL: 20 * time.Millisecond})
	dir := t.TempDir()
	path := func(s string) string { return filepath.Join(dir, s) }
	var total cancelSummary
	for i := range 2 {
		args := []string{"run", "--port", strconv.Itoa(port), "--request-rate", "100", "--num-prompts", "40", "--seed", "9",
			"--random-input-len", "16", "--random-output-len", "100", "--cancel-share", "0.5", "--cancel-after", "uniform:20ms:80ms",
			"--shard", strconv.Itoa(i) + "/2", "--warmup-requests", "0", "--quiet", "--disable-tqdm",
			"--summary-json", path("s" + strconv.Itoa(i) + ".json"), "--results-jsonl", path("r" + strconv.Itoa(i) + ".jsonl")}
		mustRun(t, args...)
		s := testenv.ReadJSON[cancelSummary](t, path("s"+strconv.Itoa(i)+".json"))
		recs := testenv.ReadFile(t, path("r"+strconv.Itoa(i)+".jsonl"))
		n := int64(strings.Count(string(recs), `"outcome":"cancelled"`))
		if s.Cancelled == 0 || s.Completed == 0 || s.Failed != 0 || s.Completed+s.Cancelled != 20 || n != s.Cancelled {
			t.Errorf("shard %d: %+v, %d records cancelled", i, s, n)
		}
		if s.CancelledFirstToken != s.Cancelled || s.CancelledOutputTokens < s.Cancelled || s.CancelledOutputTokens >= 100*s.Cancelled {
			t.Errorf("shard %d: %d of %d cancelled had a first token, %d tokens received", i, s.CancelledFirstToken, s.Cancelled, s.CancelledOutputTokens)
		}
		rep, _ := mustRun(t, "report", path("r"+strconv.Itoa(i)+".jsonl"))
		want := "Cancelled by the client:"
		if !strings.Contains(rep, want) || !strings.Contains(rep, strconv.FormatInt(s.Cancelled, 10)+" (") {
			t.Errorf("report from the records: no %q line with %d:\n%s", want, s.Cancelled, rep)
		}
		total.Completed += s.Completed
		total.Cancelled += s.Cancelled
		total.CancelledFirstToken += s.CancelledFirstToken
		total.CancelledOutputTokens += s.CancelledOutputTokens
	}
	mustRun(t, "merge", path("s0.json"), path("s1.json"), "-o", path("m.json"))
	if m := testenv.ReadJSON[cancelSummary](t, path("m.json")); m.Completed != total.Completed || m.Cancelled != total.Cancelled ||
		m.CancelledFirstToken != total.CancelledFirstToken || m.CancelledOutputTokens != total.CancelledOutputTokens {
		t.Errorf("merged %+v, the shards' sums %+v", m, total)
	}

	// Sessions: every turn is cancelled, so every session ends at its first.
	args := []string{"run", "--port", strconv.Itoa(port), "--request-rate", "100", "--num-prompts", "10", "--seed", "9",
		"--random-input-len", "16", "--random-output-len", "100", "--turns", "3", "--cancel-share", "1", "--cancel-after", "30ms",
		"--warmup-requests", "0", "--quiet", "--disable-tqdm", "--summary-json", path("sess.json")}
	mustRun(t, args...)
	s := testenv.ReadJSON[cancelSummary](t, path("sess.json"))
	if s.Sessions == nil || s.Sessions.Started != 10 || s.Sessions.EndedCancelled != 10 || s.Sessions.TurnsSent != 10 || s.Cancelled != 10 {
		t.Errorf("sessions: %+v, cancelled %d", s.Sessions, s.Cancelled)
	}
}
