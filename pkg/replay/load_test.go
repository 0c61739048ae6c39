package replay

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// want is one expected row: offset from the first row, sizes, model, images.
type want struct {
	at           time.Duration
	in, out      int
	model        string
	images       int
	blocks, skip int // blocks: len(PrefixBlocks)
}

func rows(t *testing.T, tr *Trace) []want {
	t.Helper()
	var out []want
	for i := range tr.Len() {
		out = append(out, want{at: tr.At(i), in: tr.InputTokens(i), out: tr.OutputTokens(i), model: tr.Model(i), images: tr.Images(i), blocks: len(tr.PrefixBlocks(i))})
	}
	return out
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

func TestLoadFixtures(t *testing.T) {
	cases := []struct {
		name    string
		file    string
		o       Options
		format  Format
		rows    []want
		skipped Skipped
	}{
		{
			name: "azure 2024 zones and optional fractions", file: "azure2024.csv", format: AzureLLM,
			rows: []want{
				{at: 0, in: 300, out: 30},
				{at: time.Microsecond, in: 1024, out: 120},
				{at: 250*time.Millisecond + time.Microsecond, in: 2048, out: 1},
				{at: time.Second + time.Microsecond, in: 512, out: 64},
				{at: time.Second + 2*time.Microsecond, in: 1, out: 10},
				{at: 1500*time.Millisecond + time.Microsecond, in: 7, out: 8},
			},
			skipped: Skipped{ZeroInput: 1, ZeroOutput: 1, OutOfOrder: 1},
		},
		{
			name: "azure lmm 2025", file: "azure_lmm_2025.csv", format: AzureLMM,
			rows: []want{
				{at: 0, in: 770, out: 491},
				{at: ms(242), in: 949, out: 126, images: 1},
				{at: ms(733), in: 964, out: 79, images: 1},
				{at: ms(733), in: 78, out: 5},
				{at: ms(2481), in: 1724, out: 28, images: 1},
				{at: ms(2731), in: 6000, out: 40, images: 16},
				{at: ms(2856), in: 300, out: 12, images: 2},
				{at: ms(3231), in: 1200, out: 3, images: 3},
			},
			o:       Options{MinOutputLen: 3},
			skipped: Skipped{ZeroOutput: 1},
		},
		{
			name: "burstgpt skips failed rows", file: "burstgpt.csv", format: BurstGPT,
			rows: []want{
				{at: 0, in: 472, out: 18, model: "ChatGPT"},
				{at: 113 * time.Second, in: 417, out: 216, model: "GPT-4"},
				{at: 113 * time.Second, in: 1360, out: 87, model: "ChatGPT"},
				{at: 125 * time.Second, in: 1, out: 44, model: "GPT-4"},
			},
			skipped: Skipped{Failed: 2, ZeroInput: 1},
		},
		{
			name: "burstgpt keeps failed rows", file: "burstgpt.csv", format: BurstGPT, o: Options{KeepFailed: true},
			rows: []want{
				{at: 0, in: 472, out: 18, model: "ChatGPT"},
				{at: 40 * time.Second, in: 1087, out: 1, model: "ChatGPT"},
				{at: 113 * time.Second, in: 417, out: 216, model: "GPT-4"},
				{at: 113 * time.Second, in: 1360, out: 87, model: "ChatGPT"},
				{at: 125 * time.Second, in: 1, out: 44, model: "GPT-4"},
				{at: 126500 * time.Millisecond, in: 250, out: 1, model: "ChatGPT"},
			},
			skipped: Skipped{ZeroInput: 1, ZeroOutput: 2},
		},
		{
			name: "burstgpt v1.2 columns", file: "burstgpt_v12.csv", format: BurstGPT,
			rows: []want{{at: 0, in: 100, out: 10, model: "GPT-4"}, {at: 2 * time.Second, in: 200, out: 20, model: "ChatGPT"}},
		},
		{
			name: "schedule", file: "schedule.csv", format: ScheduleCSV,
			rows: []want{
				{at: 0, in: 100, out: 10},
				{at: 487500 * time.Microsecond, in: 200, out: 20, model: "m-a"},
				{at: 487500 * time.Microsecond, in: 300, out: 30, model: "m-b", images: 2},
				{at: 1237501 * time.Microsecond, in: 400, out: 40, model: "m,c"},
			},
		},
		{
			name: "generic jsonl", file: "generic.jsonl", format: GenericJSONL,
			o: Options{TimestampColumn: "t", Unit: Seconds, InputColumn: "in", OutputColumn: "out", ModelColumn: "m"},
			rows: []want{
				{at: 0, in: 12, out: 22, model: "a"},
				{at: 750 * time.Millisecond, in: 10, out: 20, model: "a"},
				{at: 1250 * time.Millisecond, in: 11, out: 21, model: "b"},
			},
			skipped: Skipped{Rows: 3, Lines: []int{5, 6, 7}, First: `line 5: t: not a number: "oops"`, OutOfOrder: 1},
		},
		{
			name: "fineserve bad rows", file: "fineserve_bad.csv", format: FineServe,
			rows: []want{
				{at: 0, in: 100, out: 10},
				{at: time.Second, in: 102, out: 12},
				{at: time.Second, in: 103, out: 13},
				{at: 2 * time.Second, in: 101, out: 11},
				{at: 4000000500 * time.Nanosecond, in: 108, out: 1},
				{at: 4000001 * time.Microsecond, in: 1, out: 18},
			},
			skipped: Skipped{
				Rows: 8, Lines: []int{6, 7, 8, 9, 10, 11, 14, 15}, First: "line 6: timestamp: empty",
				ZeroInput: 1, ZeroOutput: 1, OutOfOrder: 1,
			},
		},
		{
			name: "generic csv with datetime and no output column", file: "alibaba_lora_head300.csv", format: GenericCSV,
			o: Options{TimestampColumn: "gmt_create", InputColumn: "prompt_length", ModelColumn: "checkpoint_model_version_id"},
			// Checked below: lengths and models only.
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Load(filepath.Join("testdata", c.file), c.o)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format {
				t.Errorf("format %q, want %q", tr.Format, c.format)
			}
			if c.rows == nil {
				if tr.Len() != 300 || !tr.HasInput || tr.HasOutput || tr.Unit != DateTime || tr.Model(0) != "M0000" {
					t.Errorf("generic: %d rows, input %v, output %v, unit %v, model %q", tr.Len(), tr.HasInput, tr.HasOutput, tr.Unit, tr.Model(0))
				}
				if tr.InputTokens(0) != 63 || tr.At(1)-tr.At(0) != (78*60+24)*time.Second {
					t.Errorf("generic: first rows %d tokens, gap %v", tr.InputTokens(0), tr.At(1)-tr.At(0))
				}
				return
			}
			if got := rows(t, tr); !reflect.DeepEqual(got, c.rows) {
				t.Errorf("rows:\n got %+v\nwant %+v", got, c.rows)
			}
			if !reflect.DeepEqual(tr.Skipped, c.skipped) {
				t.Errorf("skipped:\n got %+v\nwant %+v", tr.Skipped, c.skipped)
			}
		})
	}
}

