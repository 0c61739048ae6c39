package replay

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/fineserve-gen/fineserve-gen/internal/testenv"
)

// A quote that opens a field and never closes costs its own line only.
func TestStrayQuoteCostsOneLine(t *testing.T) {
	var b strings.Builder
	b.WriteString("timestamp,input_length,output_length\n")
	for i := range 5001 {
		if i == 1 {
			fmt.Fprintf(&b, "%d,\"12,34\n", i*1000000) // line 3
			continue
		}
		fmt.Fprintf(&b, "%d,%d,20\n", i*1000000, 100+i%50)
	}
	tr, err := Read(strings.NewReader(b.String()), "quote.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 5000 || tr.Rows != 5001 || tr.Skipped.Rows != 1 || tr.Skipped.Lines[0] != 3 {
		t.Fatalf("%d usable of %d rows, skipped %+v; want 5000 of 5001, line 3 skipped", tr.Len(), tr.Rows, tr.Skipped)
	}
	if !strings.Contains(tr.Skipped.First, "line 3: unbalanced quote") {
		t.Errorf("first problem %q", tr.Skipped.First)
	}
	_, err = Read(strings.NewReader(b.String()), "quote.csv", Options{Strict: true})
	var re *RowError
	if !errors.As(err, &re) || re.Line != 3 {
		t.Fatalf("strict: %v, want a row error at line 3", err)
	}
}

func TestCSVQuoting(t *testing.T) {
	in := "index,time_s,input_len,output_len,model,num_images,burst\n" +
		"0,0.5,10,2,\"a,\"\"b\"\"\",0,0\n" + // a quoted name with a comma and quotes
		"1,1.0,11,3,\"m\"x,0,1\n" + // a stray quote: skipped
		"\n" + // blank: not a row
		"2,1.5,12,4,plain,0,2\n"
	tr, err := Read(strings.NewReader(in), "s.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 2 || tr.Model(0) != `a,"b"` || tr.Model(1) != "plain" || tr.Skipped.Rows != 1 || tr.Skipped.Lines[0] != 3 {
		t.Fatalf("%d rows, models %q %q, skipped %+v", tr.Len(), tr.Model(0), tr.Model(min(1, tr.Len()-1)), tr.Skipped)
	}
	if !strings.Contains(tr.Skipped.First, "stray quote") {
		t.Errorf("first problem %q", tr.Skipped.First)
	}
}

