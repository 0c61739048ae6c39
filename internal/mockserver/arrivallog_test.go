package mockserver

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

func TestArrivalLogRoundTrip(t *testing.T) {
	var buf testenv.SyncBuffer
	before := time.Now().UnixNano()
	l := NewArrivalLog(&buf, time.Millisecond)
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				l.Record()
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixNano()
	got, err := ReadArrivalLog(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != goroutines*each {
		t.Fatalf("%d arrivals read, want %d", len(got), goroutines*each)
	}
	// Within the wall-clock interval of the test (1 ms of slack for the
	// monotonic and wall clocks' different rounding).
	if got[0] < before-1e6 || got[len(got)-1] > after+1e6 {
		t.Errorf("arrivals %d..%d outside the test's interval %d..%d", got[0], got[len(got)-1], before, after)
	}
	if err := l.Close(); err == nil {
		t.Error("a second Close returned no error")
	}
}

// TestArrivalLogFlushes checks that arrivals reach the writer at every flush
// interval, not only at Close (a killed server leaves what was flushed).
func TestArrivalLogFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf testenv.SyncBuffer
		l := NewArrivalLog(&buf, 100*time.Millisecond)
		l.Record()
		l.Record()
		time.Sleep(50 * time.Millisecond)
		synctest.Wait()
		if n := strings.Count(buf.String(), "\n"); n != 0 {
			t.Errorf("before the first flush: %d lines written, want 0 (the writer is buffered)", n)
		}
		time.Sleep(60 * time.Millisecond)
		synctest.Wait()
		got, err := ReadArrivalLog(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[1]-got[0] != 0 {
			t.Errorf("after the first flush: arrivals %v, want two at the same (fake) instant", got)
		}
		time.Sleep(time.Second)
		l.Record()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		got, err = ReadArrivalLog(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[2]-got[1] != int64(1110*time.Millisecond) {
			t.Errorf("arrivals %v: want a third 1.11 s after the first two", got)
		}
	})
}

func TestArrivalLogDropsBeyondBound(t *testing.T) {
	var buf testenv.SyncBuffer
	l := NewArrivalLog(&buf, time.Hour) // no flush before Close
	for range maxPendingArrivals + 5 {
		l.Record()
	}
	err := l.Close()
	if err == nil || !strings.Contains(err.Error(), "5 arrivals not logged") {
		t.Fatalf("Close: %v, want 5 arrivals not logged", err)
	}
	got, rerr := ReadArrivalLog(strings.NewReader(buf.String()))
	if rerr != nil || len(got) != maxPendingArrivals {
		t.Errorf("%d arrivals read (%v), want the %d held", len(got), rerr, maxPendingArrivals)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestArrivalLogWriteError(t *testing.T) {
	l := NewArrivalLog(failingWriter{}, time.Millisecond)
	l.Record()
	if err := l.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close: %v, want the write error", err)
	}
}

// TestArrivalLogServer checks that the server logs generation requests,
// and only those, each at an instant within its request.
func TestArrivalLogServer(t *testing.T) {
	var buf testenv.SyncBuffer
	l := NewArrivalLog(&buf, time.Millisecond)
	_, url := start(t, Config{Arrivals: l})
	var bounds [][2]int64
	for i, path := range []string{"/v1/completions", "/v1/chat/completions", "/v1/completions"} {
		body := `{"model":"m","prompt":"a b c","max_tokens":2,"stream":true}`
		if strings.Contains(path, "chat") {
			body = `{"model":"m","messages":[{"role":"user","content":"a b"}],"max_tokens":2}`
		}
		t0 := time.Now().UnixNano()
		if r := post(t, url, path, body); r.status != 200 {
			t.Fatalf("request %d: status %d: %s", i, r.status, r.body)
		}
		bounds = append(bounds, [2]int64{t0, time.Now().UnixNano()})
		for _, p := range []string{"/v1/models", "/health"} {
			resp, err := http.Get(url + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadArrivalLog(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(bounds) {
		t.Fatalf("%d arrivals logged, want %d (generation requests only)", len(got), len(bounds))
	}
	for i, at := range got {
		if at < bounds[i][0]-1e6 || at > bounds[i][1]+1e6 {
			t.Errorf("arrival %d at %d, outside its request %d..%d", i, at, bounds[i][0], bounds[i][1])
		}
	}
}

func TestReadArrivalLogErrors(t *testing.T) {
	h := ArrivalLogHeader + "\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "empty"},
		{"header", "seq,ns\n0,1\n", "line 1: header"},
		{"no comma", h + "0,10\n1 20\n", "line 3:"},
		{"seq not a number", h + "x,10\n", "line 2: seq"},
		{"seq gap", h + "0,10\n2,20\n", "line 3: seq 2, want 1"},
		{"seq repeated", h + "0,10\n0,20\n", "line 3: seq 0, want 1"},
		{"instant not a number", h + "0,1e9\n", "line 2: arrival_unix_ns"},
		{"negative instant", h + "0,-5\n", "line 2: arrival_unix_ns"},
		{"backwards", h + "0,10\n1,9\n", "line 3: arrival 9 is before"},
		{"long line", h + "0," + strings.Repeat("1", 300) + "\n", "line 2: longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadArrivalLog(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	got, err := ReadArrivalLog(strings.NewReader(h + "0,10\n1,10\n2,35\n"))
	if err != nil || fmt.Sprint(got) != "[10 10 35]" {
		t.Errorf("valid log: %v, %v", got, err)
	}
	if got, err := ReadArrivalLog(strings.NewReader(h)); err != nil || len(got) != 0 {
		t.Errorf("header only: %v, %v; want no arrivals", got, err)
	}
}

func FuzzReadArrivalLog(f *testing.F) {
	f.Add([]byte(ArrivalLogHeader + "\n0,10\n1,10\n2,35\n"))
	f.Add([]byte(ArrivalLogHeader + "\n0,-1\n"))
	f.Add([]byte("seq\n"))
	fuzzLogReader(f, ReadArrivalLog, func(t *testing.T, b *bytes.Buffer, got []int64) {
		b.WriteString(ArrivalLogHeader + "\n")
		for i, ns := range got {
			fmt.Fprintf(b, "%d,%d\n", i, ns)
		}
	})
}

// BenchmarkArrivalLogRecord is the cost Record adds to every generation
// request, from parallel handlers.
func BenchmarkArrivalLogRecord(b *testing.B) {
	var buf testenv.SyncBuffer
	l := NewArrivalLog(&buf, 0)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Record()
		}
	})
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}