func TestStrictNamesFileLineAndField(t *testing.T) {
	for _, c := range []struct {
		file, field string
		line        int
		o           Options
	}{
		{"fineserve_bad.csv", "timestamp", 6, Options{}},
		{"generic.jsonl", "t", 5, Options{TimestampColumn: "t", Unit: Seconds, InputColumn: "in", OutputColumn: "out"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			c.o.Strict = true
			_, err := Load(filepath.Join("testdata", c.file), c.o)
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a *RowError", err)
			}
			if re.Line != c.line || re.Field != c.field || !strings.Contains(err.Error(), c.file) {
				t.Errorf("error %q: line %d field %q, want line %d field %q and the file name", err, re.Line, re.Field, c.line, c.field)
			}
		})
	}
}

// TestRealTraces checks the real samples bundled in testdata.
func TestRealTraces(t *testing.T) {
	t.Run("fineserve Dense_30to100B", func(t *testing.T) {
		tr, err := Load("testdata/fineserve_Dense_30to100B.csv.gz", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Format != FineServe || tr.Len() != 21116 || tr.Skipped.Rows != 6350 || tr.Rows != 27466 {
			t.Fatalf("%s: %d usable of %d, %d skipped", tr.Format, tr.Len(), tr.Rows, tr.Skipped.Rows)
		}
		if tr.Skipped.Lines[0] != 21118 || tr.Skipped.First != "line 21118: timestamp: empty" {
			t.Errorf("first skipped %v %q", tr.Skipped.Lines, tr.Skipped.First)
		}
		if tr.At(1) != 55908*time.Microsecond || tr.InputTokens(1) != 232 || tr.OutputTokens(1) != 5 {
			t.Errorf("row 1: %v %d %d", tr.At(1), tr.InputTokens(1), tr.OutputTokens(1))
		}
		// The mean gap is 1.36 s in µs, which DESIGN.md relies on.
		if gap := tr.Span().Seconds() / float64(tr.Len()-1); gap < 1.35 || gap > 1.37 {
			t.Errorf("mean gap %.3f s", gap)
		}
	})
	t.Run("azure 2023 code", func(t *testing.T) {
		tr, err := Load("testdata/azure2023_code.csv.gz", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Format != AzureLLM || tr.Len() != 8819 || tr.Skipped.Rows != 0 {
			t.Fatalf("%s: %d rows, %+v", tr.Format, tr.Len(), tr.Skipped)
		}
		// 18:17:03.9799600 → 18:17:04.0319600.
		if tr.At(1) != 52*time.Millisecond || tr.InputTokens(0) != 4808 || tr.OutputTokens(0) != 10 {
			t.Errorf("rows 0-1: %v %d %d", tr.At(1), tr.InputTokens(0), tr.OutputTokens(0))
		}
		if tr.Lead != time.Duration(time.Date(2023, 11, 16, 18, 17, 3, 979960000, time.UTC).UnixNano()) {
			t.Errorf("lead %v", tr.Lead)
		}
	})
	t.Run("mooncake", func(t *testing.T) {
		tr, err := Load("testdata/mooncake_synthetic_trace.jsonl.gz", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Format != Mooncake || tr.Len() != 3993 {
			t.Fatalf("%s: %d rows", tr.Format, tr.Len())
		}
		for i := range tr.Len() {
			if n, want := len(tr.PrefixBlocks(i)), (tr.InputTokens(i)+511)/512; n != want {
				t.Fatalf("row %d: %d hash ids for %d tokens", i, n, tr.InputTokens(i))
			}
		}
		if b := tr.PrefixBlocks(0); b[0] != 0 || b[78] != 78 || tr.InputTokens(0) != 40160 {
			t.Errorf("row 0: %v…", b[:3])
		}
	})
}

func TestDetectionAndErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, file, body string
		o                Options
		err              string // "" : loads
		format           Format
	}{
		{"no time column", "a.csv", "x,y\n1,2\n", Options{}, `no time column: none of timestamp, arrival_time, time, ts, created_at (any case) among its columns "x,y"`, ""},
		{"no time column in jsonl", "a.jsonl", "{\"x\":1,\"input_tokens\":2}\n", Options{}, `no time column: none of timestamp, arrival_time, time, ts, created_at (any case) among its columns "x,input_tokens"`, ""},
		{"numeric generic infers its unit", "b.csv", "t,n\n1,2\n", Options{TimestampColumn: "t"}, "", GenericCSV},
		{"a unit needs a value to infer from", "b2.csv", "t,n\nabc,2\n", Options{TimestampColumn: "t"}, "give --timestamp-unit", ""},
		{"missing override column", "c.csv", "timestamp,input_length,output_length\n1,2,3\n", Options{InputColumn: "prompt"}, `no input length column "prompt"`, ""},
		{"empty file", "d.csv", "", Options{}, "empty file", ""},
		{"header only", "e.csv", "timestamp,input_length,output_length\n", Options{}, "no usable row", ""},
		{"json array", "f.json", "[{\"a\":1}]\n", Options{}, "JSON array", ""},
		{"jsonl format on csv", "g.csv", "timestamp,input_length,output_length\n1,2,3\n", Options{Format: Mooncake}, "no usable row", ""},
		{"mooncake without hash ids", "h.jsonl", "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 4}\n", Options{}, "", Mooncake},
		{"bom and crlf", "i.csv", "\xef\xbb\xbfTIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,1,2\r\n", Options{}, "", AzureLLM},
		{"forced fineserve with ms", "j.csv", "ts,input_length,output_length\n5,1,1\n", Options{Format: FineServe, TimestampColumn: "ts", Unit: Millis}, "", FineServe},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Load(write(c.file, c.body), c.o)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format {
				t.Errorf("format %q, want %q", tr.Format, c.format)
			}
		})
	}
}

