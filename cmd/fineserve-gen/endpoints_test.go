package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
)

// epArgs is a short run of n requests at rate over the given endpoints.
func epArgs(n int, rate string, urls ...string) []string {
	return []string{"--base-url", strings.Join(urls, ","), "--model", "mock-model",
		"--num-prompts", strconv.Itoa(n), "--request-rate", rate, "--random-input-len", "8", "--random-output-len", "4",
		"--seed", "1", "--warmup-requests", "1", "--quiet"}
}

// TestEndpointsDeadOneFailsItsShare: two mocks and a closed port dealt
// round-robin: the dead endpoint is warned about and kept, its third of the
// requests fails as connect and is attributed to it, the others complete;
// the exit code follows --max-error-rate.
func TestEndpointsDeadOneFailsItsShare(t *testing.T) {
	_, p1 := mocktest.Start(t, mockserver.Config{})
	_, p2 := mocktest.Start(t, mockserver.Config{})
	dead := closedPort(t)
	for _, tc := range []struct {
		budget string
		code   int
	}{{"0", 3}, {"0.5", 0}} {
		t.Run("max-error-rate="+tc.budget, func(t *testing.T) {
			r := runToolFor(t, 60*time.Second, append(epArgs(30, "inf", urlOf(p1), urlOf(dead), urlOf(p2)), "--max-error-rate", tc.budget)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", r.code, tc.code, r.stderr)
			}
			if want := fmt.Sprintf("endpoint 2 (127.0.0.1:%d) does not answer", dead); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
			s := r.summary(t)
			if s.Completed != 20 || s.Failed != 10 {
				t.Fatalf("completed %d failed %d, want 20 and 10", s.Completed, s.Failed)
			}
			if len(s.Endpoints) != 3 {
				t.Fatalf("%d endpoints in the summary, want 3", len(s.Endpoints))
			}
			var sum int64
			for i, e := range s.Endpoints {
				sum += e.Completed
				want := []string{urlOf(p1), urlOf(dead), urlOf(p2)}[i]
				if e.URL != want || e.Index != i {
					t.Errorf("endpoint %d: %d %s, want %s", i, e.Index, e.URL, want)
				}
			}
			if sum != s.Completed {
				t.Errorf("endpoints' completed add up to %d, the run's is %d", sum, s.Completed)
			}
			if d := s.Endpoints[1]; d.Failed != 10 || d.Completed != 0 || d.ErrorsByClass["connect"] != 10 {
				t.Errorf("dead endpoint: %+v, want 10 failed as connect", d)
			}
			for _, i := range []int{0, 2} {
				if e := s.Endpoints[i]; e.Completed != 10 || e.Failed != 0 || e.P99TTFT <= 0 {
					t.Errorf("endpoint %d: %+v, want 10 completed", i, e)
				}
			}
			if !strings.Contains(r.stdout, "Requests by Endpoint") {
				t.Errorf("no endpoint table:\n%s", r.stdout)
			}
			for _, rec := range readRecords(t, r.path("results.jsonl")) {
				if rec.Endpoint == 0 {
					t.Fatalf("record %d has no endpoint", rec.Index)
				}
				if want := int(rec.Index % 3); rec.Endpoint-1 != want || (rec.ErrorClass == "connect") != (want == 1) {
					t.Errorf("record %d: endpoint %d (%q), want %d", rec.Index, rec.Endpoint-1, rec.ErrorClass, want)
				}
			}
		})
	}
}

// TestEndpointsNoneAnswers: with every endpoint down the run stops before
// sending (exit 1), as with one.
func TestEndpointsNoneAnswers(t *testing.T) {
	r := runToolFor(t, 30*time.Second, epArgs(4, "inf", urlOf(closedPort(t)), urlOf(closedPort(t)))...)
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach the server") {
		t.Fatalf("exit %d, want 1 naming the unreachable server:\n%s", r.code, r.stderr)
	}
}

