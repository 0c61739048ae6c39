package arrival

import (
	"bytes"
	"math"
	"sort"
	"testing"
	"time"
)

// exported writes s as a schedule CSV and reads it back: statistics are
// checked on what --schedule-out exports, not on internal values.
func exported(t *testing.T, s Schedule) []Arrival {
	t.Helper()
	var buf bytes.Buffer
	if _, err := WriteCSV(&buf, s); err != nil {
		t.Fatal(err)
	}
	arr, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return arr
}

func gaps(arr []Arrival) []float64 {
	g := make([]float64, 0, len(arr))
	for i := 1; i < len(arr); i++ {
		g = append(g, (arr[i].At - arr[i-1].At).Seconds())
	}
	return g
}

// ksExponential returns the Kolmogorov–Smirnov statistic of x against the
// exponential distribution of the given rate.
func ksExponential(x []float64, rate float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := float64(len(s))
	d := 0.0
	for i, v := range s {
		f := 1 - math.Exp(-rate*v)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
	}
	return d
}

func TestPoissonRateAndExponentialGaps(t *testing.T) {
	const n, rate = 20000, 100.0
	for _, seed := range []uint64{1, 2, 3} {
		arr := exported(t, Poisson(PoissonConfig{Rate: rate, Burstiness: 1, Count: n, Seed: seed, Lengths: UniformLengths{Input: 10, Output: 10}}))
		if len(arr) != n {
			t.Fatalf("seed %d: %d arrivals, want %d", seed, len(arr), n)
		}
		if arr[0].At != 0 {
			t.Errorf("seed %d: first arrival at %v, want 0", seed, arr[0].At)
		}
		got := float64(n-1) / arr[n-1].At.Seconds()
		if math.Abs(got-rate)/rate > 0.02 {
			t.Errorf("seed %d: mean rate %.2f, want within 2%% of %g", seed, got, rate)
		}
		// Critical value of the KS test at α = 0.01 is 1.628/√n. Gaps are
		// rounded to 1 µs in the CSV (1 % of a mean gap of 10 ms at most).
		d := ksExponential(gaps(arr), rate)
		if crit := 1.628 / math.Sqrt(n-1); d > crit {
			t.Errorf("seed %d: KS statistic %.4f > %.4f: gaps are not exponential", seed, d, crit)
		}
	}
}

func TestPoissonRejectsWrongDistribution(t *testing.T) {
	// The KS check above must be able to fail: constant gaps are not
	// exponential, and neither are exponential gaps at twice the rate.
	arr := exported(t, Poisson(PoissonConfig{Rate: 200, Burstiness: 1, Count: 5000, Seed: 1, Lengths: UniformLengths{Input: 1, Output: 1}}))
	if d, crit := ksExponential(gaps(arr), 100), 1.628/math.Sqrt(4999); d <= crit {
		t.Errorf("KS statistic %.4f ≤ %.4f for a rate-200 process tested against rate 100", d, crit)
	}
}

func TestBurstinessGivesGammaGaps(t *testing.T) {
	for _, k := range []float64{0.25, 0.5, 2, 4} {
		arr := exported(t, Poisson(PoissonConfig{Rate: 50, Burstiness: k, Count: 40000, Seed: 7, Lengths: UniformLengths{Input: 1, Output: 1}}))
		g := gaps(arr)
		mean, sq := 0.0, 0.0
		for _, v := range g {
			mean += v
		}
		mean /= float64(len(g))
		for _, v := range g {
			sq += (v - mean) * (v - mean)
		}
		cv := math.Sqrt(sq/float64(len(g))) / mean
		// Gamma(k) gaps: mean 1/rate, CV 1/√k. With 40,000 gaps the
		// sampling error of both is well under 3 %.
		if math.Abs(mean-1.0/50)*50 > 0.03 {
			t.Errorf("k=%g: mean gap %.5f s, want 0.02 ± 3 %%", k, mean)
		}
		if want := 1 / math.Sqrt(k); math.Abs(cv-want)/want > 0.05 {
			t.Errorf("k=%g: gap CV %.3f, want %.3f ± 5 %%", k, cv, want)
		}
	}
}

func TestScheduleIsByteIdenticalForSameSeed(t *testing.T) {
	cfg := PoissonConfig{Rate: 123.4, Burstiness: 0.7, Count: 3000, Seed: 99, Lengths: UniformLengths{Input: 512, Output: 64, RangeRatio: 0.5}}
	var a, b, c bytes.Buffer
	WriteCSV(&a, Poisson(cfg))
	WriteCSV(&b, Poisson(cfg))
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed gave different schedule files")
	}
	cfg.Seed = 100
	WriteCSV(&c, Poisson(cfg))
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds gave the same schedule")
	}
}

func TestLengthsDoNotMoveTimes(t *testing.T) {
	// Times and sizes come from independent streams: changing the length
	// options keeps every arrival time.
	a := exported(t, Poisson(PoissonConfig{Rate: 10, Burstiness: 1, Count: 500, Seed: 5, Lengths: UniformLengths{Input: 100, Output: 10}}))
	b := exported(t, Poisson(PoissonConfig{Rate: 10, Burstiness: 1, Count: 500, Seed: 5, Lengths: UniformLengths{Input: 100, Output: 10, RangeRatio: 0.9}}))
	for i := range a {
		if a[i].At != b[i].At {
			t.Fatalf("arrival %d moved from %v to %v when only lengths changed", i, a[i].At, b[i].At)
		}
	}
}

