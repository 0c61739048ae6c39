package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/client"
	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/report"
)

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func startCollect(t *testing.T, sinks ...metrics.Sink) (results chan *client.Result, abort chan chan<- struct{}, path string, collected chan error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "results.jsonl")
	records, err := report.CreateRecords(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	results = make(chan *client.Result, 4096)
	abort = make(chan chan<- struct{})
	collected = make(chan error, 1)
	var done atomic.Int64
	go func() {
		sinks := append([]metrics.Sink{metrics.NewCollector()}, append(sinks, records)...)
		collected <- collect(results, metrics.NoSLO, sinks, report.RecordWriters{records}, &done, abort, &requestPanics{log: NewLogger(io.Discard, false)})
	}()
	return results, abort, path, collected
}

func finishedResult(i int64) *client.Result {
	r := &client.Result{}
	r.Reset()
	r.Index = i
	return r
}

// TestAbortWritesEveryFinishedRecord: a flush request (the second signal)
// puts every result handed to the collector so far on disk, including
// those still queued, before it is acknowledged.
func TestAbortWritesEveryFinishedRecord(t *testing.T) {
	results, abort, path, collected := startCollect(t)
	const n = 1000
	for i := range int64(n) {
		results <- finishedResult(i)
	}
	reply := make(chan struct{})
	abort <- reply
	<-reply
	if got := countLines(t, path); got != n {
		t.Errorf("%d records on disk after the flush, want %d", got, n)
	}
	results <- finishedResult(n)
	close(results)
	if err := <-collected; err != nil {
		t.Fatal(err)
	}
	if got := countLines(t, path); got != n+1 {
		t.Errorf("%d records on disk at the end, want %d", got, n+1)
	}
}

// TestRecordsReachDiskWithoutClose: a finished record is written to the
// file report.FlushInterval after the collector took it, even when no other
// result follows and nothing is closed (what SIGKILL would lose is bounded
// by report.FlushInterval).
func TestRecordsReachDiskWithoutClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		results, _, path, collected := startCollect(t)
		results <- finishedResult(0)
		synctest.Wait()
		time.Sleep(report.FlushInterval - time.Nanosecond)
		synctest.Wait()
		if n := countLines(t, path); n != 0 {
			t.Fatalf("%d records on disk before the interval passed: the writer batches nothing", n)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := countLines(t, path); n != 1 {
			t.Fatalf("%d records on disk %v after the result was collected, want 1", n, report.FlushInterval)
		}
		close(results)
		if err := <-collected; err != nil {
			t.Fatal(err)
		}
	})
}

// TestDrainTimeout: once the run is stopped, requests in flight are
// canceled after --drain-timeout (at once with 0), never before.
func TestDrainTimeout(t *testing.T) {
	log := NewLogger(io.Discard, false)
	for _, d := range []time.Duration{0, 50 * time.Millisecond, time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			var canceledAt time.Duration = -1
			start := time.Now()
			stopWatch := drainOnStop(ctx, d, nil, func() { canceledAt = time.Since(start) }, log)
			defer stopWatch()
			time.Sleep(time.Second)
			synctest.Wait()
			if canceledAt != -1 {
				t.Fatalf("drain %v: canceled at %v, before the run was stopped", d, canceledAt)
			}
			stop()
			time.Sleep(d)
			synctest.Wait()
			if canceledAt != time.Second+d {
				t.Errorf("drain %v: canceled at %v, want %v (the stop at 1 s, then the drain)", d, canceledAt, time.Second+d)
			}
		})
	}
}

// TestHurryCutsTheDrain: during a long drain, closing hurry (a second
// signal) cancels the requests in flight at once; before the run is
// stopped it does nothing.
func TestHurryCutsTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		hurry := make(chan struct{})
		var canceledAt time.Duration
		start := time.Now()
		stopWatch := drainOnStop(ctx, time.Hour, hurry, func() { canceledAt = time.Since(start) }, NewLogger(io.Discard, false))
		defer stopWatch()
		time.Sleep(time.Minute)
		stop()
		time.Sleep(time.Minute)
		synctest.Wait()
		if canceledAt != 0 {
			t.Fatalf("canceled at %v, before the hurry", canceledAt)
		}
		close(hurry)
		synctest.Wait()
		if canceledAt != 2*time.Minute {
			t.Errorf("canceled at %v, want at the hurry (2m), not after the hour's drain", canceledAt)
		}
	})
}

// slowDisk is an io.Writer that takes delay for every write, as a slow or
// stalled disk does.
type slowDisk struct {
	mu    sync.Mutex
	delay time.Duration
	buf   bytes.Buffer
}

func (d *slowDisk) Write(p []byte) (int, error) {
	time.Sleep(d.delay)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.buf.Write(p)
}

// TestSlowDiskHoldsNoWorker: with a results file whose every write takes
// 300 ms, results handed to the collector on a 1 ms schedule are taken at
// once (the workers that hand them over never wait, even with a results
// channel of 4), every record reaches the file in order, and the writer's
// backlog is reported.
func TestSlowDiskHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		disk := &slowDisk{delay: 300 * time.Millisecond}
		records := report.NewRecordWriter(disk, nil)
		results := make(chan *client.Result, 4)
		collected := make(chan error, 1)
		var done atomic.Int64
		go func() {
			sinks := []metrics.Sink{metrics.NewCollector(), records}
			collected <- collect(results, metrics.NoSLO, sinks, report.RecordWriters{records}, &done, nil, &requestPanics{log: NewLogger(io.Discard, false)})
		}()
		const n = 2000
		start := time.Now()
		var worst time.Duration
		for i := range int64(n) {
			time.Sleep(time.Until(start.Add(time.Duration(i) * time.Millisecond)))
			r := finishedResult(i)
			r.Scheduled, r.Sent, r.End = time.Duration(i)*time.Millisecond, time.Duration(i)*time.Millisecond, time.Duration(i+1)*time.Millisecond
			handed := time.Now()
			results <- r
			worst = max(worst, time.Since(handed))
		}
		if late := time.Since(start) - (n-1)*time.Millisecond; late != 0 || worst != 0 {
			t.Errorf("handing results over waited up to %v (schedule %v late), want never", worst, late)
		}
		close(results)
		if err := <-collected; err != nil {
			t.Fatal(err)
		}
		lines := bytes.Split(bytes.TrimSuffix(disk.buf.Bytes(), []byte("\n")), []byte("\n"))
		if len(lines) != n {
			t.Fatalf("%d records in the file, want %d", len(lines), n)
		}
		for i, l := range lines {
			if want := fmt.Sprintf(`{"index":%d,`, i); !bytes.HasPrefix(l, []byte(want)) {
				t.Fatalf("record %d: %.40s…, want it in order", i, l)
			}
		}
		if b := records.MaxBacklog(); b.Records == 0 || b.Bytes == 0 {
			t.Errorf("backlog %+v, want the records that waited for the slow disk", b)
		}
	})
}