// TestEndpointsModelMissing: a live endpoint that does not serve --model
// stops the run, naming it.
func TestEndpointsModelMissing(t *testing.T) {
	_, p1 := mocktest.Start(t, mockserver.Config{})
	_, p2 := mocktest.Start(t, mockserver.Config{Models: []string{"other"}})
	r := runToolFor(t, 30*time.Second, epArgs(4, "inf", urlOf(p1), urlOf(p2))...)
	if want := fmt.Sprintf("--model mock-model is not served at endpoint 2 (127.0.0.1:%d)", p2); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, want 1 and %q:\n%s", r.code, want, r.stderr)
	}
}

// TestEndpointsBadURL: a bad --base-url among several names its number and
// value, exit 2.
func TestEndpointsBadURL(t *testing.T) {
	for _, tc := range []struct{ urls, want string }{
		{"http://127.0.0.1:1,ftp://x", `--base-url 2 "ftp://x": must start with http:// or https://`},
		{"http://127.0.0.1:1,http://127.0.0.1:1/", `--base-url 2 "http://127.0.0.1:1/": the same as --base-url 1`},
		{"http://127.0.0.1:1,http://u:secret@127.0.0.1:2,x", `--base-url 3 "x"`},
	} {
		r := runTool(t, "--base-url", tc.urls, "--model", "m", "--num-prompts", "1", "--dry-run")
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "secret") {
			t.Errorf("%s: exit %d, want 2 and %q (no password):\n%s", tc.urls, r.code, tc.want, r.stderr)
		}
	}
	r := runTool(t, "--base-url", "http://127.0.0.1:1", "--balance", "random", "--model", "m", "--num-prompts", "1", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, `--balance "random": want round-robin, least-inflight or session`) {
		t.Errorf("--balance random: exit %d:\n%s", r.code, r.stderr)
	}
}

