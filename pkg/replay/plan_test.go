package replay

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// gridTrace has rows at 0, 1, 2, 2, 10, 11, 12, 13 s (FineServe µs).
func gridTrace(t *testing.T) *Trace {
	t.Helper()
	var b strings.Builder
	b.WriteString("timestamp,input_length,output_length\n")
	for i, s := range []float64{0, 1, 2, 2, 10, 11, 12, 13} {
		fmt.Fprintf(&b, "%.1f,%d,%d\n", s*1e6, 100+i, 10+i)
	}
	tr, err := Read(strings.NewReader(b.String()), "grid.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func times(s arrival.Schedule) []time.Duration {
	var out []time.Duration
	for a := range s {
		out = append(out, a.At)
	}
	return out
}

func secs(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, s := range v {
		out[i] = time.Duration(math.Round(s * 1e9))
	}
	return out
}

func TestResolve(t *testing.T) {
	tr := gridTrace(t)
	for _, c := range []struct {
		name  string
		p     Plan
		want  []time.Duration
		first int // input length of the first arrival - 100
		scale float64
		err   string
	}{
		{name: "whole", p: Plan{}, want: secs(0, 1, 2, 2, 10, 11, 12, 13), scale: 1},
		{name: "time scale", p: Plan{TimeScale: 4}, want: secs(0, 0.25, 0.5, 0.5, 2.5, 2.75, 3, 3.25), scale: 4},
		{name: "slow down", p: Plan{TimeScale: 0.5}, want: secs(0, 2, 4, 4, 20, 22, 24, 26), scale: 0.5},
		{name: "target rate", p: Plan{TargetRate: 7.0 / 13 * 2}, want: secs(0, 0.5, 1, 1, 5, 5.5, 6, 6.5), scale: 2},
		{name: "slice", p: Plan{Start: 1500 * time.Millisecond, Span: 10 * time.Second}, want: secs(0, 0, 8, 9), first: 2, scale: 1},
		{name: "slice to the end", p: Plan{Start: 11 * time.Second}, want: secs(0, 1, 2), first: 5, scale: 1},
		{name: "busiest", p: Plan{Span: 3 * time.Second, Busiest: true}, want: secs(0, 1, 2, 2), first: 0, scale: 1},
		{name: "busiest ties go to the first", p: Plan{Span: 3500 * time.Millisecond, Busiest: true}, want: secs(0, 1, 2, 2), first: 0, scale: 1},
		{name: "count", p: Plan{Count: 3, TimeScale: 2}, want: secs(0, 0.5, 1), scale: 2},
		{name: "duration is replay time", p: Plan{TimeScale: 2, Duration: 5 * time.Second}, want: secs(0, 0.5, 1, 1), scale: 2},
		{name: "slice target rate", p: Plan{Start: 10 * time.Second, TargetRate: 3}, want: secs(0, 1.0/3, 2.0/3, 1), first: 4, scale: 3},
		// The rows replayed are the first Count: their rate (3 gaps in 2 s)
		// is scaled to the target, not the whole trace's (7 in 13 s).
		{name: "count target rate", p: Plan{Count: 4, TargetRate: 3}, want: secs(0, 0.5, 1, 1), scale: 2},
		{name: "empty slice", p: Plan{Start: time.Hour}, want: nil, scale: 1},
		{name: "both scales", p: Plan{TimeScale: 2, TargetRate: 3}, err: "not both"},
		{name: "busiest needs a span", p: Plan{Busiest: true}, err: "busiest"},
		{name: "target rate of one row", p: Plan{Start: 13 * time.Second, TargetRate: 1}, err: "no time span"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := tr.Resolve(c.p)
			if testenv.WantErr(t, err, c.err) {
				return
			}
			got := times(tr.Schedule(s))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("times %v, want %v", got, c.want)
			}
			if math.Abs(s.TimeScale-c.scale) > 1e-12 {
				t.Errorf("scale %g, want %g", s.TimeScale, c.scale)
			}
			for a := range tr.Schedule(s) {
				if a.InputTokens != 100+c.first || a.Index != 0 || a.Burst != 0 {
					t.Errorf("first arrival %+v, want input %d, index 0", a, 100+c.first)
				}
				break
			}
		})
	}
}

// TestScheduleRoundTrip checks that a schedule CSV written by the
// arrival package replays to the same bytes.
func TestScheduleRoundTrip(t *testing.T) {
	src := []arrival.Arrival{
		{Index: 0, At: 12345 * time.Microsecond, InputTokens: 10, OutputTokens: 1, Burst: 0},
		{Index: 1, At: 500 * time.Millisecond, InputTokens: 20, OutputTokens: 2, Model: "a", Burst: 1},
		{Index: 2, At: 500 * time.Millisecond, InputTokens: 30, OutputTokens: 3, Model: "b,\"c\"", Images: 4, Burst: 1},
		{Index: 3, At: 3*time.Hour + time.Microsecond, InputTokens: 40, OutputTokens: 4, Burst: 3},
	}
	scheduleRoundTrip(t, src, Options{})
}

// scheduleRoundTrip writes src as a schedule CSV, replays it (read with o)
// and checks that writing the replayed schedule gives the same bytes.
func scheduleRoundTrip(t *testing.T, src []arrival.Arrival, o Options) {
	t.Helper()
	var first bytes.Buffer
	if _, err := arrival.WriteCSV(&first, slices.Values(src)); err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(first.Bytes()), "s.csv", o)
	if err != nil {
		t.Fatalf("%v\n%s", err, first.String())
	}
	sl, err := tr.Resolve(Plan{})
	if err != nil {
		t.Fatal(err)
	}
	var second bytes.Buffer
	if _, err := arrival.WriteCSV(&second, tr.Schedule(sl)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Bytes(), second.Bytes()) {
		t.Errorf("round trip:\n%s\nbecame\n%s", first.String(), second.String())
	}
}

func TestBusiest(t *testing.T) {
	tr := gridTrace(t)
	for _, c := range []struct {
		w     time.Duration
		start time.Duration
		count int
	}{
		{time.Nanosecond, 2 * time.Second, 2},
		{2 * time.Second, time.Second, 3},
		{4 * time.Second, 0, 4}, // [10 s, 14 s) holds 4 too: the first wins
		{time.Hour, 0, 8},
	} {
		start, n := tr.Busiest(c.w)
		if start != c.start || n != c.count {
			t.Errorf("Busiest(%v) = %v, %d; want %v, %d", c.w, start, n, c.start, c.count)
		}
	}
	later, err := Read(strings.NewReader("timestamp,input_length,output_length\n0,1,1\n5000000,1,1\n5100000,1,1\n5200000,1,1\n"), "l.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if start, n := later.Busiest(time.Second); start != 5*time.Second || n != 3 {
		t.Errorf("Busiest(1s) = %v, %d; want 5s, 3", start, n)
	}
}
