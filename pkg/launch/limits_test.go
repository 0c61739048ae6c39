package launch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
	"github.com/fineserve-gen/fineserve-gen/pkg/options"
)

// Length flags above the token limit are a usage error, with the limit
// and where it comes from.
func TestLengthFlagsAboveTheLimit(t *testing.T) {
	for _, c := range []struct {
		name    string
		set     func(o *options.Options)
		wantErr string
	}{
		{"built-in cap", func(o *options.Options) { o.RandomInputLen = 2000000 }, "--random-input-len 2000000 + --random-output-len 128 exceed the token limit 1048576 (the built-in cap)"},
		{"above every limit", func(o *options.Options) { o.RandomInputLen = 2147483647 }, "--random-input-len 2147483647: want a number of tokens from 1 to 16777216"},
		{"max-model-len", func(o *options.Options) { o.MaxModelLen, o.RandomInputLen = 4096, 4000 }, "exceed the token limit 4096 (--max-model-len)"},
		{"range ratio", func(o *options.Options) { o.MaxModelLen, o.RandomInputLen, o.RandomRangeRatio = 4096, 3000, 0.5 }, "(with --random-range-ratio 0.5: up to 4500 + 192)"},
		{"replay fills lengths", func(o *options.Options) {
			p := filepath.Join(t.TempDir(), "t.csv")
			os.WriteFile(p, []byte("ts,other\n0,a\n1,b\n"), 0o644)
			o.Mode, o.Replay.TracePath, o.MaxModelLen = "replay", p, 100
		}, "exceed the token limit 100 (--max-model-len)"},
		{"within the limit", func(o *options.Options) { o.MaxModelLen = 1152 }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := options.Defaults()
			o.DryRun, o.Quiet, o.Seed, o.NumPrompts = true, true, 1, 10
			c.set(&o)
			_, err := runQuiet(o)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ue *options.UsageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %v, want a usage error containing %q", err, c.wantErr)
			}
		})
	}
}

// The served model's max_model_len is the limit when --max-model-len is
// not given: rows above it are counted and reported, never sent.
func TestServerTokenLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(p, []byte("timestamp,input_length,output_length\n0,100,10\n1000,4000,200\n2000,2147483647,1\n3000,50,5\n"), 0o644)
	var over atomic.Int64
	port := startMock(t, mockserver.Config{MaxModelLen: 4096, OnRequest: func(path string, body []byte) {
		if bytes.Contains(body, []byte(`"max_tokens":200`)) {
			over.Add(1)
		}
	}})
	o := replayOptions(p)
	o.Port, o.TimeScale, o.Quiet = port, 1000, false
	o.Model = "mock-model"
	sum, _, stderr := runReplay(t, o)
	var info options.ReplayInfo
	if ok, err := testenv.SectionOf(t, sum, "replay", &info); !ok || err != nil {
		t.Fatalf("no replay entry (%v)", err)
	}
	if info.Skipped.OverLimit != 2 || info.Skipped.Limit != 4096 || info.Replayed != 2 || sum.Completed != 2 || over.Load() != 0 {
		t.Fatalf("replay entry %+v, %d completed, %d over-limit requests sent", info, sum.Completed, over.Load())
	}
	for _, want := range []string{
		"token limit: 4096 tokens a request (input + output; the server's max_model_len for mock-model)",
		"left out 2 row(s) above the token limit 4096 (input + output tokens; the server's max_model_len for mock-model) (lines 3, 4)",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// --max-model-len wins over the server's.
	o.MaxModelLen = 200
	sum, _, _ = runReplay(t, o)
	if ok, _ := testenv.SectionOf(t, sum, "replay", &info); !ok || info.Skipped.OverLimit != 2 || info.Skipped.LimitFrom != "--max-model-len" || info.Replayed != 2 {
		t.Fatalf("with --max-model-len 200: %+v", info)
	}
}
