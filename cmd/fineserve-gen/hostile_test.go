package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
	"github.com/fineserve-gen/fineserve-gen/pkg/runner"
)

// TestLengthFlagsAreRangeChecked: every length flag is a whole number of
// tokens up to arrival.MaxLength, as --lengths and trace rows are; a
// larger one (which overflowed to negative token counts, built a prompt of
// gigabytes or was sent as max_tokens) is a usage error naming the flag,
// before anything is read or sent.
func TestLengthFlagsAreRangeChecked(t *testing.T) {
	huge := "9223372036854775707"
	above := strconv.Itoa(arrival.MaxLength + 1)
	for _, tc := range []struct {
		flag string
		vals []string
	}{
		{"--random-input-len", []string{huge, above, "0"}},
		{"--random-output-len", []string{"9223372036854775807", above, "-1"}},
		{"--sharegpt-output-len", []string{"9223372036854775807", "-5"}},
		{"--sharegpt-context-len", []string{huge, "-1"}},
		{"--max-model-len", []string{huge, "-1"}},
		{"--prefix-len", []string{huge, "-1"}},
		{"--min-output-len", []string{huge, "0"}},
		{"--tokens-per-image", []string{huge}},
		{"--turn-input-len", []string{huge, "uniform:1:" + huge, "lognormal:" + above + ":1"}},
	} {
		for _, v := range tc.vals {
			t.Run(tc.flag+"="+v, func(t *testing.T) {
				wantUsage(t, []string{"--dry-run", "--seed", "1", "--num-prompts", "2", "--turns", "2", tc.flag, v}, tc.flag)
			})
		}
	}
	// The largest accepted lengths still make a schedule.
	max := strconv.Itoa(arrival.MaxLength)
	mustRun(t, "--dry-run", "--seed", "1", "--num-prompts", "2", "--max-model-len", max,
		"--random-input-len", strconv.Itoa(arrival.MaxLength/2), "--random-output-len", strconv.Itoa(arrival.MaxLength/2))
}

// TestScheduleLimits: a schedule no run could keep is a usage error before
// the first send, and said at once: offsets that overflowed (--time-scale
// 1e-300 wrote "-9223372036.(+,))+", --request-rate 1e-300 a 9.2e9 s
// span), and more requests than arrival.MaxRequests (--num-prompts
// 99999999999 walked the schedule for hours).
func TestScheduleLimits(t *testing.T) {
	trace := "testdata/fineserve_Dense_30to100B_head200.csv"
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--mode", "replay", "--request-trace-csv", trace, "--num-prompts", "3", "--time-scale", "1e-300"},
			[]string{"request 1 is due after", "longest schedule (366 days)", "raise --time-scale (now 1e-300)"}},
		{[]string{"--num-prompts", "3", "--request-rate", "1e-300"}, []string{"request 1 is due after", "raise --request-rate (now 1e-300)"}},
		{[]string{"--num-prompts", "1000", "--request-rate", "1e-5"}, []string{"is due at", "s, later than the longest schedule"}},
		{[]string{"--num-prompts", "99999999999"}, []string{"--num-prompts 99999999999: want 1 to 1000000000"}},
		{[]string{"--request-rate", "1e6", "--duration", "10000h"}, []string{"is 3.6e+13 requests: at most 1000000000"}},
		{[]string{"--request-rate", "1", "--duration", "9000h"}, []string{"--duration 9000h0m0s: want > 0 and at most 8784h0m0s"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "s.csv")
			done := make(chan struct{})
			go func() {
				defer close(done)
				wantUsage(t, append([]string{"--dry-run", "--seed", "1", "--schedule-out", out}, c.args...), c.want...)
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("still computing the schedule after a minute")
			}
		})
	}
}

