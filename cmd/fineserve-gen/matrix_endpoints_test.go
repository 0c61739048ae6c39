package main

// The combination matrix's endpoints dimension: a case's servers, and what
// several endpoints must change in its results.

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// caseEndpoints are a case's endpoints: one built-in server, two, or one
// and a closed loopback port (srvs[i] nil: nothing listens there).
type caseEndpoints struct {
	srvs  []*mockserver.Server
	ports []int

	mu sync.Mutex
	// heads counts, per endpoint, the requests by the start of their
	// prompt (its first prefixHead tokens or words).
	heads []map[string]int
}

// prefixHead is the matrix's --prefix-len: the tokens a shared prefix
// puts at the start of a prompt.
const prefixHead = 10

// startCaseEndpoints starts the servers of c, each with cfg; onRequest is
// called on every generation request any of them receives.
func startCaseEndpoints(t *testing.T, c matrixCase, cfg mockserver.Config, onRequest func()) *caseEndpoints {
	n := 1
	if c.v(dEndpoints) != "one" {
		n = 2
	}
	ep := &caseEndpoints{srvs: make([]*mockserver.Server, n), ports: make([]int, n), heads: make([]map[string]int, n)}
	for i := range n {
		ep.heads[i] = map[string]int{}
		if i == 1 && c.v(dEndpoints) == "two-dead" {
			ep.ports[i] = closedPort(t)
			continue
		}
		cfg := cfg
		cfg.OnRequest = func(path string, body []byte) {
			onRequest()
			if h := promptHead(body, prefixHead); h != "" {
				ep.mu.Lock()
				ep.heads[i][h]++
				ep.mu.Unlock()
			}
		}
		ep.srvs[i], ep.ports[i] = mocktest.Start(t, cfg)
	}
	return ep
}

// requests is the generation requests every server received.
func (ep *caseEndpoints) requests() int64 {
	var n int64
	for _, s := range ep.srvs {
		if s != nil {
			n += s.Stats().Requests
		}
	}
	return n
}

// dead reports whether a record's endpoint (its number from 1; 0: the only
// one) is the closed port.
func (ep *caseEndpoints) dead(e int) bool {
	return e > 0 && e <= len(ep.srvs) && ep.srvs[e-1] == nil
}

// endpointColumn reports whether c's schedule has an endpoint column:
// several endpoints dealt in the schedule (not least-inflight).
func endpointColumn(c matrixCase) bool {
	return c.v(dEndpoints) != "one" && c.v(dEndpoints) != "two-least"
}

