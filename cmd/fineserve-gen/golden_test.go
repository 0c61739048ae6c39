package main

// The golden corpus: seeded runs of the real command against the built-in
// server, one per mode and backend family plus a sharded run with its merge
// and a faulting run. Every output a script reads — the schedule CSV, the
// summary JSON, the records JSONL, the console table, the notes on stderr
// and the merge — is compared with testdata/golden after the figures that
// depend on the clock are blanked (see volatileKey). A refactor keeps every
// golden file identical; a change of output regenerates them on purpose:
//
//	go test ./cmd/fineserve-gen -run TestGolden -update

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/internal/mockserver"
	"github.com/fineserve-gen/fineserve-gen/internal/mockserver/mocktest"
	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// goldenCase is one seeded run; its outputs go to testdata/golden/NAME.
type goldenCase struct {
	name string
	mock mockserver.Config
	args []string
	// shards > 1 runs the case as that many shards (--shard i/N, one after
	// another) and merges their summaries with the merge command.
	shards int
}

func goldenCases() []goldenCase {
	// Small non-zero latencies: every latency figure is present in every
	// run (a zero TPOT is left out of a window, a non-zero one is not).
	quick := mockserver.Config{Models: []string{"mock-model"}, TTFT: 2 * time.Millisecond, ITL: time.Millisecond}
	return []goldenCase{
		{name: "poisson-vllm", mock: quick, args: []string{
			"--backend", "vllm", "--num-prompts", "16", "--request-rate", "400", "--seed", "1",
			"--random-input-len", "64", "--random-output-len", "8", "--random-range-ratio", "0.5"}},
		{name: "poisson-chat-dataset", mock: quick, args: []string{
			"--backend", "openai-chat", "--prompt-format", "text", "--dataset-path", "testdata/golden/sharegpt.json",
			"--num-prompts", "10", "--request-rate", "inf", "--max-concurrency", "3", "--seed", "2",
			"--random-output-len", "6", "--burstiness", "0.5"}},
		{name: "replay-fineserve", mock: quick, args: []string{
			"--mode", "replay", "--request-trace-csv", replayData + "fineserve_Dense_30to100B.csv.gz",
			"--time-scale", "400", "--num-prompts", "12", "--seed", "3", "--disable-stream"}},
		{name: "replay-mooncake-prefix", mock: mockserver.Config{Models: []string{"mock-model"}, TTFT: 2 * time.Millisecond, ITL: time.Millisecond,
			PrefixCache: mockserver.PrefixCacheConfig{Blocks: 1 << 14}}, args: []string{
			"--mode", "replay", "--trace", replayData + "mooncake_synthetic_trace.jsonl.gz",
			"--target-rate", "300", "--num-prompts", "12", "--seed", "4", "--max-concurrency", "1"}},
		{name: "replay-azure-lmm-images", mock: quick, args: []string{
			"--backend", "openai-chat", "--mode", "replay", "--trace", replayData + "azure_lmm_2025.csv",
			"--time-scale", "1000", "--num-prompts", "8", "--image-size", "32x32", "--seed", "5"}},
		{name: "replay-alibaba-images", mock: quick, args: []string{
			"--backend", "openai-images", "--mode", "replay", "--trace", replayData + "alibaba_lora_head300.csv",
			"--time-scale", "36000", "--num-prompts", "8", "--seed", "6"}},
		{name: "parametric-nb", mock: quick, args: []string{
			"--mode", "parametric", "--model-class", "Dense_lt10B", "--time-scale", "2",
			"--num-prompts", "24", "--random-input-len", "32", "--random-output-len", "4", "--seed", "7"}},
		{name: "faults-retries", mock: mockserver.Config{Models: []string{"mock-model"}, TTFT: 2 * time.Millisecond, ITL: time.Millisecond,
			Faults: mockserver.FaultConfig{Seed: 9, Faults: []mockserver.Fault{{Kind: "http_503", Rate: 0.3}}}}, args: []string{
			"--num-prompts", "12", "--request-rate", "300", "--max-concurrency", "1", "--retries", "1",
			"--random-input-len", "16", "--random-output-len", "4", "--seed", "8", "--max-error-rate", "1"}},
		{name: "sharded", mock: quick, shards: 2, args: []string{
			"--num-prompts", "14", "--request-rate", "300", "--seed", "10",
			"--random-input-len", "16", "--random-output-len", "4"}},
	}
}

func TestGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the command against a server")
	}
	for _, gc := range goldenCases() {
		t.Run(gc.name, func(t *testing.T) {
			got := runGolden(t, gc)
			dir := filepath.Join("testdata", "golden", gc.name)
			if *updateGolden {
				os.RemoveAll(dir)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for name, data := range got {
					if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			want, _ := filepath.Glob(filepath.Join(dir, "*"))
			if len(want) == 0 {
				t.Fatalf("no golden files in %s (go test -run TestGolden -update writes them)", dir)
			}
			for _, path := range want {
				name := filepath.Base(path)
				data := testenv.ReadFile(t, path)
				g, ok := got[name]
				if !ok {
					t.Errorf("%s: the run no longer writes it", name)
					continue
				}
				if !bytes.Equal(g, data) {
					t.Errorf("%s differs from %s:\n%s", name, path, firstDifference(g, data))
				}
			}
			for name := range got {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					t.Errorf("%s: a new output with no golden file (-update writes it)", name)
				}
			}
		})
	}
}

// runGolden runs gc and returns its normalized outputs by file name.
func runGolden(t *testing.T, gc goldenCase) map[string][]byte {
	t.Helper()
	_, port := mocktest.Start(t, gc.mock)
	dir := t.TempDir()
	out := map[string][]byte{}
	shards := max(gc.shards, 1)
	var summaries []string
	for i := range shards {
		suffix := ""
		args := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--disable-tqdm"}, gc.args...)
		if gc.shards > 1 {
			suffix = fmt.Sprintf(".shard%d", i)
			args = append(args, "--shard", fmt.Sprintf("%d/%d", i, shards))
		}
		sum := filepath.Join(dir, "summary"+suffix+".json")
		summaries = append(summaries, sum)
		args = append(args,
			"--schedule-out", filepath.Join(dir, "schedule"+suffix+".csv"),
			"--summary-json", sum,
			"--results-jsonl", filepath.Join(dir, "records"+suffix+".jsonl"),
			"--results-csv", filepath.Join(dir, "records"+suffix+".csv"))
		var stdout, stderr bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		code := dispatch(ctx, args, &stdout, &stderr)
		cancel()
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
		out["table"+suffix+".txt"] = normalizeTable(stdout.Bytes())
		out["stderr"+suffix+".txt"] = normalizeNotes(stderr.Bytes(), dir)
		out["schedule"+suffix+".csv"] = testenv.ReadFile(t, filepath.Join(dir, "schedule"+suffix+".csv"))
		out["summary"+suffix+".json"] = normalizeSummary(t, testenv.ReadFile(t, sum), dir)
		out["records"+suffix+".jsonl"] = normalizeRecords(t, testenv.ReadFile(t, filepath.Join(dir, "records"+suffix+".jsonl")))
		out["records"+suffix+".csv"] = normalizeCSV(t, testenv.ReadFile(t, filepath.Join(dir, "records"+suffix+".csv")))
	}
	if gc.shards > 1 {
		merged := filepath.Join(dir, "merged.json")
		table, _ := mustRun(t, append(append([]string{"merge"}, summaries...), "-o", merged)...)
		out["merge-table.txt"] = normalizeTable([]byte(table))
		out["merged.json"] = normalizeSummary(t, testenv.ReadFile(t, merged), dir)
	}
	return out
}

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// volatileKey matches the JSON keys whose values depend on the clock or on
// the order in which the server saw requests: they are written as "~".
var volatileKey = regexp.MustCompile(`_ms$|^duration$|throughput$|^concurrency$|^started_at$|^client_cpu|` +
	`in_flight|^queued|_rate$|^end_s$|^observed_s$|^sent_s$|^latency_cdfs$|^merge_state$|^server_metrics$|^server$|` +
	`^itl_ms$|^command$|^settings$|^effective_settings$|^max_output_tokens_per_s$|^max_concurrent_requests$`)