// TestReplayHoldsOnlyWhatItSends: a small gzip file of millions of rows
// (a row-count bomb) replayed for --num-prompts 100 holds 100 rows and
// stops reading once it has them; it held every row (≈ 50 B each: 4 GB
// for 144 M rows).
func TestReplayHoldsOnlyWhatItSends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.csv.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	zw.Write([]byte("timestamp,input_length,output_length\n"))
	rows := bytes.Repeat([]byte("1000,1,1\n"), 1<<16)
	for range 48 { // 3 M rows
		zw.Write(rows)
	}
	if err := zw.Close(); err != nil || f.Close() != nil {
		t.Fatal(err)
	}
	sched := filepath.Join(t.TempDir(), "s.csv")
	_, stderr := mustRun(t, "--dry-run", "--seed", "1", "--mode", "replay", "--trace", path, "--num-prompts", "100", "--schedule-out", sched)
	for _, want := range []string{
		"1048576 usable of 1048576 rows",
		"read to line 1048577: the rows this replay uses are held",
		"schedule: 100 requests",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// TestWarmupRetriesAFailure: one failed warm-up request (one fault of a
// server that fails 20 % of its requests) no longer stops the run (it
// exited 1): it is sent again and the run goes on with a warning. Only a
// warm-up whose every attempt fails stops the run.
func TestWarmupRetriesAFailure(t *testing.T) {
	faults := mockserver.FaultConfig{Faults: []mockserver.Fault{{Kind: mockserver.FaultHTTP500, Rate: 0.2}}}
	// A seed whose first request faults and the next twelve do not.
	for faults.Seed = 0; ; faults.Seed++ {
		ok := faults.FaultFor(1) == mockserver.FaultHTTP500
		for n := int64(2); ok && n <= 13; n++ {
			ok = faults.FaultFor(n) == ""
		}
		if ok {
			break
		}
	}
	srv, port := mocktest.Start(t, mockserver.Config{Faults: faults})
	r := runTool(t, append(baseArgs(port, 5), "--warmup-requests", "1")...)
	if r.code != exitOK || !strings.Contains(r.stderr, "warning: warm-up: 1 of 1 request(s) succeeded after 1 failed attempt(s) (the first: http_5xx:") {
		t.Errorf("exit %d, want %d with a warning about the retried warm-up\n%s", r.code, exitOK, r.stderr)
	}
	if s := r.summary(t); s.Completed != 5 || srv.FaultCounts()[mockserver.FaultHTTP500] != 1 {
		t.Errorf("%d completed, %d faults; want 5 and 1", s.Completed, srv.FaultCounts()[mockserver.FaultHTTP500])
	}

	// Nothing works: every attempt fails, the run stops before sending.
	faults.Faults[0].Rate = 1
	srv, port = mocktest.Start(t, mockserver.Config{Faults: faults})
	r = runTool(t, append(baseArgs(port, 5), "--warmup-requests", "1")...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "warm-up failed: the warm-up request failed 4 times; first error (http_5xx)") {
		t.Errorf("exit %d, want %d saying the warm-up failed 4 times\n%s", r.code, exitFailure, r.stderr)
	}
	if n := srv.FaultCounts()[mockserver.FaultHTTP500]; n != runner.WarmupAttempts {
		t.Errorf("%d warm-up attempts, want %d", n, runner.WarmupAttempts)
	}
}

// TestOutputsCheckedBeforeSending: an output in a missing directory, under
// a file, or on a directory is a usage error naming the flag and the path
// before any request is sent (the summary was lost at the end of the run).
func TestOutputsCheckedBeforeSending(t *testing.T) {
	var generations atomic.Int64
	_, port := mocktest.Start(t, mockserver.Config{OnRequest: func(path string, _ []byte) {
		if strings.HasSuffix(path, "completions") {
			generations.Add(1)
		}
	}})
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	missing := filepath.Join(dir, "missing", "out")
	for _, c := range []struct {
		flag, path, why string
		more            []string
	}{
		{"--summary-json", missing, "directory " + filepath.Dir(missing) + " does not exist", nil},
		{"--report-html", missing, "does not exist", nil},
		{"--output-file", missing, "does not exist", nil},
		{"--results-jsonl", missing, "does not exist", nil},
		{"--results-parquet", missing, "does not exist", nil},
		{"--results-csv", missing, "does not exist", nil},
		{"--repeats-csv", missing, "does not exist", []string{"--repeat", "2"}},
		{"--benchmark-report", missing, "does not exist", nil},
		{"--benchmark-report", file, "--results-parquet names the same file", []string{"--results-parquet", file}},
		{"--schedule-out", missing, "does not exist", nil},
		{"--sessions-out", missing, "does not exist", []string{"--turns", "2"}},
		{"--mem-profile", missing, "does not exist", nil},
		{"--mutex-profile", missing, "does not exist", nil},
		{"--summary-json", filepath.Join(file, "s.json"), "not a directory", nil},
		{"--summary-json", dir, "is a directory", nil},
		{"--output-file", file, "--summary-json names the same file", []string{"--summary-json", file}},
	} {
		t.Run(c.flag+" "+c.why, func(t *testing.T) {
			args := append(baseArgs(port, 3), append([]string{c.flag, c.path, "--warmup-requests", "1"}, c.more...)...)
			wantUsage(t, args, c.flag+" "+c.path+": ", c.why)
			if n := generations.Load(); n != 0 {
				t.Errorf("%d requests sent before the check", n)
			}
		})
	}
	// A dry run checks them too: it is how a command line is tried.
	wantUsage(t, []string{"--dry-run", "--summary-json", missing}, "--summary-json "+missing)
}

// TestFullDiskNamesEveryOutput: when the disk is full at the end, every
// output that failed is named (only the summary and --output-file were; the
// HTML report and the records were not).
func TestFullDiskNamesEveryOutput(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	_, port := mocktest.Start(t, mockserver.Config{})
	dir := t.TempDir()
	full := func(name string) string { // a file on a full disk
		p := filepath.Join(dir, name)
		if err := os.Symlink("/dev/full", p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := append(baseArgs(port, 3), "--summary-json", full("s.json"), "--output-file", full("o.jsonl"),
		"--report-html", full("r.html"), "--results-jsonl", full("r.jsonl"), "--disable-tqdm",
		"--results-parquet", full("r.parquet"), "--benchmark-report", full("br.yaml"))
	code, _, stderr := runCmd(args...)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	for _, want := range []string{"summary " + dir + "/s.json", "output file " + dir + "/o.jsonl", "--report-html " + dir + "/r.html", "results: " + dir + "/r.jsonl", "no space left on device",
		dir + "/r.parquet", "--benchmark-report " + dir + "/br.yaml"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not name %q:\n%s", want, stderr)
		}
	}
}

// TestOutsideTextCannotDriveTheTerminal: a model name and error messages
// from the server, and a model name from a trace file, reach the terminal
// with their control characters escaped (termsafe): "\x1b]0;…\a\x1b[2J"
// retitled the window and cleared the screen, and a newline in an error
// forged a line of the table.
func TestOutsideTextCannotDriveTheTerminal(t *testing.T) {
	const evil = "\x1b]0;pwned\a\x1b[2J"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": "evil" + evil + "model", "max_model_len": 4096}}})
			return
		}
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "bad" + evil + "\nFAKE TABLE LINE", "code": 400}})
	}))
	defer srv.Close()
	trace := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(trace, []byte("index,time_s,input_len,output_len,model,num_images,burst\n0,0,8,4,m"+evil+",0,0\n1,0.001,8,4,m"+evil+",0,1\n"), 0o644)
	base := []string{"--base-url", srv.URL, "--num-prompts", "2", "--seed", "1", "--random-input-len", "8", "--random-output-len", "4", "--disable-tqdm"}
	for _, args := range [][]string{
		append(base, "--warmup-requests", "1"),
		append(base, "--warmup-requests", "0"),
		append(base, "--warmup-requests", "0", "--mode", "replay", "--trace", trace),
		{"--dry-run", "--mode", "replay", "--trace", trace, "--seed", "1", "--model-map", "m" + evil + "=x"},
	} {
		code, stdout, stderr := runCmd(args...)
		out := stdout + stderr
		if strings.ContainsAny(out, "\x1b\a") || strings.Contains(out, "\nFAKE TABLE LINE") {
			t.Errorf("%v: exit %d, the server's or the file's control characters reach the terminal:\n%q", args, code, out)
		}
		if !strings.Contains(out, `\x1b]0;pwned\a\x1b[2J`) {
			t.Errorf("%v: exit %d, the text is not shown escaped:\n%s", args, code, out)
		}
	}
}

