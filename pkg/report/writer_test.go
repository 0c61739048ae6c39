package report

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/metrics"
	"github.com/fineserve-gen/fineserve-gen/pkg/record"
)

// disk is an io.Writer that keeps what is written and when (on the clock
// now), taking delay for every write as a slow disk does. A write may be
// held until hold is closed (a stalled disk); entered then says it began.
type disk struct {
	now     func() time.Time
	delay   time.Duration
	hold    chan struct{}
	entered chan struct{}

	mu     sync.Mutex
	buf    bytes.Buffer
	writes []diskWrite
}

type diskWrite struct {
	at      time.Time // when the write ended
	records int
}

func (d *disk) Write(p []byte) (int, error) {
	if d.entered != nil {
		select {
		case d.entered <- struct{}{}:
		default:
		}
	}
	if d.hold != nil {
		<-d.hold
	}
	time.Sleep(d.delay)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes = append(d.writes, diskWrite{at: d.now(), records: bytes.Count(p, []byte("\n"))})
	return d.buf.Write(p)
}

// state returns the writes so far and the indexes of the records written,
// in file order.
func (d *disk) state(t *testing.T) ([]diskWrite, []int64) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var idx []int64
	for _, line := range bytes.Split(bytes.TrimSuffix(d.buf.Bytes(), []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		idx = append(idx, parseBack(t, line).Index)
	}
	return append([]diskWrite(nil), d.writes...), idx
}

// indexed is the sample of a finished request with index i.
func indexed(i int64) *metrics.Sample {
	r := &record.Request{}
	r.Reset()
	r.Index = i
	var s metrics.Sample
	s.From(r, metrics.NoSLO)
	return &s
}

// bubbleWriter returns a writer to a disk that takes delay a write, on the
// test's synctest bubble's clock; it is closed when the test ends.
func bubbleWriter(t *testing.T, delay time.Duration) (*disk, *RecordWriter) {
	d := &disk{now: time.Now, delay: delay}
	w := NewRecordWriter(d, nil)
	t.Cleanup(func() { w.Close() })
	return d, w
}

// addAt adds the record of index i at instant at, and fails if Add waited.
func addAt(t *testing.T, w *RecordWriter, i int64, at time.Time) {
	t.Helper()
	time.Sleep(time.Until(at))
	before := time.Now()
	w.Add(indexed(i))
	if d := time.Since(before); d != 0 {
		t.Fatalf("Add waited %v", d)
	}
}

// inOrder checks that idx is 0, 1, … n-1.
func inOrder(t *testing.T, idx []int64, n int) {
	t.Helper()
	if len(idx) != n {
		t.Fatalf("%d records in the file, want %d", len(idx), n)
	}
	for i, v := range idx {
		if v != int64(i) {
			t.Fatalf("record %d in the file is index %d: out of order", i, v)
		}
	}
}

// TestRecordWriterWritesWithinFlushInterval: with no call but Add, a
// record reaches the file FlushInterval after it was added — not before
// (records are batched), not later — and the records added meanwhile go
// with it in one write; Add never waits.
func TestRecordWriterWritesWithinFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, w := bubbleWriter(t, 0)
		start := time.Now()
		for i := range int64(3) { // at 0, 30 and 60 ms
			addAt(t, w, i, start.Add(time.Duration(i)*30*time.Millisecond))
		}
		time.Sleep(time.Until(start.Add(FlushInterval - time.Nanosecond)))
		synctest.Wait()
		if writes, _ := d.state(t); len(writes) != 0 {
			t.Fatalf("written before the oldest record was due: %+v", writes)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		writes, idx := d.state(t)
		if len(writes) != 1 || writes[0].records != 3 || !writes[0].at.Equal(start.Add(FlushInterval)) {
			t.Fatalf("writes %+v, want one of 3 records at %v", writes, FlushInterval)
		}
		inOrder(t, idx, 3)

		// The next record starts a new interval of its own.
		again := start.Add(time.Second)
		addAt(t, w, 3, again)
		time.Sleep(FlushInterval)
		synctest.Wait()
		writes, _ = d.state(t)
		if len(writes) != 2 || writes[1].records != 1 || !writes[1].at.Equal(again.Add(FlushInterval)) {
			t.Fatalf("writes %+v, want a second one of 1 record %v after its Add", writes, FlushInterval)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if b := w.MaxBacklog(); b != (Backlog{}) {
			t.Errorf("backlog %+v with a disk that kept up, want none", b)
		}
	})
}

