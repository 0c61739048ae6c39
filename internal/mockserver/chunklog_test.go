package mockserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// TestPaceExactChunkLog: on synctest's fake clock, exact pacing writes
// chunk i at arrival + TTFT + i·ITL, each flushed on its own, and the chunk
// log holds exactly those instants — for chat completions and for the
// Responses API's event stream alike.
func TestPaceExactChunkLog(t *testing.T) {
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"ignore_eos":true,"stream":true}`},
		{"/v1/responses", `{"input":"hi","max_output_tokens":5,"ignore_eos":true,"stream":true}`},
	} {
		t.Run(strings.TrimPrefix(tc.path, "/v1/"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer
				log := NewChunkLog(&out, time.Second)
				s, err := New(Config{Models: []string{"m"}, TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond, Pace: PaceExact, Chunks: log})
				if err != nil {
					t.Fatal(err)
				}
				w := serve(s, tc.path, tc.body)
				ms := time.Millisecond
				// The headers (and the role chunk, or the created events)
				// at once, then the five tokens, the last one flushed too.
				if want := []time.Duration{0, 50 * ms, 60 * ms, 70 * ms, 80 * ms, 90 * ms}; w.Code != 200 || !slices.Equal(w.at, want) {
					t.Errorf("status %d, flushes at %v, want %v", w.Code, w.at, want)
				}
				if err := log.Close(); err != nil {
					t.Fatal(err)
				}
				recs, err := ReadChunkLog(&out)
				if err != nil {
					t.Fatal(err)
				}
				if len(recs) != 1 {
					t.Fatalf("%d records, want 1: %s", len(recs), out.String())
				}
				r := recs[0]
				gap := int64(10 * ms)
				if r.ID != 1 || r.FirstWriteNS != int64(50*ms) || r.LastWriteNS != int64(90*ms) || r.Writes != 5 || !slices.Equal(r.GapsNS, []int64{gap, gap, gap, gap}) {
					t.Errorf("record %+v, want id 1, first 50 ms, last 90 ms, 5 writes 10 ms apart", r)
				}
			})
		})
	}
}

// TestPaceExactNeverShifts: with one slot, the second request waits for
// the first; by default its chunks are timed from its slot, exactly from
// its arrival: what is already due is written at once.
func TestPaceExactNeverShifts(t *testing.T) {
	for _, tc := range []struct {
		pace  Pace
		first time.Duration // the second request's first token write
	}{{PaceDefault, 110 * time.Millisecond}, {PaceExact, 60 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			var out bytes.Buffer
			log := NewChunkLog(&out, time.Second)
			s, err := New(Config{Models: []string{"m"}, TTFT: 50 * time.Millisecond, ITL: 10 * time.Millisecond, MaxNumSeqs: 1, Pace: tc.pace, Chunks: log})
			if err != nil {
				t.Fatal(err)
			}
			body := `{"prompt":"a","max_tokens":2,"ignore_eos":true,"stream":true}`
			var wg sync.WaitGroup
			wg.Go(func() { serve(s, "/v1/completions", body) })
			synctest.Wait()
			wg.Go(func() { serve(s, "/v1/completions", body) })
			wg.Wait()
			if err := log.Close(); err != nil {
				t.Fatal(err)
			}
			recs, err := ReadChunkLog(&out)
			if err != nil || len(recs) != 2 {
				t.Fatalf("%v, %d records: %s", err, len(recs), out.String())
			}
			second := recs[0]
			if second.ID != 2 {
				second = recs[1]
			}
			if got := time.Duration(second.FirstWriteNS); got != tc.first {
				t.Errorf("pace %d: the second request's first token at %v after its arrival, want %v", tc.pace, got, tc.first)
			}
		})
	}
}

// TestChunkLogBounded: lines beyond the pending bound are counted, not
// kept, and Close says how many.
func TestChunkLogBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		l := NewChunkLog(&out, time.Hour)
		l.log.pending = make([]byte, maxPendingChunkBytes-10)
		tr := l.start(time.Now(), time.Time{}, "")
		tr.wrote()
		l.finish(tr, 1)
		err := l.Close()
		if err == nil || !strings.Contains(err.Error(), "1 requests not logged") {
			t.Errorf("Close: %v, want 1 request not logged", err)
		}
	})
}

func TestParsePace(t *testing.T) {
	for in, want := range map[string]Pace{"default": PaceDefault, "exact": PaceExact} {
		if p, err := ParsePace(in); err != nil || p != want {
			t.Errorf("ParsePace(%q) = %v, %v", in, p, err)
		}
	}
	if _, err := ParsePace("fast"); err == nil {
		t.Error("ParsePace(fast): no error")
	}
}

func FuzzReadChunkLog(f *testing.F) {
	f.Add([]byte(`{"id":1,"arrival_unix_ns":5,"first_write_ns":50,"last_write_ns":70,"writes":3,"gaps_ns":[10,10]}` + "\n"))
	f.Add([]byte(`{"id":2,"arrival_unix_ns":5,"first_write_ns":50,"last_write_ns":50,"writes":1,"gaps_ns":[]}` + "\n"))
	f.Add([]byte(`{"id":3,"first_write_ns":-1,"last_write_ns":0,"writes":1,"gaps_ns":[]}`))
	f.Add([]byte("not json\n"))
	fuzzLogReader(f, ReadChunkLog, func(t *testing.T, b *bytes.Buffer, got []ChunkRecord) {
		for _, r := range got {
			if r.FirstWriteNS < 0 || r.LastWriteNS < r.FirstWriteNS || r.Writes < 1 {
				t.Fatalf("accepted %+v", r)
			}
			line, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(append(line, '\n'))
		}
	})
}

// fuzzLogReader fuzzes a log reader: what it reads writes back (write,
// which may also check it) to a log that reads the same.
func fuzzLogReader[T any](f *testing.F, read func(io.Reader) ([]T, error), write func(t *testing.T, b *bytes.Buffer, got []T)) {
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := read(bytes.NewReader(in))
		if err != nil {
			return
		}
		var b bytes.Buffer
		write(t, &b, got)
		again, err := read(&b)
		if err != nil {
			t.Fatalf("re-read: %v", err)
		}
		if fmt.Sprint(again) != fmt.Sprint(got) {
			t.Fatalf("re-read %v, want %v", again, got)
		}
	})
}

// BenchmarkChunkLogFinish is what the chunk log adds to a streamed
// request of 100 token writes: its trace and its line.
func BenchmarkChunkLogFinish(b *testing.B) {
	var buf testenv.SyncBuffer
	l := NewChunkLog(&buf, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tr := l.start(time.Now(), time.Time{}, "")
		for range 100 {
			tr.wrote()
		}
		l.finish(tr, int64(i))
	}
	b.StopTimer()
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// TestRequestIDEchoedAndLogged: as vLLM's, a request's X-Request-Id names
// its response (cmpl-ID in every chunk), comes back as a header and is
// in its chunk-log record; an id that is not a plain one (a space, or
// longer than 128 bytes) is ignored: the server's own number names the
// response, no header, no request_id.
func TestRequestIDEchoedAndLogged(t *testing.T) {
	for _, tc := range []struct{ sent, want string }{
		{"run7-42", "run7-42"},
		{"a b", ""},
		{strings.Repeat("x", maxRequestID+1), ""},
		{"", ""},
	} {
		var out bytes.Buffer
		log := NewChunkLog(&out, time.Second)
		s, err := New(Config{Models: []string{"m"}, Chunks: log})
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(`{"prompt":"hi","max_tokens":2,"stream":true}`))
		if tc.sent != "" {
			r.Header.Set("X-Request-Id", tc.sent)
		}
		s.Handler().ServeHTTP(w, r)
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		recs, err := ReadChunkLog(&out)
		if err != nil || len(recs) != 1 {
			t.Fatalf("sent %q: %d records, %v", tc.sent, len(recs), err)
		}
		wantID := `"id":"cmpl-1"`
		if tc.want != "" {
			wantID = `"id":"cmpl-` + tc.want + `"`
		}
		body := w.Body.String()
		if w.Code != 200 || strings.Count(body, wantID) != 2 || w.Header().Get("X-Request-Id") != tc.want || recs[0].RequestID != tc.want {
			t.Errorf("sent %q: status %d, header %q, logged %q, body %s; want %s in both chunks, header and log %q",
				tc.sent, w.Code, w.Header().Get("X-Request-Id"), recs[0].RequestID, body, wantID, tc.want)
		}
	}
}
