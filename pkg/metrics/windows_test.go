package metrics

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

func TestWindowAccFillAndReset(t *testing.T) {
	a := NewWindowAcc()
	// Two requests: due at 0, sent 2 ms late; tokens every 5 ms.
	a.Add(withGood(sampleOf(ok(0, 0, ms(2), ms(12), []time.Duration{ms(12), ms(17), ms(22)}, ms(22), 3))))
	a.Add(sampleOf(ok(1, ms(100), ms(102), ms(132), []time.Duration{ms(132), ms(137)}, ms(137), 2)))
	failed := &record.Request{}
	failed.Reset()
	failed.Sent, failed.End, failed.ErrorClass = ms(5), ms(6), record.ErrTimeout
	a.Add(sampleOf(failed))
	cut := &record.Request{}
	cut.Reset()
	cut.Sent, cut.End, cut.Cancelled, cut.CancelAfter = ms(5), ms(6), true, ms(1)
	a.Add(sampleOf(cut))
	w := WindowStats{Start: 10, End: 12, Offered: 4}
	a.Fill(&w, true)
	if w.Completed != 2 || w.Failed != 1 || w.Cancelled != 1 || w.ErrorsByClass[record.ErrTimeout] != 1 {
		t.Errorf("completed %d failed %d cancelled %d errors %v", w.Completed, w.Failed, w.Cancelled, w.ErrorsByClass)
	}
	if w.AchievedRate != 1 || w.OfferedRate != 2 || w.OutputTokens != 5 || w.OutputRate != 2.5 {
		t.Errorf("rates: achieved %v offered %v output %d (%v/s)", w.AchievedRate, w.OfferedRate, w.OutputTokens, w.OutputRate)
	}
	if math.Abs(w.TTFTP50-10) > 0.1 || math.Abs(w.TTFTP99-30) > 0.3 || math.Abs(w.ITLP99-5) > 0.05 {
		t.Errorf("ttft p50 %v p99 %v itl p99 %v", w.TTFTP50, w.TTFTP99, w.ITLP99)
	}
	if w.Sent != 4 || math.Abs(w.LagMax-5) > 1e-9 {
		t.Errorf("sent %d lag max %v, want 4 and 5 ms (the failed and the cut requests were sent 5 ms late)", w.Sent, w.LagMax)
	}
	if w.Goodput == nil || *w.Goodput != 1 {
		t.Errorf("goodput %v, want 1", w.Goodput)
	}
	a.Reset()
	var empty WindowStats
	a.Fill(&empty, false)
	if empty.Completed != 0 || empty.Cancelled != 0 || empty.Sent != 0 || empty.TTFTP99 != 0 || empty.ErrorsByClass != nil || empty.Goodput != nil {
		t.Errorf("after Reset: %+v", empty)
	}
	if _, err := json.Marshal(w); err != nil {
		t.Fatal(err)
	}
}

