package monitor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/otlprecv"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// evenSchedule is n arrivals, one every gap, starting at gap.
func evenSchedule(n int, gap time.Duration) arrival.Schedule {
	return func(yield func(arrival.Arrival) bool) {
		for i := 0; i < n; i++ {
			if !yield(arrival.Arrival{Index: int64(i), At: time.Duration(i+1) * gap, InputTokens: 10, OutputTokens: 3}) {
				return
			}
		}
	}
}

// logger writes notes and warnings as a run does.
type logger struct{ w io.Writer }

func (l *logger) Infof(format string, a ...any) { fmt.Fprintf(l.w, format+"\n", a...) }
func (l *logger) Warnf(format string, a ...any) { fmt.Fprintf(l.w, "warning: "+format+"\n", a...) }

// testConfig is a monitor with the run's defaults: windows of a minute,
// live lines every 10 s, no goodput, no endpoint, no server metrics.
func testConfig() Config {
	return Config{Window: time.Minute, ReportInterval: 10 * time.Second, Goodput: metrics.NoSLO,
		Out: io.Discard, Err: io.Discard, Log: &logger{w: io.Discard}}
}

// withStats sets c's schedule figures from sched.
func withStats(c Config, sched arrival.Schedule) Config {
	st := arrival.Summarize(sched)
	c.Scheduled, c.Span = st.Count, st.Last
	return c
}

// testRun is a monitor begun over a schedule in the test's bubble, with the
// collector and finished count that a run's collect keeps.
type testRun struct {
	m          *Monitor
	errb       bytes.Buffer // the monitor's live lines and log
	start      time.Time
	col        *metrics.Collector
	done       atomic.Int64
	slo        metrics.SLO
	good       *metrics.Goodput // the run's goodput part, beside the monitor
	dispatched func()
}

// startRun begins a monitor with c over sched (inFlight requests in flight
// throughout) and a dispatcher that offers it every arrival. behind, when
// set, stands for the dispatcher's Behind (offsets from the run's start).
func startRun(t *testing.T, c Config, sched arrival.Schedule, inFlight int64, behind func(time.Duration) time.Duration) *testRun {
	t.Helper()
	r := &testRun{col: metrics.NewCollector(), slo: c.Goodput, good: metrics.NewGoodput(c.Goodput)}
	c.Err, c.Log = &r.errb, &logger{w: &r.errb}
	m, err := New(withStats(c, sched))
	if err != nil {
		t.Fatal(err)
	}
	r.m, r.start = m, time.Now()
	d, wait := dispatch(m, r.start, sched)
	look := d.Behind
	if behind != nil {
		look = func(now time.Time) time.Duration { return behind(now.Sub(r.start)) }
	}
	m.Begin(r.start, func() int64 { return inFlight }, func() int64 { return 0 }, look, &r.done)
	r.dispatched = wait()
	return r
}

// finish hands a finished request to the collector, the goodput part and
// the monitor's sinks, as a run's collect does.
func (r *testRun) finish(res *client.Result) {
	var s metrics.Sample
	s.From(res, r.slo)
	r.col.Add(&s)
	r.good.Add(&s)
	for _, k := range r.m.Sinks() {
		k.Add(&s)
	}
	r.done.Add(1)
}

// stop waits for the dispatcher, stops the monitor now and returns its
// part of the summary.
func (r *testRun) stop(t *testing.T) metrics.Summary {
	t.Helper()
	r.dispatched()
	end := time.Since(r.start)
	r.m.Stop(end)
	var sum metrics.Summary
	if err := r.m.Annotate(&sum, end); err != nil {
		t.Fatal(err)
	}
	r.good.Finish(&sum, end)
	return sum
}