// TestUnsortedIsStable checks that sorting keeps the file order of equal
// timestamps and carries every column (blocks included) with its row.
func TestUnsortedIsStable(t *testing.T) {
	body := `{"timestamp": 30, "input_length": 3, "output_length": 1, "hash_ids": [3]}
{"timestamp": 10, "input_length": 1, "output_length": 1, "hash_ids": [1, 11]}
{"timestamp": 30, "input_length": 4, "output_length": 1, "hash_ids": [4]}
{"timestamp": 10, "input_length": 2, "output_length": 1, "hash_ids": []}
`
	tr, err := Read(strings.NewReader(body), "x.jsonl", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	var blocks [][]uint64
	for i := range tr.Len() {
		got = append(got, tr.InputTokens(i))
		blocks = append(blocks, tr.PrefixBlocks(i))
	}
	if !reflect.DeepEqual(got, []int{1, 2, 3, 4}) || !reflect.DeepEqual(blocks, [][]uint64{{1, 11}, {}, {3}, {4}}) {
		t.Errorf("order %v blocks %v", got, blocks)
	}
	if tr.Skipped.OutOfOrder != 2 || tr.At(2) != 20*time.Millisecond || tr.Lead != 10*time.Millisecond {
		t.Errorf("out of order %d, at(2) %v, lead %v", tr.Skipped.OutOfOrder, tr.At(2), tr.Lead)
	}
}