// TestRecordWriterWritesFullChunksAtOnce: records that make a chunk are
// written without waiting for FlushInterval; those after them wait for it.
func TestRecordWriterWritesFullChunksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, w := bubbleWriter(t, 0)
		start := time.Now()
		var n, size int64
		for ; size < recordChunk; n++ {
			size += int64(len(AppendRecord(nil, indexed(n))))
			w.Add(indexed(n))
		}
		synctest.Wait()
		writes, idx := d.state(t)
		if len(writes) != 1 || !writes[0].at.Equal(start) {
			t.Fatalf("writes %+v: a full chunk was not written at once", writes)
		}
		inOrder(t, idx, int(n))
		for range 3 {
			w.Add(indexed(n))
			n++
		}
		synctest.Wait()
		if writes, _ := d.state(t); len(writes) != 1 {
			t.Fatalf("writes %+v: the records after a chunk did not wait", writes)
		}
		time.Sleep(FlushInterval)
		synctest.Wait()
		writes, idx = d.state(t)
		if len(writes) != 2 || writes[1].records != 3 {
			t.Fatalf("writes %+v, want the last 3 records in a second write", writes)
		}
		inOrder(t, idx, int(n))
	})
}

// TestRecordWriterBacklog: records added every 10 ms never wait (Add takes
// no time) and all reach the file in order, whatever the disk. A disk that
// takes 50 ms a write keeps up (every record written within
// 2×FlushInterval): no backlog. One that takes a second a write falls
// behind: the backlog is reported, at most the records added.
func TestRecordWriterBacklog(t *testing.T) {
	for _, tc := range []struct {
		delay  time.Duration
		behind bool
	}{
		{50 * time.Millisecond, false},
		{time.Second, true},
	} {
		t.Run(tc.delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, w := bubbleWriter(t, tc.delay)
				const n = 500
				start := time.Now()
				for i := range int64(n) {
					addAt(t, w, i, start.Add(time.Duration(i)*10*time.Millisecond))
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				_, idx := d.state(t)
				inOrder(t, idx, n)
				b := w.MaxBacklog()
				if got := b.Records > 0; got != tc.behind {
					t.Fatalf("backlog %+v, want one: %v", b, tc.behind)
				}
				if tc.behind && (b.Records > n || b.Bytes < b.Records) {
					t.Errorf("backlog %+v of %d records", b, n)
				}
			})
		})
	}
}

// TestRecordWriterInjectedClock: the writer's notion of time is its clock
// (no wall time passes in this test): records waiting behind a stalled
// write are a backlog once the injected clock says the oldest has waited
// 2×FlushInterval, not before; Sync and Close write every record, in order.
func TestRecordWriterInjectedClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }

	d := &disk{now: clock, hold: make(chan struct{}), entered: make(chan struct{}, 1)}
	w := NewRecordWriter(d, clock)
	var n int64
	for ; len(AppendRecord(nil, indexed(n)))*int(n+1) < recordChunk+1024; n++ {
		w.Add(indexed(n)) // a full chunk: written at once, and the disk stalls
	}
	<-d.entered
	advance(FlushInterval)
	w.Add(indexed(n))
	n++
	if b := w.MaxBacklog(); b != (Backlog{}) {
		t.Fatalf("backlog %+v after %v on the clock, want none yet", b, FlushInterval)
	}
	advance(FlushInterval)
	w.Add(indexed(n))
	n++
	b := w.MaxBacklog()
	if b.Records != n {
		t.Fatalf("backlog %+v after %v on the clock, want every record (%d)", b, 2*FlushInterval, n)
	}
	close(d.hold)
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	_, idx := d.state(t)
	inOrder(t, idx, int(n))
	w.Add(indexed(n))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, idx = d.state(t)
	inOrder(t, idx, int(n+1))
	if w.Count() != n+1 {
		t.Errorf("count %d, want %d", w.Count(), n+1)
	}
}

// failingDisk fails every write.
type failingDisk struct{ writes int }

func (f *failingDisk) Write([]byte) (int, error) {
	f.writes++
	return 0, errors.New("disk full")
}

// TestRecordWriterReportsWriteError: the first write error is reported by
// Sync and Close, and the file is not written again.
func TestRecordWriterReportsWriteError(t *testing.T) {
	f := &failingDisk{}
	w := NewRecordWriter(f, nil)
	w.Add(indexed(0))
	if err := w.Sync(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Sync: %v, want disk full", err)
	}
	w.Add(indexed(1))
	if err := w.Close(); err == nil {
		t.Fatal("Close: no error after a failed write")
	}
	if f.writes != 1 {
		t.Errorf("%d writes, want 1: the file is not written after an error", f.writes)
	}
}

// TestCreateRecordsOnDisk: records created with CreateRecords are in the
// file once Sync returns, and Close closes it.
func TestCreateRecordsOnDisk(t *testing.T) {
	w, path := createIn(t, CreateRecords, "r.jsonl")
	for i := range int64(3) {
		w.Add(indexed(i))
	}
	if err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if got := bytes.Count(b, []byte("\n")); got != 3 {
		t.Errorf("%d records on disk after Sync, want 3", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// createIn creates a records file of create's format, named name, in a
// temporary directory.
func createIn(t *testing.T, create func(string, func() time.Time) (*RecordWriter, error), name string) (*RecordWriter, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	w, err := create(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}
