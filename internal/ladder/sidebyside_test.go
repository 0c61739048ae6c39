package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// constantArrivals returns the arrivals, as the server logs them (in time
// order), of n requests of a constant-rate schedule starting at origin
// (Unix ns), each delayed by delay(i).
func constantArrivals(origin int64, rate float64, n int, delay func(int) time.Duration) []int64 {
	a := make([]int64, n)
	for i := range a {
		a[i] = origin + int64(math.Round(float64(i)*1e9/rate)) + int64(delay(i))
	}
	slices.Sort(a)
	return a
}

func TestLagFromArrivals(t *testing.T) {
	const origin = int64(1_795_568_409_420_150_021) // a Unix ns instant: beyond float64's exact integers
	const transit = 50 * time.Microsecond
	for _, tc := range []struct {
		name          string
		rate          float64
		delay         func(int) time.Duration
		p50, p99, max float64 // ms
	}{
		{"on time", 1000, func(int) time.Duration { return transit }, 0, 0, 0},
		// 11 of 1,000 late: the 990th lag (p99) is one of the ten at 0.5 ms.
		{"some late", 1000, func(i int) time.Duration {
			switch {
			case i == 10:
				return transit + 900*time.Microsecond
			case i >= 20 && i < 30:
				return transit + 500*time.Microsecond
			}
			return transit
		}, 0, 0.5, 0.9},
		// A request 3 ms late arrives after the next three (1 ms apart):
		// matched by order, slots 10, 11 and 12 get the requests due at 11,
		// 12 and 13 ms — three lags of 1 ms instead of one of 3 ms.
		{"overtaken", 1000, func(i int) time.Duration {
			if i == 10 {
				return transit + 3*time.Millisecond
			}
			return transit
		}, 0, 0, 1},
		// Half the requests 1 µs late at 3,000 req/s (a gap of 333,333.3 ns):
		// the rounding of due times must not show as lag.
		{"fractional gap", 3000, func(i int) time.Duration { return transit + time.Duration(i%2)*time.Microsecond }, 0, 0.001, 0.001},
		// Falling behind: every request 10 µs later than the one before.
		{"falling behind", 1000, func(i int) time.Duration { return transit + time.Duration(i)*10*time.Microsecond }, 4.99, 9.89, 9.99},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := lagFromArrivals(constantArrivals(origin, tc.rate, 1000, tc.delay), tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"p50", l.P50, tc.p50}, {"p99", l.P99, tc.p99}, {"max", l.Max, tc.max}} {
				if math.Abs(c.got-c.want) > 1e-6 { // 1 ns
					t.Errorf("%s lag %.6f ms, want %.6f", c.name, c.got, c.want)
				}
			}
			if l.Arrived != 1000 {
				t.Errorf("arrived %d, want 1000", l.Arrived)
			}
			// The origin is the on-time requests' arrival: the schedule's
			// start plus the transit time.
			if want := origin + int64(transit); math.Abs(float64(l.Origin-want)) > 1 {
				t.Errorf("origin %d, want %d", l.Origin, want)
			}
		})
	}
	l, err := lagFromArrivals(constantArrivals(origin, 2000, 2001, func(int) time.Duration { return 0 }), 2000)
	if err != nil || math.Abs(l.Achieved-2000) > 1e-6 {
		t.Errorf("achieved %v (%v), want 2000 req/s", l.Achieved, err)
	}
}

func TestLagFromSchedule(t *testing.T) {
	const origin = int64(1_795_568_409_420_150_021)
	// An irregular schedule: gaps of 1, 0.1 and 2.5 ms in turn.
	var due []time.Duration
	var at time.Duration
	for i := range 999 {
		due = append(due, at)
		at += []time.Duration{time.Millisecond, 100 * time.Microsecond, 2500 * time.Microsecond}[i%3]
	}
	arrivals := make([]int64, len(due))
	for i, d := range due {
		late := 40 * time.Microsecond // transit
		if i%100 == 7 {
			late += 80 * time.Microsecond // 10 requests; less than the shortest gap, so the order holds
		}
		arrivals[i] = origin + int64(d+late)
	}
	l, err := lagFromSchedule(arrivals, due)
	if err != nil {
		t.Fatal(err)
	}
	if l.P50 != 0 || math.Abs(l.P99-0.08) > 1e-9 || math.Abs(l.Max-0.08) > 1e-9 || l.Origin != origin+int64(40*time.Microsecond) {
		t.Errorf("lag %+v: want p50 0, p99 and max 0.08 ms, origin at the transit", l)
	}
	// Against a constant schedule of the same mean rate the same arrivals
	// look far off: the due times matter.
	c, err := lagFromArrivals(arrivals, float64(len(due)-1)/at.Seconds())
	if err != nil || c.Max < 1 {
		t.Errorf("as a constant schedule: max lag %v ms (%v), want > 1 ms", c.Max, err)
	}
	if _, err := lagFromSchedule(arrivals, due[:10]); err == nil || !strings.Contains(err.Error(), "only 10 were scheduled") {
		t.Errorf("more arrivals than due times: %v", err)
	}
}

