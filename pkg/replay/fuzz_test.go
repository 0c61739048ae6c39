package replay

import (
	"bytes"
	"encoding/csv"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fineserve-gen/fineserve-gen/pkg/arrival"
)

// Seeds from the real traces' rows.
var (
	csvSeeds = []string{
		"input_length,output_length,latency,timestamp,architecture,scale\n214,722,0.0015,0.0,Dense,30-100B\n232,5,0.0013,55908.0,Dense,30-100B\n3630,254,,,Dense,30-100B\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\n2023-11-16 18:17:04.0319600,3180,8\n",
		"TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-12 00:00:00+00:00,1024,120\n2024-05-12 00:00:00.250000+00:00,2048,0\n",
		"TIMESTAMP,NumImages,ContextTokens,GeneratedTokens\n2024-10-15T12:00:00.269Z,0,770,491\n2024-10-15T12:00:00.511Z,1,949,126\n",
		"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n",
		"index,time_s,input_len,output_len,model,num_images,burst\n0,0.012500,100,10,,0,0\n1,0.500000,200,20,\"m,c\",2,1\n",
		"gmt_create,predict_type,predict_status,exec_time_seconds,groupId,prompt_length\n2024-11-15 16:57:50,TXT_2_IMG,SUCCEED,32.0,G0000,63.0\n",
		"arrival_time,input_tokens,output_tokens\n0.0,100,20\n0.8,\"1,2\n1.6,2147483647,1\n2.4,7,\"8\"x\n",
		"Created_At,Prompt_Tokens,Completion_Tokens\n2024-10-15T12:00:00Z,5,6\n2024-10-15T12:00:01Z,5,6\n",
	}
	jsonlSeeds = []string{
		`{"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, 1, 2]}` + "\n" + `{"timestamp": 3, "input_length": 700, "output_length": 4, "hash_ids": [0, 79]}` + "\n",
		`{"t": 100.5, "in": 10, "out": 20, "m": "a"}` + "\n\n" + `{"t": "oops"}` + "\nnot json\n",
		`{"ts": 1700000000000, "prompt_tokens": 10, "completion_tokens": 2}` + "\n" + `{"ts": 1700000000400, "prompt_tokens": 4000000, "completion_tokens": 1}` + "\n",
	}
)

// checkTrace asserts what every successfully loaded trace satisfies.
func checkTrace(t *testing.T, tr *Trace) {
	t.Helper()
	if got := tr.Len() + tr.Skipped.Rows + tr.Skipped.Failed + tr.Skipped.Scene + tr.Skipped.OverLimit; got != tr.Rows {
		t.Fatalf("%d usable + %d skipped + %d failed + %d other scenes + %d over the limit != %d rows read",
			tr.Len(), tr.Skipped.Rows, tr.Skipped.Failed, tr.Skipped.Scene, tr.Skipped.OverLimit, tr.Rows)
	}
	if len(tr.Skipped.OverLimitLines) != min(tr.Skipped.OverLimit, MaxSkippedLines) {
		t.Fatalf("over-limit info %+v", tr.Skipped)
	}
	if tr.Len() > 0 && tr.At(0) != 0 {
		t.Fatalf("first row at %v", tr.At(0))
	}
	for i := range tr.Len() {
		if i > 0 && tr.At(i) < tr.At(i-1) {
			t.Fatalf("row %d at %v before row %d at %v", i, tr.At(i), i-1, tr.At(i-1))
		}
		if (tr.HasInput && tr.InputTokens(i) < 1) || (tr.HasOutput && tr.OutputTokens(i) < 1) || tr.Images(i) < 0 {
			t.Fatalf("row %d: sizes %d/%d/%d", i, tr.InputTokens(i), tr.OutputTokens(i), tr.Images(i))
		}
		if n := tr.InputTokens(i) + tr.OutputTokens(i); n > DefaultTokenLimit {
			t.Fatalf("row %d: %d tokens, above the limit %d", i, n, DefaultTokenLimit)
		}
	}
	if len(tr.Skipped.Lines) != min(tr.Skipped.Rows, MaxSkippedLines) || (tr.Skipped.Rows > 0) != (tr.Skipped.First != "") {
		t.Fatalf("skipped info %+v", tr.Skipped)
	}
	if tr.Skipped.Rows > 0 && !strings.HasPrefix(tr.Skipped.First, "line ") {
		t.Fatalf("first problem %q names no line", tr.Skipped.First)
	}
}