// TestSaturationCheck is the self-check's decision on injected figures:
// the client is saturated only when it is the bottleneck — its CPU near all
// of its cores, or a backlog of due arrivals that grows — and send lag
// without either is a busy machine, noted as such.
func TestSaturationCheck(t *testing.T) {
	c2 := SaturationCheck{Cores: 2}
	tests := []struct {
		name   string
		check  SaturationCheck
		w      WindowStats
		prev   float64 // the previous window's backlog, ms
		reason string  // "": not saturated
		busy   bool
	}{
		{"keeping time", c2, WindowStats{Sent: 1000, LagP99: 0.4, ClientCPU: 0.3}, 0, "", false},
		// A light run on a busy machine: the OS wakes the client late.
		{"light run, busy machine: lag p99 over 1 ms", c2, WindowStats{Sent: 1000, LagP90: 0.5, LagP99: 5.21, ClientCPU: 0.02}, 0, "", true},
		{"light run, busy machine: a moment's backlog", c2, WindowStats{Sent: 1000, LagP99: 40, ClientCPU: 0.03, Behind: 40}, 0, "", true},
		{"light run, busy machine: a backlog that shrinks", c2, WindowStats{Sent: 1000, LagP99: 400, ClientCPU: 0.03, Behind: 150}, 300, "", true},
		{"0.6 req/s, few sends late", c2, WindowStats{Sent: 30, LagP90: 2, LagP99: 4, ClientCPU: 0.03}, 0, "", true},
		{"exactly 1 ms is no note", c2, WindowStats{Sent: 1000, LagP99: 1}, 0, "", false},
		{"few sends: p90 judges", c2, WindowStats{Sent: 30, LagP90: 0.3, LagP99: 1.2}, 0, "", false},
		{"too few sends to judge lag", c2, WindowStats{Sent: 3, LagP90: 20, LagP99: 20}, 0, "", false},
		{"queueing for a concurrency slot is neither", SaturationCheck{Cores: 2, MaxConcurrency: 8}, WindowStats{Sent: 1000, LagP99: 900, InFlightMax: 8}, 0, "", false},
		{"below the concurrency limit the machine is busy", SaturationCheck{Cores: 2, MaxConcurrency: 8}, WindowStats{Sent: 1000, LagP99: 900, InFlightMax: 5}, 0, "", true},
		{"all at once is by design", SaturationCheck{Cores: 2, AllAtOnce: true}, WindowStats{Sent: 1000, LagP99: 50, Behind: 900}, 0, "", false},
		// An impossible rate: the client is the bottleneck.
		{"CPU pegged", c2, WindowStats{Sent: 1000, LagP99: 0.2, ClientCPU: 0.95}, 0, "client CPU 95 % of 2 cores ≥ 90 %", false},
		{"CPU pegged, lag too", c2, WindowStats{Sent: 1000, LagP99: 30, ClientCPU: 0.97}, 0, "client CPU 97 % of 2 cores", false},
		{"a backlog from the start", c2, WindowStats{Sent: 1000, LagP99: 800, ClientCPU: 0.4, Behind: 850}, 0, "a growing backlog: 850 ms behind the schedule (was 0.00 ms)", false},
		{"a backlog that grows", c2, WindowStats{Sent: 1000, LagP99: 3000, ClientCPU: 0.4, Behind: 5373}, 2100, "a growing backlog: 5373 ms behind the schedule (was 2100 ms)", false},
		{"a backlog at a standstill is not growing", c2, WindowStats{Sent: 1000, LagP99: 3000, ClientCPU: 0.4, Behind: 2100}, 2100, "", true},
		{"CPU not measured", c2, WindowStats{ClientCPU: -1}, 0, "", false},
		// The lag weighed against the latencies it moves: milliseconds
		// beside a TTFT p99 of tens of ms or more are no note (make demo's
		// 3.9 ms beside 46 ms); a lag over a tenth of it is.
		{"lag small against the TTFT", c2, WindowStats{Sent: 200, LagP99: 3.9, TTFTP99: 46, E2EP99: 785, ClientCPU: 0.03}, 0, "", false},
		{"lag large against the TTFT", c2, WindowStats{Sent: 200, LagP99: 13.8, TTFTP99: 46, E2EP99: 785, ClientCPU: 0.03}, 0, "", true},
		{"no tokens: weighed against the E2E", c2, WindowStats{Sent: 200, LagP99: 3.9, E2EP99: 120, ClientCPU: 0.03}, 0, "", false},
		{"no tokens, lag large against the E2E", c2, WindowStats{Sent: 200, LagP99: 30, E2EP99: 120, ClientCPU: 0.03}, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.w
			tt.check.Check(&w, tt.prev)
			if w.MachineBusy != tt.busy {
				t.Errorf("machine busy %v, want %v", w.MachineBusy, tt.busy)
			}
			if tt.reason == "" {
				if w.Saturated {
					t.Errorf("saturated: %v", w.Reasons)
				}
				return
			}
			if !w.Saturated || !strings.Contains(strings.Join(w.Reasons, "; "), tt.reason) {
				t.Errorf("saturated %v reasons %q, want %q", w.Saturated, w.Reasons, tt.reason)
			}
		})
	}
}

// TestMachineBusyNote: the note names the worst lag, how many windows, the
// client's CPU, and what the lag does to the figures; none without a busy
// window.
func TestMachineBusyNote(t *testing.T) {
	ws := []WindowStats{
		{Sent: 600, LagP99: 0.3, ClientCPU: 0.01},
		{Sent: 600, LagP99: 5.21, ClientCPU: 0.02, MachineBusy: true},
		{Sent: 40, LagP90: 8.5, LagP99: 9, ClientCPU: 0.05, MachineBusy: true},
	}
	want := "send lag p90 up to 8.50 ms in 2 of 3 windows while the client kept up (CPU at most 5 % of its cores, no backlog): " +
		"the machine is busy with other processes, which delay the client's sends. " +
		"Latencies measured from the schedule (ttft_from_scheduled, e2e_from_scheduled) include this lag; " +
		"the server's own figures (TTFT, ITL, TPOT, E2E from the send) do not"
	if got := MachineBusyNote(ws); got != want {
		t.Errorf("note\n%q, want\n%q", got, want)
	}
	if got := MachineBusyNote(ws[:1]); got != "" {
		t.Errorf("note %q without a busy window", got)
	}
}