func TestReadSchedule(t *testing.T) {
	h := "index,time_s,input_len,output_len,model,num_images,burst\n"
	due, err := readSchedule(strings.NewReader(h + "0,0.000000,1,1,,0,0\n1,0.000333,1,1,,0,1\n2,1.500001,1,1,,0,2\n"))
	if err != nil || len(due) != 3 || due[1] != 333*time.Microsecond || due[2] != 1500001*time.Microsecond {
		t.Errorf("readSchedule: %v, %v", due, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", "no arrivals"},
		{h, "no arrivals"},
		{"time_s,index\n", "line 1"},
		{h + "0,0.1,1\n2,0.2,1\n", "line 3: index 2, want 1"},
		{h + "0,x,1\n", "line 2"},
		{h + "0,-1,1\n", "line 2"},
		{h + "0\n", "line 2"},
	} {
		if _, err := readSchedule(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.want)
		}
	}
}

func TestLagFromArrivalsErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		arrivals []int64
		rate     float64
		want     string
	}{
		{"none", nil, 100, "no request"},
		{"zero rate", []int64{1}, 0, "rate 0"},
		{"infinite rate", []int64{1}, math.Inf(1), "rate +Inf"},
		{"backwards", []int64{10, 20, 15}, 100, "arrival 2 is before arrival 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := lagFromArrivals(tc.arrivals, tc.rate); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestReadArrivalsLag reads an arrival log as the mock writes it and
// measures it.
func TestReadArrivalsLag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.csv")
	log := "seq,arrival_unix_ns\n0,1000000000\n1,1001000000\n2,1002300000\n3,1003000000\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := readArrivals(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lagFromArrivals(a, 1000)
	if err != nil || l.Max != 0.3 || l.P50 != 0 {
		t.Errorf("lag %+v (%v), want max 0.3 ms, p50 0", l, err)
	}
	if err := os.WriteFile(path, []byte("seq,arrival_unix_ns\n0,5\n2,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readArrivals(path); err == nil || !strings.Contains(err.Error(), "a.csv: arrival log: line 3") {
		t.Errorf("error %v, want one naming the file and line 3", err)
	}
}

func TestMaxScheduleDeviation(t *testing.T) {
	csv := "index,time_s,input_len,output_len,model,num_images,burst\n0,0.000000,1,1,,0,0\n1,0.000333,1,1,,0,1\n2,0.000670,1,1,,0,2\n"
	got, err := maxScheduleDeviation(strings.NewReader(csv), 3000)
	if err != nil || math.Abs(got-(0.000670-2.0/3000)) > 1e-12 {
		t.Errorf("deviation %g (%v), want %g", got, err, 0.000670-2.0/3000)
	}
	for _, bad := range []string{"index,time_s\n", "index,time_s,x\n0,x,1\n", "index,time_s\n0\n"} {
		if _, err := maxScheduleDeviation(strings.NewReader(bad), 10); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseRates(t *testing.T) {
	if got, err := parseRates("1000, 2500,12000", true); err != nil || len(got) != 3 || got[1] != 2500 {
		t.Errorf("parseRates: %v, %v", got, err)
	}
	for _, bad := range []string{"", "100,x", "0", "-5", "inf"} {
		if _, err := parseRates(bad, false); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := parseRates("1000,1500.5", true); err == nil || !strings.Contains(err.Error(), "whole") {
		t.Errorf("fractional rate for vegeta: %v, want an error", err)
	}
	if _, err := parseRates("1500.5", false); err != nil {
		t.Errorf("fractional rate without vegeta: %v", err)
	}
}

func sampleSteps() []sideStep {
	run := func(achieved, p50, p99, maxLag, cpu float64, arrived, failed int64) sideRun {
		return sideRun{serverLag: serverLag{Arrived: arrived, Achieved: achieved, P50: p50, P99: p99, Max: maxLag},
			Scheduled: 10000, Failed: failed, cost: cost{CPUPerRequestUS: cpu, ServerCPUPerRequestUS: 80, RSSMB: 30}}
	}
	return []sideStep{
		{Rate: 1000, Fine: run(1000.4, 0.1, 0.12, 3.5, 241, 10000, 0), Vegeta: run(999.8, 0.3, 1.12, 4, 150, 10000, 0)},
		{Rate: 12000, Fine: run(7405, 900, 2700, 3100, 96, 9000, 12), Vegeta: run(11990, 0.4, 1.16, 8, 60, 10000, 0)},
	}
}

func TestPrintSideBySide(t *testing.T) {
	var b strings.Builder
	printSideHeader(&b)
	for _, st := range sampleSteps() {
		printSideRow(&b, st)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 3 of header, 2 rows and 1 shortfall note:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"fineserve-gen", "vegeta"},
		{"rate", "achieved", "lag p99", "client", "mock", "rss"},
		{"req/s", "ms", "µs/req", "MB"},
		{"1000", "0.120", "1.120", "241.0", "150.0", "fineserve-gen"},
		{"12000", "7405", "2700.000", "11990", "1.160", "vegeta"},
		{"fineserve-gen: 9000 of 10000 scheduled requests reached the server, 12 failed"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i+1, lines[i], w)
			}
		}
	}
	// The columns line up: every table line has its separators at the same
	// (rune) positions.
	sep := func(l string) []int {
		var at []int
		for i, r := range []rune(l) {
			if r == '│' {
				at = append(at, i)
			}
		}
		return at
	}
	for i := 1; i < 5; i++ {
		if got, want := sep(lines[i]), sep(lines[0]); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("line %d: separators at %v, header's at %v", i+1, got, want)
		}
	}
}

func TestPrintPoisson(t *testing.T) {
	steps := sampleSteps()
	p := steps[1].Fine
	p.P99 = 1.75
	steps[1].Poisson = &p
	var b strings.Builder
	printPoisson(&b, steps)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	// A title, two header lines and the one rate that has a Poisson run.
	if len(lines) != 4 || !strings.Contains(lines[3], "12000") || !strings.Contains(lines[3], "1.750") {
		t.Errorf("Poisson table:\n%s", b.String())
	}
}

func TestPrintSideMarkdown(t *testing.T) {
	var b strings.Builder
	printSideMarkdown(&b, sampleSteps())
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want header, rule and 2 rows:\n%s", len(lines), b.String())
	}
	if want := "| 12,000 | 7,405 | 900.000 | 2700.000 | 3100.000 | 96 | 11,990 | 0.400 | 1.160 | 8.000 | 60 |"; lines[3] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[3], want)
	}
	for _, l := range lines {
		if strings.Count(l, "|") != 12 {
			t.Errorf("%q: want 11 cells", l)
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0", 999.6: "1,000", 12000: "12,000", 1234567: "1,234,567", -4500: "-4,500", 100: "100"} {
		if got := thousands(in); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestPlotSideBySide(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lag.svg")
	if err := plotSideBySide(sampleSteps(), path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "vegeta p99", "fineserve-gen p50", "goal: p99 ≤ 2 ms at 10,000 req/s"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("plot lacks %q", want)
		}
	}
}

// TestInstallVegetaFails: without the module proxy (and nothing cached) or
// within no time, installing vegeta fails at once with an error that says
// what to do.
func TestInstallVegetaFails(t *testing.T) {
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOFLAGS", "-modcacherw")
	_, err := installVegeta(t.TempDir(), time.Minute)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "installing vegeta") || !strings.Contains(err.Error(), "-vegeta PATH") {
		t.Errorf("without the proxy: %v, want an installation error naming -vegeta PATH", err)
	}
	_, err = installVegeta(t.TempDir(), time.Nanosecond)
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Errorf("no time: %v, want a timeout", err)
	}
}