// transientKey matches the keys that are there or not depending on the
// clock (a window where the client fell behind, where a busy machine
// delayed it, or a results file the disk kept waiting): they are left out, and so are a window's latencies (a zero
// percentile is left out of it).
var transientKey = regexp.MustCompile(`^client_saturat|^saturation_reasons$|^client_machine_busy|^machine_busy$|^client_behind_ms$|^records_backlog$|^send_rate_`)

// stableKey names keys volatileKey matches that do not depend on the
// clock (request_rate is the option; target_rate comes from the trace).
var stableKey = map[string]bool{"request_rate": true, "error_rate": true}

// durationFigure matches a duration written in a note ("(0.124 s)").
var durationFigure = regexp.MustCompile(`\b[0-9]+(?:\.[0-9]+)? (s|ms)\b`)

// normalizeJSON re-encodes one JSON value with every volatile key's value
// replaced by "~", keeping the key order and number literals as written.
// indent is the indentation of the output ("" for one line).
func normalizeJSON(data []byte, indent string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b bytes.Buffer
	if err := copyValue(dec, &b, ""); err != nil {
		return nil, err
	}
	if indent == "" {
		return b.Bytes(), nil
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", indent); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// copyValue copies the next value of dec to b, blanking volatile keys.
// parent is the key the value stands under (an array's elements share
// their array's).
func copyValue(dec *json.Decoder, b *bytes.Buffer, parent string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		b.WriteString(v.String())
		closing := map[json.Delim]string{'{': "}", '[': "]"}[v]
		for i := 0; dec.More(); {
			var key string
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key = k.(string)
				if transientKey.MatchString(key) || parent == "windows" && strings.HasSuffix(key, "_ms") {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					continue
				}
			}
			if i++; i > 1 {
				b.WriteByte(',')
			}
			if v == '{' {
				kb, _ := json.Marshal(key)
				b.Write(kb)
				b.WriteByte(':')
				if volatileKey.MatchString(key) && !stableKey[key] {
					var skip json.RawMessage
					if err := dec.Decode(&skip); err != nil {
						return err
					}
					b.WriteString(`"~"`)
					continue
				}
			}
			child := parent
			if v == '{' {
				child = key
			}
			if err := copyValue(dec, b, child); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteString(closing)
	case json.Number:
		b.WriteString(v.String())
	case string:
		e, _ := json.Marshal(durationFigure.ReplaceAllString(v, "~ $1"))
		b.Write(e)
	default:
		e, _ := json.Marshal(v)
		b.Write(e)
	}
	return nil
}

// normalizeSummary blanks a summary's volatile figures and the run's
// temporary folder. The summary must be written as indented JSON.
func normalizeSummary(t *testing.T, data []byte, dir string) []byte {
	t.Helper()
	var canon bytes.Buffer
	if err := json.Indent(&canon, data, "", "  "); err != nil {
		t.Fatalf("summary: %v", err)
	}
	if !bytes.Equal(bytes.TrimSpace(canon.Bytes()), bytes.TrimSpace(data)) {
		t.Errorf("the summary is not written as two-space indented JSON")
	}
	out, err := normalizeJSON(data, "  ")
	if err != nil {
		t.Fatalf("summary: %v", err)
	}
	return append(bytes.ReplaceAll(out, []byte(dir), []byte("DIR")), '\n')
}

// normalizeRecords blanks the records' volatile figures and sorts them by
// index (they are written as requests finish).
func normalizeRecords(t *testing.T, data []byte) []byte {
	t.Helper()
	type rec struct {
		index int64
		line  []byte
	}
	var recs []rec
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var head struct {
			Index int64 `json:"index"`
		}
		if err := json.Unmarshal(sc.Bytes(), &head); err != nil {
			t.Fatalf("records: %v: %s", err, sc.Bytes())
		}
		line, err := normalizeJSON(sc.Bytes(), "")
		if err != nil {
			t.Fatalf("records: %v", err)
		}
		recs = append(recs, rec{head.Index, line})
	}
	slices.SortStableFunc(recs, func(a, b rec) int { return int(a.index - b.index) })
	var b bytes.Buffer
	for _, r := range recs {
		b.Write(r.line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// normalizeCSV blanks the per-request CSV's volatile cells (the non-empty
// ones of the columns whose name volatileKey matches, and of the ITL
// summary's) and sorts its rows by index (they are written as requests
// finish), the header first.
func normalizeCSV(t *testing.T, data []byte) []byte {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("records CSV: %v", err)
	}
	header := rows[0]
	for _, row := range rows[1:] {
		for j, col := range header {
			if row[j] != "" && (volatileKey.MatchString(col) || strings.HasPrefix(col, "itl_")) {
				row[j] = "~"
			}
		}
	}
	body := rows[1:]
	slices.SortStableFunc(body, func(a, b []string) int {
		x, _ := strconv.ParseInt(a[0], 10, 64)
		y, _ := strconv.ParseInt(b[0], 10, 64)
		return int(x - y)
	})
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.WriteAll(append([][]string{header}, body...))
	return b.Bytes()
}

// tableVolatile matches the console table's lines whose value depends on
// the clock, and tableValue the value in them.
var (
	tableVolatile = regexp.MustCompile(`\(ms\)|\(s\)|/s\)|^Concurrency|^Peak concurrent|^Waited for|^Server `)
	tableValue    = regexp.MustCompile(`-?[0-9][0-9.]*`)
)

// normalizeTable blanks the volatile values of the console table: the
// value of a volatile line, and in the breakdowns by kind or model every
// column after a row's name, completed and failed counts; the lines of a
// send rate that fell short go.
func normalizeTable(data []byte) []byte {
	var b bytes.Buffer
	breakdown := false
	for line := range strings.Lines(string(data)) {
		switch label, value, ok := strings.Cut(line, ":"); {
		case strings.HasPrefix(line, "Scheduled send rate") || strings.HasPrefix(line, "Achieved send rate"):
			// There when the client fell short of its schedule: transient,
			// as the summary's send_rate_* keys.
			continue
		case strings.HasPrefix(line, "kind ") || strings.HasPrefix(line, "model "):
			breakdown = true
		case strings.HasPrefix(line, "====="):
			breakdown = false
		case breakdown:
			if f := strings.Fields(line); len(f) > 3 {
				line = strings.Join(f[:3], " ") + " ~\n"
			}
		case ok && tableVolatile.MatchString(label):
			line = label + ":" + strings.TrimRight(tableValue.ReplaceAllString(value, "~"), " \n") + "\n"
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

// normalizeNotes keeps the notes on stderr that do not depend on the
// clock: the live lines, the client-saturation warning, the busy
// machine's note and the results file's backlog go.
func normalizeNotes(data []byte, dir string) []byte {
	var b bytes.Buffer
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, "[") || strings.Contains(line, "fell behind its schedule") || strings.Contains(line, "the machine is busy") ||
			strings.Contains(line, "the results file fell behind") {
			continue
		}
		b.WriteString(strings.ReplaceAll(line, dir, "DIR"))
	}
	return b.Bytes()
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(g), len(w)) {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "(same lines, different bytes)"
}
