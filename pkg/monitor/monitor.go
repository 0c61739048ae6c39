// Package monitor watches a run while it runs: the window accumulators
// (windows.go), the live display — live lines and the progress bar
// (live.go) — and the Prometheus and server-metrics wiring, and adds what
// it saw to the summary.
package monitor

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/note"
	"github.com/fineserve-gen/fineserve-gen/internal/safe"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/gputelemetry"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/otlpexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/promexport"
	"github.com/fineserve-gen/fineserve-gen/pkg/servermetrics"
)

// Logger receives the monitor's notes and warnings (Infof, Warnf): the
// one logger interface the run's parts share.
type Logger = note.Logger

// Config is what a monitor watches and how.
type Config struct {
	// Scheduled is the number of arrivals to send, Span the offset of the
	// last one.
	Scheduled int64
	Span      time.Duration
	// Window is the length of the summary's windows; ReportInterval the
	// time between live lines (0: none).
	Window, ReportInterval time.Duration
	// Goodput holds the SLO targets (metrics.NoSLO: none).
	Goodput metrics.SLO
	// MaxConcurrency and AllAtOnce (every request due at the start) tune
	// the client's self-check (metrics.SaturationCheck).
	MaxConcurrency int
	AllAtOnce      bool
	// MetricsAddr is where the generator serves its Prometheus metrics
	// ("": nowhere).
	MetricsAddr string
	// ServerMetricsURL is the target's metrics, polled every
	// ServerMetricsInterval ("": not polled).
	ServerMetricsURL      string
	ServerMetricsInterval time.Duration
	// EndpointMetricsURLs are the metrics of each of a run's several
	// endpoints, polled as ServerMetricsURL is (nil: one endpoint, or not
	// polled); an entry equal to ServerMetricsURL shares its poller.
	EndpointMetricsURLs []string
	// OTLP exports the run to an OpenTelemetry collector (Endpoint "":
	// none); the monitor fills in the live counters.
	OTLP otlpexport.Config
	// GPUMetricsURLs are GPU telemetry exporters (DCGM), polled every
	// ServerMetricsInterval (nil: none).
	GPUMetricsURLs []string
	// NoTokens: the backend's responses carry no tokens to time (images,
	// pooling): an interval without a completed request shows "E2E -",
	// not "TTFT - | ITL -".
	NoTokens bool
	// NoStates: the run writes no summary file, so the summary gets no
	// merge_state — neither the windows' distributions (WindowStates:
	// none) nor the parts' (the runner assembles it without).
	NoStates bool
	// Quiet prints only the live lines that flag the client; Bar draws the
	// progress bar (a terminal).
	Quiet, Bar bool
	// Out takes the goodput lines after the table; Err the live lines, the
	// bar and warnings. Log takes notes.
	Out, Err io.Writer
	Log      Logger
	// CPU reads the CPU time the process has used, and whether it can be
	// measured (nil: the process's own, from the operating system).
	CPU func() (time.Duration, bool)
	// Now reads the clock the monitor cuts windows and live intervals by
	// and draws the progress bar with (default time.Now). The waits between
	// its looks are the runtime's timers: a test fakes both at once with
	// testing/synctest.
	Now func() time.Time
}

// sampleEvery is how often the monitor samples the requests in flight and
// redraws the progress bar.
const sampleEvery = 250 * time.Millisecond

