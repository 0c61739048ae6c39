package runner

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/promexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

// sampleEvery is how often the monitor samples the requests in flight and
// redraws the progress bar.
const sampleEvery = 250 * time.Millisecond

// monitor watches a run while it runs: it sees every result (observe, on
// the collecting goroutine) and adds it to the current window and live
// interval (see stream); on a goroutine of its own it cuts windows and
// intervals at their absolute boundaries, prints live lines and the
// progress bar, and samples requests in flight and CPU time. Closed windows
// are kept as a few numbers each, so memory does not grow with the number
// of requests. After the run it adds windows, the client self-check,
// goodput, distributions and server metrics to the summary and writes the
// HTML report.
type monitor struct {
	o     *Options
	start time.Time
	stdio IO
	log   *logger
	total int64
	span  time.Duration
	col   *metrics.Collector
	sched arrival.Schedule
	check metrics.SaturationCheck
	slo   metrics.SLO
	cores int

	prom    *promexport.Exporter
	promSrv *promexport.Server
	scraper *servermetrics.Scraper
	server  *servermetrics.Result

	// Written by observe (and the scraper), read by the monitor: mu.
	mu         sync.Mutex
	win, live  *stream // live: nil without live lines
	timeline   *metrics.Timeline
	good       metrics.Goodput
	lengths    *metrics.Lengths
	lastServer *servermetrics.Sample

	// The monitor goroutine's own state (then stop's).
	windows []metrics.WindowStats
	// liveSat are the live intervals flagged CLIENT SATURATED (at most
	// metrics.MaxSaturatedIntervals; liveSatN counts them all).
	liveSat    []metrics.SaturatedInterval
	liveSatN   int
	cpuOK      bool
	next       func() (arrival.Arrival, bool)
	stopPull   func()
	pending    *arrival.Arrival
	inFlightFn atomic.Pointer[func() int64]
	dispatched atomic.Pointer[func() int64]
	done       *atomic.Int64
	bar        bool

	outMu    sync.Mutex // the error stream: bar and lines
	barShown bool

	quit, stopped chan struct{}
	started       bool
	closeOnce     sync.Once
}

// newMonitor prepares the monitor of a run, and starts the generator's
// metrics endpoint when asked for. It adds itself to wl's annotators; its
// consumers of samples are sinks().
func newMonitor(o *Options, st arrival.Stats, wl *workload, stdio IO, log *logger) (*monitor, error) {
	m := &monitor{
		o: o, stdio: stdio, log: log, total: st.Count, span: st.Last, sched: wl.schedule,
		slo: o.Observe.Goodput, cores: runtime.GOMAXPROCS(0),
		timeline: metrics.NewTimeline(timelineWidth(st.Last), 256),
		lengths:  metrics.NewLengths(),
		quit:     make(chan struct{}), stopped: make(chan struct{}),
	}
	m.win = newStream(o.Observe.Window, m.closeWindow)
	if o.Observe.ReportInterval > 0 {
		m.live = newStream(o.Observe.ReportInterval, m.closeLive)
	}
	m.good.SLO = m.slo
	m.check = metrics.SaturationCheck{
		MaxConcurrency: o.MaxConcurrency, Cores: m.cores,
		AllAtOnce: o.Mode == "poisson" && math.IsInf(o.RequestRate, 1),
	}
	if o.Observe.MetricsAddr != "" {
		m.prom = promexport.New(promexport.Config{
			Scheduled: st.Count,
			InFlight:  m.inFlightNow,
			Dispatched: func() int64 {
				if d := m.dispatched.Load(); d != nil {
					return (*d)()
				}
				return 0
			},
		})
		srv, err := promexport.Serve(o.Observe.MetricsAddr, m.prom)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		m.promSrv = srv
		log.Infof("metrics: serving %s", srv.URL)
		WarnExposed(stdio.Err, "--metrics-addr "+o.Observe.MetricsAddr, srv.Addr)
	}
	wl.annotate = append(wl.annotate, m.annotate)
	return m, nil
}

// seriesPoints is the most points a plot over time has.
const seriesPoints = 60

// timelineWidth is the first bin width of the run's timeline: 250 ms
// doubled until the schedule spans at most seriesPoints bins.
func timelineWidth(span time.Duration) time.Duration {
	w := 250 * time.Millisecond
	for span/w > seriesPoints {
		w *= 2
	}
	return w
}

func (m *monitor) inFlightNow() int64 {
	if f := m.inFlightFn.Load(); f != nil {
		return (*f)()
	}
	return 0
}

// streams are the monitor's streams in a fixed order.
func (m *monitor) streams() []*stream {
	if m.live == nil {
		return []*stream{m.win}
	}
	return []*stream{m.win, m.live}
}

