package metrics

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestBacklog: a period is judged by the backlog that lasted the last
// BacklogSpan up to its end or, when the schedule ran out before its end,
// up to the last look taken while arrivals were still due; a moment's
// stall does not count, nor a backlog of an earlier period.
func TestBacklog(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	// looks every 250 ms from 0 to last, behind growing by grow per look
	// after a start of 0.
	growing := func(last, grow int) []BacklogLook {
		var out []BacklogLook
		for at, i := 0, 0; at <= last; at, i = at+250, i+1 {
			out = append(out, BacklogLook{At: ms(at), Behind: ms(i * grow)})
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		looks []BacklogLook
		start time.Duration
		want  float64 // ms
	}{
		{"none", nil, 0, 0},
		// A 60 s window whose schedule ran out at 2 s, 2 s behind then:
		// the looks stop there (the dispatcher has nothing left to be late
		// with); the window is judged by the last second of them.
		{"schedule ran out before the window's end", growing(2000, 200), 0, 800},
		{"backlog while arrivals are due", growing(3000, 200), ms(2000), 1600},
		{"the schedule ran out in an earlier period", growing(2000, 200), ms(3000), 0},
		{"a moment's stall", []BacklogLook{{ms(0), 0}, {ms(250), 0}, {ms(500), ms(900)}, {ms(750), 0}, {ms(1000), 0}}, 0, 0},
		{"shorter than a backlog span: the start's look counts", growing(500, 300), 0, 0},
	} {
		if got := Backlog(tc.looks, tc.start); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: backlog %v ms, want %v", tc.name, got, tc.want)
		}
	}
}

// pace is n arrivals due evenly over span, the i-th offered at
// offer(i, due) (offsets).
func pace(n int, span time.Duration, offer func(i int, due time.Duration) time.Duration) *Pace {
	p := &Pace{}
	for i := 1; i <= n; i++ {
		due := span * time.Duration(i) / time.Duration(n)
		p.Offer(due, offer(i, due))
	}
	return p
}

// TestPaceShort: the send rate falls short when the arrivals offered at
// the end of the run were all late, by at least 100 ms and by more than a
// tenth of the span they were due over; the rates say by how much. A
// moment's stall at the end is no shortfall.
func TestPaceShort(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	onTime := func(late time.Duration) func(int, time.Duration) time.Duration {
		return func(_ int, due time.Duration) time.Duration { return due + late }
	}
	for _, tc := range []struct {
		name   string
		p      *Pace
		short  float64 // 0: not short
		reason string
	}{
		// The overload of the issue: 30,000 due over 0.5 s, handed out at
		// 12,000 req/s: the last 2.0 s late.
		{"60,000 req/s sent at 12,000", pace(30000, s/2, func(i int, _ time.Duration) time.Duration { return s * time.Duration(i) / 12000 }), 0.8,
			"12000.0 req/s of the 60000.0 req/s scheduled (80.0 % short; the last request was sent 2.00 s after its due time)"},
		{"kept up", pace(200, 5*s, onTime(ms/2)), 0, ""},
		// A light run on a busy machine: its last send 300 ms late, the
		// ones before on time.
		{"a moment's stall at the end", pace(40, 2*s, func(i int, due time.Duration) time.Duration {
			if i == 40 {
				return due + 300*ms
			}
			return due + ms
		}), 0, ""},
		{"a short schedule a few ms late", pace(16, 40*ms, onTime(20*ms)), 0, ""},
		{"late but within a tenth", pace(1000, 10*s, onTime(900*ms)), 0, ""},
		{"late by over a tenth", pace(1000, 10*s, onTime(1200*ms)), 1 - 10/11.2, "(10.7 % short"},
		{"one arrival", pace(1, s, onTime(2*s)), 0, ""},
		{"all at the start", pace(100, 0, onTime(3*s)), 0, ""},
		{"a short schedule far behind", pace(100, 50*ms, func(i int, _ time.Duration) time.Duration { return 5 * ms * time.Duration(i) }), 0.9, "(90.0 % short"},
	} {
		r := tc.p.Short()
		switch {
		case tc.short == 0 && r != nil:
			t.Errorf("%s: short %+v, want not", tc.name, *r)
		case tc.short == 0:
		case r == nil:
			t.Errorf("%s: not short, want short by %v", tc.name, tc.short)
		case math.Abs(r.Shortfall-tc.short) > 1e-6 || !strings.Contains(r.Reason(), tc.reason):
			t.Errorf("%s: %+v %q, want short by %v saying %q", tc.name, *r, r.Reason(), tc.short, tc.reason)
		}
	}
}

// TestPaceCause: the cause is named only as far as the CPU reading goes.
func TestPaceCause(t *testing.T) {
	r := &SendRate{Scheduled: 100, Achieved: 10, Shortfall: 0.9}
	low, high := 0.39, 0.95
	if c := r.Cause(&high, 2); !strings.Contains(c, "short of CPU: it used 95 % of its 2 cores") {
		t.Errorf("pegged: %q", c)
	}
	if c := r.Cause(&low, 2); strings.Contains(c, "short of CPU") || !strings.Contains(c, "39 % of its 2 cores") || !strings.Contains(c, "other processes") {
		t.Errorf("not pegged: %q", c)
	}
	if c := r.Cause(nil, 2); !strings.Contains(c, "not measured") {
		t.Errorf("not measured: %q", c)
	}
}