// dispatch returns a dispatcher over sched from start that sends nothing
// but offers every arrival to m, as a run's does; run starts it and
// returns the function that waits until it is done.
func dispatch(m *Monitor, start time.Time, sched arrival.Schedule) (*arrival.Dispatcher, func() (wait func())) {
	d := &arrival.Dispatcher{Start: start, OnOffer: m.Offer,
		Sender: arrival.SenderFunc(func(context.Context, arrival.Arrival) {}),
		Sleep: func(ctx context.Context, t time.Time) error {
			time.Sleep(time.Until(t)) // the bubble's clock
			return nil
		}}
	return d, func() func() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			d.Run(context.Background(), context.Background(), sched)
		}()
		return func() { <-done }
	}
}

// TestMonitorWindowsAndLiveLines drives the monitor on a fake clock: 600
// arrivals at 100 req/s for 6 s, each sent 0.1 ms late and finished 50 ms
// after its due time, except those due in [2 s, 3.9 s), sent 5 ms late,
// while the client uses no CPU and has no backlog. With windows of 2 s and
// live lines every second, the windows count offered requests by scheduled
// time and finished ones by end time, and window 1 alone is marked as one
// where a busy machine delayed the sends — not as one where the client was
// saturated: no live line flags the client, and the note after the table
// says what the lag does to the figures, once.
func TestMonitorWindowsAndLiveLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.ReportInterval, c.Window = time.Second, 2*time.Second
		c.Goodput = metrics.SLO{TTFT: 30, TPOT: 100, E2EL: 1e9}
		c.CPU = func() (time.Duration, bool) { return 0, true }
		sched := evenSchedule(600, 10*time.Millisecond)
		run := startRun(t, c, sched, 5, nil)
		start, errb := run.start, &run.errb

		// Results arrive when their requests end.
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			for a := range sched {
				lag := 100 * time.Microsecond
				if a.At >= 2*time.Second && a.At < 3900*time.Millisecond {
					lag = 5 * time.Millisecond
				}
				end := a.At + 50*time.Millisecond
				time.Sleep(time.Until(start.Add(end)))
				r := &client.Result{}
				r.Reset()
				r.Index, r.Scheduled, r.Sent = a.Index, a.At, a.At+lag
				r.FirstToken = r.Sent + 20*time.Millisecond
				r.TokenTimes = []time.Duration{r.FirstToken, r.FirstToken + 10*time.Millisecond, end}
				r.End, r.InputLen, r.CompletionTokens, r.Status = end, a.InputTokens, 3, 200
				if a.Index%100 == 99 {
					r.ErrorClass, r.Error, r.FirstToken, r.TokenTimes = record.ErrHTTP5xx, "boom", 0, nil
				}
				run.finish(r)
			}
		}()
		<-finished
		sum := run.stop(t)

		var ws []metrics.WindowStats
		if ok, err := testenv.SectionOf(t, &sum, metrics.KeyWindows, &ws); !ok || err != nil {
			t.Fatalf("no windows: %v", err)
		}
		// 6.05 s: three full windows and a last partial one.
		if len(ws) != 4 || ws[3].Start != 6 || ws[3].End != 6.05 {
			t.Fatalf("%d windows, last %+v", len(ws), ws[len(ws)-1])
		}
		wantOffered := []int64{199, 200, 200, 1} // due at 10 ms … 6 s
		wantDone := []int64{194, 200, 200, 6}    // ended at 60 ms … 6.05 s
		var offered, finishedN int64
		for i, w := range ws {
			if w.Offered != wantOffered[i] || w.Completed+w.Failed != wantDone[i] {
				t.Errorf("window %d: offered %d finished %d, want %d and %d", i, w.Offered, w.Completed+w.Failed, wantOffered[i], wantDone[i])
			}
			offered += w.Offered
			finishedN += w.Completed + w.Failed
			if w.InFlightMean != 5 || w.InFlightMax != 5 {
				t.Errorf("window %d: in flight %v/%d, want 5", i, w.InFlightMean, w.InFlightMax)
			}
		}
		if offered != 600 || finishedN != 600 {
			t.Errorf("offered %d finished %d over the windows, want 600 each", offered, finishedN)
		}
		for i, w := range ws[:3] {
			if w.OfferedRate < 99 || w.OfferedRate > 100 {
				t.Errorf("window %d: offered %v/s, want ≈100", i, w.OfferedRate)
			}
			if w.Saturated || w.MachineBusy != (i == 1) || w.Behind != 0 {
				t.Errorf("window %d: saturated %v (%v) machine busy %v behind %v ms, lag p99 %v", i, w.Saturated, w.Reasons, w.MachineBusy, w.Behind, w.LagP99)
			}
		}
		if w := ws[1]; w.LagP99 < 4.9 || w.LagP99 > 5.1 || w.Failed != 2 || w.ErrorsByClass["http_5xx"] != 2 || *w.Goodput != 198 {
			t.Errorf("window 1: lag p99 %v failed %d %v goodput %v", w.LagP99, w.Failed, w.ErrorsByClass, *w.Goodput)
		}
		var saturated, busy bool
		var which []int
		var reason, note string
		testenv.SectionOf(t, &sum, "client_saturated", &saturated)
		testenv.SectionOf(t, &sum, "client_saturation_reason", &reason)
		testenv.SectionOf(t, &sum, "client_machine_busy", &busy)
		testenv.SectionOf(t, &sum, "client_machine_busy_windows", &which)
		testenv.SectionOf(t, &sum, "client_machine_busy_note", &note)
		if saturated || reason != "" {
			t.Errorf("client_saturated %v reason %q: a busy machine is not a saturated client", saturated, reason)
		}
		if !busy || len(which) != 1 || which[0] != 1 ||
			!strings.Contains(note, "send lag p99 up to 5.00 ms in 1 of 4 windows while the client kept up (CPU at most 0 % of its cores, no backlog)") ||
			!strings.Contains(note, "Latencies measured from the schedule (ttft_from_scheduled, e2e_from_scheduled) include this lag; the server's own figures") {
			t.Errorf("client_machine_busy %v windows %v note %q", busy, which, note)
		}
		var after bytes.Buffer
		run.m.c.Err = &after
		if err := run.m.Finish(&sum); err != nil {
			t.Fatal(err)
		}
		if strings.Count(after.String(), "machine is busy") != 1 || strings.Contains(after.String(), "fell behind") {
			t.Errorf("after the table, want the busy machine's note once and no warning:\n%s", after.String())
		}
		var share float64
		testenv.SectionOf(t, &sum, metrics.KeyGoodputShare, &share)
		if share != 594.0/600 {
			t.Errorf("goodput share %v, want 594/600", share)
		}

		// One live line a second, the 2–4 s ones flagged; plain lines, no bar.
		out := errb.String()
		if strings.Contains(out, "\r") {
			t.Error("a carriage return in plain output")
		}
		lineRE := regexp.MustCompile(`(?m)^\[(\d\d:\d\d)–(\d\d:\d\d)\] offered ([\d.]+)/s achieved ([\d.]+)/s in flight 5 errors (\d+) \| TTFT p50 [\d.]+ p99 [\d.]+ ms \| ITL p50 [\d.]+ p99 [\d.]+ ms \| lag p99 [\d.]+ ms(.*)$`)
		lines := lineRE.FindAllStringSubmatch(out, -1)
		if len(lines) != 6 {
			t.Fatalf("%d live lines with rates, want 6 (one a second):\n%s", len(lines), out)
		}
		// The last 50 ms are too short for a rate: that line gives counts.
		if !regexp.MustCompile(`(?m)^\[00:06–00:06\] offered \d+ achieved \d+ \(last 0\.05 s\) in flight 5 errors \d+ \| `).MatchString(out) {
			t.Errorf("no count line for the last 50 ms:\n%s", out)
		}
		for i, l := range lines[:6] {
			if strings.Contains(l[6], "SATURATED") {
				t.Errorf("line %d flags the client: %s", i, l[0])
			}
			if l[3] != "100" && i > 0 {
				t.Errorf("line %d: offered %s/s, want 100", i, l[3])
			}
		}
		if lines[0][1] != "00:00" || lines[0][2] != "00:01" || lines[5][1] != "00:05" {
			t.Errorf("line times: %q … %q", lines[0][0], lines[5][0])
		}
	})
}