// sinks are the monitor's consumers of samples, for the run's fan-out (on
// the collecting goroutine): the windows, live intervals, timeline, length
// distributions and goodput, which the monitor goroutine reads too (under
// m.mu), and the Prometheus exporter.
func (m *monitor) sinks() []metrics.Sink {
	watched := metrics.Fanout{m.win}
	if m.live != nil {
		watched = append(watched, m.live)
	}
	watched = append(watched, m.timeline, m.lengths)
	if m.slo.Set() {
		watched = append(watched, &m.good)
	}
	out := []metrics.Sink{locked{&m.mu, watched}}
	if m.prom != nil {
		out = append(out, m.prom)
	}
	return out
}

// locked hands samples to its sinks holding a mutex.
type locked struct {
	mu    *sync.Mutex
	sinks metrics.Fanout
}

func (l locked) Add(s *metrics.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sinks.Add(s)
}

// begin starts watching a run whose offsets count from start: the
// progress bar, live lines, windows and the server's metrics. col is the
// run's collector (read after the run), inFlight and dispatched read the
// dispatcher, done counts the results collected.
func (m *monitor) begin(start time.Time, col *metrics.Collector, inFlight, dispatched func() int64, done *atomic.Int64) {
	m.start, m.col = start, col
	m.inFlightFn.Store(&inFlight)
	m.dispatched.Store(&dispatched)
	m.done = done
	m.bar = m.stdio.Terminal && !m.o.DisableProgress
	m.next, m.stopPull = iter.Pull(iter.Seq[arrival.Arrival](m.sched))
	cpu, ok := processCPU()
	m.cpuOK = ok
	for _, s := range m.streams() {
		s.cpuMark = cpu
	}
	if m.o.scrapeServer() {
		url := m.o.Observe.ServerMetricsURL
		if url == "" {
			url = m.o.baseURL() + "/metrics"
		}
		m.scraper = servermetrics.Start(servermetrics.Config{
			URL: url, Interval: m.o.Observe.ServerMetricsInterval, Epoch: m.start,
			OnSample: func(at time.Duration, s servermetrics.Sample) {
				m.mu.Lock()
				m.timeline.AddServer(at, metrics.ServerSample{Running: s.Running, Waiting: s.Waiting, KVCache: s.KVCache})
				m.lastServer = &s
				m.mu.Unlock()
			},
			Warnf: func(format string, a ...any) { m.println("warning: " + fmt.Sprintf(format, a...)) },
		})
	}
	m.started = true
	safe.Go(m.loop)
}

// loop cuts and closes windows and live intervals at their absolute
// boundaries, samples the requests in flight and redraws the bar, until
// stop.
func (m *monitor) loop() {
	defer close(m.stopped)
	nextSample := time.Duration(0)
	t := time.NewTimer(time.Until(m.start))
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C:
		}
		now := time.Since(m.start)
		m.runDue(now)
		m.advance(now)
		if now >= nextSample {
			v := m.inFlightNow()
			for _, s := range m.streams() {
				s.cur.flight.add(v)
			}
			m.drawBar(now)
			for nextSample <= now {
				nextSample += sampleEvery
			}
		}
		due := nextSample
		for _, s := range m.streams() {
			due = min(due, s.due())
		}
		t.Reset(time.Until(m.start.Add(due)))
	}
}

// runDue does, in time order, every cut and close due by now.
func (m *monitor) runDue(now time.Duration) {
	for {
		var next *stream
		for _, s := range m.streams() {
			if s.due() <= now && (next == nil || s.due() < next.due()) {
				next = s
			}
		}
		if next == nil {
			return
		}
		at := next.due()
		m.advance(at)
		if next.prev != nil && next.closeAt == at {
			m.mu.Lock()
			p := next.takePrev()
			m.mu.Unlock()
			next.release(p)
			continue
		}
		m.cutStream(next, at)
	}
}

// cutStream ends s's current period at offset at (its end, or earlier
// when the run ends).
func (m *monitor) cutStream(s *stream, at time.Duration) {
	cpu := m.cpuShare(&s.cpuMark, at-s.cur.start)
	if s == m.win && m.scraper != nil {
		// Not under m.mu: the scraper calls OnSample, which takes m.mu,
		// holding its own lock.
		s.cur.server = m.scraper.Window()
	}
	m.mu.Lock()
	s.cur.end = at
	s.cut(cpu)
	m.mu.Unlock()
}