// fuzzLoad loads data both leniently and strictly and checks they agree.
func fuzzLoad(t *testing.T, data []byte, name string, o Options) {
	tr, err := Read(bytes.NewReader(data), name, o)
	if err != nil {
		if !strings.HasPrefix(err.Error(), "replay: ") {
			t.Fatalf("error %q lacks the package prefix", err)
		}
		return
	}
	checkTrace(t, tr)
	o.Strict = true
	strict, serr := Read(bytes.NewReader(data), name, o)
	var re *RowError
	bad := tr.Skipped.Rows + tr.Skipped.OverLimit
	first := 0
	if bad > 0 {
		first = slices.Min(append(slices.Clone(tr.Skipped.Lines), tr.Skipped.OverLimitLines...))
	}
	switch {
	case bad == 0 && serr != nil:
		t.Fatalf("strict load failed on a trace with no unusable row: %v", serr)
	case bad == 0 && strict.Len() != tr.Len():
		t.Fatalf("strict load: %d rows, lenient %d", strict.Len(), tr.Len())
	case bad > 0 && !errors.As(serr, &re):
		t.Fatalf("strict load of a trace with unusable rows: %v, want a *RowError", serr)
	case bad > 0 && re.Line != first:
		t.Fatalf("strict error at line %d, lenient first skip at line %d", re.Line, first)
	}
}

// FuzzReadCSV feeds arbitrary CSV to every CSV format (and detection): no
// panic, consistent counts, sorted times, and a strict load that fails on
// the first skipped line.
func FuzzReadCSV(f *testing.F) {
	for _, s := range csvSeeds {
		for k := range uint8(4) {
			f.Add([]byte(s), k)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, k uint8) {
		opts := []Options{
			{},
			{Format: FineServe},
			{Format: GenericCSV, TimestampColumn: "gmt_create", InputColumn: "prompt_length"},
			{Format: GenericCSV, TimestampColumn: "timestamp", Unit: Millis, ModelColumn: "Model", KeepFailed: true},
		}
		fuzzLoad(t, data, "fuzz.csv", opts[int(k)%len(opts)])
	})
}

// FuzzReadJSONL does the same for JSON Lines.
func FuzzReadJSONL(f *testing.F) {
	for _, s := range jsonlSeeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, generic bool) {
		o := Options{}
		if generic {
			o = Options{Format: GenericJSONL, TimestampColumn: "t", Unit: Seconds, InputColumn: "in", OutputColumn: "out", ModelColumn: "m"}
		}
		fuzzLoad(t, data, "fuzz.jsonl", o)
	})
}

// FuzzParseDecimal checks the exact decimal parser against math/big.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"0.0", "55908.0", "4000000.5", "1.5e3", "-0", "9223372036.854775807", "1e30", ".5", "63.0"} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, s string, shift uint8) {
		sh := int(shift % 10)
		got, err := parseDecimal(s, sh)
		if err != nil {
			return
		}
		if got < 0 {
			t.Fatalf("parseDecimal(%q) = %d < 0", s, got)
		}
		digits := 0
		for _, c := range strings.TrimLeft(s, "+-0.") {
			if c >= '0' && c <= '9' {
				digits++
			}
			if c == 'e' || c == 'E' {
				break
			}
		}
		want, ok := ratOracle(s, sh)
		if !ok && hugeExponent(s) {
			return // big.Rat refuses exponents it cannot hold; ours gives 0 or overflows
		}
		if !ok {
			t.Fatalf("parseDecimal accepted %q, which big.Rat rejects", s)
		}
		if digits <= 19 {
			if !want.IsInt64() || want.Int64() != got {
				t.Fatalf("parseDecimal(%q, %d) = %d, want %v", s, sh, got, want)
			}
			return
		}
		// Beyond 19 significant digits the value is truncated: relative
		// error below 1e-18.
		diff := new(big.Int).Sub(want, big.NewInt(got))
		diff.Abs(diff)
		if diff.Cmp(big.NewInt(1)) > 0 && new(big.Int).Mul(diff, big.NewInt(1e18)).Cmp(want) > 0 {
			t.Fatalf("parseDecimal(%q, %d) = %d, want ≈ %v", s, sh, got, want)
		}
	})
}