func TestBarLineAndClock(t *testing.T) {
	tests := []struct {
		done, total, inFlight int64
		elapsed, span         time.Duration
		want                  string
	}{
		{0, 100, 0, 0, 10 * time.Second, "[                              ] 0/100   0% in flight 0 ETA --:--"},
		{50, 100, 3, 5 * time.Second, 10 * time.Second, "[===============               ] 50/100  50% in flight 3 ETA 00:05"},
		// Behind the schedule: the completion rate says more time is left.
		{10, 100, 90, 10 * time.Second, 10 * time.Second, "[===                           ] 10/100  10% in flight 90 ETA 01:30"},
		{100, 100, 0, 12 * time.Second, 10 * time.Second, "[==============================] 100/100 100% in flight 0 ETA 00:00"},
	}
	for _, tt := range tests {
		if got := barLine(tt.done, tt.total, tt.inFlight, tt.elapsed, tt.span); got != tt.want {
			t.Errorf("barLine(%d/%d) =\n%q, want\n%q", tt.done, tt.total, got, tt.want)
		}
	}
	if clock(3725) != "1:02:05" || clock(65) != "01:05" {
		t.Errorf("clock: %s %s", clock(3725), clock(65))
	}
}

// BenchmarkMonitorObserve is the monitor's cost per result on the
// collecting goroutine (16 tokens, goodput on).
func BenchmarkMonitorObserve(b *testing.B) {
	c := testConfig()
	c.Goodput = metrics.SLO{TTFT: 100, TPOT: 10, E2EL: 1000}
	sched := evenSchedule(1, time.Millisecond)
	c.Err, c.Log = &bytes.Buffer{}, &logger{w: &bytes.Buffer{}}
	m, err := New(withStats(c, sched))
	if err != nil {
		b.Fatal(err)
	}
	r := &client.Result{}
	r.Reset()
	r.Sent, r.FirstToken, r.Status, r.CompletionTokens, r.InputLen = time.Millisecond, 20*time.Millisecond, 200, 16, 128
	for i := 0; i < 16; i++ {
		r.TokenTimes = append(r.TokenTimes, r.FirstToken+time.Duration(i)*5*time.Millisecond)
	}
	r.End = r.TokenTimes[15]
	sinks := metrics.Fanout(m.Sinks())
	var s metrics.Sample
	b.ReportAllocs()
	for b.Loop() {
		s.From(r, c.Goodput)
		sinks.Add(&s)
	}
}