// TestAgenticUnusableSaysWhy: an agentic trace whose every entry is
// skipped is refused with the first skip's reason (run said only "no
// usable conversation"), and a token count near the int64 limit is a
// skip naming the limit: the expected block count overflowed and the
// message printed "-144115188075855871".
func TestAgenticUnusableSaysWhy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, format, want string }{
		{"weka.json", `{"id":"a","block_size":64,"requests":[{"t":0,"type":"n","in":9223372036854775807,"out":5,"hash_ids":[1,2]}]}`, "weka",
			"no usable conversation: 2 unusable entr(ies) skipped; first: line 1: requests[0].in: 9223372036854775807: want 1 to 16777216"},
		{"bailian.jsonl", `{"chat_id":1,"parent_chat_id":-1,"timestamp":0,"input_length":9223372036854775807,"output_length":5,"turn":1,"type":"text","hash_ids":[1]}`, "bailian",
			"no usable conversation: 1 unusable entr(ies) skipped; first: line 1: input_length: 9223372036854775807: want at most 16777216"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := runTool(t, "--dry-run", "--seed", "1", "--mode", "replay", "--trace", path, "--trace-format", tc.format)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "-1441") {
			t.Errorf("%s: exit %d, stderr lacks %q:\n%s", tc.name, r.code, tc.want, r.stderr)
		}
	}
}
