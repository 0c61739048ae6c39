package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParseDuration: a duration is rejected or ≥ 0, and its printed form
// parses back to the same value.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "1h30m", "90", "0.5", "", "-1", "1e400", "NaN", "9223372036.854775807", "9223372036", "2562047h47m16.854775807s", " 5m "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			if !strings.Contains(err.Error(), "duration") {
				t.Fatalf("%q: error %q does not say what was wrong", s, err)
			}
			return
		}
		if d < 0 {
			t.Fatalf("%q: negative duration %v", s, d)
		}
		var back time.Duration
		if err := (durationValue{&back}).Set(durationValue{&d}.String()); err != nil || back != d {
			t.Fatalf("%q → %v → %q → %v, %v", s, d, durationValue{&d}.String(), back, err)
		}
	})
}

// FuzzParseRate: a rate is rejected, +Inf, or finite and > 0; printed, it
// parses back.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"inf", "+Inf", "10", "0.5", "0", "-1", "NaN", "1e309", "1e-400", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRate(s)
		if err != nil {
			return
		}
		if !(r > 0) || math.IsNaN(r) || math.IsInf(r, -1) {
			t.Fatalf("%q: rate %v", s, r)
		}
		back, err := parseRate(rateValue{&r}.String())
		if err != nil || back != r {
			t.Fatalf("%q → %v → %v, %v", s, r, back, err)
		}
	})
}

// FuzzParseShard: I/N is rejected or 0 ≤ I < N.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "2/3", "3/3", "-1/2", "1/0", "a/b", "1", " 1 / 4 ", "9223372036854775807/9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		i, n, err := parseShard(s)
		if err != nil {
			return
		}
		if n < 1 || i < 0 || i >= n {
			t.Fatalf("%q: %d/%d", s, i, n)
		}
	})
}

// FuzzMillisMicros: the ms and µs flag values are rejected or ≥ 0.
func FuzzMillisMicros(f *testing.F) {
	for _, s := range []string{"20", "0.5", "-1", "1e9", "1e12", "NaN", "inf", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d time.Duration
		if millisValue(&d).Set(s) == nil && d < 0 {
			t.Fatalf("ms %q: %v", s, d)
		}
		d = 0
		if microsValue(&d).Set(s) == nil && d < 0 {
			t.Fatalf("µs %q: %v", s, d)
		}
	})
}
