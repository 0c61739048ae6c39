package parametric

import (
	"bytes"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

func smallPlan(t *testing.T, ext Extension) *Plan {
	t.Helper()
	tb := &Table{Name: "small", Rows: []Row{{Shape: 0.5, ScaleMS: 40}, {Shape: 2, ScaleMS: 25}, {Shape: 0.3, ScaleMS: 300}}}
	p, err := NewPlan(PlanConfig{Table: tb, Window: 20 * time.Second, Extension: ext, JitterRatio: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLength: --num-prompts (only when given) and --duration cut the
// schedule, whichever first; with neither it is one pass over the windows;
// a shorter schedule is a prefix of a longer one with the same seed.
func TestLength(t *testing.T) {
	plan := smallPlan(t, RepeatJitter) // one pass: 60 s, ≈ 1,200 requests
	base := Config{Plan: plan, Seed: 9, Lengths: arrival.UniformLengths{Input: 100, Output: 10, RangeRatio: 0.5}, NB: &NB{Mu: 2, Alpha: 0.5}}
	long := base
	long.Duration = 10 * time.Minute
	all := slices.Collect(Schedule(long))
	cases := []struct {
		name     string
		count    int64
		duration time.Duration
		check    func(t *testing.T, got []arrival.Arrival)
	}{
		{"one pass", 0, 0, func(t *testing.T, got []arrival.Arrival) {
			if last := got[len(got)-1].At; last >= time.Minute || last < 59*time.Second {
				t.Errorf("last arrival at %v, want just before the pass end (60 s)", last)
			}
		}},
		{"count", 100, 0, func(t *testing.T, got []arrival.Arrival) {
			if len(got) != 100 {
				t.Errorf("%d arrivals, want 100", len(got))
			}
		}},
		{"count past one pass", 5000, 0, func(t *testing.T, got []arrival.Arrival) {
			if len(got) != 5000 || got[len(got)-1].At < 2*time.Minute {
				t.Errorf("%d arrivals up to %v: want 5000 over several passes", len(got), got[len(got)-1].At)
			}
		}},
		{"duration", 0, 90 * time.Second, func(t *testing.T, got []arrival.Arrival) {
			if last := got[len(got)-1].At; last >= 90*time.Second || last < 89*time.Second {
				t.Errorf("last arrival at %v, want just before 90 s", last)
			}
		}},
		{"count first", 50, time.Hour, func(t *testing.T, got []arrival.Arrival) {
			if len(got) != 50 {
				t.Errorf("%d arrivals, want 50", len(got))
			}
		}},
		{"duration first", 1 << 40, 5 * time.Second, func(t *testing.T, got []arrival.Arrival) {
			if got[len(got)-1].At >= 5*time.Second {
				t.Errorf("arrival at %v past 5 s", got[len(got)-1].At)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.Count, c.Duration = tc.count, tc.duration
			got := slices.Collect(Schedule(c))
			if len(got) == 0 || got[0].At != 0 {
				t.Fatalf("%d arrivals, first %v: want the first due at 0", len(got), got)
			}
			tc.check(t, got)
			if !reflect.DeepEqual(got, all[:len(got)]) {
				t.Error("not a prefix of the 10-minute schedule of the same seed")
			}
			if again := slices.Collect(Schedule(c)); !reflect.DeepEqual(got, again) {
				t.Error("iterating twice gives different schedules")
			}
		})
	}
	// Stopping early is allowed.
	n := 0
	for range Schedule(long) {
		n++
		if n == 3 {
			break
		}
	}
}

// TestSeeds: a schedule is a function of its seed, and sizes do not move
// arrival times (separate random streams).
func TestSeeds(t *testing.T) {
	plan := smallPlan(t, ModelSample)
	c := Config{Plan: plan, Seed: 1, Duration: 2 * time.Minute, Lengths: arrival.UniformLengths{Input: 10, Output: 10}}
	a := slices.Collect(Schedule(c))
	c.Seed = 2
	b := slices.Collect(Schedule(c))
	if len(a) == len(b) && a[10].At == b[10].At {
		t.Error("seeds 1 and 2 give the same schedule")
	}
	c.Seed = 1
	c.Lengths = arrival.PairLengths{Pairs: [][2]int{{1, 2}, {3, 4}, {5, 6}}}
	d := slices.Collect(Schedule(c))
	if len(d) != len(a) {
		t.Fatalf("changing the length source changed the count: %d vs %d", len(d), len(a))
	}
	joint := map[[2]int]bool{}
	for i := range d {
		if d[i].At != a[i].At {
			t.Fatalf("arrival %d moved from %v to %v with another length source", i, a[i].At, d[i].At)
		}
		joint[[2]int{d[i].InputTokens, d[i].OutputTokens}] = true
	}
	if len(joint) != 3 || !joint[[2]int{3, 4}] {
		t.Errorf("pairs drawn %v, want the three pairs, kept joint", joint)
	}
}

// TestTimeScale: --time-scale 24 compresses the bundled day into an hour,
// every offset divided by 24, and the compressed schedule passes the window
// checks once its times are multiplied back.
func TestTimeScale(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	plan := bundledPlan(t, "MoE_gt100B", RepeatJitter)
	c := Config{Plan: plan, Seed: 4, Lengths: arrival.UniformLengths{Input: 1, Output: 1}}
	day1 := slices.Collect(Schedule(c))
	c.TimeScale = 24
	hour := slices.Collect(Schedule(c))
	c.Duration = time.Hour // --duration 1h with --time-scale 24: the same day
	hourCut := slices.Collect(Schedule(c))
	if len(hour) != len(day1) || len(hourCut) != len(day1) {
		t.Fatalf("%d, %d arrivals at scale 24, %d at scale 1", len(hour), len(hourCut), len(day1))
	}
	for i := range hour {
		want := float64(day1[i].At) / 24
		if d := math.Abs(float64(hour[i].At) - want); d > 1 || !reflect.DeepEqual(hour[i], hourCut[i]) {
			t.Fatalf("arrival %d at %v, want %v/24 = %.0f ns", i, hour[i].At, day1[i].At, want)
		}
	}
	if last := hour[len(hour)-1].At; last >= time.Hour || last < 59*time.Minute {
		t.Errorf("last arrival at %v, want just under an hour", last)
	}
	c.Duration = 0
	checkSchedule(t, Schedule(c), windowsUpTo(plan, 4, plan.PassEnd()), 1, 24).verify(t, "24 h at scale 24", totalTol)
}

// TestBurstSampler: the zero-truncated NB draws have the model's moments,
// for an overdispersed model and for the Poisson limit.
func TestBurstSampler(t *testing.T) {
	for _, nb := range []NB{{Mu: 2.6285496273363496, Alpha: 0.03696279493927793}, {Mu: 0.7, Alpha: 3}, {Mu: 1.2, Alpha: 0}} {
		s := newBurstSampler(nb, arrival.Rand(1, arrival.StreamBursts))
		const n = 200_000
		var s1, s2 float64
		for range n {
			k := float64(s.draw())
			if k < 1 {
				t.Fatalf("%+v: burst of %g", nb, k)
			}
			s1 += k
			s2 += k * k
		}
		mean := s1 / n
		v := s2/n - mean*mean
		// Standard error of the mean: √(Var/n); of the variance, roughly
		// Var·√(2/n)·√(kurtosis term): 5 % is many of them here.
		if math.Abs(mean-nb.Mean()) > 5*math.Sqrt(nb.Variance()/n) || math.Abs(v/nb.Variance()-1) > 0.05 {
			t.Errorf("%+v: mean %.4f (want %.4f), variance %.4f (want %.4f)", nb, mean, nb.Mean(), v, nb.Variance())
		}
	}
}

func TestValidate(t *testing.T) {
	err := Config{NB: &NB{Mu: -1}, TimeScale: math.Inf(1), Count: -1}.Validate()
	for _, s := range []string{"no Gamma windows", "nb_mu", "time scale", "≥ 0", "no request length"} {
		if err == nil || !strings.Contains(err.Error(), s) {
			t.Errorf("error %v lacks %q", err, s)
		}
	}
	if _, err := NewPlan(PlanConfig{Table: &Table{Rows: []Row{{Shape: 1, ScaleMS: 1}}}, JitterRatio: 1}); err == nil ||
		!strings.Contains(err.Error(), "window length") || !strings.Contains(err.Error(), "jitter ratio") {
		t.Errorf("plan errors: %v", err)
	}
	if _, err := ParseExtension("cycle"); err == nil {
		t.Error("unknown extension mode accepted")
	}
}

// TestScheduleCSV: the exported CSV of a burst schedule reads back sorted,
// with every burst inside 1 ms of its first request at µs precision.
func TestScheduleCSV(t *testing.T) {
	plan := bundledPlan(t, "Dense_lt10B", RepeatJitter)
	c := Config{Plan: plan, Seed: 5, NB: bundledNB(t), Duration: 10 * time.Minute, Lengths: arrival.UniformLengths{Input: 5, Output: 5}}
	var buf bytes.Buffer
	n, err := arrival.WriteCSV(&buf, Schedule(c))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := arrival.ReadCSV(&buf)
	if err != nil || int64(len(rows)) != n {
		t.Fatalf("%d rows read back of %d: %v", len(rows), n, err)
	}
	first := map[int64]time.Duration{}
	for i, a := range rows {
		if i > 0 && a.At < rows[i-1].At {
			t.Fatalf("row %d at %v before %v", i, a.At, rows[i-1].At)
		}
		if a.Burst == a.Index {
			first[a.Index] = a.At
			continue
		}
		f, ok := first[a.Burst]
		if !ok || a.At-f >= time.Millisecond {
			t.Fatalf("row %d: burst %d opened at %v (%v), request at %v", i, a.Burst, f, ok, a.At)
		}
	}
	t.Logf("%d requests in %d bursts over 10 minutes", n, len(first))
}
