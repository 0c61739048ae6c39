package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
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

func TestStartAtInThePastIsRefused(t *testing.T) {
	o := Defaults()
	o.Seed, o.Port = 1, 1 // nothing listens: the check comes first
	o.StartAt = time.Now().Add(-5 * time.Second)
	_, err := Run(context.Background(), o, IO{Out: io.Discard, Err: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "--start-at") || !strings.Contains(err.Error(), "s ago at launch") {
		t.Fatalf("error %v", err)
	}
	if _, ok := err.(*UsageError); !ok {
		t.Errorf("%T is not a usage error", err)
	}
	// A dry run only builds the schedule (e.g. to reproduce a past run's).
	o.DryRun = true
	if _, err := Run(context.Background(), o, IO{Out: io.Discard, Err: io.Discard}); err != nil {
		t.Errorf("dry run: %v", err)
	}
	// Within the slack: accepted (the first requests leave late).
	o.StartAt = time.Now().Add(-StartAtSlack / 2)
	if err := checkStartAt(&o, time.Now(), "now"); err != nil {
		t.Error(err)
	}
}

func TestWaitForStartSleepsUntilStartAt(t *testing.T) {
	o := Defaults()
	o.StartAt = time.Now().Add(150 * time.Millisecond).Round(0)
	var log bytes.Buffer
	start, err := waitForStart(context.Background(), &o, &logger{w: &log})
	if err != nil {
		t.Fatal(err)
	}
	if !start.Equal(o.StartAt) || time.Now().Before(o.StartAt) {
		t.Errorf("started %v, want %v", start, o.StartAt)
	}
	if !strings.Contains(log.String(), "start-at: waiting") {
		t.Errorf("log %q", log.String())
	}
	// A stopped run does not wait.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o.StartAt = time.Now().Add(time.Hour)
	if _, err := waitForStart(ctx, &o, &logger{w: io.Discard}); err == nil {
		t.Error("waited an hour through a canceled context")
	}
}

// TestShardsSplitTheScheduleInEveryMode builds the schedule of each mode
// whole and as three shards: every copy computes the same schedule hash —
// the SHA-256 of the unsharded schedule CSV — and the shards' CSV rows,
// put together, are the whole schedule's, byte for byte.
func TestShardsSplitTheScheduleInEveryMode(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(o *Options)
	}{
		{"poisson", func(o *Options) {
			o.RequestRate, o.NumPrompts, o.NumPromptsSet, o.Burstiness = 40, 500, true, 0.5
			o.RandomRangeRatio = 0.5
		}},
		{"replay", func(o *Options) {
			o.Mode = "replay"
			o.Replay.TracePath = tracePath(t, "burstgpt_models.csv")
			o.TimeScale = 20
		}},
		{"parametric", func(o *Options) {
			o.Mode = "parametric"
			o.Parametric.ModelClass = "Dense_lt10B" // NB micro-bursts: shards split bursts
			o.NumPrompts, o.NumPromptsSet = 2000, true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := func(i, n int64) (rows []string, hash string) {
				o := Defaults()
				o.Seed, o.ShardIndex, o.ShardCount = 42, i, n
				tc.set(&o)
				if err := o.Validate(); err != nil {
					t.Fatal(err)
				}
				wl, err := buildSchedule(&o, 42, &logger{w: io.Discard})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if _, err := arrival.WriteCSV(&buf, wl.schedule); err != nil {
					t.Fatal(err)
				}
				h, total, ok := wl.hash.result()
				if !ok {
					t.Fatal("no hash after a complete walk")
				}
				lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
				if lines[0] != arrival.ScheduleHeader {
					t.Fatalf("header %q", lines[0])
				}
				if n == 1 {
					sum := sha256.Sum256(buf.Bytes())
					if want := "sha256:" + hex.EncodeToString(sum[:]); h != want {
						t.Errorf("hash %s, want the CSV's %s", h, want)
					}
					if total != int64(len(lines)-1) {
						t.Errorf("hash over %d arrivals, the schedule has %d", total, len(lines)-1)
					}
				}
				return lines[1:], h
			}
			whole, hash := build(0, 1)
			if len(whole) < 100 {
				t.Fatalf("only %d arrivals", len(whole))
			}
			var union []string
			for i := range int64(3) {
				rows, h := build(i, 3)
				if h != hash {
					t.Errorf("shard %d/3: hash %s, want %s", i, h, hash)
				}
				for _, r := range rows {
					idx, _, _ := strings.Cut(r, ",")
					if n := atoi(t, idx); int64(n%3) != i {
						t.Fatalf("shard %d/3 holds arrival %d", i, n)
					}
				}
				union = append(union, rows...)
			}
			slices.SortStableFunc(union, func(a, b string) int { return atoi(t, strings.Split(a, ",")[0]) - atoi(t, strings.Split(b, ",")[0]) })
			if !slices.Equal(union, whole) {
				t.Errorf("the shards' union (%d rows) is not the schedule (%d rows)", len(union), len(whole))
			}
		})
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