// TestSummaryListsEveryFlaggedLiveInterval: a backlog that a live interval
// flags but its longer window does not (the client 0.3 s behind its
// schedule at 4 s and 1.3 s at 5 s, on time again from 5.05 s: it grew over
// the 4–5 s interval and was gone by the end of the 10 s window) still
// makes the summary say the client fell behind, and lists that interval.
// Five sends of that second leave 5 ms late.
func TestSummaryListsEveryFlaggedLiveInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.ReportInterval, c.Window = time.Second, 10*time.Second
		// The fake clock's intervals are no measure of the real CPU time
		// the test takes: only the backlog may flag the client here.
		c.CPU = func() (time.Duration, bool) { return 0, true }
		sched := evenSchedule(1000, 10*time.Millisecond)
		behind := func(at time.Duration) time.Duration {
			if at >= 3900*time.Millisecond && at < 5050*time.Millisecond {
				return at - 3700*time.Millisecond
			}
			return 0
		}
		run := startRun(t, c, sched, 1, behind)
		m, start, errb := run.m, run.start, &run.errb
		for a := range sched {
			lag := 100 * time.Microsecond
			if a.Index >= 450 && a.Index < 455 { // due in 4–5 s
				lag = 5 * time.Millisecond
			}
			end := a.At + 5*time.Millisecond + lag
			time.Sleep(time.Until(start.Add(end)))
			r := &client.Result{}
			r.Reset()
			r.Index, r.Scheduled, r.Sent = a.Index, a.At, a.At+lag
			r.FirstToken, r.End, r.CompletionTokens, r.Status = r.Sent+time.Millisecond, end, 1, 200
			r.TokenTimes = []time.Duration{r.FirstToken}
			run.finish(r)
		}
		sum := run.stop(t)
		flagged := regexp.MustCompile(`(?m)^\[(\d\d:\d\d)–(\d\d:\d\d)\] .*CLIENT SATURATED`).FindAllStringSubmatch(errb.String(), -1)
		if len(flagged) != 1 || flagged[0][1] != "00:04" {
			t.Fatalf("live lines flagged: %v, want the 4–5 s one\n%s", flagged, errb.String())
		}
		var ws []metrics.WindowStats
		testenv.SectionOf(t, &sum, metrics.KeyWindows, &ws)
		if len(ws) == 0 || ws[0].Saturated {
			t.Fatalf("windows %+v: the first should not be flagged, or the test proves nothing", ws)
		}
		var saturated bool
		var live []metrics.SaturatedInterval
		var reason string
		testenv.SectionOf(t, &sum, metrics.KeyClientSaturated, &saturated)
		testenv.SectionOf(t, &sum, metrics.KeySaturatedIntervals, &live)
		testenv.SectionOf(t, &sum, metrics.KeySaturationReason, &reason)
		if !saturated || len(live) != 1 || live[0].Start != 4 || live[0].End != 5 || !strings.Contains(reason, "00:04–00:05: a growing backlog: 300 ms behind the schedule (was 0.00 ms)") {
			t.Errorf("client_saturated %v, intervals %+v, reason %q", saturated, live, reason)
		}
		var after bytes.Buffer
		m.c.Err = &after
		if err := m.Finish(&sum); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(after.String(), "1 live intervals") {
			t.Errorf("the warning after the table does not count the live interval: %q", after.String())
		}
	})
}

