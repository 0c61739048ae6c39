package servermetrics

import (
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// exposition is a /metrics text of testdata: vllm_v1.prom is what a vLLM
// V1 server's looks like (two engines, shortened), vllm_v0.prom uses the
// KV-cache gauge's former name.
func exposition(t testing.TB, name string) string {
	t.Helper()
	return string(testenv.ReadFile(t, filepath.Join("testdata", name)))
}

func TestParse(t *testing.T) {
	v1Exposition, v0Exposition := exposition(t, "vllm_v1.prom"), exposition(t, "vllm_v0.prom")
	tests := []struct {
		name                        string
		text                        string
		running, waiting, kv, preem float64 // NaN: absent
	}{
		{"V1 names, two engines", v1Exposition, 5, 1, 0.375, 8},
		{"V0 KV-cache name", v0Exposition, 0, 0, 0.125, math.NaN()},
		{"both KV-cache names: the newer wins", v0Exposition + "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc 0.75\n", 0, 0, 0.75, math.NaN()},
		{"no vLLM metric", "# TYPE other gauge\nother 1\n", math.NaN(), math.NaN(), math.NaN(), math.NaN()},
	}
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !same(s.Running, tt.running) || !same(s.Waiting, tt.waiting) || !same(s.KVCache, tt.kv) || !same(s.Preemptions, tt.preem) {
				t.Errorf("got %+v, want running %v waiting %v kv %v preemptions %v", s, tt.running, tt.waiting, tt.kv, tt.preem)
			}
		})
	}
	if _, err := Parse(strings.NewReader("vllm:num_requests_running{ 1\n")); err == nil {
		t.Error("a malformed exposition must be an error")
	}
}

// TestTotalsTimeWeighted: each sample's values hold until the next sample,
// so means and the idle fraction are weighted by time, not by sample.
func TestTotalsTimeWeighted(t *testing.T) {
	var tot totals
	at := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	nan := math.NaN()
	// running 0 for 3 s, 4 for 1 s, 0 for 6 s; counter 2 → 5, then a
	// restart (back to 1): 3 + 1 preemptions.
	tot.add(at(0), Sample{Running: 0, Waiting: 0, KVCache: 0, Preemptions: 2})
	tot.add(at(3), Sample{Running: 4, Waiting: 2, KVCache: 0.5, Preemptions: 5})
	tot.add(at(4), Sample{Running: 0, Waiting: 0, KVCache: 0, Preemptions: 1})
	tot.add(at(10), Sample{Running: 0, Waiting: nan, KVCache: nan, Preemptions: nan})
	st := tot.Stats()
	if st.Samples != 4 || st.Observed != 10 {
		t.Fatalf("samples %d observed %v s", st.Samples, st.Observed)
	}
	if st.IdleFraction != 0.9 || st.RunningMean != 0.4 || st.WaitingMean != 0.2 || st.KVCacheMean != 0.05 {
		t.Errorf("idle %v running %v waiting %v kv %v, want 0.9 0.4 0.2 0.05", st.IdleFraction, st.RunningMean, st.WaitingMean, st.KVCacheMean)
	}
	if st.Preemptions != 4 || st.RunningMax != 4 || st.KVCacheMax != 0.5 {
		t.Errorf("preemptions %v running max %v kv max %v", st.Preemptions, st.RunningMax, st.KVCacheMax)
	}
}

// fakeServer serves a running gauge the test sets.
type fakeServer struct {
	running atomic.Int64
	fail    atomic.Bool
	hits    atomic.Int64
	// delay is how long each scrape takes.
	delay time.Duration
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	time.Sleep(f.delay)
	if f.fail.Load() {
		http.Error(w, "nope", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running %d\n", f.running.Load())
}

// offsets records the sample offsets OnSample reports.
type offsets struct {
	mu sync.Mutex
	at []time.Duration
}

func (o *offsets) add(at time.Duration, _ Sample) {
	o.mu.Lock()
	o.at = append(o.at, at)
	o.mu.Unlock()
}

func (o *offsets) get() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.at)
}

