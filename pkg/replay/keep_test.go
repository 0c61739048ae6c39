package replay

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// rowStream is a FineServe trace of n rows, one a microsecond apart,
// generated as it is read (a large trace without its bytes in memory).
type rowStream struct {
	n, i int
	buf  []byte
}

func (r *rowStream) Read(p []byte) (int, error) {
	if r.i == 0 && r.buf == nil {
		r.buf = []byte("timestamp,input_length,output_length\n")
	}
	for len(r.buf) < len(p) && r.i < r.n {
		r.buf = strconv.AppendInt(r.buf, int64(r.i), 10)
		r.buf = append(r.buf, ",7,3\n"...)
		r.i++
	}
	if len(r.buf) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.buf)
	r.buf = r.buf[:copy(r.buf, r.buf[k:])]
	return k, nil
}

// A replay of part of a trace holds that part only, and stops reading a
// trace in time order once it holds it: 4 M rows read for 100 requests
// (a gzip bomb's row count) allocate a few MB, not the 200 MB of holding
// them. Without a part to replay, more rows than the cap are an error
// that says what to do.
func TestKeepBoundsTheRowsHeld(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tr, err := Read(&rowStream{n: 4 << 20}, "big.csv", Options{Keep: Keep{Count: 100}})
	runtime.GC()
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 100 || tr.Stopped != DefaultStopAfter+1 || tr.Usable() != DefaultStopAfter {
		t.Errorf("held %d rows of %d usable, stopped at line %d; want 100, %d, line %d", tr.Len(), tr.Usable(), tr.Stopped, DefaultStopAfter, DefaultStopAfter+1)
	}
	if got := int64(after.HeapAlloc) - int64(before.HeapAlloc); got > 4<<20 {
		t.Errorf("the trace holds %d MB, want < 4", got>>20)
	}
	runtime.KeepAlive(tr)
	if want := time.Duration(DefaultStopAfter-1) * time.Microsecond; tr.Span() != want {
		t.Errorf("span %v, want %v (the rows read)", tr.Span(), want)
	}

	_, err = Read(&rowStream{n: 5000}, "big.csv", Options{MaxRows: 1000})
	var ce *RowCapError
	if !errors.As(err, &ce) || ce.Line != 1002 || !strings.Contains(err.Error(), "more than 1000 rows to hold") || !strings.Contains(err.Error(), "--num-prompts or --trace-duration") {
		t.Errorf("error %v, want a row cap at line 1002 that says how to replay a part", err)
	}
	// The part to replay is held even when the whole is above the cap.
	if tr, err := Read(&rowStream{n: 5000}, "big.csv", Options{MaxRows: 1000, Keep: Keep{Before: 900 * time.Microsecond}}); err != nil || tr.Len() != 900 || tr.Usable() != 5000 {
		t.Errorf("--trace-duration's part: %v, %d held", err, tr.Len())
	}
}

// The rows held with Keep give exactly the schedule of the whole trace,
// out of order and with ties, and so does stopping early in a trace in
// time order: a differential test against reading whole.
func TestKeepGivesTheSameSchedule(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 40 {
		var b bytes.Buffer
		b.WriteString("timestamp,input_length,output_length\n")
		n := 50 + r.IntN(400)
		ordered := trial%2 == 0
		for i := range n {
			ts := i * 1000
			switch r.IntN(10) {
			case 0: // out of order
				if !ordered {
					ts = r.IntN(n * 1000)
				}
			case 1: // a tie with the row before
				ts = (i - 1) * 1000
			}
			fmt.Fprintf(&b, "%d,%d,%d\n", ts+5_000_000, i+1, 1)
		}
		data := b.Bytes()
		whole, err := Read(bytes.NewReader(data), "t.csv", Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []Plan{
			{Count: int64(1 + r.IntN(n))},
			{Span: time.Duration(r.IntN(n*1000)) * time.Microsecond},
			{Count: int64(1 + r.IntN(n)), Span: time.Duration(r.IntN(n*1000)) * time.Microsecond, TimeScale: 3},
			{Start: time.Duration(r.IntN(n*1000)) * time.Microsecond, Span: time.Duration(1+r.IntN(n*1000)) * time.Microsecond},
		} {
			// Reading stops early only in a trace in order: rows out of
			// order after the stop would be missed (documented).
			k := Keep{StopAfter: -1}
			if ordered {
				k.StopAfter = 1 + r.IntN(n)
			}
			if p.Start == 0 {
				k.Count = int(p.Count)
			}
			if p.Span > 0 {
				k.Before = p.Start + p.Span
			}
			part, err := Read(bytes.NewReader(data), "t.csv", Options{Keep: k})
			if err != nil {
				t.Fatal(err)
			}
			if part.Stopped == 0 && (part.Usable() != whole.Usable() || part.Span() != whole.Span() || part.Skipped.OutOfOrder != whole.Skipped.OutOfOrder) {
				t.Fatalf("trial %d %+v: usable %d span %v, want %d %v", trial, p, part.Usable(), part.Span(), whole.Usable(), whole.Span())
			}
			if got, want := sched(t, part, p), sched(t, whole, p); !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d plan %+v keep %+v: %d arrivals, want %d\n got %v\nwant %v", trial, p, k, len(got), len(want), got, want)
			}
		}
	}
}

func sched(t *testing.T, tr *Trace, p Plan) []arrival.Arrival {
	sl, err := tr.Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Collect(tr.Schedule(sl))
}

// A gzip bomb: 1.6 MB that expands to millions of rows.
func gzipRows(t *testing.T, n int) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte("timestamp,input_length,output_length\n"))
	row := bytes.Repeat([]byte("1000,1,1\n"), 1<<16)
	for i := 0; i < n; i += 1 << 16 {
		zw.Write(row)
	}
	zw.Close()
	return b.Bytes()
}

func TestKeepReadsAGzipBombInPart(t *testing.T) {
	data := gzipRows(t, 3<<20)
	tr, err := Read(bytes.NewReader(data), "bomb.csv.gz", Options{Keep: Keep{Count: 100}})
	if err != nil || tr.Len() != 100 || tr.Stopped == 0 {
		t.Fatalf("%v: %d rows held, stopped at %d", err, tr.Len(), tr.Stopped)
	}
}

// TestRowCapIsTheBound: reading up to the row cap allocates about the
// columns' size at the cap (16 bytes a row), not three times it: the
// columns grew by copies a quarter larger each time and every line was
// copied once more (a row-count gzip bomb with --trace-duration reached
// 1.57 GB before the 33.5 M-row cap refused it, whose columns take 512 MB).
func TestRowCapIsTheBound(t *testing.T) {
	const maxRows = 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Read(&rowStream{n: maxRows + 10}, "bomb.csv", Options{MaxRows: maxRows, Keep: Keep{Before: time.Hour}})
	runtime.ReadMemStats(&after)
	var ce *RowCapError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "(its times and lengths take 16 bytes a row: 16 MB)") {
		t.Fatalf("error %v, want the row cap, saying what it costs", err)
	}
	columns := uint64(maxRows * 16)
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*columns { // the test's own stream takes a few MB
		t.Errorf("reading to the cap allocated %d MB, want about the columns' %d MB", got>>20, columns>>20)
	}
}
