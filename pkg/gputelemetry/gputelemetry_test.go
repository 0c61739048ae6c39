package gputelemetry

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// dcgmAnswer is what NVIDIA's dcgm-exporter writes for two GPUs (its
// default counters, shortened), with the figures given.
func dcgmAnswer(util0, util1, power0, power1 float64) string {
	var b strings.Builder
	b.WriteString("# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).\n# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n")
	for g := range 2 {
		fmt.Fprintf(&b, "DCGM_FI_DEV_SM_CLOCK{gpu=\"%d\",UUID=\"GPU-%d\",pci_bus_id=\"00000000:0%d:00.0\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node\"} 1980\n", g, g, g, g)
	}
	b.WriteString("# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
	fmt.Fprintf(&b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-0\",modelName=\"NVIDIA H100 80GB HBM3\"} %g\n", util0)
	fmt.Fprintf(&b, "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",modelName=\"NVIDIA H100 80GB HBM3\"} %g\n", util1)
	b.WriteString("# TYPE DCGM_FI_DEV_FB_USED gauge\n")
	b.WriteString("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-0\"} 70000\nDCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-1\"} 60000\n")
	b.WriteString("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n")
	fmt.Fprintf(&b, "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-0\"} %g\n", power0)
	fmt.Fprintf(&b, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-1\"} %g\n", power1)
	return b.String()
}

func TestParse(t *testing.T) {
	rd, err := Parse(strings.NewReader(dcgmAnswer(80, 40, 500, 300)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rd) != 2 || rd[0].ID != "0" || rd[1].UUID != "GPU-1" || rd[0].Model != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("readings %+v", rd)
	}
	if v := rd[1].Values; v[util] != 40 || v[mem] != 60000 || v[power] != 300 || v[clock] != 1980 {
		t.Errorf("GPU 1: %v", v)
	}
	if _, err := Parse(strings.NewReader("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n")); err == nil {
		t.Error("an answer without DCGM figures: no error")
	}
	// Without power: no power figures, not zeros.
	rd, err = Parse(strings.NewReader("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 10\n"))
	if err != nil || !math.IsNaN(rd[0].Values[power]) {
		t.Errorf("util only: %+v, %v", rd, err)
	}
}

// fakeDCGM serves two GPUs whose figures (utilisation and power of each)
// the test sets.
func fakeDCGM() *testenv.Figures {
	return testenv.NewFigures(4, func(v []float64) string { return dcgmAnswer(v[0], v[1], v[2], v[3]) })
}

// TestScraperEnergy: on a fake clock with scrapes every second, power held
// from one scrape to the next integrates to the energy of each window and
// of the run, utilisation is the GPUs' mean and memory their sum, and
// energy per output token divides by the tokens given.
func TestScraperEnergy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := fakeDCGM()
		f.Set(0, 0, 100, 100) // idle: 200 W together
		s := Start(Config{URLs: []string{"http://node:9400/metrics"}, Interval: time.Second, Epoch: time.Now(),
			Client: testenv.InProcessClient(f)})
		time.Sleep(1500 * time.Millisecond) // scrapes at 0 and 1 s
		f.Set(100, 50, 700, 400)            // busy: 1100 W from the scrape at 2 s
		time.Sleep(time.Second)
		w := s.Window(2 * time.Second)
		// 0–2 s at 200 W: 400 J.
		if w == nil || w.Power == nil || w.Power.EnergyJ != 400 || w.UtilMean != 0 || w.GPUs != 2 || w.MemUsedMean != 130000 {
			t.Fatalf("first window %+v (power %+v): want 400 J, idle, 2 GPUs, 130000 MiB", w, w.Power)
		}
		time.Sleep(2 * time.Second) // scrapes at 3 and 4 s
		w = s.Window(4500 * time.Millisecond)
		// 2–4.5 s at 1100 W: 2750 J; utilisation (100+50)/2.
		if w.Power.EnergyJ != 2750 || w.Power.MeanW != 1100 || w.Power.MaxW != 1100 || w.UtilMean != 75 || w.UtilMax != 75 {
			t.Errorf("second window %+v (power %+v): want 2750 J, 1100 W, 75%%", w, w.Power)
		}
		w.SetOutputTokens(275)
		if w.Power.JoulesPerOutputToken != 10 {
			t.Errorf("joules per token %v, want 10", w.Power.JoulesPerOutputToken)
		}
		res := s.Stop() // a last scrape at 4.5 s
		if !res.Available || res.GPUStats == nil || res.Power == nil || res.Power.EnergyJ != 3150 || len(res.Devices) != 2 {
			t.Fatalf("run %+v: want 3150 J over 2 GPUs", res)
		}
		if d := res.Devices[0]; d.ID != "0" || d.Power.EnergyJ != 100*2+700*2.5 || d.UtilMax != 100 {
			t.Errorf("GPU 0 %+v (power %+v): want 1950 J, util max 100", d, d.Power)
		}
	})
}

// TestScraperFailingExporter: an exporter that does not answer is a
// warning and counted failures, and its URL's credentials are not shown.
func TestScraperFailingExporter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }))
	defer srv.Close()
	var warned []string
	var mu sync.Mutex
	u := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/metrics"
	s := Start(Config{URLs: []string{u}, Interval: 50 * time.Millisecond, Epoch: time.Now(),
		Warnf: func(f string, a ...any) { mu.Lock(); warned = append(warned, fmt.Sprintf(f, a...)); mu.Unlock() }})
	res := s.Stop()
	mu.Lock()
	defer mu.Unlock()
	if res.Available || res.Failures == 0 || len(warned) != 1 {
		t.Fatalf("result %+v, warnings %q: want unavailable, failures counted, one warning", res, warned)
	}
	if strings.Contains(warned[0]+res.LastError+strings.Join(res.URLs, " "), "hunter2") {
		t.Errorf("a credential printed: %q %q %q", warned[0], res.LastError, res.URLs)
	}
}