func seconds(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

// TestScraperWindowsAndStop: on a fake clock, a 1 s interval gives a
// sample at every whole second from the start, windows hold the samples
// and time-weighted figures of their own period — a value held across a
// cut split there, and counted in the next window's maxima — and Stop
// adds a last sample at the end of the run.
func TestScraperWindowsAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{}
		var seen offsets
		s := Start(Config{URL: "http://vllm/metrics", Interval: time.Second, Epoch: time.Now(),
			Client: testenv.InProcessClient(f), OnSample: seen.add})
		time.Sleep(4500 * time.Millisecond)
		w := s.Window(4500 * time.Millisecond)
		if w == nil || w.Samples != 5 || w.Observed != 4.5 || w.IdleFraction != 1 || w.RunningMax != 0 {
			t.Fatalf("first window %+v: want 5 samples over its 4.5 s, all idle", w)
		}
		f.running.Store(3)
		time.Sleep(5 * time.Second)
		// Samples at 5…9 s; the one at 4 s (running 0) holds from the
		// cut at 4.5 s until 5 s, the one at 9 s (3) to the cut at 9.5 s.
		w = s.Window(9500 * time.Millisecond)
		if w == nil || w.Samples != 5 || w.Observed != 5 || w.RunningMax != 3 || w.RunningMean != 13.5/5 || w.IdleFraction != 0.1 {
			t.Fatalf("second window %+v: want 5 samples over its 5 s, running max 3, mean 2.7, idle 0.1", w)
		}
		if w := s.Window(9500 * time.Millisecond); w != nil {
			t.Errorf("a window without a sample: %+v, want nil", w)
		}
		res := s.Stop()
		if !res.Available || res.Failures != 0 || res.ServerStats == nil || res.Samples != 11 || res.Observed != 9.5 {
			t.Fatalf("result %+v: want 11 samples over 9.5 s", res)
		}
		if want := seconds(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9.5); !slices.Equal(seen.get(), want) {
			t.Errorf("sample offsets %v, want %v", seen.get(), want)
		}
		if n := f.hits.Load(); n != 11 {
			t.Errorf("%d scrapes, want 11", n)
		}
	})
}

// TestScraperKeepsAbsoluteDueTimes: a slow scrape does not shift the ones
// after it, and scrapes slower than the interval run back to back rather
// than in a burst that catches up.
func TestScraperKeepsAbsoluteDueTimes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		want  []time.Duration // sample offsets before 4.6 s
	}{
		{"scrape shorter than the interval", 300 * time.Millisecond, seconds(0.3, 1.3, 2.3, 3.3, 4.3)},
		{"scrape longer than the interval", 1500 * time.Millisecond, seconds(1.5, 3, 4.5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var seen offsets
				s := Start(Config{URL: "http://vllm/metrics", Interval: time.Second, Epoch: time.Now(),
					Client: testenv.InProcessClient(&fakeServer{delay: tc.delay}), OnSample: seen.add})
				time.Sleep(4600 * time.Millisecond)
				got := seen.get()
				s.Stop()
				if !slices.Equal(got, tc.want) {
					t.Errorf("sample offsets %v, want %v", got, tc.want)
				}
			})
		})
	}
}

// TestScraperInjectedClock: sample offsets are read from Config.Now, not
// from the wall clock.
func TestScraperInjectedClock(t *testing.T) {
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	reads := 0
	now := func() time.Time { // 250 ms later at every reading
		mu.Lock()
		defer mu.Unlock()
		reads++
		return epoch.Add(time.Duration(reads) * 250 * time.Millisecond)
	}
	var seen offsets
	first := make(chan struct{}, 2)
	s := Start(Config{URL: "http://vllm/metrics", Interval: time.Hour, Epoch: epoch, Now: now,
		Client:   testenv.InProcessClient(&fakeServer{}),
		OnSample: func(at time.Duration, smp Sample) { seen.add(at, smp); first <- struct{}{} }})
	<-first // the scrape at the start; Stop takes the second
	res := s.Stop()
	got := seen.get()
	if len(got) != 2 || got[0] <= 0 || got[0]%(250*time.Millisecond) != 0 || got[1] <= got[0] || got[1]%(250*time.Millisecond) != 0 {
		t.Fatalf("sample offsets %v: want two increasing multiples of 250 ms (the injected clock's steps)", got)
	}
	if res.Observed != (got[1] - got[0]).Seconds() {
		t.Errorf("observed %v s, want %v s between the samples", res.Observed, (got[1] - got[0]).Seconds())
	}
}