// TestEndpointsLeastInflightFavoursTheFastOne: least-inflight sends most
// requests to a fast mock and few to a slow one (round-robin would split
// them evenly).
//
// The arrivals are 50 ms apart on average and the slow mock holds a
// request over a second, so that the fast one is idle at almost every
// arrival even on a busy machine, where it may take tens of milliseconds
// to answer: at 200 req/s against a slow mock of 260 ms, the fast one was
// still busy at most arrivals there and the split came out 31 to 29.
func TestEndpointsLeastInflightFavoursTheFastOne(t *testing.T) {
	_, fast := mocktest.Start(t, mockserver.Config{})
	_, slow := mocktest.Start(t, mockserver.Config{TTFT: time.Second, ITL: 20 * time.Millisecond})
	r := runToolFor(t, 60*time.Second, append(epArgs(30, "20", urlOf(fast), urlOf(slow)), "--balance", "least-inflight")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s := r.summary(t)
	f, sl := s.Endpoints[0].Requests, s.Endpoints[1].Requests
	// The slow mock holds a request ~1.06 s, a 1.5 s run: it takes about
	// one or two; 3× is a wide margin.
	if f+sl != 30 || f < 3*sl {
		t.Fatalf("fast endpoint got %d, slow %d: want the fast one at least 3× the slow one", f, sl)
	}
	t.Logf("fast endpoint %d requests, slow %d", f, sl)
}

// TestEndpointsSessionSticks: with --balance session every turn of a
// session goes to the endpoint its first went to, and the sessions are
// spread over both; round-robin moves the turns.
func TestEndpointsSessionSticks(t *testing.T) {
	_, p1 := mocktest.Start(t, mockserver.Config{})
	_, p2 := mocktest.Start(t, mockserver.Config{})
	for _, bal := range []string{"session", "round-robin"} {
		t.Run(bal, func(t *testing.T) {
			r := runToolFor(t, 60*time.Second, append(epArgs(8, "inf", urlOf(p1), urlOf(p2)), "--balance", bal, "--turns", "3")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			by := map[int64][]int{}
			for _, rec := range readRecords(t, r.path("results.jsonl")) {
				if rec.Endpoint == 0 || rec.Turn == 0 {
					t.Fatalf("record %d: endpoint %v turn %d", rec.Index, rec.Endpoint-1, rec.Turn)
				}
				by[rec.Session] = append(by[rec.Session], rec.Endpoint-1)
			}
			if len(by) != 8 {
				t.Fatalf("%d sessions in the records, want 8", len(by))
			}
			used := map[int]bool{}
			for sess, eps := range by {
				slices.Sort(eps)
				one := eps[0] == eps[len(eps)-1]
				if one != (bal == "session") {
					t.Errorf("session %d: endpoints %v (balance %s)", sess, eps, bal)
				}
				for _, e := range eps {
					used[e] = true
				}
			}
			if len(used) != 2 {
				t.Errorf("endpoints used: %v, want both", used)
			}
		})
	}
}

// TestEndpointsSessionKeepsPrefixes: with --balance session each shared
// prefix goes to one endpoint, so each is missed by a prefix cache once;
// round-robin misses it once on each endpoint.
func TestEndpointsSessionKeepsPrefixes(t *testing.T) {
	cache := mockserver.PrefixCacheConfig{Blocks: 4096}
	_, p1 := mocktest.Start(t, mockserver.Config{PrefixCache: cache})
	_, p2 := mocktest.Start(t, mockserver.Config{PrefixCache: cache})
	misses := func(bal string) int {
		// One request at a time, so a prefix is cached before it is asked
		// for again.
		args := append(epArgs(40, "inf", urlOf(p1), urlOf(p2)), "--balance", bal, "--max-concurrency", "1",
			"--prefix-len", "64", "--num-prefixes", "4", "--random-input-len", "96", "--warmup-requests", "0", "--prompt-salt", fmt.Sprint(len(bal)))
		r := runToolFor(t, 60*time.Second, args...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", bal, r.code, r.stderr)
		}
		n := 0
		for _, rec := range readRecords(t, r.path("results.jsonl")) {
			if rec.CachedTokens < 48 {
				n++
			}
		}
		return n
	}
	if got := misses("session"); got != 4 {
		t.Errorf("session: %d requests missed the prefix cache, want 4 (one per prefix)", got)
	}
	if got := misses("round-robin"); got <= 4 {
		t.Errorf("round-robin: %d requests missed the prefix cache, want more than 4 (a prefix on both endpoints)", got)
	}
}

// TestEndpointsWithCancelReportFromRecords: `fineserve-gen report` of the
// records of a run over two endpoints with cancellation prints the
// endpoints side by side, with the run's counts per endpoint; with the
// run's summary too, under their URLs.
func TestEndpointsWithCancelReportFromRecords(t *testing.T) {
	_, p1 := mocktest.Start(t, mockserver.Config{})
	_, p2 := mocktest.Start(t, mockserver.Config{TTFT: 5 * time.Millisecond, ITL: 5 * time.Millisecond})
	r := runToolFor(t, 60*time.Second, append(epArgs(30, "200", urlOf(p1), urlOf(p2)), "--cancel-share", "0.4", "--cancel-after", "uniform:1ms:10ms")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s := r.summary(t)
	if s.Cancelled == 0 || len(s.Endpoints) != 2 {
		t.Fatalf("cancelled %d, %d endpoints: the run does not test the report", s.Cancelled, len(s.Endpoints))
	}
	row := func(table, name string) []string {
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == name {
				return f[1:]
			}
		}
		return nil
	}
	for _, withSummary := range []bool{false, true} {
		args := []string{"report", r.path("results.jsonl")}
		if withSummary {
			args = append(args, "--summary", r.path("summary.json"))
		}
		code, stdout, stderr := runCmd(args...)
		if code != 0 || !strings.Contains(stdout, "Requests by Endpoint") {
			t.Fatalf("%q: exit %d, no endpoint table:\n%s\n%s", args, code, stdout, stderr)
		}
		for name, want := range map[string]func(e int) int64{
			"completed": func(e int) int64 { return s.Endpoints[e].Completed },
			"cancelled": func(e int) int64 { return s.Endpoints[e].Cancelled },
		} {
			got := row(stdout, name)
			if len(got) != 2 || got[0] != strconv.FormatInt(want(0), 10) || got[1] != strconv.FormatInt(want(1), 10) {
				t.Errorf("summary %v: %s %v, the run's %d and %d", withSummary, name, got, want(0), want(1))
			}
		}
		if has := strings.Contains(stdout, fmt.Sprintf("127.0.0.1:%d", p2)); has != withSummary {
			t.Errorf("summary %v: the table shows the URLs: %v", withSummary, has)
		}
	}
}