// advance counts the arrivals scheduled before offset to as offered in the
// current periods.
func (m *monitor) advance(to time.Duration) {
	for {
		if m.pending == nil {
			a, ok := m.next()
			if !ok {
				return
			}
			m.pending = &a
		}
		if m.pending.At >= to {
			return
		}
		for _, s := range m.streams() {
			s.cur.offered++
		}
		m.pending = nil
	}
}

// cpuShare returns the CPU used since *mark as a share of the cores over
// wall, and moves the mark (-1 when not measured).
func (m *monitor) cpuShare(mark *time.Duration, wall time.Duration) float64 {
	if !m.cpuOK || wall <= 0 {
		return -1
	}
	now, _ := processCPU()
	d := now - *mark
	*mark = now
	return d.Seconds() / (wall.Seconds() * float64(m.cores))
}

// stats returns the figures of a closed period.
func (m *monitor) stats(p *period) metrics.WindowStats {
	w := metrics.WindowStats{
		Start: p.start.Seconds(), End: p.end.Seconds(), Offered: p.offered,
		InFlightMean: p.flight.mean(), InFlightMax: p.flight.max, ClientCPU: p.cpu,
	}
	p.acc.Fill(&w, m.slo.Set())
	return w
}

// closeWindow records a closed window.
func (m *monitor) closeWindow(p *period) {
	w := m.stats(p)
	w.Index = len(m.windows)
	w.Server = p.server
	m.check.Check(&w)
	m.windows = append(m.windows, w)
}

// closeLive prints the line of a closed live interval.
func (m *monitor) closeLive(p *period) {
	w := m.stats(p)
	m.check.Check(&w)
	if m.prom != nil {
		m.prom.SetSaturated(w.Saturated)
	}
	if w.Saturated {
		m.liveSatN++
		if len(m.liveSat) < metrics.MaxSaturatedIntervals {
			m.liveSat = append(m.liveSat, metrics.SaturatedInterval{Start: w.Start, End: w.End, Reasons: w.Reasons})
		}
	}
	m.mu.Lock()
	srv := m.lastServer
	m.lastServer = nil
	m.mu.Unlock()
	line := liveLine(&w, m.inFlightNow(), srv, m.o.Observe.ReportInterval.Seconds())
	switch {
	case !m.o.Quiet:
		m.println(line)
	case w.Saturated:
		m.println("warning: " + line)
	}
}

// println prints a line on the error stream, above the progress bar.
func (m *monitor) println(s string) {
	m.outMu.Lock()
	defer m.outMu.Unlock()
	if m.barShown {
		fmt.Fprint(m.stdio.Err, "\r\033[K")
		m.barShown = false
	}
	fmt.Fprintln(m.stdio.Err, s)
}

// drawBar redraws the progress bar (terminal only).
func (m *monitor) drawBar(now time.Duration) {
	if !m.bar {
		return
	}
	line := barLine(m.done.Load(), m.total, m.inFlightNow(), now, m.span)
	m.outMu.Lock()
	fmt.Fprint(m.stdio.Err, "\r\033[K"+line)
	m.barShown = true
	m.outMu.Unlock()
}

// stop ends watching once every result is collected, at offset end of the
// run: the last (partial) window and live interval are closed and the
// server's metrics are taken a last time.
func (m *monitor) stop(end time.Duration) {
	if !m.started {
		return
	}
	close(m.quit)
	<-m.stopped
	m.started = false
	if m.scraper != nil {
		res := m.scraper.Stop()
		m.server = &res
	}
	m.runDue(end)
	m.advance(end)
	for _, s := range m.streams() {
		if s.prev != nil {
			s.release(s.takePrev())
		}
		if end > s.cur.start || s.cur.acc.Completed+s.cur.acc.Failed > 0 || (s == m.win && len(m.windows) == 0) {
			m.cutStream(s, max(end, s.cur.start))
			s.release(s.takePrev())
		}
		// Every result is in: nothing ended after the run did.
	}
	if m.bar {
		m.drawBar(end)
		m.outMu.Lock()
		fmt.Fprintln(m.stdio.Err)
		m.barShown = false
		m.outMu.Unlock()
	}
	m.stopPull()
}

// close releases what the monitor holds (the metrics endpoint, the
// scraper); safe to call more than once and after stop.
func (m *monitor) close() {
	if m.started {
		close(m.quit)
		<-m.stopped
		m.started = false
		m.stopPull()
	}
	m.closeOnce.Do(func() {
		if m.scraper != nil && m.server == nil {
			res := m.scraper.Stop()
			m.server = &res
		}
		if m.promSrv != nil {
			if err := m.promSrv.Close(); err != nil {
				m.log.Warnf("metrics endpoint: %v", err)
			}
		}
	})
}