// TestLiveLineOfTheLastInterval: the last, shorter interval gives rates
// with its length when it lasts long enough, counts when it is a sliver;
// never an infinite rate.
func TestLiveLineOfTheLastInterval(t *testing.T) {
	for _, tc := range []struct {
		d, interval float64
		want        string
	}{
		{10, 10, `offered 50.0/s achieved 48.0/s in flight`},
		{4, 10, `offered 50.0/s achieved 48.0/s (last 4.0 s) in flight`},
		{1.5, 10, `offered 50.0/s achieved 48.0/s (last 1.5 s) in flight`},
		{0.2, 10, `offered 10 achieved 9 (last 0.20 s) in flight`},
		{0.2, 0.25, `offered 50.0/s achieved 48.0/s (last 0.2 s) in flight`},
		{0.01, 0.25, `offered 10 achieved 9 (last 0.01 s) in flight`},
	} {
		w := &metrics.WindowStats{Start: 20, End: 20 + tc.d, Offered: 10, Completed: 9, OfferedRate: 50, AchievedRate: 48}
		line := liveLine(w, 3, nil, tc.interval, false)
		if !strings.Contains(line, tc.want) || strings.Contains(line, "Inf") {
			t.Errorf("%v s of %v: %q, want %q", tc.d, tc.interval, line, tc.want)
		}
	}
}

// TestLiveLineCountsCancelled: a live line says how many requests the
// client cut in its interval, after the errors, only when some were, and
// in every form of the line.
func TestLiveLineCountsCancelled(t *testing.T) {
	for _, d := range []float64{10, 4, 0.2} {
		w := &metrics.WindowStats{Start: 20, End: 20 + d, Offered: 10, Completed: 6, Failed: 1, OfferedRate: 50, AchievedRate: 30}
		if line := liveLine(w, 3, nil, 10, false); strings.Contains(line, "cancelled") {
			t.Errorf("%v s, nothing cut: %q", d, line)
		}
		w.Cancelled = 3
		if line := liveLine(w, 3, nil, 10, false); !strings.Contains(line, "errors 1 cancelled 3 |") {
			t.Errorf("%v s, 3 cut: %q, want \"errors 1 cancelled 3 |\"", d, line)
		}
	}
}