// promptHead is the start of a request body's prompt: its first n token
// ids, or words of a text prompt or of the first message ("" when the
// body has none).
func promptHead(body []byte, n int) string {
	var req struct {
		Prompt   json.RawMessage `json:"prompt"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	raw := req.Prompt
	if len(raw) == 0 && len(req.Messages) > 0 {
		raw = req.Messages[0].Content
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return fmt.Sprint(ids[:min(n, len(ids))])
	}
	var text string
	if json.Unmarshal(raw, &text) == nil && text != "" {
		w := strings.Fields(text)
		return strings.Join(w[:min(n, len(w))], " ")
	}
	return ""
}

// checkCaseServers: each server saw each request sent to it once per
// attempt (a cancelled request perhaps not its last: cut before it was
// written), plus the warm-up, its own --warmup-requests; the dead endpoint
// none.
func checkCaseServers(t testing.TB, c matrixCase, ep *caseEndpoints, sum *metrics.Summary, recs []resultRecord, fail func(string, ...any)) {
	warm := int64(mustInt(t, c.v(dWarmup)))
	n := len(ep.srvs)
	lo, hi, retries, http5xx := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for _, rec := range recs {
		m := 0 // the only endpoint
		if rec.Endpoint > 0 {
			m = rec.Endpoint - 1
		}
		if m < 0 || m >= n || ep.srvs[m] == nil {
			continue
		}
		a := int64(1 + rec.Retries)
		hi[m] += a
		if rec.Cancelled {
			a--
		}
		lo[m] += a
		retries[m] += int64(rec.Retries)
		if rec.ErrorClass == "http_5xx" {
			http5xx[m]++
		}
	}
	if c.v(dRetries) != "retry-503" && sum.Retries != 0 {
		fail("%d retries without --retries", sum.Retries)
	}
	for m, srv := range ep.srvs {
		if srv == nil {
			continue
		}
		got := srv.Stats().Requests
		if c.v(dRetries) == "retry-503" {
			// Warm-up requests may be retried too.
			if served := srv.FaultCounts()[mockserver.FaultHTTP503]; served < retries[m]+http5xx[m] || got < lo[m]+warm {
				fail("endpoint %d: %d requests, %d 503s; records: %d attempts, %d retries, %d http_5xx, warm-up %d", m, got, served, lo[m], retries[m], http5xx[m], warm)
			}
		} else if got < lo[m]+warm || got > hi[m]+warm {
			fail("endpoint %d saw %d requests, want %d to %d attempts + %d warm-up", m, got, lo[m], hi[m], warm)
		}
	}
}

// checkCaseEndpoints checks what several endpoints change: the summary's
// endpoints section (every endpoint, in order, its counts the records'
// and adding up to the run's), the records' endpoint field (only with
// several, the schedule's choice when it makes one; a session on one
// endpoint with --balance session, and a shared prefix too), the dead
// endpoint's share failing as connect, and the table listing every
// endpoint.
func checkCaseEndpoints(t testing.TB, c matrixCase, ep *caseEndpoints, r *caseRun, sum *metrics.Summary, recs []resultRecord, dryRows map[int64][]string, dryCol map[string]int, fail func(string, ...any)) {
	n := len(ep.ports)
	table := strings.Contains(r.stdout, "Serving Benchmark Result")
	if n == 1 {
		if sum.Endpoints != nil || strings.Contains(r.stdout, "Requests by Endpoint") {
			fail("one endpoint: endpoints section %+v", sum.Endpoints)
		}
		for _, rec := range recs {
			if rec.has("endpoint") {
				fail("one endpoint: record %d has endpoint %d", rec.Index, rec.Endpoint-1)
				return
			}
		}
		return
	}
	if len(sum.Endpoints) != n {
		fail("%d endpoints in the summary, want %d", len(sum.Endpoints), n)
		return
	}
	type counts struct{ completed, failed, cancelled int64 }
	got := make([]counts, n)
	bySession := map[int64]map[int]bool{}
	col, planned := dryCol[arrival.EndpointColumn]
	if planned != endpointColumn(c) {
		fail("schedule endpoint column %v with %s", planned, c.v(dEndpoints))
	}
	for _, rec := range recs {
		e := rec.Endpoint - 1 // -1: none
		if e < 0 || e >= n {
			fail("record %d: endpoint %v of %d", rec.Index, e, n)
			return
		}
		switch {
		case rec.Cancelled:
			got[e].cancelled++
		case rec.ErrorClass != "":
			got[e].failed++
		default:
			got[e].completed++
		}
		if planned {
			// The schedule's endpoint is the arrival's (a session's first
			// turn); a session's later turns stay there with --balance
			// session and go on round the endpoints with round-robin.
			want := mustInt(t, dryRows[rec.Index][col])
			if rec.Turn > 1 && c.v(dEndpoints) != "two-session" {
				want = (want + rec.Turn - 1) % n
			}
			if e != want {
				fail("record %d turn %d went to endpoint %d, the schedule says %d", rec.Index, rec.Turn, e, want)
			}
		}
		if rec.Turn > 0 {
			if bySession[rec.Index] == nil {
				bySession[rec.Index] = map[int]bool{}
			}
			bySession[rec.Index][e] = true
		}
	}
	var sums counts
	for i, e := range sum.Endpoints {
		g := got[i]
		sums.completed += e.Completed
		sums.failed += e.Failed
		sums.cancelled += e.Cancelled
		if e.Index != i || e.URL != urlOf(ep.ports[i]) || e.Completed != g.completed || e.Failed != g.failed || e.Cancelled != g.cancelled ||
			e.Requests != e.Completed+e.Failed+e.Cancelled {
			fail("endpoint %d: %+v; its records: %+v", i, e, g)
		}
		if ep.srvs[i] == nil && (e.Completed != 0 || e.Failed != e.ErrorsByClass["connect"]) {
			fail("dead endpoint %d: %+v, want every request failed as connect", i, e)
		}
		if table && !strings.Contains(r.stdout, "127.0.0.1:"+strconv.Itoa(ep.ports[i])) {
			fail("the table does not list endpoint %d", i)
		}
	}
	if sums.completed != sum.Completed || sums.failed != sum.Failed || sums.cancelled != sum.Cancelled {
		fail("endpoints add up to %+v; the run: %d completed, %d failed, %d cancelled", sums, sum.Completed, sum.Failed, sum.Cancelled)
	}
	if table && !strings.Contains(r.stdout, "Requests by Endpoint") {
		fail("no endpoint table")
	}
	if c.v(dEndpoints) != "two-session" {
		return
	}
	for s, eps := range bySession {
		if len(eps) != 1 {
			fail("--balance session: session %d on endpoints %v", s, eps)
		}
	}
	// A shared prefix's requests on one endpoint: a prompt start seen on
	// both servers is the warm-up's (sent to each), at most one per
	// warm-up request.
	if c.v(dPrefix) == "prefix" && c.v(dTurns) == "1" && is(c.row, dSource, "random-ids", "trace-ids", "text") {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		var both []string
		for h := range ep.heads[0] {
			if ep.heads[1][h] > 0 {
				both = append(both, h)
			}
		}
		if warm := mustInt(t, c.v(dWarmup)); len(both) > warm {
			fail("--balance session with --prefix-len: %d prompt starts on both endpoints (warm-up %d): %q", len(both), warm, both)
		}
	}
}

// checkCaseShardMerge runs the other copy of a sharded case with several
// endpoints (--shard 0/2) and merges the two summaries: the merged run
// has the whole schedule, and its endpoints section is the sum of the
// copies', adding up to the merged run's counts.
func checkCaseShardMerge(t testing.TB, c matrixCase, args []string, r *caseRun, sum *metrics.Summary, whole int64, fail func(string, ...any)) {
	if c.v(dShard) != "shard1of2" || c.v(dEndpoints) == "one" || c.v(dDryRun) == "dry-run" {
		return
	}
	first := r.path("summary.json")
	switch c.v(dSummary) {
	case "output-file":
		first = r.path("summary.jsonl")
	case "output-stdout":
		first = r.path("stdout.log")
		if err := os.WriteFile(first, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The other copy: the same run but the shard and the outputs.
	var other []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "--summary-json", "--output-file", "--report-html", "--schedule-out", "--metrics-addr", "--results-jsonl":
			i++
		case "--shard":
			other = append(other, a, "0/2")
			i++
		case "--start-at":
			other = append(other, a, time.Now().Add(300*time.Millisecond).Format(time.RFC3339Nano))
			i++
		case "--quiet":
		default:
			other = append(other, a)
		}
	}
	second := r.path("summary0.json")
	other = append(other, "--summary-json", second, "--results-jsonl", r.path("results0.jsonl"), "--quiet")
	if code, _, errb := runCmd(other...); code != exitOK && code != exitBudget {
		fail("shard 0/2: exit %d\n%s", code, errb)
		return
	}
	merged := r.path("merged.json")
	if code, _, errb := runCmd("merge", "--quiet", first, second, "-o", merged); code != exitOK {
		fail("merge: exit %d\n%s", code, errb)
		return
	}
	var s0, m metrics.Summary
	for p, s := range map[string]*metrics.Summary{second: &s0, merged: &m} {
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, s)
		}
		if err != nil {
			fail("%s: %v", p, err)
			return
		}
	}
	if m.Scheduled != whole || m.NotSent != 0 || s0.ScheduleHash != sum.ScheduleHash ||
		m.Completed != sum.Completed+s0.Completed || m.Failed != sum.Failed+s0.Failed || m.Cancelled != sum.Cancelled+s0.Cancelled {
		fail("merged: scheduled %d (whole %d), not sent %d, %d/%d/%d completed/failed/cancelled; copies %d/%d/%d and %d/%d/%d; hashes %s %s",
			m.Scheduled, whole, m.NotSent, m.Completed, m.Failed, m.Cancelled, sum.Completed, sum.Failed, sum.Cancelled, s0.Completed, s0.Failed, s0.Cancelled, sum.ScheduleHash, s0.ScheduleHash)
	}
	if len(m.Endpoints) != len(sum.Endpoints) || len(s0.Endpoints) != len(sum.Endpoints) {
		fail("merged %d endpoints, copies %d and %d", len(m.Endpoints), len(sum.Endpoints), len(s0.Endpoints))
		return
	}
	var c2, f2, x2 int64
	for i, e := range m.Endpoints {
		a, b := sum.Endpoints[i], s0.Endpoints[i]
		if e.URL != a.URL || e.Completed != a.Completed+b.Completed || e.Failed != a.Failed+b.Failed || e.Cancelled != a.Cancelled+b.Cancelled ||
			e.Requests != a.Requests+b.Requests || e.ErrorsByClass["connect"] != a.ErrorsByClass["connect"]+b.ErrorsByClass["connect"] {
			fail("merged endpoint %d: %+v; copies %+v and %+v", i, e, a, b)
		}
		c2, f2, x2 = c2+e.Completed, f2+e.Failed, x2+e.Cancelled
	}
	if c2 != m.Completed || f2 != m.Failed || x2 != m.Cancelled {
		fail("merged endpoints add up to %d/%d/%d, the merged run %d/%d/%d", c2, f2, x2, m.Completed, m.Failed, m.Cancelled)
	}
	if !slices.ContainsFunc(m.Endpoints, func(e metrics.EndpointSummary) bool { return e.Requests > 0 }) && m.Scheduled > 0 {
		fail("merged endpoints got no request")
	}
}

// extraSeeds are cases the matrix must hold beyond pairs: every way of
// spreading over two endpoints in a sharded run that sends (its other copy
// is run and the two merged), and --balance session with shared prefixes
// and no sessions in each synthetic prompt format (each prefix on one
// endpoint), and Anthropic's whole messages with thinking, sent (their
// reasoning tokens are the client's count of the thinking blocks).
func extraSeeds() [][]int {
	row := func(vals map[int]string) []int {
		r := make([]int, len(matrixDims))
		for i := range r {
			r[i] = testenv.Free
		}
		for d, v := range vals {
			r[d] = slices.Index(matrixDims[d].values, v)
		}
		return r
	}
	var out [][]int
	for _, v := range matrixDims[dEndpoints].values[1:] {
		out = append(out, row(map[int]string{dEndpoints: v, dShard: "shard1of2", dDryRun: "send"}))
	}
	for _, src := range []string{"random-ids", "text"} {
		out = append(out, row(map[int]string{dEndpoints: "two-session", dPrefix: "prefix", dTurns: "1", dSource: src, dDryRun: "send"}))
	}
	// An agentic replay, sent, cancelled, kept on one endpoint a
	// conversation, with its HTML report.
	out = append(out, row(map[int]string{dWorkload: "replay-agentic", dEndpoints: "two-session", dCancel: "cancel", dDryRun: "send", dHTML: "html"}))
	out = append(out, row(map[int]string{dBackend: "anthropic-messages", dStream: "no-stream", dAnswer: "reasoning", dDryRun: "send"}))
	return out
}