func TestUniformLengthsRange(t *testing.T) {
	u := UniformLengths{Input: 1000, Output: 100, RangeRatio: 0.25}
	r := Rand(1, StreamLengths)
	seenLo, seenHi := false, false
	for i := range 20000 {
		in, out := u.Draw(r, int64(i))
		if in < 750 || in > 1250 || out < 75 || out > 125 {
			t.Fatalf("draw %d: (%d, %d) outside [750,1250]×[75,125]", i, in, out)
		}
		seenLo = seenLo || in == 750
		seenHi = seenHi || in == 1250
	}
	if !seenLo || !seenHi {
		t.Errorf("range ends not reached (lo %v, hi %v)", seenLo, seenHi)
	}
	in, out := UniformLengths{Input: 7, Output: 3}.Draw(r, 0)
	if in != 7 || out != 3 {
		t.Errorf("ratio 0 drew (%d, %d), want exactly (7, 3)", in, out)
	}
}

func TestInfiniteRateAndLimits(t *testing.T) {
	arr := exported(t, Poisson(PoissonConfig{Rate: math.Inf(1), Burstiness: 1, Count: 50, Seed: 1, Lengths: UniformLengths{Input: 1, Output: 1}}))
	if len(arr) != 50 {
		t.Fatalf("%d arrivals, want 50", len(arr))
	}
	for _, a := range arr {
		if a.At != 0 {
			t.Fatalf("rate inf: arrival %d at %v, want 0", a.Index, a.At)
		}
	}
	// A duration bounds an unbounded count.
	arr = exported(t, Poisson(PoissonConfig{Rate: 1000, Burstiness: 1, Duration: 2 * time.Second, Seed: 1, Lengths: UniformLengths{Input: 1, Output: 1}}))
	if n := len(arr); n < 1800 || n > 2200 {
		t.Errorf("2 s at 1000 req/s gave %d arrivals", n)
	}
	if last := arr[len(arr)-1].At; last >= 2*time.Second {
		t.Errorf("last arrival at %v, beyond the 2 s duration", last)
	}
	got := exported(t, Limit(Poisson(PoissonConfig{Rate: 10, Burstiness: 1, Count: 100, Seed: 1, Lengths: UniformLengths{Input: 1, Output: 1}}), 10, 0))
	if len(got) != 10 {
		t.Errorf("Limit(10) kept %d", len(got))
	}
}

func TestPoissonConfigValidate(t *testing.T) {
	ok := PoissonConfig{Rate: 1, Burstiness: 1, Count: 1, Lengths: UniformLengths{Input: 1, Output: 1}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for name, c := range map[string]PoissonConfig{
		"zero rate":      {Rate: 0, Burstiness: 1, Count: 1, Lengths: ok.Lengths},
		"nan rate":       {Rate: math.NaN(), Burstiness: 1, Count: 1, Lengths: ok.Lengths},
		"no length":      {Rate: 1, Burstiness: 1, Lengths: ok.Lengths},
		"inf no count":   {Rate: math.Inf(1), Burstiness: 1, Duration: time.Second, Lengths: ok.Lengths},
		"bad shape":      {Rate: 1, Burstiness: 0, Count: 1, Lengths: ok.Lengths},
		"no lengths":     {Rate: 1, Burstiness: 1, Count: 1},
		"infinite shape": {Rate: 1, Burstiness: math.Inf(1), Count: 1, Lengths: ok.Lengths},
	} {
		if c.Validate() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestShardUnionIsTheSchedule(t *testing.T) {
	s := Poisson(PoissonConfig{Rate: 100, Burstiness: 1, Count: 1000, Seed: 3, Lengths: UniformLengths{Input: 5, Output: 5, RangeRatio: 0.5}})
	whole := exported(t, s)
	var union []Arrival
	for i := range int64(3) {
		part := exported(t, Shard(s, i, 3))
		for _, a := range part {
			if a.Index%3 != i {
				t.Fatalf("shard %d/3 kept index %d", i, a.Index)
			}
		}
		union = append(union, part...)
	}
	sort.Slice(union, func(i, j int) bool { return union[i].Index < union[j].Index })
	if len(union) != len(whole) {
		t.Fatalf("union of shards has %d arrivals, want %d", len(union), len(whole))
	}
	for i := range whole {
		if whole[i].Index != union[i].Index || whole[i].At != union[i].At || whole[i].InputTokens != union[i].InputTokens {
			t.Fatalf("arrival %d differs between the schedule and the union of its shards", i)
		}
	}
}

func BenchmarkPoissonSchedule(b *testing.B) {
	cfg := PoissonConfig{Rate: 1000, Burstiness: 1, Count: 1_000_000, Seed: 1, Lengths: UniformLengths{Input: 1024, Output: 128, RangeRatio: 0.5}}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range Poisson(cfg) {
			n++
		}
		if n != 1_000_000 {
			b.Fatal(n)
		}
	}
}

// Divide saturates where a plain conversion overflowed: --time-scale
// 1e-300 made offsets negative ("-9223372036.(+,))+" in the schedule CSV).
func TestDivideSaturates(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		factor float64
		want   time.Duration
	}{
		{time.Second, 1e-300, math.MaxInt64},
		{-time.Second, 1e-300, math.MinInt64},
		{3 * time.Second, 2, 1500 * time.Millisecond},
		{0, 1e-300, 0},
	} {
		if got := Divide(c.d, c.factor); got != c.want {
			t.Errorf("Divide(%v, %g) = %v, want %v", c.d, c.factor, got, c.want)
		}
	}
	s := Scale(func(yield func(Arrival) bool) { yield(Arrival{At: time.Second}) }, 1e-300)
	for a := range s {
		if a.At != math.MaxInt64 {
			t.Errorf("scaled offset %v, want the largest Duration", a.At)
		}
	}
}