// FuzzDateTime round-trips instants through every layout the traces use.
func FuzzDateTime(f *testing.F) {
	f.Add(int64(1700158623979960000), uint8(0), int16(0))
	f.Add(int64(1715472000000000000), uint8(1), int16(0))
	f.Add(int64(1728993600269000000), uint8(3), int16(-450))
	f.Fuzz(func(t *testing.T, ns int64, layout uint8, zoneMin int16) {
		layouts := []string{
			"2006-01-02 15:04:05.0000000",      // Azure 2023
			"2006-01-02 15:04:05.999999-07:00", // Azure 2024
			"2006-01-02T15:04:05.000Z07:00",    // Azure LMM 2025
			"2006-01-02T15:04:05.999999999-0700",
			"2006-01-02 15:04:05", // Alibaba
		}
		l := layouts[int(layout)%len(layouts)]
		zone := time.FixedZone("", int(zoneMin%(24*60))*60)
		if !strings.Contains(l, "07") {
			zone = time.UTC
		}
		tm := time.Unix(0, ns).In(zone)
		if tm.Year() < 1000 || tm.Year() > 9999 {
			return
		}
		s := tm.Format(l)
		want, err := time.Parse(l, s)
		if err != nil {
			return
		}
		got, err := parseDateTime(s)
		if err != nil || got != want.UnixNano() {
			t.Fatalf("parseDateTime(%q) = %d, %v; want %d", s, got, err, want.UnixNano())
		}
	})
}

// FuzzScheduleRoundTrip writes arbitrary arrivals as a schedule CSV and
// checks that replaying it gives the same bytes.
func FuzzScheduleRoundTrip(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, "m,\"x\"")
	f.Add([]byte{0, 0, 0, 255, 255, 255}, "")
	f.Fuzz(func(t *testing.T, seed []byte, model string) {
		if strings.ContainsAny(model, "\r\n") || strings.TrimSpace(model) != model || !isUTF8(model) {
			return // a schedule's model names are trimmed single-line names
		}
		var src []arrival.Arrival
		var at time.Duration
		for i := 0; i+2 < len(seed); i += 3 {
			at += time.Duration(seed[i]) * 1237 * time.Microsecond
			a := arrival.Arrival{Index: int64(len(src)), At: at, InputTokens: 1 + int(seed[i+1]), OutputTokens: 1 + int(seed[i+2]), Images: int(seed[i+1] % 3), Burst: int64(len(src))}
			if seed[i]%2 == 0 {
				a.Model = model
			}
			if seed[i] == 0 && len(src) > 0 {
				a.Burst = src[len(src)-1].Burst
			}
			src = append(src, a)
		}
		if len(src) == 0 {
			return
		}
		scheduleRoundTrip(t, src, Options{Strict: true})
	})
}

func isUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// hugeExponent reports an exponent of more than 6 digits.
func hugeExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return false
	}
	return len(strings.TrimLeft(s[i+1:], "+-0")) > 6
}

// FuzzCSVLine checks the line splitter against encoding/csv: a line that
// encoding/csv reads as one record splits into the same fields, and no
// line panics or yields more fields than it has commas plus one.
func FuzzCSVLine(f *testing.F) {
	for _, s := range []string{`a,b,c`, `1,"2,3",4`, `"x""y",z`, `"unclosed,1,2`, `7,"8"x`, `a"b,c`, ``, `,,`, `"",""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\r\n") {
			return // the line reader never hands the splitter a line break
		}
		var cl csvLines
		rec, err := cl.split(line)
		if err == nil && len(rec) > strings.Count(line, ",")+1 {
			t.Fatalf("%q: %d fields", line, len(rec))
		}
		cr := csv.NewReader(strings.NewReader(line))
		cr.FieldsPerRecord = -1
		want, werr := cr.Read()
		if werr != nil || len(line) == 0 {
			return
		}
		if err != nil {
			t.Fatalf("%q: %v; encoding/csv reads %q", line, err, want)
		}
		if !slices.Equal(rec, want) {
			t.Fatalf("%q: fields %q, encoding/csv %q", line, rec, want)
		}
	})
}