// saturated returns the windows where the client fell behind.
func (m *monitor) saturated() []metrics.WindowStats {
	var out []metrics.WindowStats
	for _, w := range m.windows {
		if w.Saturated {
			out = append(out, w)
		}
	}
	return out
}

// annotate adds the monitor's figures to the summary (a workload
// annotator: it runs once every result is collected).
func (m *monitor) annotate(sum *metrics.Summary, elapsed time.Duration) error {
	var errs []error
	set := func(k string, v any) { errs = append(errs, sum.SetExtra(k, v)) }
	set(metrics.KeyWindowSeconds, m.o.Observe.Window.Seconds())
	set(metrics.KeyWindows, m.windows)
	sat := m.saturated()
	set(metrics.KeyClientSaturated, len(sat) > 0 || m.liveSatN > 0)
	if len(sat) > 0 {
		idx := make([]int, len(sat))
		for i, w := range sat {
			idx[i] = w.Index
		}
		set(metrics.KeySaturatedWindows, idx)
	}
	if len(sat) > 0 || m.liveSatN > 0 {
		set(metrics.KeySaturationReason, m.saturationReason(sat))
	}
	if m.liveSatN > 0 {
		set(metrics.KeySaturatedIntervals, m.liveSat)
	}
	if cpu, ok := processCPU(); ok && elapsed > 0 {
		set(metrics.KeyClientCPU, cpu.Seconds()/(elapsed.Seconds()*float64(m.cores)))
	}
	if m.slo.Set() {
		errs = append(errs, m.good.Annotate(sum, elapsed))
	}
	set(metrics.KeyCDFs, m.col.CDFs())
	set(metrics.KeyLengths, metrics.LengthHistograms(m.lengths.In, m.lengths.Out))
	if m.server != nil {
		set(metrics.KeyServerMetrics, m.server)
	}
	return errors.Join(errs...)
}

// saturationReason says in one line how the client fell behind: in the
// windows sat and in the live intervals the live output flagged.
func (m *monitor) saturationReason(sat []metrics.WindowStats) string {
	var parts []string
	for i, w := range sat {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(sat)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("window %d (%s–%s): %s", w.Index, clock(w.Start), clock(w.End), strings.Join(w.Reasons, ", ")))
	}
	if extra := m.liveOutside(sat); len(extra) > 0 {
		var live []string
		for i, v := range extra {
			if i == 3 {
				live = append(live, fmt.Sprintf("and %d more", len(extra)-3))
				break
			}
			live = append(live, fmt.Sprintf("%s–%s: %s", clock(v.Start), clock(v.End), strings.Join(v.Reasons, ", ")))
		}
		parts = append(parts, fmt.Sprintf("live intervals %s", strings.Join(live, "; ")))
	}
	return strings.Join(parts, "; ")
}

// liveOutside returns the flagged live intervals that are not one of the
// flagged windows sat (a run shorter than both periods has one of each).
func (m *monitor) liveOutside(sat []metrics.WindowStats) []metrics.SaturatedInterval {
	var out []metrics.SaturatedInterval
	for _, v := range m.liveSat {
		if !slices.ContainsFunc(sat, func(w metrics.WindowStats) bool { return w.Start == v.Start && w.End == v.End }) {
			out = append(out, v)
		}
	}
	return out
}

// finish runs after the summary is written: it prints the goodput lines
// and the self-check's warning after the table, writes the HTML report and
// releases the monitor.
func (m *monitor) finish(sum *metrics.Summary) error {
	defer m.close()
	if m.slo.Set() {
		writeGoodput(m.stdio.Out, sum)
	}
	if sat := m.saturated(); len(sat) > 0 || m.liveSatN > 0 {
		where := fmt.Sprintf("%d of %d windows", len(sat), len(m.windows))
		if n := len(m.liveOutside(sat)); n > 0 {
			where += fmt.Sprintf(" and %d live intervals", n)
		}
		fmt.Fprintf(m.stdio.Err, "warning: the client fell behind its schedule in %s (%s): latencies there include the client's delay, not only the server's; see client_saturated in the summary\n",
			where, m.saturationReason(sat))
	}
	if path := m.o.Observe.ReportHTML; path != "" {
		m.mu.Lock()
		m.timeline.Reduce(seriesPoints)
		pts := m.timeline.Points()
		width := m.timeline.Width()
		m.mu.Unlock()
		d := &report.Data{Summary: sum, Series: pts, SeriesNote: fmt.Sprintf("bins of %v", width), Source: "live run"}
		if err := report.WriteHTMLFile(path, d); err != nil {
			return fmt.Errorf("--report-html %s: %w", path, err)
		}
		m.log.Infof("report: %s", path)
	}
	return nil
}