// barWriter keeps what the monitor prints and says when it first draws the
// progress bar.
type barWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	bar  chan struct{}
	seen bool
}

func (w *barWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen && bytes.HasPrefix(p, []byte("\r\033[K[")) {
		w.seen = true
		close(w.bar)
	}
	return w.buf.Write(p)
}

func (w *barWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestMonitorReadsItsClock: the monitor's time is Config.Now, not the wall
// clock. A run that starts in 2030 on the wall clock, with a clock that
// reads 10 s past its start and never moves: the monitor's first look, at
// once, closes the live intervals of the first nine seconds (the tenth
// waits for its grace) and the windows of the first eight, and draws the
// bar at 10 s of a 20 s schedule.
func TestMonitorReadsItsClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testConfig()
	c.ReportInterval, c.Window, c.Bar = time.Second, 2*time.Second, true
	c.Now = func() time.Time { return start.Add(10 * time.Second) }
	c.CPU = func() (time.Duration, bool) { return 0, true }
	out := &barWriter{bar: make(chan struct{})}
	c.Err = out
	m, err := New(withStats(c, evenSchedule(20, time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64
	m.Begin(start, func() int64 { return 3 }, func() int64 { return 0 }, nil, &done)
	select {
	case <-out.bar:
	case <-time.After(time.Minute): // only so that a failure does not hang
		m.Close()
		t.Fatal("the monitor never looked: it waits on the wall clock for a start in 2030")
	}
	m.Close()
	text := out.String()
	lines := regexp.MustCompile(`(?m)^\[(\d\d:\d\d)–(\d\d:\d\d)\] offered`).FindAllStringSubmatch(text, -1)
	if len(lines) != 9 || lines[0][1] != "00:00" || lines[8][2] != "00:09" {
		t.Errorf("live lines %v, want the nine of 00:00–00:09\n%s", lines, text)
	}
	if len(m.windows) != 4 || m.windows[3].End != 8 {
		t.Errorf("%d windows closed, want the four of 0–8 s", len(m.windows))
	}
	if want := "] 0/20   0% in flight 3 ETA 00:10"; !strings.Contains(text, want) {
		t.Errorf("bar: %q, want it drawn at 10 s of 20 (%q)", text, want)
	}
}

// runSlowClient runs 1,000 arrivals due 1 ms apart (a second of 1,000
// req/s) through a dispatcher whose one worker writes a request in 10 ms
// (100 req/s), monitored with c (its Err and Log the buffer returned),
// waits settle after the last is handed out, and stops the monitor there:
// the run's end.
func runSlowClient(t *testing.T, c Config, settle time.Duration) (*Monitor, time.Duration, *bytes.Buffer) {
	t.Helper()
	sched := evenSchedule(1000, time.Millisecond)
	errb := &bytes.Buffer{}
	c.Err, c.Log = errb, &logger{w: errb}
	m, err := New(withStats(c, sched))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var writing atomic.Int64
	d := &arrival.Dispatcher{Start: start, OnOffer: m.Offer, MaxUnstarted: 1, Unwritten: writing.Load,
		Sender: arrival.SenderFunc(func(context.Context, arrival.Arrival) {
			writing.Add(1)
			time.Sleep(10 * time.Millisecond)
			writing.Add(-1)
		}),
		Sleep: func(ctx context.Context, t time.Time) error {
			time.Sleep(time.Until(t))
			return nil
		}}
	var done atomic.Int64
	m.Begin(start, func() int64 { return 1 }, d.Dispatched, d.Behind, &done)
	d.Run(context.Background(), context.Background(), sched)
	time.Sleep(settle)
	end := time.Since(start)
	m.Stop(end)
	return m, end, errb
}

// TestImpossibleRateIsSaturated: a schedule of 1,000 req/s for a client
// that can write one request at a time, each taking 10 ms (100 req/s): the
// dispatcher waits for its workers (MaxUnstarted), falls further behind
// every second, and the windows are flagged as ones where the client was
// saturated by a growing backlog — with no CPU reading and no send lag to
// go by (no request finishes here).
func TestImpossibleRateIsSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.ReportInterval, c.Window = time.Second, time.Second
		c.CPU = func() (time.Duration, bool) { return 0, true }
		m, end, errb := runSlowClient(t, c, 0)
		var sum metrics.Summary
		if err := m.Annotate(&sum, end); err != nil {
			t.Fatal(err)
		}
		if end < 9*time.Second {
			t.Fatalf("the run took %v: the client kept up, the test proves nothing", end)
		}
		// The first window is not (a backlog lasts a whole second before
		// it counts), nor the last ones, which end after the dispatcher has
		// handed out its last arrival; every other one is, 0.9 s further
		// behind than the one before.
		if len(sum.Windows) < 9 || sum.Windows[0].Saturated {
			t.Fatalf("windows %+v", sum.Windows)
		}
		for _, w := range sum.Windows[1 : len(sum.Windows)-2] {
			if !w.Saturated || !strings.Contains(strings.Join(w.Reasons, ", "), "a growing backlog") || w.Behind < 890*float64(w.Index) {
				t.Errorf("window %d: saturated %v %v, behind %v ms", w.Index, w.Saturated, w.Reasons, w.Behind)
			}
		}
		if sum.Saturation == nil || !sum.Saturation.Saturated || sum.Saturation.MachineBusy {
			t.Errorf("self-check %+v, want saturated", sum.Saturation)
		}
		if n := strings.Count(errb.String(), "CLIENT SATURATED: a growing backlog"); n < 8 {
			t.Errorf("%d live lines flag the client, want at least 8:\n%s", n, errb.String())
		}
	})
}