// A missing or failing endpoint is a warning, once, never an error; an
// endpoint that answers again after failing says so, once.
func TestScraperFailingEndpointWarnsOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.Handler
	}{
		{"404", http.NotFoundHandler()},
		{"not vLLM", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "# TYPE x gauge\nx 1") })},
		{"not Prometheus", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "<html>hello</html>") })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var warnings atomic.Int64
				s := Start(Config{URL: "http://vllm/metrics", Interval: time.Second, Epoch: time.Now(),
					Client: testenv.InProcessClient(tc.handler), Warnf: func(string, ...any) { warnings.Add(1) }})
				time.Sleep(4500 * time.Millisecond)
				res := s.Stop()
				if res.Available || res.LastError == "" || res.ServerStats != nil || res.Failures != 6 {
					t.Errorf("result %+v: want unavailable with the error, 6 failed scrapes", res)
				}
				if n := warnings.Load(); n != 1 {
					t.Errorf("%d warnings, want 1", n)
				}
			})
		})
	}
	t.Run("recovery", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := &fakeServer{}
			var mu sync.Mutex
			var warnings []string
			s := Start(Config{URL: "http://vllm/metrics", Interval: time.Second, Epoch: time.Now(),
				Client: testenv.InProcessClient(f),
				Warnf: func(format string, a ...any) {
					mu.Lock()
					warnings = append(warnings, fmt.Sprintf(format, a...))
					mu.Unlock()
				}})
			time.Sleep(500 * time.Millisecond) // a sample at 0 s
			f.fail.Store(true)
			time.Sleep(3 * time.Second) // failures at 1, 2, 3 s
			f.fail.Store(false)
			time.Sleep(2 * time.Second) // samples at 4, 5 s
			res := s.Stop()
			if !res.Available || res.Failures != 3 || res.Samples != 4 || res.LastError != "" {
				t.Errorf("result %+v: want 4 samples, 3 failures, no last error", res)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(warnings) != 2 || !strings.Contains(warnings[0], "500") || !strings.Contains(warnings[1], "answers again") {
				t.Errorf("warnings %q: want the first failure, then the recovery", warnings)
			}
		})
	})
	// Nothing listening.
	s := Start(Config{URL: "http://127.0.0.1:1/metrics", Interval: time.Hour, Epoch: time.Now()})
	if res := s.Stop(); res.Available || res.Failures == 0 {
		t.Errorf("refused: %+v", res)
	}
}

func (s *Scraper) failuresNow() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.health.Failures
}

// TestWindowHeldValue: scrapes every 2 s and windows cut between them —
// a window covers its own time only, and the value held into it counts in
// its maximum as in its mean (mean never above max).
func TestWindowHeldValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeServer{}
		f.running.Store(5)
		s := Start(Config{URL: "http://vllm/metrics", Interval: 2 * time.Second, Epoch: time.Now(),
			Client: testenv.InProcessClient(f)})
		time.Sleep(time.Second)
		w := s.Window(time.Second)
		if w == nil || w.Observed != 1 || w.RunningMean != 5 || w.RunningMax != 5 {
			t.Fatalf("window 0–1 s %+v: want 1 s at 5", w)
		}
		f.running.Store(1)
		time.Sleep(2 * time.Second)
		// 5 held from 1 s to the sample at 2 s, then 1 to the cut at 3 s.
		w = s.Window(3 * time.Second)
		if w == nil || w.Observed != 2 || w.RunningMean != 3 || w.RunningMax != 5 {
			t.Fatalf("window 1–3 s %+v: want 2 s observed, mean 3, max 5 (held in)", w)
		}
		s.Stop()
	})
}