func TestGenericTraces(t *testing.T) {
	gen := func(header string, row func(i int) string) string {
		var b strings.Builder
		b.WriteString(header + "\n")
		for i := range 20 {
			b.WriteString(row(i) + "\n")
		}
		return b.String()
	}
	for _, c := range []struct {
		name, file, body string
		o                Options
		format           Format
		unit             Unit
		in, out          int    // row 1's lengths
		at1              string // row 1's time
		detected         string
	}{
		{"arrival_time in seconds", "a.csv", gen("arrival_time,input_tokens,output_tokens", func(i int) string { return fmt.Sprintf("%.1f,%d,%d", 0.8*float64(i), 100+i, 20+i) }),
			Options{}, GenericCSV, Seconds, 101, 21, "800ms",
			"time column arrival_time: unit s (inferred: median gap 0.8 → seconds; --timestamp-unit overrides); input column input_tokens; output column output_tokens"},
		{"timestamp column given alone keeps the lengths", "a.csv", gen("arrival_time,input_tokens,output_tokens", func(i int) string { return fmt.Sprintf("%.1f,%d,%d", 0.8*float64(i), 100+i, 20+i) }),
			Options{TimestampColumn: "arrival_time"}, GenericCSV, Seconds, 101, 21, "800ms", "input column input_tokens; output column output_tokens"},
		{"any case, milliseconds", "b.csv", gen("TS,Prompt_Tokens,Completion_Tokens", func(i int) string { return fmt.Sprintf("%d,%d,%d", 1700000000000+400*i, 7, 8) }),
			Options{}, GenericCSV, Millis, 7, 8, "400ms", "time column TS: unit ms (inferred: median gap 400 → milliseconds"},
		{"microseconds", "c.csv", gen("time,context_tokens,generated_tokens", func(i int) string { return fmt.Sprintf("%d,%d,%d", 1360000*i, 5, 6) }),
			Options{}, GenericCSV, Micros, 5, 6, "1.36s", "unit us (inferred: median gap 1.36e+06 → microseconds"},
		{"nanoseconds", "d.csv", gen("ts,num_prompt_tokens,output_length", func(i int) string { return fmt.Sprintf("%d,%d,%d", 250000000*i, 5, 6) }),
			Options{}, GenericCSV, Nanos, 5, 6, "250ms", "unit ns"},
		{"date and time", "e.csv", gen("created_at,input_length,generated_tokens", func(i int) string { return fmt.Sprintf("2024-10-15T12:00:%02dZ,%d,%d", i, 5, 6) }),
			Options{}, GenericCSV, DateTime, 5, 6, "1s", "unit datetime (inferred:"},
		{"override", "f.csv", gen("arrival_time,input_tokens,output_tokens", func(i int) string { return fmt.Sprintf("%d,%d,%d", i, 5, 6) }),
			Options{Unit: Millis}, GenericCSV, Millis, 5, 6, "1ms", "unit ms (--timestamp-unit)"},
		{"no length columns", "g.csv", gen("ts,other", func(i int) string { return fmt.Sprintf("%d,x", i) }),
			Options{}, GenericCSV, Seconds, 0, 0, "1s", "input column none (lengths drawn"},
		{"jsonl", "h.jsonl", strings.Join(func() []string {
			var l []string
			for i := range 20 {
				l = append(l, fmt.Sprintf(`{"Arrival_Time": %d, "prompt_tokens": 9, "completion_tokens": 3}`, 500*i))
			}
			return l
		}(), "\n"), Options{}, GenericJSONL, Millis, 9, 3, "500ms", "time column Arrival_Time: unit ms (inferred: median gap 500 → milliseconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(c.body), c.file, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format || tr.Unit != c.unit || tr.Len() != 20 {
				t.Fatalf("format %s, unit %s, %d rows; want %s, %s, 20", tr.Format, tr.Unit, tr.Len(), c.format, c.unit)
			}
			if tr.InputTokens(1) != c.in || tr.OutputTokens(1) != c.out || tr.HasInput != (c.in > 0) || tr.HasOutput != (c.out > 0) {
				t.Errorf("row 1: %d/%d tokens (has %v/%v), want %d/%d", tr.InputTokens(1), tr.OutputTokens(1), tr.HasInput, tr.HasOutput, c.in, c.out)
			}
			if got := tr.At(1).String(); got != c.at1 {
				t.Errorf("row 1 at %s, want %s", got, c.at1)
			}
			if !strings.Contains(tr.Detected, c.detected) {
				t.Errorf("detected %q, want it to contain %q", tr.Detected, c.detected)
			}
		})
	}
}

// Every row error of a generic trace names its column.
func TestGenericRowErrorsNameTheColumn(t *testing.T) {
	in := "arrival_time,input_tokens,output_tokens\n0,1,2\n1,,2\n2,1,x\n,1,2\n3\n"
	tr, err := Read(strings.NewReader(in), "g.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped.Rows != 4 || tr.Skipped.First != "line 3: input_tokens: empty" {
		t.Fatalf("skipped %+v", tr.Skipped)
	}
	lines := strings.Split(in, "\n")
	for line, col := range map[int]string{3: "input_tokens", 4: "output_tokens", 5: "arrival_time", 6: "input_tokens"} {
		one := strings.Join(lines[:2], "\n") + "\n" + strings.Repeat("\n", line-3) + lines[line-1] + "\n"
		_, err := Read(strings.NewReader(one), "g.csv", Options{Strict: true})
		var re *RowError
		if !errors.As(err, &re) || re.Line != line || re.Field != col {
			t.Errorf("line %d: %v, want an error naming %s", line, err, col)
		}
	}
}