// TestShortLastWindowIsNotJudgedByCPU: a run that ends 20 ms into its
// last window, with the CPU its end spent (50 ms on 2 cores: "125 %"),
// gets no CPU figure for that window — a share over a few milliseconds is
// noise — and no saturation flag from it; the full windows keep theirs.
func TestShortLastWindowIsNotJudgedByCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.ReportInterval, c.Window = time.Second, time.Second
		var cpu atomic.Int64 // ns
		c.CPU = func() (time.Duration, bool) { return time.Duration(cpu.Load()), true }
		m, err := New(withStats(c, evenSchedule(3, time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var done atomic.Int64
		m.Begin(start, func() int64 { return 0 }, func() int64 { return 0 }, nil, &done)
		time.Sleep(2*time.Second + 20*time.Millisecond)
		cpu.Add(int64(200 * time.Millisecond)) // spent in the last 20 ms
		end := time.Since(start)
		m.Stop(end)
		var sum metrics.Summary
		if err := m.Annotate(&sum, end); err != nil {
			t.Fatal(err)
		}
		if n := len(sum.Windows); n != 3 {
			t.Fatalf("%d windows, want 2 whole and the last 20 ms", n)
		}
		last := sum.Windows[2]
		if last.ClientCPU != -1 || last.Saturated {
			t.Errorf("the last 20 ms: CPU %v, saturated %v %v; want no figure and no flag", last.ClientCPU, last.Saturated, last.Reasons)
		}
		if w := sum.Windows[0]; w.ClientCPU != 0 {
			t.Errorf("a whole window: CPU %v, want its figure (0)", w.ClientCPU)
		}
	})
}

// TestLiveLineWithoutTokens: an interval in which nothing completed shows
// "E2E -" for a backend without tokens (images, pooling), the token
// latencies' dashes for the others.
func TestLiveLineWithoutTokens(t *testing.T) {
	w := &metrics.WindowStats{Start: 0, End: 10, Offered: 3}
	if line := liveLine(w, 3, nil, 10, true); !strings.Contains(line, "| E2E -") || strings.Contains(line, "TTFT") {
		t.Errorf("no tokens: %q", line)
	}
	if line := liveLine(w, 3, nil, 10, false); !strings.Contains(line, "| TTFT - | ITL -") {
		t.Errorf("tokens: %q", line)
	}
}

