package replay

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchRows is the size of the synthetic traces the load benchmarks read:
// the size of the Azure LMM 2025 trace.
const benchRows = 1_000_000

// writeBenchTrace writes a synthetic trace of benchRows rows in format f
// (deterministic content, realistic field widths) and returns its path.
func writeBenchTrace(b *testing.B, f Format) string {
	b.Helper()
	ext := ".csv"
	if f == Mooncake {
		ext = ".jsonl"
	}
	path := filepath.Join(b.TempDir(), "trace"+ext)
	file, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(file, 1<<20)
	start := time.Date(2024, 10, 15, 12, 0, 0, 0, time.UTC)
	var at time.Duration
	x := uint64(12345)
	next := func() uint64 { return splitmixTest(&x) }
	switch f {
	case AzureLMM:
		fmt.Fprintln(w, "TIMESTAMP,NumImages,ContextTokens,GeneratedTokens")
	case FineServe:
		fmt.Fprintln(w, "input_length,output_length,latency,timestamp,architecture,scale")
	case BurstGPT:
		fmt.Fprintln(w, "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type")
	}
	for i := range benchRows {
		at += time.Duration(next()%1_200_000) * time.Microsecond // mean gap 0.6 s: 1 M rows in 7 days
		in, out := 1+next()%8000, next()%700
		switch f {
		case AzureLMM:
			fmt.Fprintf(w, "%s,%d,%d,%d\n", start.Add(at).Format("2006-01-02T15:04:05.000Z"), next()%3, in, out)
		case FineServe:
			fmt.Fprintf(w, "%d,%d,0.0015,%d.0,Dense,30-100B\n", in, out, at.Microseconds())
		case BurstGPT:
			model := "ChatGPT"
			if i%5 == 0 {
				model = "GPT-4"
			}
			fmt.Fprintf(w, "%d,%s,%d,%d,%d,Conversation log\n", int64(at.Seconds()), model, in, out, in+out)
		case Mooncake:
			fmt.Fprintf(w, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, at.Milliseconds(), in, out)
			for k := range (in + 511) / 512 {
				if k > 0 {
					w.WriteString(", ")
				}
				fmt.Fprintf(w, "%d", next()%100000)
			}
			w.WriteString("]}\n")
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := file.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func splitmixTest(s *uint64) uint64 {
	*s += 0x9e3779b97f4a7c15
	z := *s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// BenchmarkLoad1M measures Load on 1 M-row traces (the bar: ≤ 2 s
// on a 2-core machine). Run it with
//
//	go test -run '^$' -bench Load1M -benchtime 3x ./pkg/replay/
func BenchmarkLoad1M(b *testing.B) {
	for _, f := range []Format{AzureLMM, FineServe, BurstGPT, Mooncake} {
		b.Run(string(f), func(b *testing.B) {
			path := writeBenchTrace(b, f)
			st, _ := os.Stat(path)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			for b.Loop() {
				tr, err := Load(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				if tr.Len() < benchRows*6/10 { // BurstGPT leaves out failed rows
					b.Fatalf("%d rows", tr.Len())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/load")
		})
	}
}
