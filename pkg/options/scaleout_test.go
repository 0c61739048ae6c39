package options

import (
	"strings"
	"testing"
	"time"
)

func TestParseStartAt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{"2025-06-01T12:00:00Z", time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), ""},
		{"2025-06-01T14:00:00.25+02:00", time.Date(2025, 6, 1, 12, 0, 0, 250e6, time.UTC), ""},
		{"1748779200", time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), ""},
		{"1748779200.5", time.Date(2025, 6, 1, 12, 0, 0, 500e6, time.UTC), ""},
		{" 1748779200.000000001 ", time.Date(2025, 6, 1, 12, 0, 0, 1, time.UTC), ""},
		{"1748779200.1234567899", time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC), ""},
		{"", time.Time{}, "empty"},
		{"-5", time.Time{}, "want an RFC 3339 time"},
		{"1748779200.", time.Time{}, "want an RFC 3339 time"},
		{"1e9", time.Time{}, "want an RFC 3339 time"},
		{"2025-06-01 12:00:00", time.Time{}, "want an RFC 3339 time"},
		{"now", time.Time{}, "want an RFC 3339 time"},
		{"99999999999999999999", time.Time{}, "want an RFC 3339 time"},
	} {
		got, err := ParseStartAt(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || !got.Equal(tc.want)):
			t.Errorf("%q: %v %v, want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestShardNeedsAnExplicitSeed(t *testing.T) {
	o := Defaults()
	o.ShardIndex, o.ShardCount = 1, 3
	err := o.Validate()
	if err == nil || !strings.Contains(err.Error(), "--shard 1/3 needs an explicit --seed") {
		t.Fatalf("error %v", err)
	}
	o.Seed = 0
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	o.ShardIndex, o.ShardCount, o.Seed = 0, 1, -1
	if err := o.Validate(); err != nil {
		t.Fatalf("an unsharded run with a time-based seed: %v", err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("index %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestCheckRequestIDPrefix: a prefix is a plain word of at most 64
// characters; anything that would break a header or a log line is refused.
func TestCheckRequestIDPrefix(t *testing.T) {
	for p, ok := range map[string]bool{"": true, "run7-": true, strings.Repeat("x", 64): true,
		strings.Repeat("x", 65): false, "a b": false, "a\r\nX-Evil: 1": false} {
		if err := checkRequestIDPrefix(p); (err == nil) != ok {
			t.Errorf("CheckRequestIDPrefix(%q) = %v, want ok %v", p, err, ok)
		}
	}
}
