package report

import (
	"math"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
)

// TestMergeGivesRecordsTheServer: a report of a run's records with its
// summary draws the server's gauges from the summary's windows: each of
// the records' bins gets the figures of the window its middle falls in;
// bins outside every window, or series that have them already, are left.
func TestMergeGivesRecordsTheServer(t *testing.T) {
	nan := math.NaN()
	bin := func(a, b float64) metrics.SeriesPoint {
		return metrics.SeriesPoint{Start: a, End: b, ServerRunning: nan, ServerWaiting: nan, KVCache: nan, ServerIdle: nan}
	}
	sv := func(run, kv float64) *metrics.ServerStats {
		return &metrics.ServerStats{Samples: 2, RunningMean: run, KVCacheMean: kv, IdleFraction: 0.25}
	}
	ws := []metrics.WindowStats{{Start: 0, End: 10, Server: sv(3, 0.1)}, {Start: 10, End: 20, Server: sv(5, 0.2)}}
	pts := []metrics.SeriesPoint{bin(0, 5), bin(5, 10), bin(10, 15), bin(25, 30)}
	s := metrics.Summary{Windows: ws}
	d := Merge(&Data{Summary: &s, Source: "summary.json"}, &Data{Summary: &metrics.Summary{}, Series: pts, Source: "r.jsonl"})
	got := d.Series
	if got[0].ServerRunning != 3 || got[1].KVCache != 0.1 || got[2].ServerRunning != 5 || got[2].ServerIdle != 0.25 || !math.IsNaN(got[3].ServerRunning) {
		t.Fatalf("series %+v", got)
	}
	if !math.IsNaN(pts[0].ServerRunning) {
		t.Errorf("the records' own series was changed")
	}
	live := []metrics.SeriesPoint{bin(0, 5)}
	live[0].ServerRunning = 7
	if out := serverFromWindows(live, ws); out[0].ServerRunning != 7 || !math.IsNaN(out[0].KVCache) {
		t.Errorf("a series with server figures of its own: %+v", out)
	}
}