// TestOverloadInOneLongWindowIsSaturated: the run of
// TestImpossibleRateIsSaturated — 1,000 req/s due over a second for a
// client that writes 100 req/s — with the default one-minute window, which
// covers the whole 10 s run: its schedule runs out long before the window
// ends, when the client has nothing left to fall behind on. The window is
// judged by the backlog while arrivals were due, the summary says the
// achieved send rate fell short of the scheduled one and by how much, and
// the warning says so.
func TestOverloadInOneLongWindowIsSaturated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := testConfig()
		c.CPU = func() (time.Duration, bool) { return 0, true }
		m, end, errb := runSlowClient(t, c, 2*time.Second) // the answers of the last requests
		sum := metrics.Summary{ClientCPU: new(float64)}
		if err := m.Annotate(&sum, end); err != nil {
			t.Fatal(err)
		}
		if len(sum.Windows) != 1 {
			t.Fatalf("%d windows, want the one minute's", len(sum.Windows))
		}
		if w := sum.Windows[0]; !w.Saturated || w.Behind < 5000 {
			t.Errorf("the window: saturated %v %v, behind %v ms; want the backlog of the schedule's last second (over 8 s)", w.Saturated, w.Reasons, w.Behind)
		}
		c2 := sum.Saturation
		if c2 == nil || !c2.Saturated || c2.MachineBusy || c2.SendRate == nil {
			t.Fatalf("self-check %+v, want saturated with the send rate short", c2)
		}
		// 1,000 due over 1 s, handed out over about 10 s: 90 % short.
		if r := c2.SendRate; math.Abs(r.Scheduled-1000) > 1 || r.Achieved > 1000/5 || r.Shortfall < 0.8 || r.LastLate < 5 {
			t.Errorf("send rate %+v, want 1,000 req/s scheduled, about 100 achieved", *r)
		}
		if !strings.Contains(c2.Reason, "the achieved send rate fell short") {
			t.Errorf("reason %q", c2.Reason)
		}
		if err := m.Finish(&sum); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(errb.String(), "warning: the client fell behind its schedule in the whole run") {
			t.Errorf("no warning:\n%s", errb.String())
		}
	})
}

// TestSaturatedGaugeOnBothEndpoints: a closed live interval's self-check
// sets client_saturated on the Prometheus endpoint and on the OTLP export
// alike — 1 after an interval with a growing backlog, 0 after one without.
func TestSaturatedGaugeOnBothEndpoints(t *testing.T) {
	rcv := otlprecv.Start()
	defer rcv.Close()
	c := testConfig()
	c.MetricsAddr = "127.0.0.1:0"
	c.OTLP = otlpexport.Config{Endpoint: rcv.URL(), Interval: time.Hour, Operation: "chat"}
	m, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	prom := func() float64 {
		t.Helper()
		fams, err := m.prom.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() == "fineserve_gen_client_saturated" {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no client_saturated on the Prometheus endpoint")
		return 0
	}
	interval := func(behindMS float64) {
		m.closeLive(&period{acc: metrics.NewWindowAcc(), start: 0, end: 10 * time.Second, behind: behindMS})
	}
	interval(1000) // 1 s behind, from 0: saturated
	if prom() != 1 {
		t.Errorf("Prometheus client_saturated %v after a saturated interval", prom())
	}
	interval(0)
	if prom() != 0 {
		t.Errorf("Prometheus client_saturated %v after an interval on time", prom())
	}
	interval(1000)
	m.closeOTLP() // the last export
	if v, ok := rcv.Gauge("fineserve_gen_client_saturated"); !ok || v != 1 {
		t.Errorf("OTLP client_saturated %v (%v) after a saturated interval, Prometheus's %v", v, ok, prom())
	}
}