func TestTimelineKeepsTotalsWhenCoarsening(t *testing.T) {
	tl := NewTimeline(100*time.Millisecond, 8)
	var inFlight float64
	n := 0
	// One request every 50 ms for 10 s, each in flight 120 ms, results
	// arriving out of order (by index parity).
	for pass := 0; pass < 2; pass++ {
		for i := pass; i < 200; i += 2 {
			at := time.Duration(i) * 50 * time.Millisecond
			r := ok(int64(i), at, at+ms(1), at+ms(21), []time.Duration{at + ms(21), at + ms(121)}, at+ms(121), 2)
			tl.Add(sampleOf(r))
			inFlight += 0.120
			n++
		}
	}
	if len(tl.bins) > 8 {
		t.Fatalf("%d bins, want at most 8", len(tl.bins))
	}
	if tl.Width() != 1600*time.Millisecond {
		t.Errorf("width %v, want 1.6s (100ms doubled until 10 s fit 8 bins)", tl.Width())
	}
	var offered, completed, lagN int64
	var area float64
	for _, b := range tl.bins {
		offered += b.offered
		completed += b.completed
		area += b.inFlight
		if b.lag != nil {
			lagN += b.lag.TotalCount()
		}
	}
	if offered != int64(n) || completed != int64(n) || lagN != int64(n) {
		t.Errorf("offered %d completed %d lag samples %d, want %d each", offered, completed, lagN, n)
	}
	if math.Abs(area-inFlight) > 1e-6 {
		t.Errorf("in-flight area %v request-seconds, want %v", area, inFlight)
	}
	pts := tl.Points()
	// Steady state: 20 requests a second, each 120 ms in flight → 2.4 in
	// flight on average; offered 20/s.
	mid := pts[2]
	if math.Abs(mid.InFlight-2.4) > 0.01 || math.Abs(mid.OfferedRate-20) > 1e-9 {
		t.Errorf("bin 2: in flight %v offered %v/s, want 2.4 and 20", mid.InFlight, mid.OfferedRate)
	}
	if math.Abs(mid.LagP99-1) > 0.05 || mid.LagMax != 1 {
		t.Errorf("lag p99 %v max %v, want ≈1 ms", mid.LagP99, mid.LagMax)
	}
	if !math.IsNaN(mid.ServerRunning) {
		t.Error("no server sample: its figures must be NaN")
	}
	tl.Reduce(3)
	if len(tl.bins) > 3 {
		t.Errorf("Reduce(3) left %d bins", len(tl.bins))
	}
}

func TestTimelineServerSamples(t *testing.T) {
	tl := NewTimeline(time.Second, 16)
	for i, running := range []float64{0, 0, 3, 4, 0, 2, 2, 0, 0, 0} {
		tl.AddServer(time.Duration(i)*100*time.Millisecond, ServerSample{Running: running, Waiting: 1, KVCache: running / 10})
	}
	p := tl.Points()[0]
	if p.ServerIdle != 0.6 || math.Abs(p.ServerRunning-1.1) > 1e-12 || p.ServerWaiting != 1 || math.Abs(p.KVCache-0.11) > 1e-12 {
		t.Errorf("idle %v running %v waiting %v kv %v", p.ServerIdle, p.ServerRunning, p.ServerWaiting, p.KVCache)
	}
}

func TestCDFAndLengthBins(t *testing.T) {
	h := NewHist()
	for i := 1; i <= 1000; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	c := CDF(h)
	for i := 1; i < len(c); i++ {
		if c[i][0] < c[i-1][0] || c[i][1] < c[i-1][1] {
			t.Fatalf("CDF not monotone at %d: %v then %v", i, c[i-1], c[i])
		}
	}
	if c[0][1] != 0 || c[len(c)-1] != [2]float64{1000, 1} || math.Abs(c[50][0]-500) > 1 {
		t.Errorf("CDF ends %v %v, median %v", c[0], c[len(c)-1], c[50])
	}
	if CDF(NewHist()) != nil {
		t.Error("an empty distribution has no CDF")
	}

	l := NewLengthHist()
	for i := 0; i < 1000; i++ {
		l.Record(10 + i*i%5000)
	}
	b := l.Bins(40)
	var sum int64
	for _, n := range b.Counts {
		sum += n
	}
	if sum != 1000 || b.Total != 1000 || len(b.Edges) != len(b.Counts)+1 {
		t.Errorf("bins hold %d of 1000 lengths; %d edges for %d counts", sum, len(b.Edges), len(b.Counts))
	}
	one := NewLengthHist()
	for i := 0; i < 5; i++ {
		one.Record(128)
	}
	if b := one.Bins(40); len(b.Counts) != 1 || b.Counts[0] != 5 || b.Edges[0] != 128 {
		t.Errorf("a single length: %+v", b)
	}
}

// TestCDFZeros: values of 0 get an exact (0, share) point, and the CDF
// stays monotone; a distribution without zeros gets none.
func TestCDFZeros(t *testing.T) {
	h := NewHist()
	for i := 0; i < 1000; i++ {
		if i < 137 {
			h.Record(0)
		} else {
			h.Record(time.Duration(i) * time.Microsecond * 10)
		}
	}
	c := CDF(h)
	found := false
	for i, pt := range c {
		if i > 0 && (pt[0] < c[i-1][0] || pt[1] < c[i-1][1]) {
			t.Fatalf("CDF not monotone at %d: %v then %v", i, c[i-1], pt)
		}
		if pt[0] == 0 && pt[1] == 0.137 {
			found = true
		}
		if pt[0] <= 0 && pt[1] > 0.137 {
			t.Errorf("point %v: more than the 13.7 %% of values at 0", pt)
		}
	}
	if !found {
		t.Errorf("no exact point (0, 0.137) in %v", c[:20])
	}
	h = NewHist()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Millisecond)
	}
	for _, pt := range CDF(h) {
		if pt[0] <= 0 {
			t.Errorf("no zeros recorded, but a point %v", pt)
		}
	}
}