func TestTokenLimit(t *testing.T) {
	in := "timestamp,input_length,output_length\n0,2147483647,10\n1000,100,10\n2000,4000,200\n"
	tr, err := Read(strings.NewReader(in), "big.csv", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 2 || tr.Skipped.OverLimit != 1 || tr.Skipped.OverLimitLines[0] != 2 || tr.Skipped.Limit != DefaultTokenLimit {
		t.Fatalf("%d rows, skipped %+v", tr.Len(), tr.Skipped)
	}
	w := strings.Join(tr.Skipped.Warnings(), "\n")
	if !strings.Contains(w, "left out 1 row(s) above the token limit 1048576 (input + output tokens; the built-in cap) (lines 2)") {
		t.Errorf("warnings %q", w)
	}
	tr, err = Read(strings.NewReader(in), "big.csv", Options{TokenLimit: 4096, TokenLimitFrom: "--max-model-len"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 1 || tr.Skipped.OverLimit != 2 || fmt.Sprint(tr.Skipped.OverLimitLines) != "[2 4]" || tr.Skipped.LimitFrom != "--max-model-len" {
		t.Fatalf("%d rows, skipped %+v", tr.Len(), tr.Skipped)
	}
	_, err = Read(strings.NewReader(in), "big.csv", Options{Strict: true})
	var re *RowError
	if !errors.As(err, &re) || re.Line != 2 || !strings.Contains(err.Error(), "above the token limit 1048576") {
		t.Fatalf("strict: %v", err)
	}
	_, err = Read(strings.NewReader(in[:strings.Index(in, "1000")]), "big.csv", Options{})
	if err == nil || !strings.Contains(err.Error(), "no usable row (1 above the token limit 1048576, the built-in cap; first at line 2") {
		t.Fatalf("one over-limit row: %v", err)
	}
}

// giant yields a CSV whose second line is n bytes long, then one good row,
// without holding the line.
func giant(n int64) io.Reader {
	return io.MultiReader(strings.NewReader("timestamp,input_length,output_length\n0,"),
		io.LimitReader(repeatReader('7'), n), strings.NewReader(",1\n1000,5,6\n"))
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A line longer than MaxRecordBytes is a counted skip that costs no more
// memory than the limit, in plain and gzipped files alike.
func TestGiantLineIsBounded(t *testing.T) {
	testenv.SkipHeavyUnderRace(t)
	const n = 64 << 20
	for _, gz := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", gz), func(t *testing.T) {
			r := giant(n)
			if gz {
				pr, pw := io.Pipe()
				go func() {
					zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
					_, err := io.Copy(zw, giant(n))
					if err == nil {
						err = zw.Close()
					}
					pw.CloseWithError(err)
				}()
				r = pr
			}
			var tr *Trace
			var err error
			alloc := allocated(func() { tr, err = Read(r, "giant.csv", Options{}) })
			if err != nil {
				t.Fatal(err)
			}
			if tr.Len() != 1 || tr.Skipped.Rows != 1 || !strings.Contains(tr.Skipped.First, "line 2: longer than 1 MiB") {
				t.Fatalf("%d rows, skipped %+v", tr.Len(), tr.Skipped)
			}
			// The gzip writer feeding the pipe allocates too: its buffers
			// are a few MiB.
			if alloc > 24<<20 {
				t.Errorf("reading a %d MiB line allocated %d MiB", n>>20, alloc>>20)
			}
		})
	}
}

func TestGiantHeaderAndJSONLine(t *testing.T) {
	_, err := Read(io.MultiReader(io.LimitReader(repeatReader('a'), 3<<20), strings.NewReader("\n1,2\n")), "h.csv", Options{})
	if err == nil || !strings.Contains(err.Error(), "line 1: header: longer than 1 MiB") {
		t.Fatalf("giant header: %v", err)
	}
	long := `{"timestamp": 0, "input_length": 1, "output_length": 1, "pad": "` + strings.Repeat("x", 2<<20) + "\"}\n"
	tr, err := Read(strings.NewReader(long+`{"timestamp": 5, "input_length": 3, "output_length": 4, "hash_ids": [0]}`+"\n"), "m.jsonl", Options{Format: Mooncake})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 1 || tr.Skipped.Rows != 1 || tr.Skipped.Lines[0] != 1 {
		t.Fatalf("%d rows, skipped %+v", tr.Len(), tr.Skipped)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	io.Copy(zw, io.LimitReader(repeatReader('9'), 8<<20))
	zw.Close()
	_, err = Read(&buf, "bomb.csv.gz", Options{})
	if err == nil || !strings.Contains(err.Error(), "line 1: header: longer than 1 MiB") {
		t.Fatalf("gzip bomb: %v", err)
	}
}