// monitor watches a run while it runs: it sees every result (observe, on
// the collecting goroutine) and every arrival the dispatcher offers (offer,
// on the dispatcher's) and adds them to the current window and live
// interval (see stream); on a goroutine of its own it cuts windows and
// intervals at their absolute boundaries, prints live lines and the
// progress bar, and samples requests in flight and CPU time. Closed windows
// are kept as a few numbers each, so memory does not grow with the number
// of requests. After the run it adds windows, the client self-check and
// server metrics to the summary's facts (metrics.Assemble adds the parts').
type Monitor struct {
	c     Config
	start time.Time
	total int64
	span  time.Duration
	check metrics.SaturationCheck
	slo   metrics.SLO
	cores int

	prom    *promexport.Exporter
	promSrv *promexport.Server
	scraper *servermetrics.Scraper
	server  *servermetrics.Result
	// endpoints poll the several endpoints' metrics (nil entry: the
	// endpoint is ServerMetricsURL's, scraper); endpointRes are their
	// results once stopped.
	endpoints   []*servermetrics.Scraper
	endpointRes []*servermetrics.Result
	// gpu polls the GPU telemetry; gpuRes is its result once stopped.
	otlp    *otlpexport.Exporter
	otlpRes *metrics.OTLPSummary
	gpu     *gputelemetry.Scraper
	gpuRes  *metrics.GPUSummary

	// Written by observe (and the scraper), read by the monitor: mu.
	mu         sync.Mutex
	win, live  *stream      // live: nil without live lines
	pace       metrics.Pace // the arrivals offered, and when (Offer)
	timeline   *metrics.Timeline
	lastServer *servermetrics.Sample

	// The monitor goroutine's own state (then stop's).
	windows []metrics.WindowStats
	// states are the closed windows' distributions, kept for the merge
	// state (WindowStates); stateErr is the first failure to take one.
	states   []metrics.WindowState
	stateErr error
	// liveSat are the live intervals flagged CLIENT SATURATED (at most
	// metrics.MaxSaturatedIntervals; liveSatN counts them all).
	liveSat  []metrics.SaturatedInterval
	liveSatN int
	cpuOK    bool
	// behind reads how far behind its schedule the dispatcher is (nil:
	// not measured); backlog holds its recent looks while arrivals were
	// due (see lookBehind).
	behind     func(time.Time) time.Duration
	backlog    []metrics.BacklogLook
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

// New prepares the monitor of a run, and starts the generator's metrics
// endpoint when asked for. The run gives it every arrival offered (Offer)
// and every finished request's Sample (its Sinks), and asks it for its
// part of the summary (Annotate).
func New(c Config) (*Monitor, error) {
	if c.CPU == nil {
		c.CPU = processCPU
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	m := &Monitor{
		c: c, total: c.Scheduled, span: c.Span,
		slo: c.Goodput, cores: runtime.GOMAXPROCS(0),
		timeline: metrics.NewTimeline(timelineWidth(c.Span), 256),
		quit:     make(chan struct{}), stopped: make(chan struct{}),
	}
	m.win = newStream(c.Window, m.closeWindow)
	if c.ReportInterval > 0 {
		m.live = newStream(c.ReportInterval, m.closeLive)
	}
	m.check = metrics.SaturationCheck{
		MaxConcurrency: c.MaxConcurrency, Cores: m.cores, AllAtOnce: c.AllAtOnce,
	}
	if c.MetricsAddr != "" {
		m.prom = promexport.New(promexport.Config{
			Scheduled:  c.Scheduled,
			InFlight:   m.inFlightNow,
			Dispatched: m.dispatchedNow,
		})
		srv, err := promexport.Serve(c.MetricsAddr, m.prom)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		m.promSrv = srv
		c.Log.Infof("metrics: serving %s", srv.URL)
	}
	if err := m.newOTLP(); err != nil {
		m.Close()
		return nil, err
	}
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

func (m *Monitor) inFlightNow() int64 {
	if f := m.inFlightFn.Load(); f != nil {
		return (*f)()
	}
	return 0
}

// streams are the monitor's streams in a fixed order.
func (m *Monitor) streams() []*stream {
	if m.live == nil {
		return []*stream{m.win}
	}
	return []*stream{m.win, m.live}
}

// Sinks are the monitor's consumers of samples, for the run's fan-out (on
// the collecting goroutine): the windows, live intervals and timeline,
// which the monitor goroutine reads too (under m.mu), and the Prometheus
// exporter.
func (m *Monitor) Sinks() []metrics.Sink {
	watched := metrics.Fanout{m.win}
	if m.live != nil {
		watched = append(watched, m.live)
	}
	watched = append(watched, m.timeline)
	out := []metrics.Sink{locked{&m.mu, watched}}
	if m.prom != nil {
		out = append(out, m.prom)
	}
	if m.otlp != nil {
		out = append(out, m.otlp)
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

// Offer counts an arrival the dispatcher offered in the periods its due
// time falls in (on the dispatcher's goroutine).
func (m *Monitor) Offer(a *arrival.Arrival) {
	now := m.c.Now().Sub(m.start)
	m.mu.Lock()
	m.pace.Offer(a.At, now)
	m.win.offer(a.At)
	if m.live != nil {
		m.live.offer(a.At)
	}
	m.mu.Unlock()
}

// Begin starts watching a run whose offsets count from start: the
// progress bar, live lines, windows and the server's metrics. inFlight
// and dispatched read the dispatcher, behind how far behind its schedule it is at an instant
// (arrival.Dispatcher.Behind; nil: not measured), done counts the results
// collected.
func (m *Monitor) Begin(start time.Time, inFlight, dispatched func() int64, behind func(time.Time) time.Duration, done *atomic.Int64) {
	m.start, m.behind = start, behind
	m.inFlightFn.Store(&inFlight)
	m.dispatched.Store(&dispatched)
	m.done = done
	m.bar = m.c.Bar
	cpu, ok := m.c.CPU()
	m.cpuOK = ok
	for _, s := range m.streams() {
		s.cpuMark = cpu
	}
	if m.c.ServerMetricsURL != "" {
		m.scraper = servermetrics.Start(servermetrics.Config{
			URL: m.c.ServerMetricsURL, Interval: m.c.ServerMetricsInterval, Epoch: m.start,
			OnSample: func(at time.Duration, s servermetrics.Sample) {
				m.mu.Lock()
				m.timeline.AddServer(at, metrics.ServerSample{Running: s.Running, Waiting: s.Waiting, KVCache: s.KVCache})
				m.lastServer = &s
				m.mu.Unlock()
			},
			Warnf: func(format string, a ...any) { m.println("warning: " + fmt.Sprintf(format, a...)) },
		})
	}
	m.startEndpoints()
	m.startGPU()
	if m.otlp != nil {
		m.otlp.Begin(start)
	}
	m.started = true
	safe.Go(m.loop)
}

// loop cuts and closes windows and live intervals at their absolute
// boundaries, samples the requests in flight and redraws the bar, until
// stop.
func (m *Monitor) loop() {
	defer close(m.stopped)
	nextSample := time.Duration(0)
	t := time.NewTimer(m.start.Sub(m.c.Now()))
	defer t.Stop()
	for {
		select {
		case <-m.quit:
			return
		case <-t.C:
		}
		now := m.c.Now().Sub(m.start)
		m.runDue(now)
		if now >= nextSample {
			m.lookBehind()
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
		t.Reset(m.start.Add(due).Sub(m.c.Now()))
	}
}

// runDue does, in time order, every cut and close due by now.
func (m *Monitor) runDue(now time.Duration) {
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
func (m *Monitor) cutStream(s *stream, at time.Duration) {
	cpu := m.cpuShare(&s.cpuMark, at-s.cur.start)
	if at-s.cur.start < min(minCPUSpan, s.every) {
		// The run's last, partial period: a CPU share over a few
		// milliseconds (the end of the run's own work in it, counted in
		// the kernel's ticks) is noise, not a figure to judge.
		cpu = -1
	}
	m.lookBehind()
	behind := metrics.Backlog(m.backlog, s.cur.start)
	if s == m.win && m.scraper != nil {
		// Not under m.mu: the scraper calls OnSample, which takes m.mu,
		// holding its own lock.
		s.cur.server = m.scraper.Window(at)
	}
	if s == m.win && m.gpu != nil {
		s.cur.gpu = m.gpu.Window(at)
	}
	m.mu.Lock()
	s.cur.end = at
	s.cut(cpu, behind)
	m.mu.Unlock()
}

// lookBehind looks at how far behind its schedule the dispatcher is now,
// while arrivals are still due (not all handed out), and keeps the look
// with those of the last metrics.BacklogSpan: a period's backlog is judged
// from them (metrics.Backlog). A backlog is what stays over a whole span; a
// moment's stall — the machine busy, a collection — comes and goes between
// two looks. Once every arrival is handed out the looks are kept as they
// were, so that a period in which the schedule ran out is judged by its
// backlog while arrivals were due, not by the 0 that follows.
func (m *Monitor) lookBehind() {
	if m.behind == nil || (m.total > 0 && m.dispatchedNow() >= m.total) {
		return
	}
	now := m.c.Now()
	at := now.Sub(m.start)
	keep := m.backlog[:0]
	for _, l := range m.backlog {
		if l.At >= at-metrics.BacklogSpan {
			keep = append(keep, l)
		}
	}
	m.backlog = append(keep, metrics.BacklogLook{At: at, Behind: m.behind(now)})
}

func (m *Monitor) dispatchedNow() int64 {
	if d := m.dispatched.Load(); d != nil {
		return (*d)()
	}
	return 0
}

// minCPUSpan is the shortest period whose CPU share is kept (a shorter one
// is a run's last, partial window or interval; full periods shorter than
// this, of a --window-seconds under it, are kept).
const minCPUSpan = 250 * time.Millisecond

// cpuShare returns the CPU used since *mark as a share of the cores over
// wall, and moves the mark (-1 when not measured).
func (m *Monitor) cpuShare(mark *time.Duration, wall time.Duration) float64 {
	if !m.cpuOK || wall <= 0 {
		return -1
	}
	now, _ := m.c.CPU()
	d := now - *mark
	*mark = now
	return d.Seconds() / (wall.Seconds() * float64(m.cores))
}

// Stop ends watching once every result is collected, at offset end of the
// run: the last (partial) window and live interval are closed and the
// server's metrics are taken a last time.
func (m *Monitor) Stop(end time.Duration) {
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
	m.stopEndpoints()
	m.stopGPU()
	m.runDue(end)
	m.closeOTLP() // every result is in: the last spans and metrics go now
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
		fmt.Fprintln(m.c.Err)
		m.barShown = false
		m.outMu.Unlock()
	}
}

// Close releases what the monitor holds (the metrics endpoint, the
// scraper); safe to call more than once and after stop.
func (m *Monitor) Close() {
	if m.started {
		close(m.quit)
		<-m.stopped
		m.started = false
	}
	m.closeOnce.Do(func() {
		if m.scraper != nil && m.server == nil {
			res := m.scraper.Stop()
			m.server = &res
		}
		m.stopEndpoints()
		m.stopGPU()
		m.closeOTLP()
		if m.promSrv != nil {
			if err := m.promSrv.Close(); err != nil {
				m.c.Log.Warnf("metrics endpoint: %v", err)
			}
		}
	})
}

// Annotate adds the monitor's figures to the summary once every result is
// collected.
func (m *Monitor) Annotate(sum *metrics.Summary, elapsed time.Duration) error {
	sum.WindowSeconds, sum.Windows = m.c.Window.Seconds(), m.windows
	sat := m.saturated()
	sum.Saturation = &metrics.Saturation{Saturated: len(sat) > 0 || m.liveSatN > 0, SendRate: m.sendRate()}
	for _, w := range sat {
		sum.Saturation.Windows = append(sum.Saturation.Windows, w.Index)
	}
	if len(sat) > 0 || m.liveSatN > 0 || sum.Saturation.SendRate != nil {
		sum.Saturation.Saturated = true
		sum.Saturation.Reason = m.saturationReason(sat)
	}
	if m.liveSatN > 0 {
		sum.Saturation.Intervals = m.liveSat
	}
	for _, w := range m.windows {
		if w.MachineBusy {
			sum.Saturation.MachineBusy = true
			sum.Saturation.BusyWindows = append(sum.Saturation.BusyWindows, w.Index)
		}
	}
	sum.Saturation.BusyNote = metrics.MachineBusyNote(m.windows)
	if cpu, ok := m.c.CPU(); ok && elapsed > 0 {
		share := cpu.Seconds() / (elapsed.Seconds() * float64(m.cores))
		sum.ClientCPU = &share
	}
	sum.ServerMetrics = m.server
	sum.GPU, sum.OTLP = m.gpuRes, m.otlpRes
	return nil
}

// saturationReason says in one line how the client fell behind: in the
// windows sat and in the live intervals the live output flagged.
func (m *Monitor) saturationReason(sat []metrics.WindowStats) string {
	var parts []string
	if r := m.sendRate(); r != nil {
		parts = append(parts, r.Reason())
	}
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

// sendRate returns the run's send rate when it fell short of the
// schedule's (nil when it did not, or when every request was due at once:
// then the burst's pace is the client's, by design).
func (m *Monitor) sendRate() *metrics.SendRate {
	if m.c.AllAtOnce {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pace.Short()
}

// liveOutside returns the flagged live intervals that are not one of the
// flagged windows sat (a run shorter than both periods has one of each).
func (m *Monitor) liveOutside(sat []metrics.WindowStats) []metrics.SaturatedInterval {
	var out []metrics.SaturatedInterval
	for _, v := range m.liveSat {
		if !slices.ContainsFunc(sat, func(w metrics.WindowStats) bool { return w.Start == v.Start && w.End == v.End }) {
			out = append(out, v)
		}
	}
	return out
}

// Finish runs after the summary is written: it prints the goodput lines
// and the self-check's warning after the table, writes the HTML report and
// releases the monitor.
func (m *Monitor) Finish(sum *metrics.Summary) error {
	defer m.Close()
	if sat, rate := m.saturated(), m.sendRate(); len(sat) > 0 || m.liveSatN > 0 || rate != nil {
		where := fmt.Sprintf("%d of %d windows", len(sat), len(m.windows))
		if n := len(m.liveOutside(sat)); n > 0 {
			where += fmt.Sprintf(" and %d live intervals", n)
		}
		why := ""
		if rate != nil {
			where = "the whole run, " + where
			why = ". Why: " + rate.Cause(sum.ClientCPU, m.cores)
		}
		fmt.Fprintf(m.c.Err, "warning: the client fell behind its schedule in %s (%s): latencies there include the client's delay, not only the server's; see client_saturated in the summary%s\n",
			where, m.saturationReason(sat), why)
	}
	if c := sum.Saturation; c != nil && c.BusyNote != "" {
		fmt.Fprintf(m.c.Err, "note: %s (%s in the summary)\n", c.BusyNote, metrics.KeyMachineBusy)
	}
	return nil
}

// Series returns the run's time series for its HTML report, after Stop:
// its points, what their bins are, and the server's scrapes.
func (m *Monitor) Series() (pts []metrics.SeriesPoint, note string, scrapes []metrics.ServerScrape) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.timeline.Reduce(seriesPoints)
	return m.timeline.Points(), fmt.Sprintf("bins of %v", m.timeline.Width()), m.timeline.Scrapes()
}

// MetricsAddr is the address the generator's metrics endpoint listens on
// (nil: none).
func (m *Monitor) MetricsAddr() net.Addr {
	if m.promSrv == nil {
		return nil
	}
	return m.promSrv.Addr
}

// WindowStates returns the closed windows' distributions, for the merge
// state. Call it after Stop.
func (m *Monitor) WindowStates() ([]metrics.WindowState, error) {
	return m.states, m.stateErr
}
